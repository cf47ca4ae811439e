/* SPDX-License-Identifier: MIT */
/* Report assembly: cpu as Δusage / Δwall (absent on the first sample and whenever two samples do not
 * compare), and every field the readings or the application did not give stays absent, never 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "report.h"

#define CGROUP2 ELASTIC_POOL__CPU_SOURCE__CPU_SOURCE_CGROUP2
#define CPU_PROCFS ELASTIC_POOL__CPU_SOURCE__CPU_SOURCE_PROCFS

static Readings cpu_reading(uint64_t usage, uint64_t generation, ElasticPool__CpuSource source) {
        return (Readings) {
                .generation = generation,
                .has_cpu_usage = true,
                .cpu_usage_usec = usage,
                .cpu_source = source,
        };
}

static void test_cpu_sample_update_first_sample_absent(void **state) {
        Readings rd = cpu_reading(1000, 1, CGROUP2);
        CpuSample last = {};
        double cpu = -1;
        usec_t span = 0;

        assert_false(cpu_sample_update(&last, &rd, 1000000, &cpu, &span));
        assert_true(last.valid);
}

static void test_cpu_sample_update_delta_over_wall_time(void **state) {
        Readings a = cpu_reading(1000000, 1, CGROUP2), b = cpu_reading(1250000, 1, CGROUP2);
        CpuSample last = {};
        double cpu = -1;
        usec_t span = 0;

        (void) cpu_sample_update(&last, &a, 10000000, &cpu, &span);
        assert_true(cpu_sample_update(&last, &b, 10500000, &cpu, &span));
        assert_int_equal(span, 500000);
        assert_true(cpu > 0.4999 && cpu < 0.5001);
}

static void test_cpu_sample_update_multi_core_exceeds_one(void **state) {
        Readings a = cpu_reading(0, 1, CGROUP2), b = cpu_reading(1800000, 1, CGROUP2);
        CpuSample last = {};
        double cpu = -1;
        usec_t span = 0;

        (void) cpu_sample_update(&last, &a, 1000000, &cpu, &span);
        assert_true(cpu_sample_update(&last, &b, 2000000, &cpu, &span));
        assert_true(cpu > 1.7999 && cpu < 1.8001); /* a fraction of ONE core: two busy threads read 2 */
}

static void test_cpu_sample_update_missing_tick_spans_gap(void **state) {
        Readings a = cpu_reading(0, 1, CGROUP2), missing = { .generation = 1 },
                 c = cpu_reading(1000000, 1, CGROUP2);
        CpuSample last = {};
        double cpu = -1;
        usec_t span = 0;

        (void) cpu_sample_update(&last, &a, 1000000, &cpu, &span);
        assert_false(cpu_sample_update(&last, &missing, 1500000, &cpu, &span));
        /* the next good reading covers both intervals and says so */
        assert_true(cpu_sample_update(&last, &c, 2000000, &cpu, &span));
        assert_int_equal(span, 1000000);
        assert_true(cpu > 0.9999 && cpu < 1.0001);
}

static void test_cpu_sample_update_counter_backwards_absent(void **state) {
        Readings a = cpu_reading(5000, 1, CPU_PROCFS), b = cpu_reading(4000, 1, CPU_PROCFS),
                 c = cpu_reading(6000, 1, CPU_PROCFS);
        CpuSample last = {};
        double cpu = -1;
        usec_t span = 0;

        (void) cpu_sample_update(&last, &a, 1000, &cpu, &span);
        assert_false(cpu_sample_update(&last, &b, 2000, &cpu, &span));
        assert_true(cpu_sample_update(&last, &c, 3000, &cpu, &span)); /* restarted from the lower base */
        assert_true(cpu > 1.9999 && cpu < 2.0001);
}

static void test_cpu_sample_update_generation_change_absent(void **state) {
        Readings a = cpu_reading(5000, 1, CGROUP2), b = cpu_reading(9000, 2, CGROUP2);
        CpuSample last = {};
        double cpu;
        usec_t span;

        (void) cpu_sample_update(&last, &a, 1000, &cpu, &span);
        assert_false(cpu_sample_update(&last, &b, 2000, &cpu, &span));
}

static void test_cpu_sample_update_source_change_absent(void **state) {
        Readings a = cpu_reading(5000, 1, CGROUP2), b = cpu_reading(9000, 1, CPU_PROCFS);
        CpuSample last = {};
        double cpu;
        usec_t span;

        (void) cpu_sample_update(&last, &a, 1000, &cpu, &span);
        assert_false(cpu_sample_update(&last, &b, 2000, &cpu, &span));
}

static void test_report_build_app_fields_absent_until_set(void **state) {
        ReportStorage st;
        Readings rd = {};
        AppFields app = {};
        ReportInput in = { .seq = 1, .monotonic_usec = 5, .readings = &rd, .app = &app };
        ElasticPool__OccupancyReport *r = report_build(&st, &in);

        assert_true(r->has_seq && r->seq == 1);
        assert_true(r->has_monotonic_usec && r->monotonic_usec == 5);
        assert_false(r->has_users || r->has_pages || r->has_connections || r->has_active_users);
        assert_null(r->executor);
        assert_null(r->backlog);
}

