/* SPDX-License-Identifier: MIT */
/* When the front end gives memory back, told the counts and the time: a burst is over once the count of
 * connections falls to a quarter of its peak, the trim comes `delay` later and at most once per
 * `interval`, one deadline at a time, none while a new burst is on when the timer fires, and neither
 * steady traffic that never falls that low nor a trickle of single connections ever trims. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "trim-schedule.h"

#define T0 (1000 * USEC_PER_SEC)
#define DELAY (1 * USEC_PER_SEC)
#define INTERVAL (5 * USEC_PER_SEC)
#define MIN_PEAK 8

static TrimSchedule t;

static int setup(void **state) {
        trim_schedule_init(&t, DELAY, INTERVAL, MIN_PEAK);
        return 0;
}

/* n connections open one after the other, then closed down to `left`, at now; the deadline of the last
 * close that returned one. */
static usec_t burst(unsigned n, unsigned left, usec_t now) {
        usec_t at = 0, r;

        for (unsigned i = 1; i <= n; i++)
                trim_schedule_opened(&t, i);
        for (unsigned i = n; i-- > left;) {
                r = trim_schedule_closed(&t, i, now);
                if (r != 0) {
                        assert_int_equal(at, 0); /* one deadline per burst */
                        at = r;
                }
        }
        return at;
}

static void test_trim_schedule_closed_burst_ends_at_a_quarter(void **state) {
        for (unsigned i = 1; i <= 64; i++)
                trim_schedule_opened(&t, i);
        assert_int_equal(t.peak, 64);
        for (unsigned n = 63; n > 16; n--)
                assert_int_equal(trim_schedule_closed(&t, n, T0), 0);
        assert_int_equal(trim_schedule_closed(&t, 16, T0), T0 + DELAY);
        /* armed: the rest of the burst closing asks for nothing more */
        assert_int_equal(trim_schedule_closed(&t, 3, T0), 0);
        assert_true(trim_schedule_due(&t, 3, T0 + DELAY));
}

static void test_trim_schedule_due_not_while_busy_again(void **state) {
        assert_int_equal(burst(64, 0, T0), T0 + DELAY);
        /* a new burst before the timer fired: no trim under it */
        for (unsigned i = 1; i <= 40; i++)
                trim_schedule_opened(&t, i);
        assert_false(trim_schedule_due(&t, 40, T0 + DELAY));
        /* its end arms the timer again */
        for (unsigned n = 39; n > 16; n--)
                assert_int_equal(trim_schedule_closed(&t, n, T0 + 2 * DELAY), 0);
        assert_int_equal(trim_schedule_closed(&t, 16, T0 + 2 * DELAY), T0 + 3 * DELAY);
        assert_true(trim_schedule_due(&t, 16, T0 + 3 * DELAY));
}

static void test_trim_schedule_closed_rate_limited(void **state) {
        assert_int_equal(burst(64, 0, T0), T0 + DELAY);
        assert_true(trim_schedule_due(&t, 0, T0 + DELAY));
        /* the next burst ends at once: its trim waits for the interval since the last one */
        assert_int_equal(burst(64, 0, T0 + 2 * DELAY), T0 + DELAY + INTERVAL);
        assert_true(trim_schedule_due(&t, 0, T0 + DELAY + INTERVAL));
        /* one that ends long after: delay only */
        assert_int_equal(burst(8, 0, T0 + 60 * USEC_PER_SEC), T0 + 60 * USEC_PER_SEC + DELAY);
}

static void test_trim_schedule_closed_steady_never_trims(void **state) {
        /* 64 connections that come and go but never fall under 17 open: their memory is in use */
        for (unsigned i = 1; i <= 64; i++)
                trim_schedule_opened(&t, i);
        for (unsigned round = 0; round < 1000; round++) {
                unsigned n = 17 + round % 47;
                assert_int_equal(trim_schedule_closed(&t, n, T0 + round * USEC_PER_MSEC), 0);
                trim_schedule_opened(&t, n + 1);
        }
        assert_false(t.armed);
}

static void test_trim_schedule_closed_trickle_never_trims(void **state) {
        /* a health check every second, one connection at a time, for an hour: no burst, nothing to give back */
        for (unsigned i = 0; i < 3600; i++) {
                trim_schedule_opened(&t, 1);
                assert_int_equal(trim_schedule_closed(&t, 0, T0 + i * USEC_PER_SEC), 0);
        }
        /* a few at once are not one either; the smallest burst is */
        assert_int_equal(burst(MIN_PEAK - 1, 0, T0 + 4000 * USEC_PER_SEC), 0);
        assert_int_equal(burst(MIN_PEAK, 0, T0 + 4001 * USEC_PER_SEC), T0 + 4001 * USEC_PER_SEC + DELAY);
}

static void test_trim_schedule_due_remaining_are_the_new_base(void **state) {
        /* 20 long-lived connections outlive the burst of 100: the trim counts them as the base */
        assert_int_equal(burst(100, 20, T0), T0 + DELAY);
        assert_true(trim_schedule_due(&t, 20, T0 + DELAY));
        assert_int_equal(t.peak, 20);
        /* they close later: their memory goes back too, after the interval */
        assert_int_equal(trim_schedule_closed(&t, 5, T0 + 10 * USEC_PER_SEC), T0 + 11 * USEC_PER_SEC);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_trim_schedule_closed_burst_ends_at_a_quarter, setup),
                cmocka_unit_test_setup(test_trim_schedule_due_not_while_busy_again, setup),
                cmocka_unit_test_setup(test_trim_schedule_closed_rate_limited, setup),
                cmocka_unit_test_setup(test_trim_schedule_closed_steady_never_trims, setup),
                cmocka_unit_test_setup(test_trim_schedule_closed_trickle_never_trims, setup),
                cmocka_unit_test_setup(test_trim_schedule_due_remaining_are_the_new_base, setup),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
