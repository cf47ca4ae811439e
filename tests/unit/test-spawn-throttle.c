/* SPDX-License-Identifier: MIT */
/* The spawn throttle, told the time: consecutive failures back off 250 ms, doubling, and the fifth stops
 * spawning for good; a worker that stayed up for the stable period makes it forget; a failure before any
 * child ran schedules the next attempt on the loop itself, and that retry fires when the back-off ends. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "log.h"
#include "macro.h"
#include "spawn-throttle.h"

#define T0 (1000 * USEC_PER_SEC)
#define MS USEC_PER_MSEC

static SpawnThrottle t;
static unsigned retries;

static void on_retry(void *userdata) {
        retries++;
}

static int setup(void **state) {
        spawn_throttle_init(&t, NULL, on_retry, NULL);
        retries = 0;
        log_set_max_level(LOG_EMERG); /* the failures journal at error and critical: not what is read here */
        return 0;
}

static int teardown(void **state) {
        spawn_throttle_done(&t);
        return 0;
}

static void test_spawn_throttle_backs_off_doubling_then_gives_up(void **state) {
        static const usec_t backoff[] = { 250 * MS, 500 * MS, 1000 * MS, 2000 * MS };
        usec_t now = T0;

        assert_int_equal(spawn_throttle_check(&t, now), 0);
        for (unsigned i = 0; i < ELEMENTSOF(backoff); i++) {
                spawn_throttle_failed(&t, i + 1, "exec failed", "/etc/elastic-pool/x.conf", now);
                assert_int_equal(t.failures, i + 1);
                assert_false(t.given_up);
                assert_int_equal(spawn_throttle_check(&t, now), -EAGAIN);
                assert_int_equal(spawn_throttle_check(&t, now + backoff[i] - 1), -EAGAIN);
                now += backoff[i];
                assert_int_equal(spawn_throttle_check(&t, now), 0);
        }
        spawn_throttle_failed(&t, 5, "died before it became routable", NULL, now);
        assert_int_equal(t.failures, SPAWN_FAILURES_MAX);
        assert_true(t.given_up);
        assert_string_equal(t.last_error, "died before it became routable");
        assert_int_equal(spawn_throttle_check(&t, now + 3600 * USEC_PER_SEC), -ECANCELED);
}

static void test_spawn_throttle_stable_worker_forgets(void **state) {
        spawn_throttle_failed(&t, 1, "a", NULL, T0);
        spawn_throttle_failed(&t, 2, "b", NULL, T0);
        assert_int_equal(t.failures, 2);
        spawn_throttle_stable(&t, 3, 10 * USEC_PER_SEC);
        assert_int_equal(t.failures, 0);
        /* the next failure backs off from the first step again */
        spawn_throttle_failed(&t, 4, "c", NULL, T0 + USEC_PER_SEC);
        assert_true(t.not_before == T0 + USEC_PER_SEC + 250 * MS);
        assert_string_equal(t.last_error, "c");
}

static void test_spawn_throttle_stable_period(void **state) {
        static const struct {
                usec_t spawn_timeout, expect;
        } cases[] = {
                { 1 * USEC_PER_SEC, 10 * USEC_PER_SEC }, /* a short spawn_timeout: the 10 s floor */
                { 10 * USEC_PER_SEC, 10 * USEC_PER_SEC },
                { 45 * USEC_PER_SEC, 45 * USEC_PER_SEC }, /* what the operator gave a start */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                assert_true(spawn_throttle_stable_period(cases[i].spawn_timeout) == cases[i].expect);
}

/* A failure before any child ran: the retry is on the loop, and fires when the back-off ends. */
static void test_spawn_throttle_failed_early_retries_on_the_loop(void **state) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        sd_event *e = NULL;

        assert_true(sd_event_new(&e) >= 0);
        spawn_throttle_done(&t);
        spawn_throttle_init(&t, e, on_retry, NULL);
        /* failed 250 ms ago by the loop's clock: the back-off is over, the retry is due at once */
        spawn_throttle_failed_early(&t, 1, "cannot create its listening socket", NULL, now - 250 * MS);
        assert_non_null(t.retry);
        assert_int_equal(retries, 0);
        for (unsigned i = 0; i < 10 && retries == 0; i++)
                assert_true(sd_event_run(e, 100 * MS) >= 0);
        assert_int_equal(retries, 1);
        assert_null(t.retry); /* a one-shot: the next deferral arms a new one */
        assert_int_equal(spawn_throttle_check(&t, now), 0);
        spawn_throttle_done(&t);
        sd_event_unref(e);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_spawn_throttle_backs_off_doubling_then_gives_up, setup, teardown),
                cmocka_unit_test_setup_teardown(test_spawn_throttle_stable_worker_forgets, setup, teardown),
                cmocka_unit_test(test_spawn_throttle_stable_period),
                cmocka_unit_test_setup_teardown(test_spawn_throttle_failed_early_retries_on_the_loop, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
