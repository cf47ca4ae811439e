/* SPDX-License-Identifier: MIT */
#include "compaction.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "journal-ids.h"
#include "log.h"
#include "macro.h"
#include "policy.h"

/* A failed drain backs off from this, doubling up to 64 times it; a user whose move failed is left be
 * for this long. One smoothing period: the readings that judged the failure have turned over by then. */
static usec_t backoff_base(const Compaction *c) {
        return MAX(c->pool->config->occupancy_interval * c->pool->config->smoothing_rows, USEC_PER_SEC);
}

void compaction_init(Compaction *c, Pool *pool, Capacity *capacity, Surface *surface, Moves *moves) {
        *c = (Compaction) { .pool = pool, .capacity = capacity, .surface = surface, .moves = moves };
}

static void drain_clear(Compaction *c) {
        free(c->drain.why);
        c->drain = (Drain) {};
}

void compaction_done(Compaction *c) {
        drain_clear(c);
}

static Worker *drained_worker(Compaction *c) {
        return c->drain.worker > 0 ? pool_get_worker(c->pool, c->drain.worker) : NULL;
}

/* The drain ends without retiring: the worker takes users again. failed: a target failed it (back off). */
static void drain_stop(Compaction *c, const char *why, bool failed, usec_t now) {
        Worker *w = drained_worker(c);
        char wait[32] = "";
        unsigned id = c->drain.worker;

        if (failed) {
                usec_t backoff = backoff_base(c) << MIN(c->failures, 6U);
                c->failures++;
                c->backoff_until = now + backoff;
                (void) format_timespan(wait, sizeof wait, backoff);
        }
        snprintf(c->last, sizeof c->last, "drain of w%u stopped after %u of %u users moved: %s", id,
                 c->drain.moved, c->drain.users_at_start, why);
        log_struct(LOG_WARNING,
                   LOG_FIELDS(.message_id = MESSAGE_ID_COMPACT, .event = "compact", .worker = (int) id),
                   "Compaction: %s; w%u takes users again%s%s", c->last, id,
                   failed ? "; the next drain waits " : "", wait);
        c->drains_stopped++;
        drain_clear(c);
        if (w)
                pool_set_evacuating(c->pool, w, false);
}

/* Every user moved off: the worker leaves like any retiring one (its open requests finish first). */
static void drain_finish(Compaction *c, Worker *w, usec_t now) {
        char span[32], why[96];

        snprintf(c->last, sizeof c->last, "w%u drained: %u users moved (%u re-pointed) in %s", w->id,
                 c->drain.moved, c->drain.repointed,
                 format_timespan(span, sizeof span, now - c->drain.started));
        log_struct(LOG_INFO,
                   LOG_FIELDS(.message_id = MESSAGE_ID_COMPACT, .event = "compact", .worker = (int) w->id),
                   "Compaction: %s; retiring it", c->last);
        c->failures = 0;
        c->drains_done++;
        snprintf(why, sizeof why, "%s: its users moved", c->drain.why);
        drain_clear(c);
        pool_set_evacuating(c->pool, w, false);
        pool_retire_worker(c->pool, w, why);
}

/* A user of the drained worker that may move now: not moving, not left be after a failed move. */
static SurfaceUser *next_user(Compaction *c, usec_t now) {
        SurfaceUser *u;

        for (size_t i = 0; (u = surface_next_user(c->surface, &i));)
                if (u->worker == c->drain.worker && !u->move && u->move_not_before <= now)
                        return u;
        return NULL;
}

typedef enum Step {
        STEP_DONE,     /* nothing more now: a move runs, the drain waits, or it ended */
        STEP_CONTINUE, /* a move ended at once (a re-point): take the next user */
} Step;

