/* SPDX-License-Identifier: MIT */
#pragma once

/* DECIDE: placement, admission, scale-up and compaction by the capacity ledger. Pure functions of a
 * snapshot of the pool (PolicyInput) and the parameters; the capacity shell (capacity.c) feeds them and
 * acts. Every decision carries its inputs and a one-line reason so it can be journaled and replayed by
 * hand. Also here, so that each formula exists once: the ledger, the pool summary that keeps it in O(1)
 * per report (ACCOUNT), and the fast path that reads "nothing to do" off that summary. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "burst.h"
#include "evaluator.h"
#include "rate.h"
#include "time-util.h"

typedef struct PolicyWorker {
        unsigned id;    /* wN */
        bool reception; /* the group's reception (its first routable worker) */
        bool routable;  /* false: a spawn in flight */
        bool retiring;  /* draining or stopping: takes no new users, leaves the ledger */
        bool outdated;  /* retiring because a rolling reload replaces it: still counts for min_workers, or
                         * the floor would spawn every replacement at once */
        Freshness freshness;
        usec_t since;        /* when the reading stopped being fresh (for held reasons) */
        const char *missing; /* for FRESHNESS_MISSING: the missing components, e.g. "cpu,memory" */
        double occupancy;    /* evaluator value; meaningless unless FRESH or NEW */
        uint32_t users;      /* logged-in users placed on it (from the surface) */
        bool saturated;      /* the burst path sees at least burst_queue requests waiting for it now
                              * (burst.h): placement passes new users on; growth ignores it */
} PolicyWorker;

/* Takes new users: routable and not retiring (the ledger's workers, admission's and placement's
 * candidates). */
static inline bool policy_worker_takes_users(const PolicyWorker *w) {
        return w->routable && !w->retiring;
}

/* A reading admission and scale-up may judge by: measured, or a new worker that reads 0.0 and admits. */
static inline bool policy_worker_judgeable(const PolicyWorker *w) {
        return w->freshness == FRESHNESS_FRESH || w->freshness == FRESHNESS_NEW;
}

typedef struct PolicyParams {
        double reception_threshold; /* keep threshold of the reception */
        double admission_threshold;
        double compaction_margin;
        uint32_t min_workers;
        uint32_t max_workers;     /* 0 = unbounded */
        uint64_t min_free_memory; /* 0 = no check */
        double rps_target;        /* requests/s per worker; 0 = request-rate scaling off */
} PolicyParams;

typedef struct PolicyInput {
        const PolicyWorker *workers; /* in spawn order: a higher index is a newer worker */
        size_t n_workers;
        uint64_t mem_available; /* bytes (MemAvailable); UINT64_MAX when unknown */
        usec_t now;             /* CLOCK_MONOTONIC */
} PolicyInput;

typedef struct Ledger {
        unsigned n;       /* workers in the ledger (routable, not retiring) */
        double capacity;  /* C = reception_threshold + (n - 1) * admission_threshold */
        double occupied;  /* O = sum of occupancy, retiring workers included (their users stay) */
        double headroom;  /* H = C - O */
        double threshold; /* margin * admission_threshold */
} Ledger;

typedef enum DecisionKind {
        DECISION_NONE,       /* nothing to do */
        DECISION_SPAWN,      /* grow by one worker */
        DECISION_RETIRE,     /* retire `worker` (it has no users) */
        DECISION_WAIT_MOVES, /* compaction chose `worker` but it has users: needs live moves first */
        DECISION_WAIT,       /* a guard says wait: spawn in flight, a retire in progress */
        DECISION_REFUSED,    /* a spawn is needed but refused: max_workers, min_free_memory */
        DECISION_HELD,       /* depends on `worker`, whose reading is not fresh */
        _DECISION_KIND_MAX,
        _DECISION_KIND_INVALID = -EINVAL,
} DecisionKind;

const char *decision_kind_to_string(DecisionKind k);

