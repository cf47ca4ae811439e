/* SPDX-License-Identifier: MIT */
#include "evaluator.h"

#include <math.h>
#include <stdio.h>

#include "macro.h"

static const char *const component_table[_COMPONENT_MAX] = {
        [COMPONENT_MEMORY] = "memory",
        [COMPONENT_CPU] = "cpu",
        [COMPONENT_EXECUTOR] = "executor",
};

const char *component_to_string(Component c) {
        if (c < 0 || c >= _COMPONENT_MAX)
                return NULL;
        return component_table[c];
}

static double wall_cores(const EvaluatorParams *p) {
        return p->cpu_wall_cores > 0 ? p->cpu_wall_cores : 1.0;
}

/* One component of one row; false when the row does not carry it. Inlined: evaluating a window calls it
 * for each component of each row it reads, on every report, and with the call the switch stays. */
static _always_inline_ bool row_component(const RowComponents *row, const EvaluatorParams *p, Component c,
                                          double *ret) {
        double v;

        switch (c) {
        case COMPONENT_MEMORY:
                if (p->memory_limit == 0 || !row->has_memory)
                        return false;
                v = (double) row->memory_bytes / (double) p->memory_limit;
                break;
        case COMPONENT_CPU:
                if (!row->has_cpu)
                        return false;
                v = row->cpu / wall_cores(p);
                break;
        case COMPONENT_EXECUTOR:
                if (row->has_executor)
                        v = row->executor;
                else if (row->has_inflight && p->concurrency > 0)
                        v = (double) row->inflight / (double) p->concurrency;
                else
                        return false;
                break;
        default:
                return false;
        }
        if (!isfinite(v))
                return false;
        *ret = CLAMP(v, 0.0, 1.0);
        return true;
}

void evaluator_evaluate(const Window *w, const EvaluatorParams *p, Occupancy *ret) {
        uint32_t want = MAX(p->smoothing_rows, 1U), short_of = 0;
        double sum[_COMPONENT_MAX] = {};
        bool possible[_COMPONENT_MAX];
        Occupancy o = {
                .bottleneck = _COMPONENT_INVALID,
                .window_rows = w->count,
        };

        /* Without a limit no row can have a memory component: do not scan the window looking for one. */
        for (Component c = 0; c < _COMPONENT_MAX; c++) {
                possible[c] = c != COMPONENT_MEMORY || p->memory_limit > 0;
                short_of += possible[c];
        }

        /* Newest first, as far back as needed: a row lacking a component does not shorten its average. */
        for (uint32_t age = 0; age < w->count && short_of > 0; age++) {
                const RowComponents *row = window_components(w, age);

                for (Component c = 0; c < _COMPONENT_MAX; c++) {
                        double v;

                        if (!possible[c] || o.rows[c] >= want || !row_component(row, p, c, &v))
                                continue;
                        sum[c] += v;
                        if (++o.rows[c] == want)
                                short_of--;
                }
        }

        for (Component c = 0; c < _COMPONENT_MAX; c++) {
                if (o.rows[c] == 0)
                        continue;
                o.has[c] = true;
                o.component[c] = CLAMP(sum[c] / o.rows[c], 0.0, 1.0);
                if (o.bottleneck == _COMPONENT_INVALID || o.component[c] > o.value) {
                        o.value = o.component[c];
                        o.bottleneck = c;
                }
        }

        *ret = o;
}

bool evaluator_row_occupancy(const Row *row, const EvaluatorParams *p, double *ret) {
        RowComponents rc;
        bool any = false;
        double best = 0.0;

        row_components(row, &rc);
        for (Component c = 0; c < _COMPONENT_MAX; c++) {
                double v;

                if (!row_component(&rc, p, c, &v))
                        continue;
                if (!any || v > best)
                        best = v;
                any = true;
        }
        if (any)
                *ret = best;
        return any;
}

/* Whether any row older than the latest gave component c. */
static bool earlier_row_has(const Window *w, const EvaluatorParams *p, Component c) {
        for (uint32_t age = 1; age < w->count; age++) {
                double v;

                if (row_component(window_components(w, age), p, c, &v))
                        return true;
        }
        return false;
}

unsigned evaluator_missing_components(const Window *w, const EvaluatorParams *p) {
        const RowComponents *latest = window_components(w, 0);
        unsigned mask = 0;
        double v;

        if (!latest)
                return 0;

        /* The sensor's first report of a connection has no cpu (it needs two usage_usec readings). */
        if (w->count > 1 && !row_component(latest, p, COMPONENT_CPU, &v))
                mask |= 1U << COMPONENT_CPU;
        /* No limit, no memory component: nothing can be missing. */
        if (p->memory_limit > 0 && !row_component(latest, p, COMPONENT_MEMORY, &v))
                mask |= 1U << COMPONENT_MEMORY;
        /* Workers without an executor never report one; one that did and stopped has lost a reading. */
        if (!row_component(latest, p, COMPONENT_EXECUTOR, &v) && earlier_row_has(w, p, COMPONENT_EXECUTOR))
                mask |= 1U << COMPONENT_EXECUTOR;

        return mask;
}

