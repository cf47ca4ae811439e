/* SPDX-License-Identifier: MIT */
#include "relief.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "id-array.h"
#include "journal-ids.h"
#include "log.h"
#include "macro.h"
#include "policy.h"

static usec_t period(const Relief *r) {
        return r->pool->config->occupancy_interval * r->pool->config->smoothing_rows;
}

static double threshold(const Relief *r) {
        return r->capacity->policy.admission_threshold;
}

void relief_init(Relief *r, Pool *pool, Capacity *capacity, Surface *surface, Moves *moves) {
        *r = (Relief) { .pool = pool, .capacity = capacity, .surface = surface, .moves = moves };
}

void relief_done(Relief *r) {
        free(r->workers);
        r->workers = NULL;
        r->slots = 0;
}

static void round_end(Relief *r, const char *why) {
        ReliefRound *rd = &r->round;
        char failed[32] = "";

        if (rd->failed > 0)
                snprintf(failed, sizeof failed, " (%u failed)", rd->failed);
        log_struct(LOG_INFO,
                   LOG_FIELDS(.message_id = MESSAGE_ID_MOVE, .event = "relief", .worker = (int) rd->from),
                   "Relief of w%u ends after %u moves to w%u%s: %s", rd->from, rd->moved, rd->to, failed,
                   why);
        *rd = (ReliefRound) {};
        /* moves of the batch still under way finish on their own; the round no longer counts them */
        r->n_batch = 0;
}

/* Removes move id from the batch; false when it is not there. */
static bool batch_take(Relief *r, uint64_t id) {
        for (unsigned i = 0; i < r->n_batch; i++)
                if (r->batch[i] == id) {
                        r->batch[i] = r->batch[--r->n_batch];
                        return true;
                }
        return false;
}

/* A user's weight: its busy time per second since it logged in (its share of the worker's load). */
static double weight(const SurfaceUser *u, usec_t now) {
        return now > u->logged_in_at ? (double) u->busy_usec / (double) (now - u->logged_in_at) : 0.0;
}

/* The heaviest user of worker that may move now and fits: its share of the worker's projected
 * occupancy (by weight, or an equal share while nobody has measured consumption) is above 0 and keeps
 * the target's projection under `room`. */
static SurfaceUser *heaviest_fitting(Relief *r, unsigned worker, double occupancy, double room, usec_t now,
                                     double *ret_share) {
        SurfaceUser *u, *best = NULL;
        double total = 0, best_w = -1;
        unsigned n = 0;

        for (size_t i = 0; (u = surface_next_user(r->surface, &i));)
                if (u->worker == worker && !u->move) {
                        total += weight(u, now);
                        n++;
                }
        if (n == 0)
                return NULL;
        for (size_t i = 0; (u = surface_next_user(r->surface, &i));) {
                double wt, share;

                if (u->worker != worker || u->move)
                        continue;
                wt = weight(u, now);
                share = total > 0 ? occupancy * wt / total : occupancy / n;
                if (share > 0 && share < room && wt > best_w) {
                        best = u;
                        best_w = wt;
                        *ret_share = share;
                }
        }
        return best;
}

typedef enum Step {
        STEP_DONE,     /* a move runs, or the round ended */
        STEP_CONTINUE, /* a move ended at once (a re-point): the next */
} Step;