typedef struct Decision {
        DecisionKind kind;
        int worker;       /* target (retire, wait-moves) or culprit (held); -1 for none */
        usec_t since;     /* held: since when the culprit's reading is not fresh */
        Ledger ledger;    /* compaction inputs (also filled for scale-up, for the journal) */
        char reason[256]; /* one line, e.g. "held: w3 no report for 17s" */
} Decision;

/* Scale-up: spawn when fewer than min_workers exist (in flight included), when no routable
 * non-reception worker is under admission_threshold, or, in a group of one, when the reception is at or
 * over reception_threshold. A spawn in flight → WAIT; max_workers reached or MemAvailable under
 * min_free_memory → REFUSED; a decision that rests on a worker whose reading is not fresh → HELD.
 *
 * In order: the min_workers floor (counts routable + in flight, retiring excluded; rests on no reading,
 * so it spawns even when every reading is stale); a spawn in flight → WAIT; a group of one (one routable
 * non-retiring worker: the reception) → its occupancy against reception_threshold, HELD when it is not
 * FRESH/NEW; a larger group → NONE as soon as one FRESH/NEW non-reception worker is under
 * admission_threshold, else HELD on the first non-reception worker that is not FRESH/NEW (it can be
 * counted neither as having room nor as full), else SPAWN. Every wanted spawn then passes the guards:
 * max_workers (against the same non-retiring count: a draining worker is on its way out) and
 * min_free_memory (skipped when mem_available is UINT64_MAX). */
void policy_scale_up(const PolicyInput *in, const PolicyParams *p, Decision *ret);

/* The capacity ledger: n and C over routable, non-retiring workers; O over every routable worker,
 * retiring ones included (their users have to land on the survivors). n = 0 gives C = 0. */
void policy_ledger(const PolicyInput *in, const PolicyParams *p, Ledger *ret);

/* Compaction: when H > margin * admission_threshold and more than min_workers remain, pick the
 * least-occupied routable non-reception, non-retiring worker: RETIRE when it has no users, WAIT_MOVES
 * otherwise. HELD while any worker is not fresh, WAIT while a worker is already retiring or a spawn is
 * in flight.
 *
 * In order: a worker retiring or a spawn in flight → WAIT; n <= min_workers → NONE; any routable worker
 * not FRESH → HELD (NEW included: a worker that has not reported must not look idle); then the ledger.
 * Ties on occupancy go to the newest worker. H > threshold guarantees H > (margin - 1) *
 * admission_threshold after the retire, so one compaction does not call for a spawn. The Decision's
 * ledger is always filled. */
void policy_compaction(const PolicyInput *in, const PolicyParams *p, Decision *ret);

/* Request-rate scaling on top of occupancy ([policy] rps_target): the pool grows when either asks and
 * shrinks only when both allow. Each takes the occupancy decision in *d and the sustained rate over the
 * direction's window (rate.h).
 *
 * Scale-up: an occupancy decision other than NONE stands. Else a rate per worker over rps_target wants a
 * spawn (through the same guards: max_workers, min_free_memory); a rate not available HOLDS ("rps held:
 * w3 no row for 7s"): a missing measurement is never read as low traffic; a window that restarted waits
 * (NONE, nothing is late). */
void policy_scale_up_rate(const PolicyInput *in, const PolicyParams *p, const RateReading *r, Decision *d);
/* The burst path on top of both (burst.h): an occupancy or rate decision other than NONE stands (a spawn
 * in flight waits, a hold holds, a refusal stays). Else a SUSTAINED reading wants a spawn through the same
 * guards (max_workers, min_free_memory), with the reading's reason; a HELD reading holds the decision on its
 * culprit ("burst held: w3 executor queue not current for 7s"), never reads as room. OFF, CALM and RISING
 * leave NONE. */
void policy_scale_up_burst(const PolicyInput *in, const PolicyParams *p, const BurstReading *b, Decision *d);
/* Compaction: only a retire or a drain the occupancy ledger allows is examined. It stands when the group's
 * rate spread over one worker fewer stays at or under admission_threshold x rps_target; else NONE, with
 * the figures. A rate not available HOLDS it; a window that restarted makes it wait (NONE). */
