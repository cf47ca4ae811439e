/* SPDX-License-Identifier: MIT */
/* The sensor's tick, with the readers pointed at a fixture tree through the ELASTIC_POOL_*_ROOT seams and
 * the tick times injected: cpu absent on the first tick and Δusage/Δwall on the next, application fields
 * in the report, the fixed cadence, and the configuration the environment carries. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "sensor-internal.h"
#include "test-sensor-util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(ep_sensor *, ep_sensor_free);

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof *f);

        assert_non_null(f);
        sensor_env_reset();
        fixture_setup(f);
        fixture_process(f, getpid(), 1, 100, 50, 0, 0, 300);
        fixture_write(f, "proc/self/cgroup", "0::/ep/w1\n");
        fixture_write(f, "cgroup/unified/ep/w1/cpu.stat", "usage_usec 1000000\n");
        fixture_write(f, "cgroup/unified/ep/w1/memory.current", "52428800\n");
        fixture_export(f);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        sensor_env_reset();
        fixture_teardown(f);
        free(f);
        return 0;
}

static void test_sensor_tick_at_fixture_cpu_absent_then_delta(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        Fixture *f = *state;
        const ElasticPool__OccupancyReport *r;

        assert_int_equal(ep_sensor_new(&s), 0);
        assert_null(sensor_last_report(s));
        assert_int_equal(sensor_tick_at(s, 10000000), 0);
        r = sensor_last_report(s);
        assert_non_null(r);
        assert_int_equal(r->seq, 1);
        assert_int_equal(r->monotonic_usec, 10000000);
        assert_false(r->has_cpu); /* nothing to compare with yet */
        assert_false(r->has_interval_usec);
        assert_true(r->has_memory_bytes);
        assert_int_equal(r->memory_bytes, 52428800);
        assert_int_equal(r->memory_source, ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP2);

        /* 400 ms of CPU over 500 ms of wall time */
        fixture_write(f, "cgroup/unified/ep/w1/cpu.stat", "usage_usec 1400000\n");
        assert_int_equal(sensor_tick_at(s, 10500000), 0);
        r = sensor_last_report(s);
        assert_int_equal(r->seq, 2);
        assert_true(r->has_cpu);
        assert_true(r->cpu > 0.7999 && r->cpu < 0.8001);
        assert_true(r->has_cpu_source);
        assert_int_equal(r->cpu_source, ELASTIC_POOL__CPU_SOURCE__CPU_SOURCE_CGROUP2);
        assert_int_equal(r->interval_usec, 500000);
}

static void test_sensor_tick_at_fixture_app_fields(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        const ElasticPool__OccupancyReport *r;

        assert_int_equal(ep_sensor_new(&s), 0);
        assert_int_equal(sensor_tick_at(s, 1000), 0);
        r = sensor_last_report(s);
        assert_false(r->has_users || r->has_active_users);
        assert_null(r->executor);

        ep_sensor_set_users(s, 3);
        ep_sensor_set_pages(s, 4);
        ep_sensor_set_connections(s, 5);
        ep_sensor_user_active(s, "alice", false);
        ep_sensor_user_active(s, "health", true);
        ep_sensor_set_executor_total(s, 8);
        ep_sensor_request_queued(s);
        ep_sensor_request_begin(s);
        ep_sensor_set_backlog(s, 1, 2);
        assert_int_equal(sensor_tick_at(s, 2000), 0);
        r = sensor_last_report(s);
        assert_int_equal(r->users, 3);
        assert_int_equal(r->pages, 4);
        assert_int_equal(r->connections, 5);
        assert_int_equal(r->active_users, 1);
        assert_non_null(r->executor);
        assert_int_equal(r->executor->busy, 1);
        assert_int_equal(r->executor->total, 8);
        assert_int_equal(r->executor->queue_depth, 0);
        assert_int_equal(r->backlog->outbox, 2);

        assert_int_equal(sensor_tick_at(s, 3000), 0);
        assert_int_equal(sensor_last_report(s)->active_users, 0); /* a new interval */
}

static void test_sensor_next_deadline_fixed_grid(void **state) {
        /* a tick that ran late does not move the grid */
        assert_int_equal(sensor_next_deadline(1000, 500, 1000), 1500);
        assert_int_equal(sensor_next_deadline(1000, 500, 1300), 1500);
        assert_int_equal(sensor_next_deadline(1500, 500, 1501), 2000);
}

static void test_sensor_next_deadline_skips_missed_slots(void **state) {
        /* stopped for a while (SIGSTOP, a long GC): skip to the next slot, no burst of catch-up reports */
        assert_int_equal(sensor_next_deadline(1000, 500, 1500), 2000);
        assert_int_equal(sensor_next_deadline(1000, 500, 3200), 3500);
        assert_int_equal(sensor_next_deadline(1000, 500, 3500), 4000);
}

static void test_sensor_new_invalid_interval_fails(void **state) {
        ep_sensor *s = NULL;

        assert_int_equal(setenv("ELASTIC_POOL_INTERVAL", "soon", 1), 0);
        assert_int_equal(ep_sensor_new(&s), -EINVAL);
        assert_int_equal(setenv("ELASTIC_POOL_INTERVAL", "0", 1), 0);
        assert_int_equal(ep_sensor_new(&s), -EINVAL);
        assert_null(s);
}

static void test_sensor_new_invalid_worker_fails(void **state) {
        ep_sensor *s = NULL;

        assert_int_equal(setenv("ELASTIC_POOL_WORKER", "w3", 1), 0);
        assert_int_equal(ep_sensor_new(&s), -EINVAL);
        assert_null(s);
}

