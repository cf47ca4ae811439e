/* SPDX-License-Identifier: MIT */
/* Response times: observations land in the bucket whose bound holds them (bounds inclusive, as "le"),
 * quantiles interpolate inside a bucket and never invent a value for an empty histogram, deltas refuse
 * counters that went backwards, and the ring keeps a minute of snapshots and starts over on a reset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "latency.h"
#include "macro.h"

static void test_latency_histogram_add_bounds_inclusive(void **state) {
        LatencyHistogram h = {};

        latency_histogram_add(&h, 0);
        latency_histogram_add(&h, 500);  /* on the first bound: still the first bucket */
        latency_histogram_add(&h, 501);
        latency_histogram_add(&h, 60 * USEC_PER_SEC);
        latency_histogram_add(&h, 60 * USEC_PER_SEC + 1); /* +Inf */
        assert_int_equal(h.count[0], 2);
        assert_int_equal(h.count[1], 1);
        assert_int_equal(h.count[LATENCY_BUCKETS - 2], 1);
        assert_int_equal(h.count[LATENCY_BUCKETS - 1], 1);
        assert_int_equal(h.total, 5);
        assert_int_equal(h.sum_usec, 1001 + 120 * USEC_PER_SEC + 1);
}

static void test_latency_bucket_bound_increasing(void **state) {
        for (unsigned i = 1; i < LATENCY_BUCKETS; i++)
                assert_true(latency_bucket_bound(i) > latency_bucket_bound(i - 1));
        assert_int_equal(latency_bucket_bound(LATENCY_BUCKETS - 1), USEC_INFINITY);
        assert_int_equal(latency_bucket_bound(1000), USEC_INFINITY);
}

static void test_latency_histogram_quantile_empty(void **state) {
        LatencyHistogram h = {};
        usec_t v = 42;

        assert_false(latency_histogram_quantile(&h, 0.5, &v));
        latency_histogram_add(&h, 1000);
        assert_false(latency_histogram_quantile(&h, 0, &v));   /* not a quantile */
        assert_false(latency_histogram_quantile(&h, 1.5, &v));
        assert_true(latency_histogram_quantile(&h, 1, &v));
}

static void test_latency_histogram_quantile_interpolates(void **state) {
        LatencyHistogram h = {};
        usec_t p50, p99;

        /* 100 requests between 1 ms and 2.5 ms (bucket (1000, 2500]) */
        for (unsigned i = 0; i < 100; i++)
                latency_histogram_add(&h, 2000);
        assert_true(latency_histogram_quantile(&h, 0.5, &p50));
        assert_true(latency_histogram_quantile(&h, 0.99, &p99));
        assert_int_equal(p50, 1750); /* halfway through the bucket */
        assert_int_equal(p99, 2485);

        /* one slow outlier in a hundred and one does not move the median, it is the p99.9 */
        latency_histogram_add(&h, 3 * USEC_PER_SEC);
        assert_true(latency_histogram_quantile(&h, 0.5, &p50));
        assert_true(p50 > 1000 && p50 <= 2500);
        assert_true(latency_histogram_quantile(&h, 1, &p99));
        assert_true(p99 > 2500000 && p99 <= 5000000);
}

static void test_latency_histogram_quantile_infinite_bucket(void **state) {
        LatencyHistogram h = {};
        usec_t v;

        latency_histogram_add(&h, 90 * USEC_PER_SEC);
        assert_true(latency_histogram_quantile(&h, 0.5, &v));
        assert_int_equal(v, 60 * USEC_PER_SEC); /* "at least" the last finite bound */
}

