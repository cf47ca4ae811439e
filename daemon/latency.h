/* SPDX-License-Identifier: MIT */
#pragma once

/* Response times of one worker as the front end measured them: a histogram of fixed buckets (the
 * Prometheus way: cumulative counts, exported as they are, so a scraper computes its own quantiles) and,
 * for the monitor, a short ring of earlier snapshots so that p50/p99 can be read over the last minute
 * rather than over the worker's whole life. Pure: callers pass the time.
 *
 * The buckets are fixed so that two snapshots subtract bucket by bucket; a quantile is interpolated
 * linearly inside its bucket (as histogram_quantile() does), so it is as precise as the bucket is
 * narrow: within a factor of 2 to 2.5 below 1 s. */

#include <stdbool.h>
#include <stdint.h>

#include "time-util.h"

/* 0.5 ms .. 60 s, then +Inf */
#define LATENCY_BUCKETS 17

typedef struct LatencyHistogram {
        uint64_t count[LATENCY_BUCKETS]; /* per bucket, not cumulative */
        uint64_t total;                  /* observations: the sum of count[] */
        usec_t sum_usec;                 /* sum of the observed durations */
} LatencyHistogram;

/* The upper bound of bucket i in microseconds (inclusive, "le"); USEC_INFINITY for the last one. */
usec_t latency_bucket_bound(unsigned i);

void latency_histogram_add(LatencyHistogram *h, usec_t duration);

/* now - then, bucket by bucket. false (and *ret zeroed) when any count went backwards: then is not an
 * earlier snapshot of now (a worker's counters started over). */
bool latency_histogram_delta(const LatencyHistogram *now, const LatencyHistogram *then, LatencyHistogram *ret);

/* The q-quantile (0 < q <= 1) of h in microseconds. false when h holds no observation. A quantile that
 * falls in the +Inf bucket reads as the last finite bound (60 s): "at least". */
bool latency_histogram_quantile(const LatencyHistogram *h, double q, usec_t *ret);

/* Snapshots of a cumulative histogram, one per LATENCY_RING_STEP at most, the last LATENCY_RING_SIZE of
 * them: the oldest is about a minute old once the ring is full. */
#define LATENCY_RING_SIZE 7
#define LATENCY_RING_STEP (10 * USEC_PER_SEC)

typedef struct LatencyRing {
        LatencyHistogram snapshot[LATENCY_RING_SIZE];
        usec_t at[LATENCY_RING_SIZE];
        unsigned count, head; /* head: the slot the next snapshot goes to */
} LatencyRing;

/* Keeps current (cumulative) as a snapshot taken at now, unless the newest one is younger than
 * LATENCY_RING_STEP. A snapshot with fewer observations than the newest one (the counters started over)
 * empties the ring first. */
void latency_ring_push(LatencyRing *r, const LatencyHistogram *current, usec_t now);

/* What current (cumulative, at now) gained since the oldest snapshot, and over how long (since that
 * snapshot). Until the ring is full the counters are younger than its minute: then it is all of current,
 * since they began (a zero state), which includes what came before the first snapshot. false when the
 * ring is empty or current is not a later state of the same counters. */
bool latency_ring_recent(const LatencyRing *r, const LatencyHistogram *current, usec_t now,
                         LatencyHistogram *ret, usec_t *ret_span);
