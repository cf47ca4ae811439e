/* SPDX-License-Identifier: MIT */
/* Drift sentinels: a difference becomes sustained after `sustain` differing reports in a row and is
 * told once; agreement ends it (and re-arms the telling); an unknown side neither starts, counts nor
 * ends a drift; registers are independent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "drift.h"
#include "macro.h"

static DriftInput users(uint32_t reported, uint32_t expected) {
        return (DriftInput) {
                .has_reported = { [DRIFT_USERS] = true },
                .reported = { [DRIFT_USERS] = reported },
                .has_expected = { [DRIFT_USERS] = true },
                .expected = { [DRIFT_USERS] = expected },
        };
}

static void test_drift_observe_sustained_told_once(void **state) {
        DriftSentinel d = {};
        DriftInput in = users(3, 2);
        unsigned ended;

        assert_int_equal(drift_observe(&d, &in, 3, 100, &ended), 0);
        assert_int_equal(drift_observe(&d, &in, 3, 200, &ended), 0);
        assert_false(drift_any(&d));
        assert_int_equal(drift_observe(&d, &in, 3, 300, &ended), 1U << DRIFT_USERS);
        assert_true(drift_any(&d));
        assert_int_equal(d.state[DRIFT_USERS].since, 100);
        assert_int_equal(d.state[DRIFT_USERS].reported, 3);
        assert_int_equal(d.state[DRIFT_USERS].expected, 2);
        /* still there: shown, not told again, even when the figures change */
        in = users(4, 2);
        for (unsigned i = 0; i < 10; i++)
                assert_int_equal(drift_observe(&d, &in, 3, 400 + i, &ended), 0);
        assert_int_equal(d.state[DRIFT_USERS].reported, 4);
        assert_int_equal(ended, 0);
        /* agreement ends it... */
        in = users(2, 2);
        assert_int_equal(drift_observe(&d, &in, 3, 500, &ended), 0);
        assert_int_equal(ended, 1U << DRIFT_USERS);
        assert_false(drift_any(&d));
        /* ...and a new episode is told again */
        in = users(0, 2);
        for (unsigned i = 0; i < 2; i++)
                assert_int_equal(drift_observe(&d, &in, 3, 600 + i, &ended), 0);
        assert_int_equal(drift_observe(&d, &in, 3, 700, &ended), 1U << DRIFT_USERS);
}

static void test_drift_observe_transient_not_sustained(void **state) {
        DriftSentinel d = {};
        DriftInput differ = users(1, 0), agree = users(1, 1);
        unsigned ended = 99;

        /* a login lands on the worker one report before the commander counts it, again and again */
        for (unsigned i = 0; i < 20; i++) {
                assert_int_equal(drift_observe(&d, i % 2 ? &agree : &differ, 3, i, &ended), 0);
                assert_int_equal(ended, 0); /* never sustained, so never ended either */
        }
        assert_false(drift_any(&d));
}

static void test_drift_observe_unknown_side(void **state) {
        DriftSentinel d = {};
        DriftInput in = users(3, 2), unknown = users(3, 2);
        unsigned ended;

        unknown.has_expected[DRIFT_USERS] = false; /* no surface to ask: not a zero */
        for (unsigned i = 0; i < 10; i++)
                assert_int_equal(drift_observe(&d, &unknown, 3, i, &ended), 0);
        assert_int_equal(d.state[DRIFT_USERS].streak, 0);

        assert_int_equal(drift_observe(&d, &in, 3, 10, &ended), 0);
        assert_int_equal(drift_observe(&d, &in, 3, 11, &ended), 0);
        /* a report without the register neither breaks the streak nor counts for it */
        unknown.has_expected[DRIFT_USERS] = true;
        unknown.has_reported[DRIFT_USERS] = false;
        assert_int_equal(drift_observe(&d, &unknown, 3, 12, &ended), 0);
        assert_int_equal(d.state[DRIFT_USERS].streak, 2);
        assert_int_equal(drift_observe(&d, &in, 3, 13, &ended), 1U << DRIFT_USERS);
        /* and does not end a sustained one */
        assert_int_equal(drift_observe(&d, &unknown, 3, 14, &ended), 0);
        assert_int_equal(ended, 0);
        assert_true(drift_any(&d));
}

static void test_drift_observe_registers_independent(void **state) {
        DriftSentinel d = {};
        DriftInput in = {
                .has_reported = { true, true },
                .reported = { [DRIFT_USERS] = 5, [DRIFT_CONNECTIONS] = 4 },
                .has_expected = { true, true },
                .expected = { [DRIFT_USERS] = 5, [DRIFT_CONNECTIONS] = 2 },
        };

        assert_int_equal(drift_observe(&d, &in, 1, 1, NULL), 1U << DRIFT_CONNECTIONS);
        assert_false(d.state[DRIFT_USERS].sustained);
        /* sustain 0 means "at once", like 1 */
        in.reported[DRIFT_USERS] = 6;
        assert_int_equal(drift_observe(&d, &in, 0, 2, NULL), 1U << DRIFT_USERS);
}

static void test_drift_register_to_string(void **state) {
        assert_string_equal(drift_register_to_string(DRIFT_USERS), "users");
        assert_string_equal(drift_register_to_string(DRIFT_CONNECTIONS), "connections");
        assert_null(drift_register_to_string(_DRIFT_REGISTER_MAX));
        assert_null(drift_register_to_string(_DRIFT_REGISTER_INVALID));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_drift_observe_sustained_told_once),
                cmocka_unit_test(test_drift_observe_transient_not_sustained),
                cmocka_unit_test(test_drift_observe_unknown_side),
                cmocka_unit_test(test_drift_observe_registers_independent),
                cmocka_unit_test(test_drift_register_to_string),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
