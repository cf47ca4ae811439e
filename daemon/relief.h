/* SPDX-License-Identifier: MIT */
#pragma once

/* Relief moves (DESIGN.md, Policies rule 7): a worker spawned because the others were full relieves them
 * at once instead of waiting for new logins. A non-reception worker whose reading stays at or over
 * admission_threshold for a smoothing period (occupancy_interval x smoothing_rows), while admission has a
 * worker with room, starts a relief round: its heaviest users (by their share of its measured busy time)
 * move, one at a time, to that worker, until its projected occupancy falls under the threshold; a move
 * that would take the target's projection to the threshold is not made. At most one round per worker
 * per smoothing period.
 *
 * The burst path (burst.h) starts rounds sooner. Its per-worker streak shows a worker saturated within a
 * quarter of a second, where the smoothed reading takes a smoothing period; and users who all logged in
 * at once stay on the worker that took them, so the burst path's own test (EVERY worker saturated) never
 * holds again once a new worker stands idle beside the hot one. So a worker whose waiting requests have
 * stayed at or over burst_queue for burst_window (the reception too: it kept those users at login, before
 * its reading showed anything), while admission has a worker with room that is not saturated itself,
 * starts a burst round at once. Its projection starts from 1.0 (saturated: the smoothed reading lags)
 * and the round ends under admission_threshold (reception_threshold for the reception, the occupancy
 * under which it keeps users); its moves run side by side (RELIEF_BATCH_MAX). Burst rounds of a worker
 * are burst_window apart, so a worker still saturated hands users to the next worker as soon as it is
 * routable; once every worker is saturated the burst path spawns another. A spike shorter than
 * burst_window, or a streak whose signal is late or missing (missing is never zero), starts none.
 *
 * It does not fight compaction: no round starts while a drain runs, and the manager lets no drain begin
 * while a round runs (compaction picks the least occupied worker, which is where a round moves users).
 * [policy] relief_moves = no turns it off. */

#include <stdbool.h>
#include <stdint.h>

#include "capacity.h"
#include "move.h"
#include "pool.h"
#include "surface.h"

typedef struct ReliefWorker {
        usec_t over_since; /* its reading has been at or over admission_threshold since (0: it is not) */
        usec_t last_round; /* its last relief round began */
} ReliefWorker;

typedef struct ReliefRound {
        unsigned from, to;     /* 0: no round */
        bool burst;            /* begun by the burst path's streak, not the smoothed reading */
        double from_projected; /* occupancies as they will be once the moves made so far show */
        double to_projected;
        double from_limit;     /* the round ends once from's projection is under it */
        const char *limit_name; /* "admission_threshold" or "reception_threshold" */
        bool moving;           /* a move of the round is being started, or (smoothed rounds) under way */
        uint64_t move_id;      /* that move (0 until move_start returned: it may end inside) */
        unsigned moved;
        unsigned failed;       /* burst rounds: moves of the batch that ended without a switch */
} ReliefRound;

/* A burst round's moves run side by side, at most this many at once: each user waits for its open
 * request to leave a queue burst_queue deep or more, and one after the other those waits add up to
 * seconds (48 users on one executor: about 0.25 s each). The cap bounds what one round asks of a
 * worker's channel at a time. */
#define RELIEF_BATCH_MAX 32

typedef struct Relief {
        Pool *pool;
        Capacity *capacity;
        Surface *surface;
        Moves *moves;
        ReliefWorker *workers; /* by worker id */
        unsigned slots;
        ReliefRound round;     /* one round at a time, across the pool */
        uint64_t batch[RELIEF_BATCH_MAX]; /* a burst round's moves under way, by move id */
        unsigned n_batch;
        bool stepping;         /* inside a round's step: a move that ends at once does not recurse */
        uint64_t rounds, moved;
        uint64_t burst_rounds; /* of rounds: those the burst path's streak began */
} Relief;

void relief_init(Relief *r, Pool *pool, Capacity *capacity, Surface *surface, Moves *moves);
void relief_done(Relief *r);

/* w's report was taken in (its reading is new): whether it is over the threshold, and for how long; a
 * round begins when it has been for a smoothing period. draining: compaction drains a worker now (no
 * round begins). */
void relief_report(Relief *r, Worker *w, bool draining, usec_t now);
/* The burst path took a sample (capacity_burst_sample), or a worker became routable (room may have
 * appeared: not waiting for the next sample saves up to CAPACITY_BURST_INTERVAL per worker the pool
 * grows by): a worker saturated on the burst path's last sample for burst_window may begin a burst
 * round. draining as for relief_report(). */
void relief_burst_check(Relief *r, bool draining, usec_t now);
/* Pure: whether a worker whose burst track is t may begin a burst round at now, its last round having
 * begun at last_round (0: never): sustained on its own (burst_track_sustained()) and burst_window since
 * its last round. */
bool relief_burst_due(const BurstTrack *t, const BurstParams *p, usec_t last_round, usec_t now);
/* A move ended (MoveHooks.ended): the round's next move, or its end. */
void relief_move_ended(Relief *r, const MoveEnd *e, usec_t now);
/* wN is gone: a round from or to it ends, and so does its record. */
void relief_worker_gone(Relief *r, unsigned worker);

static inline bool relief_running(const Relief *r) {
        return r->round.from != 0;
}