/* Whether the drain may go on (what it rests on still holds); stops it when not. */
static bool drain_may_go_on(Compaction *c, const PolicyInput *in, usec_t now) {
        Decision d;

        policy_drain_check(in, &c->capacity->policy, c->drain.worker, &d);
        if (d.kind == DECISION_WAIT_MOVES)
                return true;
        /* the operator asked, whatever the ledger says: the drain only waits for the readings */
        if (c->drain.asked)
                return d.kind != DECISION_HELD;
        drain_stop(c, d.reason, false, now);
        return false;
}

static Step step_once(Compaction *c, usec_t now) {
        Worker *w = drained_worker(c);
        SurfaceUser *u;
        PolicyInput in;
        bool over = false;
        int i, r;

        if (c->drain.worker == 0 || c->drain.moving)
                return STEP_DONE;
        if (!w || !worker_is_routable(w)) {
                drain_stop(c, "the worker is not routable any more", false, now);
                return STEP_DONE;
        }
        if (surface_worker_users(c->surface, w->id) == 0) {
                drain_finish(c, w, now);
                return STEP_DONE;
        }
        capacity_policy_input(c->capacity, &in);
        if (!drain_may_go_on(c, &in, now))
                return STEP_DONE;
        u = next_user(c, now);
        if (!u)
                return STEP_DONE; /* the rest move or are left be for now: a later step */

        /* admission's pick (not the next to be drained); with no other worker left but the reception, the
         * reception: the ledger vouched that the users fit on the survivors */
        i = policy_drain_target(&in, &c->capacity->policy, &over);
        if (i < 0 || (over && !in.workers[i].reception)) {
                drain_stop(c, "no other worker is under admission_threshold", false, now);
                return STEP_DONE;
        }
        c->drain.moving = true;
        c->drain.move_id = 0;
        r = move_start_or_repoint(c->moves, u, in.workers[i].id, c->drain.why, now);
        if (r == -EOPNOTSUPP) {
                c->drain.moving = false;
                drain_stop(c, "the target cannot install users, and the drained worker has state to carry",
                           true, now);
                return STEP_DONE;
        }
        if (r < 0) {
                c->drain.moving = false;
                log_warning_errno(r, "Compaction: cannot move user %s off w%u now, trying the others: %m",
                                  u->name, w->id);
                u->move_not_before = now + backoff_base(c);
                c->drain.deferred++;
                return STEP_CONTINUE;
        }
        /* a re-point of a quiet user ends inside move_start_or_repoint() */
        if (!c->drain.moving)
                return STEP_CONTINUE;
        c->drain.move_id = u->move ? u->move->id : 0;
        return STEP_DONE;
}

void compaction_step(Compaction *c, usec_t now) {
        if (c->drain.worker == 0 || c->stepping)
                return;
        c->stepping = true;
        while (step_once(c, now) == STEP_CONTINUE)
                ;
        c->stepping = false;
}

void compaction_move_ended(Compaction *c, const MoveEnd *e, usec_t now) {
        SurfaceUser *u;
        char why[400];

        /* only the drain's own move: the operator may move a user of the drained worker meanwhile */
        if (c->drain.worker == 0 || !c->drain.moving || e->from != c->drain.worker ||
            (c->drain.move_id != 0 && e->id != c->drain.move_id))
                return;
        c->drain.moving = false;
        if (e->switched) {
                c->drain.moved++;
                c->drain.repointed += e->repointed;
        } else if (e->target_failed) {
                snprintf(why, sizeof why, "the move of user %s to w%u failed (%.300s)", e->user, e->to,
                         e->outcome);
                drain_stop(c, why, true, now);
                return;
        } else {
                /* the user's own trouble: the others go on, it is tried again later */
                u = surface_user_get(c->surface, e->user);
                if (u)
                        u->move_not_before = now + backoff_base(c);
                c->drain.deferred++;
        }
        compaction_step(c, now);
}

void compaction_worker_gone(Compaction *c, unsigned worker, usec_t now) {
        if (c->drain.worker == worker)
                drain_stop(c, "the worker died (its users are placed again on their next request)", false,
                           now);
}