void policy_compaction_rate(const PolicyInput *in, const PolicyParams *p, const RateReading *r, Decision *d);

/* A drain under way: `draining` (retiring in `in`, its users moving to the survivors) goes on
 * (WAIT_MOVES on it) while every routable reading is FRESH (else HELD) and the survivors' ledger keeps
 * H > 0 (compaction began it with H > (margin - 1) * admission_threshold for them: the band between is
 * hysteresis); NONE, with the reason, stops it: the load rose, a spawn is in flight (the pool grows), the
 * survivors would fall under min_workers, or `draining` is gone or became the reception. The
 * Decision's ledger is the survivors'. */
void policy_drain_check(const PolicyInput *in, const PolicyParams *p, unsigned draining, Decision *ret);

/* The HELD decision compaction takes on w, a routable worker whose reading is not FRESH, at now: what
 * policy_compaction() says when w is the first such worker. Lets the shell refresh a hold that stands
 * without walking the pool. ret->ledger is left as it is. */
void policy_compaction_hold(const PolicyWorker *w, usec_t now, Decision *ret);

/* Placement on login (reception-first): returns the index in in->workers of the worker that takes the
 * user logging in on `current` (an index): the reception keeps it while under reception_threshold,
 * the sole worker always keeps, otherwise admission picks. -ENOENT when no worker is routable.
 *
 * A user on a non-reception worker that takes users stays there (kept users stay kept): returns
 * current. A user on the reception, or on a worker that no longer takes users (retiring), is placed
 * reception-first. A reception that is not FRESH/NEW does not keep (it could be full), nor does a
 * saturated one (requests queue for it now, whatever its smoothed occupancy says). -EINVAL when
 * current is out of range; -ENOENT when no worker is routable and non-retiring. *ret_over (may be NULL)
 * as for policy_admit(), false when a worker keeps. */
int policy_place(const PolicyInput *in, const PolicyParams *p, size_t current, bool *ret_over);

/* Admission: among routable non-reception non-retiring workers with a FRESH or NEW reading that are not
 * saturated, the minimum occupancy under admission_threshold; none under → the last of them with *ret_over = true (log a
 * warning, scale-up will grow the group); none at all → the reception. -ENOENT when nothing is
 * routable. Returns an index into in->workers.
 *
 * Ties on the minimum go to the first (oldest). A worker that is stale, missing or without channel is
 * never picked while another takes users; with nothing else, the last of them is. *ret_over (may be
 * NULL) is true whenever the pick is a fallback, not a worker with room (the reception fallback
 * included). Retiring workers take no users: -ENOENT when only they are routable. */
int policy_admit(const PolicyInput *in, const PolicyParams *p, bool *ret_over);

/* Where a drain moves its next user: admission's pick (policy_admit(), the drained worker retiring in
 * `in`), unless the survivors' ledger still calls for another compaction and that pick is the worker it
 * would take (the least occupied non-reception one): then the least occupied other worker with room,
 * when there is one, so that a user is not moved onto the next worker to be drained. */
int policy_drain_target(const PolicyInput *in, const PolicyParams *p, bool *ret_over);

/* ---- ACCOUNT: the pool in O(1) per report ----
 * What the policies look at in the whole pool, kept as running sums of each worker's share, so that a
 * report costs the same with 1 000 workers as with 3. A worker's share is a pure function of the
 * PolicyWorker the policies themselves see; the shell takes a share out before the worker's reading
 * changes and adds the new one after. */

typedef struct PolicyShare {
        bool counted;     /* in the sums now: the shell takes it out exactly as it went in */
        bool in_flight;   /* not routable yet */
        bool retiring;
        bool active;      /* routable and not retiring: the ledger's n */
        bool room;        /* active, not the reception, FRESH or NEW, under admission_threshold */
        bool not_fresh;   /* routable (retiring included) and not FRESH */
        double occupancy; /* its part of O: routable workers, retiring ones included */
} PolicyShare;

