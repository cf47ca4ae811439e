/* SPDX-License-Identifier: MIT */
#pragma once

/* INTERPRET: a window of rows becomes an occupancy in [0, 1], and a reading becomes fresh, new, stale,
 * missing or without channel ("missing is never zero", below). Pure: no I/O, no clock (callers pass now).
 *
 * Per row: memory = memory_bytes / memory_limit (when the row has memory and a limit is configured),
 * cpu = min(cpu / cpu_wall_cores, 1), executor = busy / total (or, for rows without an executor
 * reading, inflight / concurrency when both are known). Each component is averaged over the last
 * smoothing_rows rows THAT HAVE IT (looking as far back as the window goes), then occupancy = the max of
 * the averaged components. Components are clamped to [0, 1]. A window with no rows reads 0.0.
 *
 * Choices where DESIGN.md is silent:
 *  - an executor reading with total 0 measures nothing (no executor to be busy): the row counts as one
 *    without an executor reading, so it falls back to inflight / concurrency or has no executor;
 *  - equal components name the first in enum order (memory, cpu, executor) as the bottleneck;
 *  - smoothing_rows 0 is taken as 1 and cpu_wall_cores <= 0 as 1 (config rejects both; we never divide
 *    by zero or average nothing);
 *  - a non-finite component (a hand-built row with NaN) is no reading, never 0. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "time-util.h"
#include "window.h"

typedef enum Component {
        COMPONENT_MEMORY,
        COMPONENT_CPU,
        COMPONENT_EXECUTOR,
        _COMPONENT_MAX,
        _COMPONENT_INVALID = -EINVAL,
} Component;

const char *component_to_string(Component c);

typedef struct EvaluatorParams {
        uint64_t memory_limit; /* bytes; 0 = no memory component */
        double cpu_wall_cores; /* > 0 */
        uint32_t smoothing_rows;
        uint32_t concurrency; /* executor size assumed without an executor reading; 0 = unknown */
} EvaluatorParams;

typedef struct Occupancy {
        double value;         /* max of the present averaged components; 0.0 if none */
        Component bottleneck; /* the component that gave value; _COMPONENT_INVALID if none */
        bool has[_COMPONENT_MAX];
        double component[_COMPONENT_MAX]; /* averaged, clamped */
        uint32_t rows[_COMPONENT_MAX];    /* how many rows each average used */
        uint32_t window_rows;             /* rows in the window */
} Occupancy;

void evaluator_evaluate(const Window *w, const EvaluatorParams *p, Occupancy *ret);

/* The occupancy of a single row (max of its own components, unsmoothed), for the history histogram.
 * Returns false when the row has no component at all. */
bool evaluator_row_occupancy(const Row *row, const EvaluatorParams *p, double *ret);

/* Components the latest row should carry but does not: cpu always (once a row exists that is not the
 * sensor's first, i.e. the window holds more than one row: the manager clears the window when a channel
 * reconnects), memory when a limit is configured, executor when an earlier row of the window had one
 * (an executor reading or the inflight / concurrency fallback: whatever gave the component before).
 * Returns a bitmask of (1 << Component); 0 when complete or when the window is empty. */
unsigned evaluator_missing_components(const Window *w, const EvaluatorParams *p);

typedef struct Rates {
        bool valid;         /* at least two rows with forward counters, spanning > 0 time */
        double rps;         /* requests per second over the span */
        double error_rate;  /* errors per second */
        double latency_avg; /* seconds per request (0 with no requests) */
        usec_t span;
} Rates;

/* Rates from the commander's forward counters between the oldest and the newest row that have them,
 * timed by `received` (the counters are the commander's, read when the report arrived). Counters are
 * cumulative: any one of them going backwards between two rows of the span (a reset) makes the rates
 * invalid rather than negative or short. Invalid rates are unknown, never 0: callers hold on them. */
void evaluator_rates(const Window *w, Rates *ret);

/* ---- Missing is never zero: whether a worker's reading can be judged ---- */

typedef enum Freshness {
        FRESHNESS_FRESH,      /* a complete reading no older than stale_after intervals */
        FRESHNESS_NEW,        /* routable, no report yet, younger than stale_after: reads 0.0 and admits */
        FRESHNESS_STALE,      /* last report (or birth) older than stale_after intervals */
        FRESHNESS_MISSING,    /* the latest report lacks a component it should carry */
        FRESHNESS_NO_CHANNEL, /* the channel closed (bad frame, EOF): no readings will come */
        _FRESHNESS_MAX,
        _FRESHNESS_INVALID = -EINVAL,
} Freshness;

const char *freshness_to_string(Freshness f);

/* A sensor may tick slower than the commander asked (a wrapper started with its own --interval), but not
 * slower than this: past it, a silent worker would never read as stale. */
#define EVALUATOR_SENSOR_INTERVAL_MAX (3600 * USEC_PER_SEC)

/* The staleness horizon of one worker: stale_after intervals of the slower of the configured interval
 * and the one its sensor announced in its Hello (0: none; capped at EVALUATOR_SENSOR_INTERVAL_MAX).
 * Saturates at USEC_INFINITY: a wrapped product would call every worker stale at once. */
usec_t evaluator_stale_horizon(usec_t configured_interval, usec_t sensor_interval, unsigned stale_after);

/* What a reading is judged by besides its window: the worker's channel, its age and its horizon. */
typedef struct FreshnessInput {
        bool channel_open;
        usec_t channel_closed_at;
        usec_t born;    /* when it became routable, or was spawned while it is not yet */
        usec_t horizon; /* evaluator_stale_horizon() */
} FreshnessInput;

/* What the commander makes of a worker's window after each report: the occupancy, and which components
 * the latest row misses (evaluator_missing_components()), with since when and their names for humans. */
typedef struct Reading {
        Occupancy occupancy;
        unsigned missing_mask;
        char missing_names[48];  /* the components of missing_mask, e.g. "cpu,memory" */
        usec_t not_fresh_since;  /* when missing_mask last turned non-zero */
} Reading;

/* A reading before any report: occupancy 0.0 without a bottleneck (0 would name memory), nothing missing. */
void evaluator_reading_init(Reading *ret);

/* Re-evaluates r from w, to which a row was just added at `now`. Pure: the caller passes the time. */
void evaluator_interpret(const Window *w, const EvaluatorParams *p, usec_t now, Reading *r);

/* The freshness of a reading at now, and in *ret_since since when it is not fresh (0 while FRESH):
 * NO_CHANNEL once the channel closed; with no row yet NEW within the horizon of its birth, then STALE;
 * STALE when the latest row arrived a horizon or more ago; MISSING while the latest row lacks a
 * component; FRESH otherwise. */
Freshness evaluator_freshness(const Window *w, const Reading *r, const FreshnessInput *in, usec_t now,
                              usec_t *ret_since);

/* The time at which a FRESH or NEW reading turns STALE unless a report comes first: its latest row's
 * arrival (or its birth without one) plus the horizon. */
usec_t evaluator_fresh_until(const Window *w, const FreshnessInput *in);
