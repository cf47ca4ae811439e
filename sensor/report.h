/* SPDX-License-Identifier: MIT */
#pragma once

/* Assembly of one OccupancyReport from the kernel readings and the application fields. Pure: no I/O, no
 * clock. Every quantity that is unknown stays absent (has_ false, sub-message NULL); nothing unknown is
 * ever written as 0. */

#include <stdbool.h>
#include <stdint.h>

#include "app-state.h"
#include "cgroup-reading.h"
#include "elastic_pool.pb-c.h"
#include "time-util.h"

/* The last good cumulative CPU reading, the base of the next cpu fraction. */
typedef struct CpuSample {
        bool valid;
        uint64_t generation;
        ElasticPool__CpuSource source;
        uint64_t usage_usec;
        usec_t at;
} CpuSample;

/* Feeds this tick's reading taken at `now`. Returns true with the fraction of one core used since the last
 * good sample and the wall time it spans; false on the first sample, after the source or cgroup changed,
 * when the counter went backwards, or when this tick has no CPU reading (the last good sample is then kept,
 * so the next reading spans the gap and says so through *ret_span). */
bool cpu_sample_update(CpuSample *last, const Readings *rd, usec_t now, double *ret_fraction,
                       usec_t *ret_span);

/* Storage of one report and its sub-messages, reused tick after tick (no allocation per tick). */
typedef struct ReportStorage {
        ElasticPool__OccupancyReport report;
        ElasticPool__Executor executor;
        ElasticPool__Pressure pressure;
        ElasticPool__Backlog backlog;
        ElasticPool__Load load;
} ReportStorage;

typedef struct ReportInput {
        uint64_t seq;
        usec_t monotonic_usec;
        const Readings *readings;
        bool has_cpu;
        double cpu;
        usec_t cpu_span;
        const AppFields *app;
} ReportInput;

/* Fills st and returns its report; the sub-messages point into st, so st must not move while the report
 * is in use. */
ElasticPool__OccupancyReport *report_build(ReportStorage *st, const ReportInput *in);

/* An early report (the executor queue crossed the commander's burst_queue): early = true, the executor
 * of app and monotonic_usec only; no seq (the ticks' sequence stays gapless). NULL when app has no
 * executor: there is nothing to tell early. */
ElasticPool__OccupancyReport *report_build_early(ReportStorage *st, usec_t monotonic_usec, const AppFields *app);