static void test_report_build_absent_readings_stay_absent(void **state) {
        ReportStorage st;
        Readings rd = { .memory_bytes = 123, .cpu_source = CGROUP2 }; /* values without their has_ flags */
        AppFields app = {};
        ReportInput in = { .seq = 2, .readings = &rd, .app = &app, .cpu = 0.5 };
        ElasticPool__OccupancyReport *r = report_build(&st, &in);

        assert_false(r->has_cpu);
        assert_false(r->has_cpu_source);
        assert_false(r->has_interval_usec);
        assert_false(r->has_memory_bytes);
        assert_false(r->has_memory_source);
        assert_null(r->pressure);
        assert_null(r->load);
}

static void test_report_build_zero_values_stay_present(void **state) {
        ReportStorage st;
        Readings rd = {
                .has_memory = true,
                .memory_bytes = 0,
                .memory_source = ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP2,
                .has_cpu_pressure = true,
                .cpu_some_avg10 = 0.0,
        };
        AppFields app = { .has_users = true, .users = 0, .has_active_users = true, .active_users = 0 };
        ReportInput in = {
                .seq = 3, .readings = &rd, .app = &app, .has_cpu = true, .cpu = 0.0, .cpu_span = 5,
        };
        ElasticPool__OccupancyReport *r = report_build(&st, &in);

        /* a measured 0 is a reading: present, and 0 */
        assert_true(r->has_cpu && r->cpu == 0.0);
        assert_true(r->has_interval_usec && r->interval_usec == 5);
        assert_true(r->has_memory_bytes && r->memory_bytes == 0);
        assert_true(r->has_users && r->users == 0);
        assert_true(r->has_active_users && r->active_users == 0);
        assert_non_null(r->pressure);
        assert_true(r->pressure->has_cpu_some_avg10);
        assert_false(r->pressure->has_memory_some_avg10);
}

static void test_report_build_every_field(void **state) {
        ReportStorage st;
        Readings rd = {
                .has_memory = true, .memory_bytes = 1ULL << 30,
                .memory_source = ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_PROCFS,
                .cpu_source = CPU_PROCFS,
                .has_cpu_pressure = true, .cpu_some_avg10 = 1.5,
                .has_memory_pressure = true, .memory_some_avg10 = 2.5,
                .has_load = true, .load = { 1, 2, 3 },
        };
        AppFields app = {
                .has_users = true, .users = 10, .has_pages = true, .pages = 20,
                .has_connections = true, .connections = 30, .has_active_users = true, .active_users = 4,
                .has_executor = true, .busy = 3, .total = 8, .queue_depth = 2,
                .has_backlog = true, .pending = 11, .outbox = 12,
        };
        ReportInput in = {
                .seq = 9, .readings = &rd, .app = &app, .has_cpu = true, .cpu = 0.75, .cpu_span = 500,
        };
        ElasticPool__OccupancyReport *r = report_build(&st, &in);

        assert_int_equal(r->cpu_source, CPU_PROCFS);
        assert_true(r->has_cpu_source);
        assert_int_equal(r->memory_bytes, 1ULL << 30);
        assert_int_equal(r->memory_source, ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_PROCFS);
        assert_int_equal(r->users, 10);
        assert_int_equal(r->pages, 20);
        assert_int_equal(r->connections, 30);
        assert_int_equal(r->active_users, 4);
        assert_int_equal(r->executor->busy, 3);
        assert_int_equal(r->executor->total, 8);
        assert_int_equal(r->executor->queue_depth, 2);
        assert_true(r->executor->has_busy && r->executor->has_total && r->executor->has_queue_depth);
        assert_int_equal(r->backlog->pending, 11);
        assert_int_equal(r->backlog->outbox, 12);
        assert_true(r->load->avg15 == 3);
        assert_true(r->pressure->memory_some_avg10 == 2.5);
}

/* An early report carries the executor and the time only, flagged early, without a seq. */
static void test_report_build_early_executor_only(void **state) {
        ReportStorage st;
        AppFields app = { .has_executor = true, .busy = 4, .total = 4, .queue_depth = 9, .has_users = true,
                          .users = 3 };
        ElasticPool__OccupancyReport *r = report_build_early(&st, 7, &app);

        assert_non_null(r);
        assert_true(r->has_early && r->early);
        assert_true(r->has_monotonic_usec && r->monotonic_usec == 7);
        assert_false(r->has_seq || r->has_cpu || r->has_memory_bytes || r->has_users);
        assert_non_null(r->executor);
        assert_int_equal(r->executor->queue_depth, 9);
        assert_int_equal(r->executor->total, 4);
        app.has_executor = false;
        assert_null(report_build_early(&st, 8, &app)); /* nothing to tell early */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_report_build_early_executor_only),
                cmocka_unit_test(test_cpu_sample_update_first_sample_absent),
                cmocka_unit_test(test_cpu_sample_update_delta_over_wall_time),
                cmocka_unit_test(test_cpu_sample_update_multi_core_exceeds_one),
                cmocka_unit_test(test_cpu_sample_update_missing_tick_spans_gap),
                cmocka_unit_test(test_cpu_sample_update_counter_backwards_absent),
                cmocka_unit_test(test_cpu_sample_update_generation_change_absent),
                cmocka_unit_test(test_cpu_sample_update_source_change_absent),
                cmocka_unit_test(test_report_build_app_fields_absent_until_set),
                cmocka_unit_test(test_report_build_absent_readings_stay_absent),
                cmocka_unit_test(test_report_build_zero_values_stay_present),
                cmocka_unit_test(test_report_build_every_field),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
