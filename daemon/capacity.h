/* SPDX-License-Identifier: MIT */
#pragma once

/* The capacity shell: the report path after the lifecycle hands a row over, in DESIGN.md's stage order,
 *
 *   archive (the worker's window) -> interpret (evaluator: occupancy, what is missing, freshness)
 *   -> account (the pool summary, O(1) per report) -> decide (the pure policies) -> act
 *
 * and the journal of every decision with the inputs that made it, so it can be replayed by hand. The
 * shell owns no formula: it gathers inputs for the pure cores (window.c, evaluator.c, policy.c) and acts
 * on their decisions through the pool (spawn, retire). Holds are kept for the status surfaces. */

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "config.h"
#include "evaluator.h"
#include "frontend-port.h"
#include "policy.h"
#include "pool.h"

/* The journal's side of a hold. An episode is journaled when it begins and when it ends, the end once the
 * hold has stayed clear for the smoothing window (or at once, when a spawn, a retire or a drain takes its
 * place). A hold that clears and comes back within the window is the same episode, counted and not
 * journaled again: a pool at max_workers under load near the threshold is refused, then not, every few
 * reports. The status surfaces show each change as it happens. */
typedef struct HoldEpisode {
        bool open;        /* of the hold's kind and worker, which a cleared hold keeps */
        usec_t cleared;   /* when the hold last cleared; 0 while it stands */
        unsigned returns; /* how often it came back within the episode */
} HoldEpisode;

/* What a decision currently waits on, kept for the status surfaces ("held: w3 no report for 17s"). */
typedef struct Hold {
        bool active;
        DecisionKind kind;    /* HELD, WAIT, WAIT_MOVES or REFUSED */
        int worker;
        usec_t since;         /* when this hold began */
        char reason[256];     /* kind, worker and reason are kept after it cleared, for the episode's end */
        usec_t formatted_at;  /* when reason was last written: a hold that stands refreshes it once a second */
        HoldEpisode episode;
} Hold;

/* The last decision that was journaled (a spawn, a retire, a drain, a hold or a refusal begun), kept for
 * the status surfaces: what it was, why, and the ledger it was taken on. */
typedef struct DecisionRecord {
        bool set;
        DecisionKind kind;
        int worker;
        usec_t at;
        Ledger ledger;
        char what[64];    /* "Scale-up: spawning a worker" */
        char reason[256];
} DecisionRecord;

/* Where the shell learns what it does not measure itself. */
typedef struct CapacitySources {
        /* Logged-in users placed on worker (the surface); NULL: none known. */
        unsigned (*worker_users)(unsigned worker, void *userdata);
        /* The front end's counters of worker, for the commander-side measures of a row; false (or NULL)
         * without a front end: the row then carries none, and *ret is all zero either way. */
        bool (*worker_traffic)(unsigned worker, WorkerTraffic *ret, void *userdata);
        void *userdata;
} CapacitySources;

/* What the shell cannot do through the pool: a worker that still has users is drained by live moves, a
 * service above it. */
typedef struct CapacityActions {
        /* Drain worker by moving its users off, then retire it (d: compaction's decision, for the
         * journal). 0 when the drain began; -EAGAIN when it may not begin yet, the reason in why (a
         * back-off after a failed drain); -errno. NULL: such a worker waits (wait-moves). */
        int (*drain)(unsigned worker, const Decision *d, char *why, size_t why_size, void *userdata);
        /* The burst path took a sample at now (every worker's track and the reading are new), after its
         * own capacity check: a worker saturated for burst_window may hand users on (relief). NULL: none. */
        void (*burst_sampled)(usec_t now, void *userdata);
        void *userdata;
} CapacityActions;