static Step step_once(Relief *r, usec_t now) {
        ReliefRound *rd = &r->round;
        char why[160];
        SurfaceUser *u;
        double share = 0;
        int k;

        if (rd->from == 0 || rd->moving || r->n_batch >= RELIEF_BATCH_MAX)
                return STEP_DONE;
        if (rd->from_projected < rd->from_limit) {
                if (r->n_batch > 0)
                        return STEP_DONE; /* the round ends with the last move of its batch */
                snprintf(why, sizeof why, "its projected occupancy %.3f is under %s", rd->from_projected,
                         rd->limit_name);
                round_end(r, why);
                return STEP_DONE;
        }
        u = heaviest_fitting(r, rd->from, rd->from_projected, threshold(r) - rd->to_projected, now, &share);
        if (!u) {
                if (r->n_batch > 0)
                        return STEP_DONE;
                snprintf(why, sizeof why,
                         "no user of it is left whose share keeps w%u (%.3f) under the threshold", rd->to,
                         rd->to_projected);
                round_end(r, why);
                return STEP_DONE;
        }
        if (rd->burst)
                snprintf(why, sizeof why, "relief (burst path): w%u saturated", rd->from);
        else
                snprintf(why, sizeof why, "relief: w%u over admission_threshold", rd->from);
        rd->moving = true;
        rd->move_id = 0;
        k = move_start_or_repoint(r->moves, u, rd->to, why, now);
        if (k < 0) {
                rd->moving = false;
                snprintf(why, sizeof why, "cannot move user %s: %s", u->name, strerror(-k));
                round_end(r, why);
                return STEP_DONE;
        }
        rd->from_projected -= share;
        rd->to_projected += share;
        if (!rd->moving)
                return STEP_CONTINUE;
        if (rd->burst && u->move) {
                /* a burst round does not wait for this move to start the next */
                r->batch[r->n_batch++] = u->move->id;
                rd->moving = false;
                return STEP_CONTINUE;
        }
        rd->move_id = u->move ? u->move->id : 0;
        return STEP_DONE;
}

static void step(Relief *r, usec_t now) {
        if (r->stepping)
                return;
        r->stepping = true;
        while (step_once(r, now) == STEP_CONTINUE)
                ;
        r->stepping = false;
}

/* Begins a round from w, whose occupancy reads from_occupancy, to the worker admission picks, when that
 * worker has room and a user of w fits there. Returns whether it began (the caller journals it, then
 * steps). */
static bool round_begin(Relief *r, Worker *w, ReliefWorker *rw, double from_occupancy, bool burst,
                        usec_t now) {
        bool reception = burst && w == r->pool->reception;
        PolicyInput in;
        bool over = false;
        double share;
        int i;

        capacity_policy_input(r->capacity, &in);
        i = policy_admit(&in, &r->capacity->policy, &over);
        if (i < 0 || over || in.workers[i].id == w->id)
                return false; /* nobody has room: growing the pool is scale-up's */
        /* a round that could move nobody is no round: it would only put the next one off by a period */
        if (!heaviest_fitting(r, w->id, from_occupancy, threshold(r) - in.workers[i].occupancy, now, &share))
                return false;
        rw->last_round = now;
        r->rounds++;
        r->burst_rounds += burst;
        r->round = (ReliefRound) {
                .from = w->id,
                .to = in.workers[i].id,
                .burst = burst,
                .from_projected = from_occupancy,
                .to_projected = in.workers[i].occupancy,
                /* the reception keeps users under reception_threshold: relieved, it is to be under it */
                .from_limit = reception ? r->capacity->policy.reception_threshold : threshold(r),
                .limit_name = reception ? "reception_threshold" : "admission_threshold",
        };
        return true;
}

static void smoothed_round(Relief *r, Worker *w, ReliefWorker *rw, usec_t now) {
        char span[32];

        (void) format_timespan(span, sizeof span, now - rw->over_since);
        if (!round_begin(r, w, rw, w->reading.occupancy.value, false, now))
                return;
        /* the next round counts from readings taken after this one: its smoothed reading lags the moves */
        rw->over_since = 0;
        log_struct(LOG_INFO,
                   LOG_FIELDS(.message_id = MESSAGE_ID_MOVE, .event = "relief", .worker = (int) w->id,
                              .has_occupancy = true, .occupancy = w->reading.occupancy.value),
                   "Relief: w%u at %.3f has been at or over admission_threshold=%.2f for %s; moving its "
                   "heaviest users to w%u (%.3f)",
                   w->id, w->reading.occupancy.value, threshold(r), span, r->round.to,
                   r->round.to_projected);
        step(r, now);
}

