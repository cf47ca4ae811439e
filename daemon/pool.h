/* SPDX-License-Identifier: MIT */
#pragma once

/* The worker lifecycle of the group: spawn (socket, channel, placement, clone3), Hello and the accept
 * probe that make a worker routable, reports handed over as rows, retirement, stop and death. The pool
 * keeps the group's workers (ordered by id) and its reception.
 *
 * The pool decides nothing about capacity and calls nothing above it: what happens to a worker is told
 * upwards through PoolHooks, which the manager wires to the capacity shell, the services and the front
 * end; actions come back down as calls (pool_spawn, pool_retire_worker, pool_stop). */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "backend.h"
#include "channel-listener.h"
#include "config.h"
#include "frame.h"
#include "sockdiag.h"
#include "spawn-throttle.h"
#include "spawn.h"
#include "window.h"
#include "worker.h"

/* Why a worker was spawned, for the counters of the status surfaces. The caller of pool_spawn() knows
 * and counts it (pool_count_spawn()). */
typedef enum PoolSpawnCause {
        POOL_SPAWN_FLOOR,    /* fewer than min_workers: a worker died or the group starts */
        POOL_SPAWN_SCALE_UP, /* the policies found no room */
        POOL_SPAWN_OPERATOR, /* asked over D-Bus (ScaleTo) */
        POOL_SPAWN_BURST,    /* the burst path: every worker saturated for burst_window */
        _POOL_SPAWN_CAUSE_MAX,
        _POOL_SPAWN_CAUSE_INVALID = -EINVAL,
} PoolSpawnCause;

static inline const char *pool_spawn_cause_to_string(PoolSpawnCause c) {
        switch (c) {
        case POOL_SPAWN_FLOOR:
                return "floor";
        case POOL_SPAWN_SCALE_UP:
                return "scale-up";
        case POOL_SPAWN_OPERATOR:
                return "operator";
        case POOL_SPAWN_BURST:
                return "burst";
        default:
                return NULL;
        }
}

typedef struct PoolHooks {
        /* w became routable (the pool's own bookkeeping done, the reception set). */
        void (*worker_routable)(Worker *w, void *userdata);
        /* w is retiring: it takes no new requests. */
        void (*worker_draining)(Worker *w, void *userdata);
        /* w died; called before it leaves the pool and is freed. */
        void (*worker_gone)(Worker *w, void *userdata);
        /* A report of w arrived: the row, as the report said it (the commander's own measures absent);
         * the hook may fill those in, the row is the pool's only for the call. */
        void (*report)(Worker *w, Row *row, void *userdata);
        /* w announced users it holds (Users frame; more: another follows). */
        void (*users)(Worker *w, const ElasticPool__Users *u, void *userdata);
        /* Re-adoption is over: every worker taken back reconnected and announced its users, or was
         * stopped at adopt_timeout. */
        void (*adopted)(Pool *p, void *userdata);
        /* A move answer (Package, InstallResult) from w's channel. */
        void (*move_frame)(Worker *w, const Frame *f, void *userdata);
        /* Capacity should be checked again: a worker left, or a spawn back-off ended. */
        void (*changed)(Pool *p, void *userdata);
        /* Requests open on w (the front end's count; 0 without one). */
        unsigned (*inflight)(const Worker *w, void *userdata);
        /* The pool was stopping and its last worker is gone. */
        void (*stopped)(Pool *p, void *userdata);
} PoolHooks;

typedef struct Pool {
        sd_event *event;
        const Config *config;
        const char *group;
        const char *runtime_dir;
        Backend *backend;
        SockDiag *sock_diag;    /* NULL: no accept probe, routable on Hello */

        Worker **workers;       /* ordered by id */
        size_t n_workers;
        unsigned next_worker_id;
        Worker *reception;      /* the first routable worker */

        /* Bumped on every change the policies can see (a state, the membership, the reception, a channel,
         * a worker's staleness horizon): what a summary of the pool was built at tells whether it still
         * holds. */
        uint64_t generation;
        unsigned exec_generation; /* bumped when a reload changed the worker definition ([worker]) */
        bool rolling;           /* a rolling reload has a routable newer worker: outdated ones take no users */
        bool rollout_active;    /* a rolling reload runs: it retires the old workers, compaction waits */
        usec_t changed_at;      /* a worker became routable or left: the survivors' windows are settling */

        /* re-adoption: the channel socket sensors reconnect to, and the workers still awaited */
        ChannelListener *channel_listener;
        unsigned adopting;
        sd_event_source *adopt_timer;
        uint64_t adopted;

        SpawnThrottle throttle;
        bool stopping;
        bool warned_fork;       /* said once that clone3 is missing */
        uint64_t reports_received, spawns, deaths, spawn_failures;
        uint64_t spawns_by_cause[_POOL_SPAWN_CAUSE_MAX]; /* spawns that began, by why (pool_count_spawn()) */
        uint64_t deaths_by_cause[_WORKER_DEATH_MAX];

        const PoolHooks *hooks;
        void *userdata;
} Pool;

