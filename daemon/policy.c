/* SPDX-License-Identifier: MIT */
#include "policy.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "macro.h"

static const char *const decision_kind_table[_DECISION_KIND_MAX] = {
        [DECISION_NONE] = "none",     [DECISION_SPAWN] = "spawn",
        [DECISION_RETIRE] = "retire", [DECISION_WAIT_MOVES] = "wait-moves",
        [DECISION_WAIT] = "wait",     [DECISION_REFUSED] = "refused",
        [DECISION_HELD] = "held",
};

const char *decision_kind_to_string(DecisionKind k) {
        if (k < 0 || k >= _DECISION_KIND_MAX)
                return NULL;
        return decision_kind_table[k];
}


/* Appends to a NUL-terminated buf; a line that does not fit ends in "...". */
_printf_(3, 4) static void appendf(char *buf, size_t size, const char *fmt, ...) {
        size_t len = strnlen(buf, size);
        va_list ap;
        int k;

        if (len + 4 >= size)
                return;
        va_start(ap, fmt);
        k = vsnprintf(buf + len, size - len, fmt, ap);
        va_end(ap);
        if (k >= 0 && (size_t) k >= size - len)
                memcpy(buf + size - 4, "...", 4);
}

/* "w3 no report for 17s": why w's reading cannot be used, and since how long (now - since). */
static void describe_unfresh(const PolicyWorker *w, usec_t now, char *buf, size_t size) {
        char age[32];

        (void) format_timespan(age, sizeof age, now > w->since ? now - w->since : 0);
        switch (w->freshness) {
        case FRESHNESS_FRESH:
                snprintf(buf, size, "w%u fresh", w->id);
                break;
        case FRESHNESS_NEW:
                snprintf(buf, size, "w%u has not reported yet (routable for %s)", w->id, age);
                break;
        case FRESHNESS_STALE:
                snprintf(buf, size, "w%u no report for %s", w->id, age);
                break;
        case FRESHNESS_MISSING:
                snprintf(buf, size, "w%u report lacks %s for %s", w->id, w->missing ?: "a component", age);
                break;
        case FRESHNESS_NO_CHANNEL:
                snprintf(buf, size, "w%u channel closed %s ago", w->id, age);
                break;
        default:
                snprintf(buf, size, "w%u freshness %d for %s", w->id, (int) w->freshness, age);
                break;
        }
}

_printf_(4, 5) static void decide(Decision *d, DecisionKind kind, const PolicyWorker *w, const char *fmt,
                                  ...) {
        va_list ap;

        d->kind = kind;
        d->worker = w ? (int) w->id : -1;
        va_start(ap, fmt);
        vsnprintf(d->reason, sizeof d->reason, fmt, ap);
        va_end(ap);
}

static void hold(Decision *d, const PolicyWorker *w, usec_t now, const char *context) {
        char what[128];

        describe_unfresh(w, now, what, sizeof what);
        decide(d, DECISION_HELD, w, "held: %s (%s)", what, context);
        d->since = w->since;
}

/* One pass over the pool gathers what the ledger, scale-up and compaction look at: the capacity checks
 * run on every report, so each costs a single walk over the workers. */
typedef struct Survey {
        size_t live;      /* not retiring: routable or in flight */
        size_t takers;    /* routable, not retiring: the ledger's n */
        size_t in_flight; /* not routable, not retiring */
        size_t retiring;
        size_t candidates;  /* takers that are not the reception */
        size_t unjudgeable; /* candidates whose reading is neither FRESH nor NEW */
        double occupied;    /* O: routable workers, retiring ones included */
        const PolicyWorker *first_in_flight, *first_retiring;
        const PolicyWorker *sole;       /* the only taker, when takers == 1 */
        const PolicyWorker *room;       /* judgeable candidate under admission_threshold, least occupied */
        const PolicyWorker *unjudged;   /* first unjudgeable candidate */
        const PolicyWorker *unmeasured; /* first routable worker not FRESH (NEW included: not measured) */
        const PolicyWorker *least;      /* least-occupied candidate, ties to the newest */
} Survey;

