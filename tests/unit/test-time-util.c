/* SPDX-License-Identifier: MIT */
/* Spans as the logs and the held reasons show them ("17s", "250ms", "1min 5s"): each unit, the borders
 * between them (truncated, never rounded into the next unit), infinity, and a buffer too small. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "time-util.h"

static void test_format_timespan_units(void **state) {
        static const struct {
                usec_t span;
                const char *s;
        } table[] = {
                { 0, "0us" },
                { 1, "1us" },
                { 999, "999us" },
                { 1000, "1ms" },
                { 1999, "1ms" },
                { 250 * USEC_PER_MSEC, "250ms" },
                { 999999, "999ms" },
                { USEC_PER_SEC, "1s" },
                { USEC_PER_SEC + 1, "1s" },
                { 1500 * USEC_PER_MSEC, "1.5s" },
                { 17 * USEC_PER_SEC, "17s" },
                { 17 * USEC_PER_SEC + 250 * USEC_PER_MSEC, "17.2s" },
                { 59 * USEC_PER_SEC, "59s" },
                { 60 * USEC_PER_SEC, "1min 0s" },
                { 65 * USEC_PER_SEC, "1min 5s" },
                { 65 * USEC_PER_SEC + 999999, "1min 5s" },
                { 3600 * USEC_PER_SEC, "60min 0s" },
                { 7 * 86400 * USEC_PER_SEC, "10080min 0s" },
                { USEC_INFINITY, "infinity" },
                { USEC_INFINITY - 1, "307445734561min 49s" },
        };
        char buf[32];

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                assert_string_equal(format_timespan(buf, sizeof buf, table[i].span), table[i].s);
}

static void test_format_timespan_never_rounds_up_a_unit(void **state) {
        char buf[32];

        /* just under a minute is still seconds: "%.1f" used to print 59.96 s as "60.0s" */
        assert_string_equal(format_timespan(buf, sizeof buf, 59960 * USEC_PER_MSEC), "59.9s");
        assert_string_equal(format_timespan(buf, sizeof buf, 60 * USEC_PER_SEC - 1), "59.9s");
        assert_string_equal(format_timespan(buf, sizeof buf, 1960 * USEC_PER_MSEC), "1.9s");
        assert_string_equal(format_timespan(buf, sizeof buf, 1099 * USEC_PER_MSEC), "1s");
        assert_string_equal(format_timespan(buf, sizeof buf, 1100 * USEC_PER_MSEC), "1.1s");
}

static void test_format_timespan_small_buffer(void **state) {
        char buf[4];

        /* truncated and terminated, never overrun */
        assert_ptr_equal(format_timespan(buf, sizeof buf, 65 * USEC_PER_SEC), buf);
        assert_string_equal(buf, "1mi");
}

static void test_timespec_to_usec(void **state) {
        struct timespec ts = { .tv_sec = 3, .tv_nsec = 999999999 };

        assert_true(timespec_to_usec(&ts) == 3999999);
        ts = (struct timespec) { .tv_sec = 0, .tv_nsec = 999 };
        assert_true(timespec_to_usec(&ts) == 0);
}

static void test_now_usec_monotonic(void **state) {
        usec_t a = now_usec(CLOCK_MONOTONIC), b = now_usec(CLOCK_MONOTONIC);

        assert_true(a > 0);
        assert_true(b >= a);
        assert_true(now_usec(CLOCK_REALTIME) > 1600000000ULL * USEC_PER_SEC);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_format_timespan_units),
                cmocka_unit_test(test_format_timespan_never_rounds_up_a_unit),
                cmocka_unit_test(test_format_timespan_small_buffer),
                cmocka_unit_test(test_timespec_to_usec),
                cmocka_unit_test(test_now_usec_monotonic),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