static void test_sensor_set_interval_zero_fails(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;

        assert_int_equal(ep_sensor_new(&s), 0);
        assert_int_equal(ep_sensor_set_interval(s, 0), -EINVAL);
        assert_int_equal(ep_sensor_set_interval(s, 200000), 0);
        assert_int_equal(ep_sensor_set_interval(NULL, 200000), -EINVAL);
}

static void test_sensor_setters_null_sensor_ignored(void **state) {
        /* an application running without a sensor calls the setters all the same */
        ep_sensor_set_users(NULL, 1);
        ep_sensor_user_active(NULL, "x", false);
        ep_sensor_request_begin(NULL);
        ep_sensor_set_backlog(NULL, 1, 1);
        assert_null(ep_sensor_free(NULL));
        assert_int_equal(ep_sensor_dispatch(NULL), -EINVAL);
}

static void test_sensor_get_timeout_first_tick_due_now(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        uint64_t t = 1;

        assert_int_equal(ep_sensor_new(&s), 0);
        assert_int_equal(ep_sensor_get_fd(s), -1); /* no channel */
        assert_int_equal(ep_sensor_get_events(s), 0);
        assert_int_equal(ep_sensor_get_timeout(s, &t), 0);
        assert_int_equal(t, 0);
        assert_int_equal(ep_sensor_dispatch(s), 0);
        assert_int_equal(ep_sensor_get_timeout(s, &t), 0);
        /* the default interval: next tick 5 s after the first */
        assert_true(t > now_usec(CLOCK_MONOTONIC) + 4 * USEC_PER_SEC);
        assert_true(t <= now_usec(CLOCK_MONOTONIC) + 5 * USEC_PER_SEC);
        assert_int_equal(sensor_last_report(s)->seq, 1);
        assert_int_equal(ep_sensor_tick(s), 0); /* out of cadence */
        assert_int_equal(sensor_last_report(s)->seq, 2);
}

#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

/* ELASTIC_POOL_BURST_QUEUE: a crossing of it by the executor queue, either way, is told at once, once; the
 * tick tells the side too, so a probe after it has nothing to add. Unset: no probe ever sends. */
static void test_sensor_probe_at_reports_crossings_once(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL, *plain = NULL;
        uint64_t timeout;

        assert_int_equal(setenv("ELASTIC_POOL_BURST_QUEUE", "4", 1), 0);
        assert_int_equal(ep_sensor_new(&s), 0);
        ep_sensor_set_executor(s, 4, 4, 0);
        assert_int_equal(sensor_tick_at(s, 1000000), 0);
        assert_int_equal(sensor_probe_at(s, 1100000), 0);
        assert_int_equal(sensor_early_reports(s), 0);
        /* the next look is due at most a probe interval later */
        assert_int_equal(ep_sensor_get_timeout(s, &timeout), 0);
        assert_true(timeout <= 1100000 + SENSOR_BURST_PROBE_USEC);

        ep_sensor_set_executor(s, 4, 4, 6); /* over: told */
        assert_int_equal(sensor_probe_at(s, 1200000), 0);
        assert_int_equal(sensor_early_reports(s), 1);
        assert_int_equal(sensor_probe_at(s, 1300000), 0); /* still over: nothing new */
        assert_int_equal(sensor_early_reports(s), 1);
        ep_sensor_set_executor(s, 4, 4, 3); /* back under: told */
        assert_int_equal(sensor_probe_at(s, 1400000), 0);
        assert_int_equal(sensor_early_reports(s), 2);
        ep_sensor_set_executor(s, 4, 4, 9); /* over, and a tick tells it first */
        assert_int_equal(sensor_tick_at(s, 1500000), 0);
        assert_int_equal(sensor_probe_at(s, 1600000), 0);
        assert_int_equal(sensor_early_reports(s), 2);

        assert_int_equal(unsetenv("ELASTIC_POOL_BURST_QUEUE"), 0);
        assert_int_equal(ep_sensor_new(&plain), 0);
        ep_sensor_set_executor(plain, 4, 4, 100);
        assert_int_equal(sensor_probe_at(plain, 1000000), 0);
        assert_int_equal(sensor_early_reports(plain), 0);
}

/* A bad value is a hint ignored with a warning: the worker starts, the ticks still report. */
static void test_sensor_new_invalid_burst_queue_ignored(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;

        assert_int_equal(setenv("ELASTIC_POOL_BURST_QUEUE", "0", 1), 0);
        assert_int_equal(ep_sensor_new(&s), 0);
        ep_sensor_set_executor(s, 1, 1, 50);
        assert_int_equal(sensor_probe_at(s, 1000000), 0);
        assert_int_equal(sensor_early_reports(s), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                TEST(test_sensor_tick_at_fixture_cpu_absent_then_delta),
                TEST(test_sensor_tick_at_fixture_app_fields),
                cmocka_unit_test(test_sensor_next_deadline_fixed_grid),
                cmocka_unit_test(test_sensor_next_deadline_skips_missed_slots),
                TEST(test_sensor_new_invalid_interval_fails),
                TEST(test_sensor_new_invalid_worker_fails),
                TEST(test_sensor_set_interval_zero_fails),
                cmocka_unit_test(test_sensor_setters_null_sensor_ignored),
                TEST(test_sensor_get_timeout_first_tick_due_now),
                TEST(test_sensor_probe_at_reports_crossings_once),
                TEST(test_sensor_new_invalid_burst_queue_ignored),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