/* The uncommon worker: retiring, in flight, the reception, or a reading that is not FRESH. */
static void survey_other(Survey *s, const PolicyWorker *w, double admission, double *room, double *least) {
        if (w->retiring) {
                s->retiring++;
                s->live += w->outdated;
                if (!s->first_retiring)
                        s->first_retiring = w;
        } else {
                s->live++;
                if (!w->routable) {
                        s->in_flight++;
                        if (!s->first_in_flight)
                                s->first_in_flight = w;
                }
        }
        if (!w->routable)
                return;

        s->occupied += w->occupancy;
        if (w->freshness != FRESHNESS_FRESH && !s->unmeasured)
                s->unmeasured = w;
        if (w->retiring)
                return;

        s->sole = s->takers++ == 0 ? w : NULL;
        if (w->reception)
                return;

        s->candidates++;
        if (!policy_worker_judgeable(w)) {
                s->unjudgeable++;
                if (!s->unjudged)
                        s->unjudged = w;
        } else if (w->occupancy < admission && w->occupancy < *room) {
                s->room = w;
                *room = w->occupancy;
        }
        if (w->occupancy <= *least) {
                s->least = w;
                *least = w->occupancy;
        }
}

static void survey(const PolicyInput *in, const PolicyParams *p, Survey *ret) {
        /* This runs on every report over the whole pool, so the common worker (routable, not retiring,
         * not the reception, FRESH) takes a short path, and the survey is gathered in locals: with
         * -fno-strict-aliasing, stores through ret could alias the workers and force reloads. */
        const double admission = p->admission_threshold;
        double room = INFINITY, least = INFINITY;
        Survey s = {};

        for (size_t i = 0; i < in->n_workers; i++) {
                const PolicyWorker *w = &in->workers[i];
                double occupancy = w->occupancy;

                if (_unlikely_(!w->routable || w->retiring || w->reception ||
                               w->freshness != FRESHNESS_FRESH)) {
                        survey_other(&s, w, admission, &room, &least);
                        continue;
                }

                s.live++;
                s.sole = s.takers++ == 0 ? w : NULL;
                s.candidates++;
                s.occupied += occupancy;
                if (occupancy < admission && occupancy < room) {
                        s.room = w;
                        room = occupancy;
                }
                /* Workers come in spawn order: "<=" hands a tie to the later, newer one. */
                if (occupancy <= least) {
                        s.least = w;
                        least = occupancy;
                }
        }

        *ret = s;
}

static void ledger_from_survey(const Survey *s, const PolicyParams *p, Ledger *ret) {
        policy_ledger_of((unsigned) s->takers, s->occupied, p, ret);
}

void policy_ledger(const PolicyInput *in, const PolicyParams *p, Ledger *ret) {
        Survey s;

        survey(in, p, &s);
        ledger_from_survey(&s, p, ret);
}

static void decision_start(Decision *d, const Survey *s, const PolicyParams *p) {
        *d = (Decision){.kind = DECISION_NONE, .worker = -1};
        ledger_from_survey(s, p, &d->ledger);
}

/* A spawn is wanted for `why`: the guards decide whether it happens. */
static void want_spawn(Decision *d, const Survey *s, const PolicyInput *in, const PolicyParams *p,
                       const char *why) {
        if (p->max_workers > 0 && s->live >= p->max_workers)
                decide(d, DECISION_REFUSED, NULL, "max_workers=%u reached; wanted: %s", p->max_workers, why);
        else if (p->min_free_memory > 0 && in->mem_available != UINT64_MAX &&
                 in->mem_available < p->min_free_memory)
                decide(d, DECISION_REFUSED, NULL,
                       "MemAvailable=%" PRIu64 " < min_free_memory=%" PRIu64 "; wanted: %s",
                       in->mem_available, p->min_free_memory, why);
        else
                decide(d, DECISION_SPAWN, NULL, "%s", why);
}