void evaluator_rates(const Window *w, Rates *ret) {
        const Row *newest = NULL, *oldest = NULL, *prev = NULL;
        double seconds;

        *ret = (Rates){};

        /* Oldest to newest, so a counter going backwards anywhere in the span is seen. */
        for (uint32_t age = w->count; age > 0; age--) {
                const Row *row = window_row(w, age - 1);

                if (!row->has_forward)
                        continue;
                if (prev && (row->fwd_requests < prev->fwd_requests || row->fwd_errors < prev->fwd_errors ||
                             row->fwd_busy_usec < prev->fwd_busy_usec))
                        return; /* reset: the span is not one counter series */
                if (!oldest)
                        oldest = row;
                newest = prev = row;
        }

        if (!oldest || oldest == newest || newest->received <= oldest->received)
                return;

        ret->span = newest->received - oldest->received;
        seconds = (double) ret->span / (double) USEC_PER_SEC;
        ret->rps = (double) (newest->fwd_requests - oldest->fwd_requests) / seconds;
        ret->error_rate = (double) (newest->fwd_errors - oldest->fwd_errors) / seconds;
        if (newest->fwd_requests > oldest->fwd_requests)
                ret->latency_avg = (double) (newest->fwd_busy_usec - oldest->fwd_busy_usec) /
                                   (double) USEC_PER_SEC /
                                   (double) (newest->fwd_requests - oldest->fwd_requests);
        ret->valid = true;
}

static const char *const freshness_table[_FRESHNESS_MAX] = {
        [FRESHNESS_FRESH] = "fresh",           [FRESHNESS_NEW] = "new",
        [FRESHNESS_STALE] = "stale",           [FRESHNESS_MISSING] = "missing",
        [FRESHNESS_NO_CHANNEL] = "no-channel",
};

const char *freshness_to_string(Freshness f) {
        if (f < 0 || f >= _FRESHNESS_MAX)
                return NULL;
        return freshness_table[f];
}

usec_t evaluator_stale_horizon(usec_t configured_interval, usec_t sensor_interval, unsigned stale_after) {
        usec_t interval = MAX(configured_interval, MIN(sensor_interval, EVALUATOR_SENSOR_INTERVAL_MAX));

        if (interval > USEC_INFINITY / MAX(stale_after, 1U))
                return USEC_INFINITY;
        return interval * stale_after;
}

void evaluator_reading_init(Reading *ret) {
        *ret = (Reading) { .occupancy = { .bottleneck = _COMPONENT_INVALID } };
}

static void format_missing(unsigned mask, char *buf, size_t size) {
        size_t n = 0;

        buf[0] = 0;
        for (Component c = 0; c < _COMPONENT_MAX && n < size; c++)
                if (mask & (1U << c))
                        n += (size_t) snprintf(buf + n, size - n, "%s%s", n > 0 ? "," : "", component_to_string(c));
}

void evaluator_interpret(const Window *w, const EvaluatorParams *p, usec_t now, Reading *r) {
        unsigned missing;

        evaluator_evaluate(w, p, &r->occupancy);
        missing = evaluator_missing_components(w, p);
        if (missing != 0 && r->missing_mask == 0)
                r->not_fresh_since = now;
        /* the names only change with the mask: no formatting on the common report */
        if (missing != r->missing_mask)
                format_missing(missing, r->missing_names, sizeof r->missing_names);
        r->missing_mask = missing;
}

Freshness evaluator_freshness(const Window *w, const Reading *r, const FreshnessInput *in, usec_t now,
                              usec_t *ret_since) {
        const Row *last = window_latest(w);

        if (!in->channel_open) {
                *ret_since = in->channel_closed_at;
                return FRESHNESS_NO_CHANNEL;
        }
        if (!last) {
                *ret_since = in->born;
                return now - in->born < in->horizon ? FRESHNESS_NEW : FRESHNESS_STALE;
        }
        if (now - last->received >= in->horizon) {
                *ret_since = last->received;
                return FRESHNESS_STALE;
        }
        if (r->missing_mask != 0) {
                *ret_since = r->not_fresh_since;
                return FRESHNESS_MISSING;
        }
        *ret_since = 0;
        return FRESHNESS_FRESH;
}

usec_t evaluator_fresh_until(const Window *w, const FreshnessInput *in) {
        const Row *last = window_latest(w);
        usec_t from = last ? last->received : in->born;

        return in->horizon > USEC_INFINITY - from ? USEC_INFINITY : from + in->horizon;
}