void relief_report(Relief *r, Worker *w, bool draining, usec_t now) {
        ReliefWorker *rw;
        usec_t since;
        bool over;

        if (!r->pool->config->relief_moves || ID_ARRAY_ENSURE(r->workers, r->slots, w->id) < 0)
                return;
        rw = &r->workers[w->id];
        /* on every report: the cheap tests first, the freshness only for a worker over the threshold */
        over = w->reading.occupancy.value >= threshold(r) && worker_takes_users(w) &&
               w != r->pool->reception && capacity_freshness(r->capacity, w, now, &since) == FRESHNESS_FRESH;
        if (!over)
                rw->over_since = 0;
        else if (rw->over_since == 0)
                rw->over_since = now;
        if (relief_running(r) || draining || !over)
                return;
        if (now - rw->over_since >= period(r) && (rw->last_round == 0 || now - rw->last_round >= period(r)))
                smoothed_round(r, w, rw, now);
}

bool relief_burst_due(const BurstTrack *t, const BurstParams *p, usec_t last_round, usec_t now) {
        if (!burst_track_sustained(t, p, now))
                return false;
        return last_round == 0 || now < last_round || now - last_round >= p->window;
}

/* w has been saturated on the burst path for burst_window: a round from it, its projection from 1.0. */
static void burst_round(Relief *r, Worker *w, ReliefWorker *rw, usec_t now) {
        char span[32];

        if (!round_begin(r, w, rw, 1.0, true, now))
                return;
        log_struct(LOG_INFO,
                   LOG_FIELDS(.message_id = MESSAGE_ID_MOVE, .event = "relief", .worker = (int) w->id),
                   "Relief (burst path): w%u has had %u requests waiting for %s; moving its heaviest users "
                   "to w%u (%.3f) until its projection is under %s=%.2f",
                   w->id, w->burst.waiting, format_timespan(span, sizeof span, now - w->burst.over_since),
                   r->round.to, r->round.to_projected, r->round.limit_name, r->round.from_limit);
        step(r, now);
}

void relief_burst_check(Relief *r, bool draining, usec_t now) {
        const Capacity *c = r->capacity;
        Pool *p = r->pool;

        if (!p->config->relief_moves || relief_running(r) || draining || c->burst.status == BURST_OFF)
                return;
        /* in spawn order: the reception, which keeps the users who logged in at once, first */
        for (size_t i = 0; i < p->n_workers && !relief_running(r); i++) {
                Worker *w = p->workers[i];

                if (!worker_takes_users(w) || ID_ARRAY_ENSURE(r->workers, r->slots, w->id) < 0)
                        continue;
                if (relief_burst_due(&w->burst, &c->burst_params, r->workers[w->id].last_round, now))
                        burst_round(r, w, &r->workers[w->id], now);
        }
}

void relief_move_ended(Relief *r, const MoveEnd *e, usec_t now) {
        ReliefRound *rd = &r->round;

        if (rd->from != 0 && e->from == rd->from && batch_take(r, e->id)) {
                if (e->switched) {
                        rd->moved++;
                        r->moved++;
                } else
                        rd->failed++;
                step(r, now);
                return;
        }

        if (rd->from == 0 || !rd->moving || e->from != rd->from ||
            (rd->move_id != 0 && e->id != rd->move_id))
                return;
        rd->moving = false;
        if (!e->switched) {
                round_end(r, "a move failed");
                return;
        }
        rd->moved++;
        r->moved++;
        step(r, now);
}

void relief_worker_gone(Relief *r, unsigned worker) {
        if (r->round.from == worker || r->round.to == worker)
                round_end(r, "a worker of the round is gone");
        if (worker < r->slots)
                r->workers[worker] = (ReliefWorker) {};
}