/* A group of one: the sole worker is the reception by definition, flagged or not, and its occupancy
 * against reception_threshold is the whole answer. */
static void scale_up_sole(Decision *d, const Survey *s, const PolicyInput *in, const PolicyParams *p) {
        const PolicyWorker *w = s->sole;
        char why[96];

        if (!policy_worker_judgeable(w))
                hold(d, w, in->now, "sole worker, nothing else to judge by");
        else if (w->occupancy < p->reception_threshold)
                decide(d, DECISION_NONE, NULL, "sole worker w%u at %.3f < reception_threshold=%.3f", w->id,
                       w->occupancy, p->reception_threshold);
        else {
                snprintf(why, sizeof why, "sole worker w%u at %.3f >= reception_threshold=%.3f", w->id,
                         w->occupancy, p->reception_threshold);
                want_spawn(d, s, in, p, why);
        }
}

/* A group of two or more: room on a non-reception worker, or a spawn. */
static void scale_up_group(Decision *d, const Survey *s, const PolicyInput *in, const PolicyParams *p) {
        char why[192];

        if (s->room) {
                decide(d, DECISION_NONE, NULL, "w%u has room: %.3f < admission_threshold=%.3f", s->room->id,
                       s->room->occupancy, p->admission_threshold);
                return;
        }
        if (s->unjudged) {
                char context[96];

                snprintf(context, sizeof context,
                         "%zu unjudgeable, no fresh worker under admission_threshold=%.3f", s->unjudgeable,
                         p->admission_threshold);
                hold(d, s->unjudged, in->now, context);
                return;
        }

        /* Every non-reception worker is measured and full: list them, for the journal. */
        snprintf(why, sizeof why, "no worker under admission_threshold=%.3f:", p->admission_threshold);
        for (size_t i = 0; i < in->n_workers; i++) {
                const PolicyWorker *w = &in->workers[i];

                if (policy_worker_takes_users(w) && !w->reception)
                        appendf(why, sizeof why, " w%u %.3f", w->id, w->occupancy);
        }
        if (s->candidates == 0)
                appendf(why, sizeof why, " none but the reception");
        want_spawn(d, s, in, p, why);
}

/* What scale-up "rests on" (Missing is never zero):
 *  - the min_workers floor rests on no reading: it counts processes, so it spawns even when every
 *    reading is stale;
 *  - in a group of one, the answer is the sole worker's occupancy against reception_threshold: a sole
 *    worker that is not FRESH/NEW holds the decision;
 *  - in a larger group, one FRESH/NEW non-reception worker under admission_threshold is room enough, and
 *    the answer is NONE whatever the others read. Without one, the answer rests on every non-reception
 *    worker: a stale one can be counted neither as having room nor as full, so any such worker holds the
 *    decision (the first in spawn order is named). The reception's reading plays no part there. */
void policy_scale_up(const PolicyInput *in, const PolicyParams *p, Decision *ret) {
        char why[192];
        Survey s;

        survey(in, p, &s);
        decision_start(ret, &s, p);

        if (s.live < p->min_workers) {
                snprintf(why, sizeof why, "%zu workers (%zu routable, %zu in flight) under min_workers=%u",
                         s.live, s.takers, s.in_flight, p->min_workers);
                want_spawn(ret, &s, in, p, why);
        } else if (s.in_flight > 0)
                decide(ret, DECISION_WAIT, s.first_in_flight, "w%u spawn in flight (%zu in flight)",
                       s.first_in_flight->id, s.in_flight);
        else if (s.takers == 0)
                decide(ret, DECISION_NONE, NULL, "no routable worker, min_workers=%u", p->min_workers);
        else if (s.takers == 1)
                scale_up_sole(ret, &s, in, p);
        else
                scale_up_group(ret, &s, in, p);
}