typedef struct Capacity {
        Pool *pool;
        const Config *config;
        EvaluatorParams evaluator;
        PolicyParams policy;
        CapacitySources sources;
        CapacityActions actions;

        PolicyWorker *policy_buf; /* scratch for PolicyInput, sized to the pool */
        size_t policy_buf_size;

        /* request-rate scaling: what each direction's window read at the last check */
        usec_t rate_epoch;        /* the windows may not start before (start, reload) */
        usec_t rate_epoch_seen;   /* the last epoch the journal heard of */
        /* the decision log ([policy] decision_log): a decision is written when it differs from the last */
        FILE *decision_log;
        char *decision_log_path;
        Decision last_logged[2];  /* by DecisionDirection */
        RateReading rate_up, rate_down;
        RateWorker *rate_buf;
        size_t rate_buf_size;

        /* the burst path (capacity-burst.c): its parameters, timer, scratch and last reading */
        BurstParams burst_params;
        BurstReading burst;
        uint64_t burst_generation; /* the pool's generation burst was assessed at */
        sd_event_source *burst_timer;
        BurstWorker *burst_buf;
        uint64_t *burst_inos;
        uint32_t *burst_queued;
        bool *burst_found;
        size_t burst_buf_size;
        uint64_t burst_samples; /* samples taken (for tests and the status surfaces) */

        Hold scale_up_hold;
        Hold compaction_hold;
        DecisionKind last_scale_up;
        DecisionKind last_compaction;
        DecisionRecord last_decision;

        /* The policies' view of the pool as running sums (policy.h), valid while the pool's generation
         * is the one it was built at and until a fresh worker could have turned stale (recheck_at). */
        PolicySummary summary;
        bool summary_valid;
        uint64_t summary_generation;
        usec_t recheck_at;

        usec_t next_full_check;          /* large pools: reports before it defer their full check */
        sd_event_source *deferred_check; /* the deferred check, armed by the first such report */
} Capacity;

void capacity_init(Capacity *c, Pool *pool, const Config *config, const CapacitySources *sources);
void capacity_done(Capacity *c);

/* The group's sustained request rate over the last `length` (rate.h), from the serving workers' rows;
 * RATE_OFF when rps_target is not set. */
void capacity_measure_rate(Capacity *c, usec_t now, usec_t length, RateReading *ret);
void capacity_set_actions(Capacity *c, const CapacityActions *actions);

/* Derives the evaluator's and the policies' parameters from the configuration. */
void capacity_setup_parameters(Capacity *c);

/* A report of w arrived as row (PoolHooks.report): the commander's own measures added to it, archive,
 * interpret, account, and check capacity when w is routable. An early report (row->early) only updates
 * w's executor queue for the burst path. On the way, w's drift sentinels take the
 * report (a drift that became sustained is journaled once) and its response times a snapshot. */
void capacity_take_row(Capacity *c, Worker *w, Row *row);

/* Re-runs scale-up and compaction: on reports and whenever the pool changed. Does nothing while the pool
 * is stopping. */
void capacity_check(Capacity *c);

/* ---- the burst path (capacity-burst.c) ---- */

/* How often the burst path samples its signals while it is on: a quarter of a second, so that a
 * burst_window of 1.5 s sees six samples and a spike of one second is four, never a streak. */
#define CAPACITY_BURST_INTERVAL (250 * USEC_PER_MSEC)

/* (Re)arms the sampling timer after the parameters changed: on while burst_window > 0, off otherwise. 0
 * or -errno (logged: the burst path is then off, the smoothed path still grows the pool). */
int capacity_burst_setup(Capacity *c);
void capacity_burst_done(Capacity *c);
/* One sample of every routable worker at now: tracks, the reading, its journal line on a change, and a
 * capacity check when the reading wants a spawn or holds one. */
void capacity_burst_sample(Capacity *c, usec_t now);
/* The burst reading the policies may act on: c->burst when it was assessed on the pool as it is, else a
 * CALM one in buf ("the pool changed since the last sample"). */
const BurstReading *capacity_burst_reading(const Capacity *c, BurstReading *buf);
/* w's executor queue depth as its sensor told it at `at` (from a report row or an early report). */
void capacity_burst_executor(Capacity *c, Worker *w, uint32_t queue_depth, usec_t at);

/* The freshness of w's reading at now (and since when it is not fresh), as the policies see it. */
Freshness capacity_freshness(const Capacity *c, const Worker *w, usec_t now, usec_t *ret_since);

/* Reports in a row that must differ before a drift is sustained: the smoothing period, at least 3. */
unsigned capacity_drift_sustain(const Capacity *c);

/* Logged-in users placed on w (0 when nobody tells). */
unsigned capacity_worker_users(const Capacity *c, const Worker *w);

/* The PolicyInput of the current pool (workers in the policies' world, in spawn order); valid until
 * the next call. */
void capacity_policy_input(Capacity *c, PolicyInput *ret);
