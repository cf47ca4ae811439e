/* SPDX-License-Identifier: MIT */
#pragma once

/* The commander of one group: owns everything (the loop, the configuration, the pool, the capacity
 * shell, the services and the front end) and wires the hooks between them. The only module that knows
 * all the others; nothing calls up into it but through those hooks. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "admin.h"
#include "bus.h"
#include "capacity.h"
#include "compaction.h"
#include "config.h"
#include "frontend.h"
#include "health.h"
#include "move.h"
#include "placement.h"
#include "pool.h"
#include "relief.h"
#include "rollout.h"
#include "status.h"
#include "surface.h"

typedef struct Manager {
        sd_event *event;
        Config config;
        char *group;
        char *runtime_dir;

        Pool pool;            /* the workers and their lifecycle */
        Capacity capacity;    /* the report path and the decisions on it */
        Surface surface;      /* who lives where */
        Moves moves;          /* live moves of users between workers */
        Compaction compaction; /* drains a worker by moving its users off, then retires it */
        Relief relief;        /* a worker over admission hands its heaviest users to one with room */
        Rollout rollout;      /* a reload that changed the worker definition replaces the workers */
        Health health;        /* a worker that stops answering takes no new work; replaced if it stays so */
        Placement placement;  /* the commander's answers to the front end */
        StatusView status;    /* what status.json, the admin listener (and later D-Bus) read */

        bool notified_ready;
        char *stop_why;       /* set once a stop was asked for (the front end drains first) */
        int exit_code;
        sd_event_source *stop_deadline;
        sd_event_source *status_timer;
        usec_t next_expiry_scan; /* users idle past user_expiry leave the surface (on the status timer) */
        char *status_path;    /* runtime_dir/status.json */
        char *status_line;    /* the STATUS= systemd has now */
        char *reload_error;   /* the last reload's failure, shown until one succeeds */

        /* what systemd passed (LISTEN_FDS: socket units, and our fd store after a restart) for the front end */
        int *passed_fds;
        char **passed_names;
        size_t n_passed;

        Frontend *frontend;   /* NULL with --no-frontend */
        const FrontendHooks *frontend_hooks; /* its hooks; NULL without one */
        Admin *admin;
        Bus *bus;             /* NULL off D-Bus */
} Manager;

typedef struct ManagerOptions {
        const char *group;
        const char *config_path;  /* NULL: /etc/elastic-pool/<group>.conf */
        const char *runtime_dir;  /* NULL: $RUNTIME_DIRECTORY, /run/elastic-pool/<group>, $XDG_RUNTIME_DIR/... */
        const char *state_dir;    /* NULL: $STATE_DIRECTORY, /var/lib/elastic-pool/<group>, ... */
        bool defaults;            /* --demo: no config file needed */
        bool no_frontend;         /* the pool alone, no listeners (tests of the pool) */
} ManagerOptions;

/* Loads the configuration (logging the error with file and line) and sets up everything but the
 * workers. 0 or -errno. */
int manager_new(const ManagerOptions *o, Manager **ret);
Manager *manager_free(Manager *m);
static inline void manager_freep(Manager **m) {
        manager_free(*m);
}

/* Spawns the first min_workers and runs the loop until stopped. Returns the exit code. */
int manager_run(Manager *m);

/* Re-reads the configuration file (SIGHUP, systemctl reload, D-Bus Reload) and what it names (the
 * environment file, the user database): thresholds, intervals, limits, timeouts and listen addresses
 * apply at once; a changed worker definition (config_worker_digest_parts()) starts a rolling reload. An
 * invalid file keeps the running configuration: -EINVAL with the message
 * (file:line) in *ret_error (may be NULL), the journal and STATUS=. 0 on success. */
int manager_reload(Manager *m, char **ret_error);

/* Begins an orderly stop: every worker gets SIGTERM, then SIGKILL after stop_timeout. */
void manager_stop(Manager *m, const char *why);

/* Sets up everything between the pool and the front end: the capacity shell, the surface, moves,
 * placement, the status view, all wired. manager_new() does it after the pool; tests that build a
 * Manager by hand call it after filling m->pool. */
void manager_wire(Manager *m);

/* Makes the front end and hands it the commander's operations; its hooks reach the rest from then on.
 * 0 or -errno (logged). */
int manager_add_frontend(Manager *m, const char *state_dir);

/* The pool's hooks, as manager_wire() sets them. */
extern const PoolHooks manager_pool_hooks;

/* Rewrites <runtime dir>/status.json now (also done every second, and on every change of the pool). */
void manager_write_status(Manager *m);

/* Tells systemd READY=1 once min_workers are routable (and the front end listens). */
void manager_maybe_ready(Manager *m);

/* The runtime directory resolution rule (exposed for tests). malloc()ed into *ret. */
int manager_runtime_dir(const char *group, const char *override, char **ret);