typedef struct PolicySummary {
        unsigned n_policy;    /* workers in the policies' world: the PolicyInput's */
        unsigned n_in_flight;
        unsigned n_retiring;
        unsigned n_active;
        unsigned n_room;
        unsigned n_not_fresh;
        double occupied;      /* O */
} PolicySummary;

/* They run on every report: inline, so the shell pays no call for them. */
static inline void policy_share(const PolicyWorker *w, const PolicyParams *p, PolicyShare *ret) {
        bool active = policy_worker_takes_users(w);

        *ret = (PolicyShare) {
                .counted = true,
                .in_flight = !w->routable,
                .retiring = w->retiring,
                .active = active,
                .room = active && !w->reception && policy_worker_judgeable(w) &&
                        w->occupancy < p->admission_threshold,
                .not_fresh = w->routable && w->freshness != FRESHNESS_FRESH,
                .occupancy = w->routable ? w->occupancy : 0.0,
        };
}

static inline void policy_summary_add(PolicySummary *s, const PolicyShare *sh) {
        s->n_policy++;
        s->n_in_flight += sh->in_flight;
        s->n_retiring += sh->retiring;
        s->n_active += sh->active;
        s->n_room += sh->room;
        s->n_not_fresh += sh->not_fresh;
        s->occupied += sh->occupancy;
}

static inline void policy_summary_remove(PolicySummary *s, const PolicyShare *sh) {
        s->n_policy--;
        s->n_in_flight -= sh->in_flight;
        s->n_retiring -= sh->retiring;
        s->n_active -= sh->active;
        s->n_room -= sh->room;
        s->n_not_fresh -= sh->not_fresh;
        s->occupied -= sh->occupancy;
}

/* The summary of a whole PolicyInput, share by share (what the running sums must always equal). */
void policy_summarize(const PolicyInput *in, const PolicyParams *p, PolicySummary *ret);

/* The capacity ledger of n taking workers holding O = occupied: C = reception_threshold + (n - 1) *
 * admission_threshold (0 for n = 0), H = C - O, threshold = margin * admission_threshold. The one place
 * the formula is written: policy_ledger() and the fast path both come here. */
static inline void policy_ledger_of(unsigned n, double occupied, const PolicyParams *p, Ledger *ret) {
        ret->n = n;
        ret->capacity = n > 0 ? p->reception_threshold + (double) (n - 1) * p->admission_threshold : 0.0;
        ret->occupied = occupied;
        ret->headroom = ret->capacity - ret->occupied;
        ret->threshold = p->compaction_margin * p->admission_threshold;
}

/* The fast path: true only when the summary alone proves that policy_scale_up() (resp.
 * policy_compaction()) decides NONE on any pool it summarises; false means "ask the policy", not
 * "something to do". Compaction is asked near its threshold too, where the running sum's rounding could
 * tip the comparison.
 *
 * policy_scale_up() in its order: above the min_workers floor, no spawn in flight, a group (two or more
 * takers) and a worker with room is NONE, whatever the rest reads. */
static inline bool policy_scale_up_surely_none(const PolicySummary *s, const PolicyParams *p) {
        return s->n_policy - s->n_retiring >= p->min_workers && s->n_in_flight == 0 && s->n_active >= 2 &&
               s->n_room > 0;
}

/* policy_compaction() in its order: nothing retiring or in flight (else WAIT), then at or under the
 * min_workers floor is NONE whatever the readings; else every reading fresh and the headroom clearly at
 * or under the threshold. */
static inline bool policy_compaction_surely_none(const PolicySummary *s, const PolicyParams *p) {
        Ledger l;

        if (s->n_retiring > 0 || s->n_in_flight > 0)
                return false;
        if (s->n_active <= p->min_workers)
                return true;
        if (s->n_not_fresh > 0)
                return false;
        policy_ledger_of(s->n_active, s->occupied, p, &l);
        /* a margin for the rounding drift of a running sum: near the threshold, ask the policy */
        return l.headroom < l.threshold - 1e-6;
}