/* Compaction rests on every routable worker: O sums them all, so one reading that is not FRESH (a NEW
 * worker has measured nothing yet: it must not look idle) holds it. Checks, in order: an action in
 * progress (a worker retiring, a spawn in flight) → WAIT, re-decided when it completes; the min_workers
 * floor → NONE (nothing could be compacted, whatever the readings); a reading not FRESH → HELD; then the
 * ledger. */
void policy_compaction(const PolicyInput *in, const PolicyParams *p, Decision *ret) {
        const Ledger *l = &ret->ledger;
        char sums[112];
        Survey s;

        survey(in, p, &s);
        decision_start(ret, &s, p);

        if (s.retiring > 0) {
                decide(ret, DECISION_WAIT, s.first_retiring, "w%u is retiring (%zu retiring)",
                       s.first_retiring->id, s.retiring);
                return;
        }
        if (s.in_flight > 0) {
                decide(ret, DECISION_WAIT, s.first_in_flight, "w%u spawn in flight (%zu in flight)",
                       s.first_in_flight->id, s.in_flight);
                return;
        }
        if (s.takers <= p->min_workers) {
                decide(ret, DECISION_NONE, NULL, "n=%u at min_workers=%u", l->n, p->min_workers);
                return;
        }
        if (s.unmeasured) {
                policy_compaction_hold(s.unmeasured, in->now, ret);
                return;
        }

        snprintf(sums, sizeof sums, "H=%.3f %s %.3f (C=%.3f O=%.3f n=%u margin=%.2f)", l->headroom,
                 l->headroom > l->threshold ? ">" : "<=", l->threshold, l->capacity, l->occupied, l->n,
                 p->compaction_margin);
        if (l->headroom <= l->threshold)
                decide(ret, DECISION_NONE, NULL, "%s", sums);
        else if (!s.least)
                decide(ret, DECISION_NONE, NULL, "%s, but no worker but the reception", sums);
        else if (s.least->users > 0)
                decide(ret, DECISION_WAIT_MOVES, s.least,
                       "w%u has %u users: they move off it first (occupancy %.3f; %s)",
                       s.least->id, s.least->users, s.least->occupancy, sums);
        else
                decide(ret, DECISION_RETIRE, s.least, "retire w%u (occupancy %.3f, no users): %s",
                       s.least->id, s.least->occupancy, sums);
}

/* The drain was decided on H > margin * admission_threshold with `draining` still counted: with it
 * counted out (retiring), H > (margin - 1) * admission_threshold once its users landed. The drain goes
 * on while the survivors stay under their thresholds (H > 0), and stops when the load rose so far that
 * they would not, or when the pool grows: it does not fight the growth. The band in between is
 * hysteresis: the drain's own moves cost CPU on both ends, and a drain that stopped on that would stop
 * and start again all along (1 000 users of 1 MiB: 60 times). */
void policy_drain_check(const PolicyInput *in, const PolicyParams *p, unsigned draining, Decision *ret) {
        const PolicyWorker *target = NULL;
        const Ledger *l = &ret->ledger;
        Survey s;

        survey(in, p, &s);
        decision_start(ret, &s, p);
        for (size_t i = 0; i < in->n_workers && !target; i++)
                if (in->workers[i].id == draining)
                        target = &in->workers[i];

        if (!target || !target->routable || target->reception)
                decide(ret, DECISION_NONE, NULL, "w%u cannot be drained any more (gone, or the reception)",
                       draining);
        else if (s.in_flight > 0)
                decide(ret, DECISION_NONE, s.first_in_flight, "the pool grows: w%u spawn in flight",
                       s.first_in_flight->id);
        else if (s.takers < p->min_workers || s.takers == 0)
                decide(ret, DECISION_NONE, NULL, "n=%u survivors would fall under min_workers=%u", l->n,
                       p->min_workers);
        else if (s.unmeasured)
                hold(ret, s.unmeasured, in->now, "a drain needs every reading");
        else if (l->headroom <= 0)
                decide(ret, DECISION_NONE, NULL,
                       "the load rose: without w%u H=%.3f <= 0, the survivors would be over their "
                       "thresholds (C=%.3f O=%.3f n=%u)",
                       draining, l->headroom, l->capacity, l->occupied, l->n);
        else
                decide(ret, DECISION_WAIT_MOVES, target,
                       "w%u drains: without it H=%.3f > 0 (C=%.3f O=%.3f n=%u)", draining, l->headroom,
                       l->capacity, l->occupied, l->n);
}

