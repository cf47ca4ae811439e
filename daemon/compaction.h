/* SPDX-License-Identifier: MIT */
#pragma once

/* Compaction by live moves (DESIGN.md, Policies rule 4). The capacity shell picks the worker to give
 * back; while it still has users, this service drains it, one drain at a time:
 *
 *   evacuate (it takes no new users and keeps serving the ones it has) -> move its users one at a time,
 *   each to the worker admission picks at that moment (but not the one the next drain would take, while
 *   another has room: policy_drain_target()) -> no user left: retire it (its open requests finish,
 *   SIGTERM, grace, SIGKILL, its place removed)
 *
 * Before each move the drain checks what it rests on (policy_drain_check()): a reading missing or stale,
 * load that rose, or a pool that grows stops it and puts the worker back into placement; the next ledger
 * check may start another. A move that fails for its target's sake (silent past the move timeout, an
 * error, gone) stops the drain too, and the next drain waits out a back-off that doubles with each such
 * failure, so a broken target is not hammered. A move that fails for its user's sake (requests that
 * never quiesce, a snapshot error) leaves that user be for a while and goes on with the others. A worker
 * that cannot snapshot users has no state to carry: its users are re-pointed.
 *
 * Also the operator's entry points (tests now, D-Bus later): move a user, compact now, retire a worker
 * after moving its users off. */

#include <stdbool.h>
#include <stdint.h>

#include "capacity.h"
#include "move.h"
#include "pool.h"
#include "surface.h"

typedef struct Drain {
        unsigned worker;   /* wN being drained; 0: none */
        char *why;
        usec_t started;
        bool asked;        /* by the operator: bound by readings and admission, not by the ledger */
        bool moving;       /* a move off it is under way: the next waits for its end */
        uint64_t move_id;  /* that move (0 until move_start returned: it may end inside) */
        unsigned users_at_start, moved, repointed, deferred;
} Drain;

typedef struct Compaction {
        Pool *pool;
        Capacity *capacity;
        Surface *surface;
        Moves *moves;

        Drain drain;
        bool stepping;        /* inside compaction_step(): a move that ends at once does not recurse */
        unsigned failures;    /* drains stopped in a row by a failing target */
        usec_t backoff_until; /* no drain starts before (after such a failure) */
        char last[256];       /* how the last drain ended, for the status surfaces */
        uint64_t drains_done, drains_stopped;
} Compaction;

void compaction_init(Compaction *c, Pool *pool, Capacity *capacity, Surface *surface, Moves *moves);

/* Whether a drain is under way: the pool is shrinking, and relief and reloads wait for it. */
static inline bool compaction_draining(const Compaction *c) {
        return c->drain.worker != 0;
}
/* Forgets the drain in progress (shutdown: the moves are ended by moves_done()). */
void compaction_done(Compaction *c);

/* The capacity shell's drain action (CapacityActions.drain): drains worker, chosen by d. 0 when the drain
 * began (its first move starts on the compaction_step() that follows the capacity check); -EAGAIN (the
 * reason in why) while a back-off runs; -EBUSY while another drain runs; -ENOENT when worker is not a
 * routable non-reception worker. */
int compaction_drain(Compaction *c, unsigned worker, const Decision *d, char *why, size_t why_size);

/* Takes the drain one step further: what it rests on re-checked, the next move started, or the worker
 * retired once empty. Cheap without a drain; called on reports, when users leave, when moves end. */
void compaction_step(Compaction *c, usec_t now);
/* A move ended (MoveHooks.ended). */
void compaction_move_ended(Compaction *c, const MoveEnd *e, usec_t now);
/* wN died: a drain of it ends there (its users are placed again on their next request). */
void compaction_worker_gone(Compaction *c, unsigned worker, usec_t now);

/* ---- the operator's entry points ---- */

/* Moves user to worker `to` (live, or re-pointed when its worker keeps no state). 0 when the move began,
 * -ENOENT for an unknown user, -EHOSTUNREACH when `to` takes no users, else as move_start(). */
int compaction_move_user(Compaction *c, const char *user, unsigned to, usec_t now);
/* Compacts now, whatever the ledger says: the least-occupied non-reception worker is retired, or drained
 * first when it has users. -EAGAIN with the reason in why when the pool may not shrink now (min_workers,
 * a reading not fresh, a drain or retire under way). */
int compaction_now(Compaction *c, char *why, size_t why_size, usec_t now);
/* Retires worker after moving its users off. -ENOENT when it is not a routable worker, -EPERM for the
 * reception (it hands its role on only when it leaves), -EBUSY while another drain runs. */
int compaction_retire(Compaction *c, unsigned worker, usec_t now);
/* The same for the rolling reload, journaled with why. */
int compaction_replace(Compaction *c, unsigned worker, const char *why, usec_t now);