/* Sets up the pool's own parts: the placement backend (logged choice) and sock_diag. 0 or -errno
 * (logged). */
int pool_init(Pool *p, sd_event *event, const Config *config, const char *group, const char *runtime_dir,
              const PoolHooks *hooks, void *userdata);
/* Kills what is still alive (synchronously: nothing must be left behind), releases every place. */
void pool_done(Pool *p);

/* Finds a worker by id; NULL when none. */
Worker *pool_get_worker(Pool *p, unsigned id);
/* Keeps p->workers ordered by id. 0 or -ENOMEM. */
int pool_add_worker(Pool *p, Worker *w);
void pool_remove_worker(Pool *p, Worker *w);
/* The reception is the group's first routable worker; called when the current one leaves. */
void pool_pick_reception(Pool *p);
/* Routable workers (what READY=1 waits for). */
unsigned pool_routable(const Pool *p);

/* A spawn for cause began (pool_spawn() returned 0): counted for the status surfaces. */
static inline void pool_count_spawn(Pool *p, PoolSpawnCause cause) {
        if (cause >= 0 && cause < _POOL_SPAWN_CAUSE_MAX)
                p->spawns_by_cause[cause]++;
}

/* Starts one worker. 0, -EAGAIN when the spawn throttle defers it (a retry is scheduled),
 * -ECANCELED once the throttle gave up, -errno on failure (logged). */
int pool_spawn(Pool *p, const char *reason);

/* The step a child reported failing on its way to exec, in the operator's words, naming what of the
 * configuration it used: "cannot execute '<exec>': ...", "cannot change into working_directory '/x':
 * ...", "cannot switch to user 'u' (uid N): ...". Exposed for tests. */
void pool_describe_spawn_error(const Pool *p, const SpawnError *e, char *what, size_t size);

/* The backend placed the worker (error 0) or could not; releases the parked child or kills it. */
void pool_attach_done(Worker *w, int error);

/* Asks a worker to leave: DRAINING (no new requests, Drain frame), then STOPPING once its in-flight
 * requests end or drain_timeout passes. */
void pool_retire_worker(Pool *p, Worker *w, const char *why);
/* w stops (on) or starts again (off) taking new users while it stays routable for the ones it has: a
 * drain moving them off. */
void pool_set_evacuating(Pool *p, Worker *w, bool on);
/* w stops (why: the reason) or starts again (NULL) taking new work while it stays routable for the users
 * it has: its reports stopped, it may be hung. The reception passes to a healthy worker. */
void pool_set_unhealthy(Pool *p, Worker *w, const char *why);
/* A rolling reload has (on) or no longer has (off) a routable worker of the current definition: the
 * outdated ones take no new users and the reception passes to a current one (on), or all take users
 * again (off). */
void pool_set_rolling(Pool *p, bool on);
/* A draining worker's last open request ended: it stops now. */
void pool_worker_drained(Pool *p, Worker *w);

/* SIGTERM through the pidfd now, SIGKILL after stop_timeout. */
void pool_stop_worker(Pool *p, Worker *w, const char *why);
/* Stops every worker; the stopped hook follows once the last is gone (at once when there is none). */
void pool_stop(Pool *p, const char *why);

/* One decoded frame from w's channel: the dispatch of the commander-bound messages (Hello, reports,
 * move answers, Goodbye). Exposed for tests and the report-cost benchmark. */
void pool_handle_frame(Worker *w, const Frame *f);

/* Listens on <runtime_dir>/channel.sock (or inherited_fd, kept in systemd's fd store) for sensors that
 * reconnect. Failure is logged and not fatal: workers then cannot come back after a restart. */
int pool_listen_channel(Pool *p, int inherited_fd);
/* Takes back the workers an earlier commander of this group left running ([pool] readopt): each becomes
 * routable at once and waits adopt_timeout for its sensor; the adopted hook follows once all are back or
 * the time is up. Returns how many are awaited (0: the hook is not called). */
int pool_adopt(Pool *p);

/* What freshness is judged by besides the window (evaluator_freshness()): w's channel, age, horizon. */
void pool_freshness_input(const Pool *p, const Worker *w, FreshnessInput *ret);