void policy_compaction_hold(const PolicyWorker *w, usec_t now, Decision *ret) {
        hold(ret, w, now, "compaction needs every reading");
}

int policy_admit(const PolicyInput *in, const PolicyParams *p, bool *ret_over) {
        ssize_t best = -1, last = -1, reception = -1, other = -1;
        bool over = true;

        for (size_t i = 0; i < in->n_workers; i++) {
                const PolicyWorker *w = &in->workers[i];

                if (!policy_worker_takes_users(w))
                        continue;
                if (w->reception) {
                        if (reception < 0)
                                reception = (ssize_t) i;
                } else if (!policy_worker_judgeable(w))
                        other = (ssize_t)
                                i; /* a stale, missing or unconnected worker: the very last resort */
                else {
                        last = (ssize_t) i;
                        /* a saturated worker has no room now, whatever its smoothed occupancy says */
                        if (!w->saturated && w->occupancy < p->admission_threshold &&
                            (best < 0 || w->occupancy < in->workers[best].occupancy))
                                best = (ssize_t) i;
                }
        }

        if (best >= 0)
                over = false;
        else if (last >= 0)
                best = last;
        else if (reception >= 0)
                best = reception;
        else if (other >= 0)
                best = other;
        else
                return -ENOENT;

        if (ret_over)
                *ret_over = over;
        return (int) best;
}

int policy_drain_target(const PolicyInput *in, const PolicyParams *p, bool *ret_over) {
        bool over = true;
        ssize_t other = -1;
        Survey s;
        Ledger l;
        int i;

        i = policy_admit(in, p, &over);
        if (ret_over)
                *ret_over = over;
        survey(in, p, &s);
        ledger_from_survey(&s, p, &l);
        if (i < 0 || over || &in->workers[i] != s.least || l.headroom <= l.threshold)
                return i;
        /* admission's pick is the worker the next compaction takes: the least occupied other one with
         * room instead, when there is one */
        for (size_t j = 0; j < in->n_workers; j++) {
                const PolicyWorker *w = &in->workers[j];

                if (w == s.least || !policy_worker_takes_users(w) || w->reception ||
                    !policy_worker_judgeable(w) || w->occupancy >= p->admission_threshold)
                        continue;
                if (other < 0 || w->occupancy < in->workers[other].occupancy)
                        other = (ssize_t) j;
        }
        return other >= 0 ? (int) other : i;
}

int policy_place(const PolicyInput *in, const PolicyParams *p, size_t current, bool *ret_over) {
        ssize_t reception = -1, sole = -1;
        size_t takers = 0;

        if (current >= in->n_workers)
                return -EINVAL;
        if (ret_over)
                *ret_over = false;

        /* Kept users stay kept: a user already on a non-reception worker that takes users stays there. */
        if (policy_worker_takes_users(&in->workers[current]) && !in->workers[current].reception)
                return (int) current;

        for (size_t i = 0; i < in->n_workers; i++) {
                const PolicyWorker *w = &in->workers[i];

                if (!policy_worker_takes_users(w))
                        continue;
                takers++;
                sole = (ssize_t) i;
                if (w->reception && reception < 0)
                        reception = (ssize_t) i;
        }
        if (takers == 0)
                return -ENOENT;
        if (takers == 1)
                return (int) sole; /* the sole worker always keeps */

        /* The reception keeps while under its threshold, judged on a reading it has: a stale reception
         * could be full, so it passes the user on (admission still falls back to it if nothing else can). */
        if (reception >= 0 && policy_worker_judgeable(&in->workers[reception]) &&
            !in->workers[reception].saturated && in->workers[reception].occupancy < p->reception_threshold)
                return (int) reception;

        return policy_admit(in, p, ret_over);
}

