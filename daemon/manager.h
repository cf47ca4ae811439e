/* SPDX-License-Identifier: MIT */
#pragma once

/* The commander of one group: the event loop, the workers, the backend, and the glue that feeds the
 * pure evaluator and policies with readings and acts on their decisions. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "backend.h"
#include "config.h"
#include "policy.h"
#include "sockdiag.h"
#include "worker.h"

/* What a decision currently waits on, kept for the status surfaces ("held: w3 no report for 17s"). */
typedef struct Hold {
        bool active;
        DecisionKind kind;    /* HELD, WAIT, WAIT_MOVES or REFUSED */
        int worker;
        usec_t since;         /* when this hold began */
        char reason[256];
} Hold;

/* What the policies need to know of the whole pool, kept up to date per report in O(1), so a report
 * costs the same with 1 000 workers as with 3. Invalid after any change of the pool (rebuilt in O(N)
 * on the next check), and again once a fresh worker could have turned stale (recheck_at). */
typedef struct PoolSummary {
        bool valid;
        unsigned n_policy;    /* starting, probing, routable, draining */
        unsigned n_in_flight; /* starting, probing */
        unsigned n_retiring;  /* draining */
        unsigned n_active;    /* routable and not retiring */
        unsigned n_room;      /* active, not the reception, FRESH or NEW, under admission_threshold */
        unsigned n_not_fresh; /* routable (retiring included) and not FRESH */
        double occupied;      /* sum of occupancy over routable workers, retiring included */
        usec_t recheck_at;
} PoolSummary;

typedef struct Manager {
        sd_event *event;
        Config config;
        char *group;
        char *runtime_dir;
        Backend *backend;
        SockDiag *sock_diag;

        Worker **workers;     /* ordered by id */
        size_t n_workers;
        unsigned next_worker_id;
        Worker *reception;

        EvaluatorParams evaluator;
        PolicyParams policy;
        PolicyWorker *policy_buf; /* scratch for PolicyInput, sized to n_workers */
        size_t policy_buf_size;

        Hold scale_up_hold;
        Hold compaction_hold;
        DecisionKind last_scale_up;
        DecisionKind last_compaction;
        PoolSummary summary;
        usec_t next_full_check;         /* large pools: reports before it defer their full check */
        sd_event_source *deferred_check; /* the deferred check, armed by the first such report */

        /* spawn throttle: consecutive failures (exec error, death or timeout before routable) */
        unsigned spawn_failures;
        usec_t spawn_not_before;
        bool spawn_given_up;
        sd_event_source *spawn_retry;
        char *last_spawn_error;

        bool stopping;
        bool notified_ready;
        bool warned_fork;     /* said once that clone3 is missing */
        char *stop_why;       /* set once a stop was asked for (the front end drains first) */
        int exit_code;
        sd_event_source *stop_deadline;
        sd_event_source *status_timer;
        char *status_path;    /* runtime_dir/status.json */
        usec_t status_written_at;

        usec_t pool_changed_at; /* a worker became routable or left: compaction lets the windows settle */
        uint64_t reports_received;
        uint64_t spawns, deaths;

        /* hooks for the surface, the front end and moves: called from the loop, may be NULL */
        void (*on_worker_routable)(struct Manager *m, Worker *w);
        void (*on_worker_draining)(struct Manager *m, Worker *w);
        void (*on_worker_gone)(struct Manager *m, Worker *w);
        void (*on_move_frame)(struct Manager *m, Worker *w, const Frame *f);
        struct Frontend *frontend;
        struct Admin *admin;
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

/* Derives the evaluator's and the policies' parameters from m->config. */
void manager_setup_parameters(Manager *m);

/* Spawns the first min_workers and runs the loop until stopped. Returns the exit code. */
int manager_run(Manager *m);

/* Begins an orderly stop: every worker gets SIGTERM, then SIGKILL after stop_timeout. */
void manager_stop(Manager *m, const char *why);

/* Re-runs scale-up and compaction; called on report arrival and on pool changes. */
void manager_check_capacity(Manager *m);

/* Finds a worker by id; NULL when none. */
Worker *manager_get_worker(Manager *m, unsigned id);

/* Keeps m->workers ordered by id. 0 or -ENOMEM. */
int manager_add_worker(Manager *m, Worker *w);
void manager_remove_worker(Manager *m, Worker *w);

/* The reception is the group's first routable worker; called when the current one leaves. */
void manager_pick_reception(Manager *m);

/* Asks a worker to leave: DRAINING (no new requests, Drain frame), then STOPPING once its in-flight
 * requests end or drain_timeout passes. */
void manager_retire_worker(Manager *m, Worker *w, const char *why);

/* The front end reports that a draining worker has no requests left. */
void manager_worker_drained(Manager *m, Worker *w);

/* The report path's O(1) share of the pool summary: forget w's share before its new reading, account
 * it again after. Both are no-ops while the summary is invalid. */
void manager_summary_forget(Manager *m, Worker *w);
void manager_summary_account(Manager *m, Worker *w, usec_t now);

/* Builds the PolicyInput of the current pool (routable and in-flight workers); valid until the next
 * call. */
void manager_policy_input(Manager *m, PolicyInput *ret);

/* Logged-in users placed on w, from the front end's surface (0 without a front end). */
unsigned manager_worker_users(const Manager *m, const Worker *w);

/* Rewrites <runtime dir>/status.json now (also done every second, and on every change of the pool). */
void manager_write_status(Manager *m);

/* Tells systemd READY=1 once min_workers are routable (and the front end listens). */
void manager_maybe_ready(Manager *m);

/* The runtime directory resolution rule (exposed for tests). malloc()ed into *ret. */
int manager_runtime_dir(const char *group, const char *override, char **ret);