static int drain_begin(Compaction *c, Worker *w, const char *why, bool asked, usec_t now) {
        char *copy;

        if (compaction_draining(c))
                return -EBUSY;
        /* routable and not drained yet; an outdated one (a rolling reload) takes no users, but drains */
        if (!worker_is_routable(w) || w->evacuating || w == c->pool->reception)
                return -ENOENT;
        copy = strdup(why);
        if (!copy)
                return -ENOMEM;
        c->drain = (Drain) {
                .worker = w->id,
                .why = copy,
                .started = now,
                .asked = asked,
                .users_at_start = surface_worker_users(c->surface, w->id),
        };
        pool_set_evacuating(c->pool, w, true);
        /* the ledger's drains are journaled by the capacity shell, with the inputs that decided them */
        if (asked)
                log_struct(LOG_INFO,
                           LOG_FIELDS(.message_id = MESSAGE_ID_COMPACT, .event = "compact",
                                      .worker = (int) w->id),
                           "Compaction: draining w%u by live moves (%s): %u users to move, one at a time",
                           w->id, why, c->drain.users_at_start);
        return 0;
}

/* The operator's drains start moving at once (the ledger's start on the step that follows the check). */
static int drain_and_step(Compaction *c, Worker *w, const char *why, usec_t now) {
        int r = drain_begin(c, w, why, true, now);

        if (r >= 0)
                compaction_step(c, now);
        return r;
}

int compaction_drain(Compaction *c, unsigned worker, const Decision *d, char *why, size_t why_size) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        Worker *w = pool_get_worker(c->pool, worker);
        char left[32];

        (void) d; /* capacity journals the decision itself */
        if (now < c->backoff_until) {
                snprintf(why, why_size, "backing off after %u failed drains in a row (last: %s); next in %s",
                         c->failures, c->last, format_timespan(left, sizeof left, c->backoff_until - now));
                return -EAGAIN;
        }
        if (!w)
                return -ENOENT;
        return drain_begin(c, w, "compaction", false, now);
}

int compaction_move_user(Compaction *c, const char *user, unsigned to, usec_t now) {
        SurfaceUser *u = surface_user_get(c->surface, user);
        Worker *w = pool_get_worker(c->pool, to);

        if (!u)
                return -ENOENT;
        if (!w || !worker_takes_users(w))
                return -EHOSTUNREACH;
        return move_start_or_repoint(c->moves, u, to, "operator request", now);
}

int compaction_now(Compaction *c, char *why, size_t why_size, usec_t now) {
        PolicyParams p = c->capacity->policy;
        PolicyInput in;
        Decision d;
        Worker *w;

        /* the ledger's threshold out of the way: everything else compaction checks still holds */
        p.compaction_margin = -1e9;
        capacity_policy_input(c->capacity, &in);
        policy_compaction(&in, &p, &d);
        if (d.kind != DECISION_RETIRE && d.kind != DECISION_WAIT_MOVES) {
                snprintf(why, why_size, "%s", d.reason);
                return -EAGAIN;
        }
        w = pool_get_worker(c->pool, (unsigned) d.worker);
        if (!w)
                return -ENOENT;
        if (d.kind == DECISION_RETIRE) {
                pool_retire_worker(c->pool, w, "operator compaction");
                return 0;
        }
        return drain_and_step(c, w, "operator compaction", now);
}

int compaction_replace(Compaction *c, unsigned worker, const char *why, usec_t now) {
        Worker *w = pool_get_worker(c->pool, worker);

        if (!w || !worker_is_routable(w))
                return -ENOENT;
        if (w == c->pool->reception)
                return -EPERM;
        if (compaction_draining(c))
                return -EBUSY;
        if (surface_worker_users(c->surface, w->id) == 0) {
                pool_retire_worker(c->pool, w, why);
                return 0;
        }
        return drain_and_step(c, w, why, now);
}

int compaction_retire(Compaction *c, unsigned worker, usec_t now) {
        return compaction_replace(c, worker, "operator retire", now);
}