/* ---- the pool summary ---- */

void policy_summarize(const PolicyInput *in, const PolicyParams *p, PolicySummary *ret) {
        *ret = (PolicySummary) {};
        for (size_t i = 0; i < in->n_workers; i++) {
                PolicyShare sh;

                policy_share(&in->workers[i], p, &sh);
                policy_summary_add(ret, &sh);
        }
}

/* ---- request-rate scaling (rps_target) on top of occupancy ---- */

static const PolicyWorker *find_worker(const PolicyInput *in, int id) {
        for (size_t i = 0; i < in->n_workers; i++)
                if ((int) in->workers[i].id == id)
                        return &in->workers[i];
        return NULL;
}

/* A rate that is not available holds the decision on its culprit: never a live-looking 0 requests/s. */
static void rate_hold(Decision *d, const PolicyInput *in, const RateReading *r) {
        decide(d, DECISION_HELD, find_worker(in, r->culprit), "rps held: %s", r->reason);
        d->since = in->now;
}

void policy_scale_up_rate(const PolicyInput *in, const PolicyParams *p, const RateReading *r, Decision *d) {
        char why[192], span[32];
        Survey s;

        if (p->rps_target <= 0 || r->status == RATE_OFF || d->kind != DECISION_NONE)
                return;
        if (r->status == RATE_HELD) {
                rate_hold(d, in, r);
                return;
        }
        if (r->status == RATE_WAITING || r->per_worker <= p->rps_target)
                return;
        survey(in, p, &s);
        snprintf(why, sizeof why, "rps %.1f/s per worker over %s (%u serving) > rps_target=%g", r->per_worker,
                 format_timespan(span, sizeof span, r->length), r->serving, p->rps_target);
        want_spawn(d, &s, in, p, why);
}

void policy_compaction_rate(const PolicyInput *in, const PolicyParams *p, const RateReading *r, Decision *d) {
        double after, allowed = p->admission_threshold * p->rps_target;

        if (p->rps_target <= 0 || r->status == RATE_OFF ||
            (d->kind != DECISION_RETIRE && d->kind != DECISION_WAIT_MOVES))
                return;
        if (r->status == RATE_HELD) {
                rate_hold(d, in, r);
                return;
        }
        if (r->status == RATE_WAITING) {
                decide(d, DECISION_NONE, NULL, "rps: %s", r->reason);
                return;
        }
        after = r->serving > 1 ? r->total / (double) (r->serving - 1) : INFINITY;
        if (after > allowed)
                decide(d, DECISION_NONE, NULL, "rps %.1f/s on %u workers would be %.1f/s each on %u > %.1f "
                       "(admission_threshold x rps_target)", r->total, r->serving, after, r->serving - 1, allowed);
}

/* ---- the burst path (burst.h) on top of occupancy and rate ---- */

void policy_scale_up_burst(const PolicyInput *in, const PolicyParams *p, const BurstReading *b, Decision *d) {
        Survey s;

        if (d->kind != DECISION_NONE)
                return;
        if (b->status == BURST_HELD) {
                decide(d, DECISION_HELD, find_worker(in, b->culprit), "%s", b->reason);
                d->since = b->since;
                return;
        }
        if (b->status != BURST_SUSTAINED)
                return;
        survey(in, p, &s);
        want_spawn(d, &s, in, p, b->reason);
}
