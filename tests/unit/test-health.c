/* SPDX-License-Identifier: MIT */
/* Health (daemon/health.c) on a Manager in memory (manager-fixture.c, test-driven clock): a routable
 * worker whose reports stopped is taken out of new work (not a taker, no longer the reception; its users
 * stay), takes work again when it reports, and, silent for hung_timeout, is stopped; hung_timeout=0 never
 * stops it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "manager-fixture.h"

#define INTERVAL (200 * USEC_PER_MSEC)

static Manager *m;

static int setup(void **state) {
        m = fixture_manager_new();
        m->config.occupancy_interval = INTERVAL;
        m->config.hung_timeout = 5 * USEC_PER_SEC;
        return 0;
}

static int teardown(void **state) {
        fixture_manager_free(m);
        m = NULL;
        return 0;
}

/* seconds of reports every interval from w1 (and w2 when it reports), health checked each time */
static void run(Worker *w1, Worker *w2, bool w2_reports, usec_t span) {
        for (usec_t t = 0; t < span; t += INTERVAL) {
                fixture_advance(INTERVAL);
                fixture_report(w1, READING(.cpu = 0.1));
                if (w2_reports)
                        fixture_report(w2, READING(.cpu = 0.1));
                health_check(&m->pool, &m->capacity, fixture_now);
        }
}

static void test_health_silent_worker_out_then_back(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE);

        Worker *silent, *other;

        run(w1, w2, true, USEC_PER_SEC);
        assert_null(w2->unhealthy);
        /* the reception goes silent: out of new work, the reception passes, its users stay */
        silent = m->pool.reception;
        other = silent == w1 ? w2 : w1;
        fixture_set_users(m, silent, 2);
        for (usec_t t = 0; t < 2 * USEC_PER_SEC; t += INTERVAL) {
                fixture_advance(INTERVAL);
                fixture_report(other, READING(.cpu = 0.1));
                health_check(&m->pool, &m->capacity, fixture_now);
        }
        assert_non_null(silent->unhealthy);
        assert_non_null(strstr(silent->unhealthy, "no report for"));
        assert_false(worker_takes_users(silent));
        assert_true(worker_is_routable(silent));
        assert_ptr_equal(m->pool.reception, other);
        assert_int_equal(surface_worker_users(&m->surface, silent->id), 2);
        /* it reports again: back to work */
        fixture_report(silent, READING(.cpu = 0.1));
        health_check(&m->pool, &m->capacity, fixture_now);
        assert_null(silent->unhealthy);
        assert_true(worker_takes_users(silent));
}

static void test_health_hung_worker_stopped(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE);

        run(w1, w2, true, USEC_PER_SEC);
        run(w1, w2, false, 4 * USEC_PER_SEC);
        assert_non_null(w2->unhealthy);
        assert_int_equal(w2->state, WORKER_ROUTABLE); /* not yet hung_timeout */
        run(w1, w2, false, 2 * USEC_PER_SEC);
        assert_int_equal(w2->state, WORKER_STOPPING);
        assert_string_equal(w2->stop_reason, "hung: no report for hung_timeout");
}

static void test_health_never_stopped_without_timeout(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE);

        m->config.hung_timeout = 0;
        run(w1, w2, true, USEC_PER_SEC);
        run(w1, w2, false, 30 * USEC_PER_SEC);
        assert_non_null(w2->unhealthy);
        assert_int_equal(w2->state, WORKER_ROUTABLE);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_health_silent_worker_out_then_back, setup, teardown),
                cmocka_unit_test_setup_teardown(test_health_hung_worker_stopped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_health_never_stopped_without_timeout, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