static void test_latency_histogram_delta_backwards(void **state) {
        LatencyHistogram a = {}, b = {}, d;

        latency_histogram_add(&a, 100);
        latency_histogram_add(&a, 3000);
        b = a;
        latency_histogram_add(&b, 3000);
        assert_true(latency_histogram_delta(&b, &a, &d));
        assert_int_equal(d.total, 1);
        assert_int_equal(d.sum_usec, 3000);
        assert_int_equal(d.count[3], 1); /* (2.5 ms, 5 ms] */
        /* a is not a later state of b */
        assert_false(latency_histogram_delta(&a, &b, &d));
        assert_int_equal(d.total, 0);
}

static void test_latency_ring_minute(void **state) {
        LatencyRing r = {};
        LatencyHistogram h = {}, d;
        usec_t t = 1000 * USEC_PER_SEC, span;

        assert_false(latency_ring_recent(&r, &h, t, &d, &span));
        /* one request a second for two minutes, snapshots taken on every "report" */
        for (unsigned s = 0; s < 120; s++) {
                latency_histogram_add(&h, s < 60 ? 400 : 20000); /* fast the first minute, slow the second */
                latency_ring_push(&r, &h, t + s * USEC_PER_SEC);
        }
        assert_int_equal(r.count, LATENCY_RING_SIZE);
        assert_true(latency_ring_recent(&r, &h, t + 119 * USEC_PER_SEC, &d, &span));
        /* snapshots at 0, 10, ... 110 s, the last 7 kept: the oldest is from 50 s, so the last 69 s show,
         * the slow minute and 9 s of the fast one */
        assert_int_equal(span, 69 * USEC_PER_SEC);
        assert_int_equal(d.total, 69);
        assert_int_equal(d.count[0], 9); /* 51 .. 59 s: the one at 50 s is in the snapshot */
}

/* Counters younger than the ring's minute are read whole: a request before the first report counts. */
static void test_latency_ring_young_counters_whole(void **state) {
        LatencyRing r = {};
        LatencyHistogram h = {}, d;
        usec_t span;

        latency_histogram_add(&h, 400);
        latency_histogram_add(&h, 400);
        latency_ring_push(&r, &h, 100 * USEC_PER_SEC);
        latency_histogram_add(&h, 3000);
        assert_true(latency_ring_recent(&r, &h, 105 * USEC_PER_SEC, &d, &span));
        assert_int_equal(d.total, 3);
        assert_int_equal(span, 5 * USEC_PER_SEC);
}

static void test_latency_ring_reset_starts_over(void **state) {
        LatencyRing r = {};
        LatencyHistogram h = {}, d;
        usec_t t = 1000 * USEC_PER_SEC, span;

        for (unsigned i = 0; i < 3; i++) {
                latency_histogram_add(&h, 400);
                latency_ring_push(&r, &h, t + i * LATENCY_RING_STEP);
        }
        assert_int_equal(r.count, 3);
        /* the front end's counters of this worker started over (a new forward pool) */
        h = (LatencyHistogram) {};
        latency_histogram_add(&h, 3000);
        assert_false(latency_ring_recent(&r, &h, t + 3 * LATENCY_RING_STEP, &d, &span));
        latency_ring_push(&r, &h, t + 3 * LATENCY_RING_STEP);
        assert_int_equal(r.count, 1);
        assert_true(latency_ring_recent(&r, &h, t + 3 * LATENCY_RING_STEP, &d, &span));
        assert_int_equal(d.total, 1); /* young counters: all of them, from before the first snapshot too */
        assert_int_equal(span, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_latency_histogram_add_bounds_inclusive),
                cmocka_unit_test(test_latency_bucket_bound_increasing),
                cmocka_unit_test(test_latency_histogram_quantile_empty),
                cmocka_unit_test(test_latency_histogram_quantile_interpolates),
                cmocka_unit_test(test_latency_histogram_quantile_infinite_bucket),
                cmocka_unit_test(test_latency_histogram_delta_backwards),
                cmocka_unit_test(test_latency_ring_minute),
                cmocka_unit_test(test_latency_ring_young_counters_whole),
                cmocka_unit_test(test_latency_ring_reset_starts_over),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
