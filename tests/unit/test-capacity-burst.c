/* SPDX-License-Identifier: MIT */
/* The burst path's shell (daemon/capacity-burst.c) on a Manager in memory with a test-driven clock
 * (manager-fixture.c): samples every CAPACITY_BURST_INTERVAL of the executor queue the reports (and the
 * early reports) tell, a sustained queue making scale-up want a worker while the smoothed window still
 * reads room, a spike wanting none, an early report kept out of the window, and a queue whose reports
 * stopped read as late, never as empty. The fixture has no front end and no sock_diag: those two signals
 * are absent here (integration/burst-growth has them all). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "manager-fixture.h"

static Manager *m;

static int setup(void **state) {
        m = fixture_manager_new();
        return 0;
}

static int teardown(void **state) {
        fixture_manager_free(m);
        m = NULL;
        return 0;
}

/* A report on the grid: light CPU, its executor full when `queue` requests wait, idle otherwise. */
static void report_queue(Worker *w, uint32_t queue) {
        Row row = { .received = fixture_now, .seq = w->window.total + 1, .has_cpu = true, .cpu = 0.1,
                    .has_executor = true, .executor_busy = queue > 0 ? 4 : 0, .executor_total = 4,
                    .has_executor_queue = true, .executor_queue = queue };

        capacity_take_row(&m->capacity, w, &row);
}

/* A quiet past: smoothing_rows idle reports, one interval apart. A burst then moves the smoothed window
 * by one row of its six: it still reads room. */
static Worker *quiet_worker(void) {
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);

        for (unsigned i = 0; i < m->config.smoothing_rows; i++) {
                fixture_advance(m->config.occupancy_interval);
                report_queue(w, 0);
        }
        return w;
}

/* An early report: the executor only, off the grid. */
static void early_queue(Worker *w, uint32_t queue) {
        Row row = { .received = fixture_now, .early = true, .has_executor = true, .executor_busy = 4,
                    .executor_total = 4, .has_executor_queue = true, .executor_queue = queue };

        capacity_take_row(&m->capacity, w, &row);
}

/* Samples for span, one every CAPACITY_BURST_INTERVAL; returns whether scale-up ever decided SPAWN. */
static bool sample_for(usec_t span) {
        bool spawn = false;

        for (usec_t t = 0; t < span; t += CAPACITY_BURST_INTERVAL) {
                fixture_advance(CAPACITY_BURST_INTERVAL);
                capacity_burst_sample(&m->capacity, fixture_now);
                spawn = spawn || m->capacity.last_scale_up == DECISION_SPAWN;
        }
        return spawn;
}

static void test_capacity_burst_sustained_queue_wants_a_worker(void **state) {
        Worker *w = quiet_worker();
        PolicyInput in;
        Decision d;

        report_queue(w, 0);
        assert_false(sample_for(USEC_PER_SEC));
        assert_int_equal(m->capacity.burst.status, BURST_CALM);

        report_queue(w, 12);
        assert_false(sample_for(m->config.burst_window - CAPACITY_BURST_INTERVAL));
        assert_int_equal(m->capacity.burst.status, BURST_RISING);
        assert_true(sample_for(2 * CAPACITY_BURST_INTERVAL));
        assert_int_equal(m->capacity.burst.status, BURST_SUSTAINED);
        assert_non_null(strstr(m->capacity.burst.reason, "burst: w1 waiting 12/8 (executor queue 12)"));
        /* the smoothed window alone reads room: it is the burst path that wants the worker */
        capacity_policy_input(&m->capacity, &in);
        policy_scale_up(&in, &m->capacity.policy, &d);
        assert_int_equal(d.kind, DECISION_NONE);
        /* the fixture's spawn throttle has given up: the spawn is refused, through scale-up's own guards */
        assert_true(m->capacity.scale_up_hold.active);
        assert_int_equal(m->capacity.scale_up_hold.kind, DECISION_REFUSED);
}

/* The worker a burst spawned joins the pool: the reading of the old pool must not spawn another before a
 * sample judged the new one (the newcomer has room until it fills). */
static void test_capacity_burst_one_spawn_per_reading(void **state) {
        Worker *w = quiet_worker();
        BurstReading buf;

        report_queue(w, 12);
        assert_true(sample_for(m->config.burst_window + CAPACITY_BURST_INTERVAL));
        assert_int_equal(m->capacity.burst.status, BURST_SUSTAINED);
        (void) fixture_add_worker(m, WORKER_ROUTABLE);
        assert_int_equal(capacity_burst_reading(&m->capacity, &buf)->status, BURST_CALM);
        capacity_check(&m->capacity);
        assert_int_not_equal(m->capacity.last_scale_up, DECISION_SPAWN);
        /* the next sample: w2 not sampled yet, then with room */
        assert_false(sample_for(2 * CAPACITY_BURST_INTERVAL));
        assert_int_equal(m->capacity.burst.status, BURST_CALM);
}

static void test_capacity_burst_spike_wants_none(void **state) {
        Worker *w = quiet_worker();

        report_queue(w, 0);
        assert_false(sample_for(USEC_PER_SEC));
        early_queue(w, 30);
        assert_false(sample_for(USEC_PER_SEC));
        assert_int_equal(m->capacity.burst.status, BURST_RISING);
        early_queue(w, 2);
        assert_false(sample_for(2 * USEC_PER_SEC));
        assert_int_equal(m->capacity.burst.status, BURST_CALM);
        assert_int_equal(m->capacity.last_scale_up, DECISION_NONE);
        assert_false(m->capacity.scale_up_hold.active);
}

/* An early report updates the queue the burst path reads, and nothing else: the window keeps its rows. */
static void test_capacity_burst_early_report_not_archived(void **state) {
        Worker *w = quiet_worker();
        uint64_t rows;

        report_queue(w, 1);
        rows = w->window.total;
        fixture_advance(100 * USEC_PER_MSEC);
        early_queue(w, 17);
        assert_int_equal(w->window.total, rows);
        assert_int_equal(w->executor_queue, 17);
        assert_true(w->executor_queue_at == fixture_now);
}

/* A queue the reports stopped telling is late: it breaks the streak, and is named, never read as 0. */
static void test_capacity_burst_stale_queue_is_late(void **state) {
        Worker *w = quiet_worker();

        report_queue(w, 12);
        assert_false(sample_for(USEC_PER_SEC));
        assert_true(w->burst.over_since != 0);
        /* past the stale horizon (stale_after x interval) without a report */
        fixture_advance(m->config.stale_after * m->config.occupancy_interval);
        capacity_burst_sample(&m->capacity, fixture_now);
        assert_int_equal(w->burst.late, BURST_EXECUTOR_QUEUE);
        assert_int_equal(w->burst.over_since, 0);
        assert_int_equal(m->capacity.burst.status, BURST_HELD);
        assert_non_null(strstr(m->capacity.burst.reason, "burst held: w1 executor queue not current for"));
        /* the sole worker's stale reading holds scale-up first: the existing hold stands */
        assert_true(m->capacity.scale_up_hold.active);
        assert_int_equal(m->capacity.scale_up_hold.kind, DECISION_HELD);
}

/* burst_window = 0: no timer, the reading is off, nothing is sampled into a spawn. */
static void test_capacity_burst_off(void **state) {
        Worker *w = quiet_worker();

        assert_non_null(m->capacity.burst_timer);
        m->config.burst_window = 0;
        capacity_setup_parameters(&m->capacity);
        assert_null(m->capacity.burst_timer);
        assert_int_equal(m->capacity.burst.status, BURST_OFF);
        report_queue(w, 50);
        assert_false(sample_for(3 * USEC_PER_SEC));
        assert_int_equal(m->capacity.burst.status, BURST_OFF);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_capacity_burst_sustained_queue_wants_a_worker, setup, teardown),
                cmocka_unit_test_setup_teardown(test_capacity_burst_one_spawn_per_reading, setup, teardown),
                cmocka_unit_test_setup_teardown(test_capacity_burst_spike_wants_none, setup, teardown),
                cmocka_unit_test_setup_teardown(test_capacity_burst_early_report_not_archived, setup, teardown),
                cmocka_unit_test_setup_teardown(test_capacity_burst_stale_queue_is_late, setup, teardown),
                cmocka_unit_test_setup_teardown(test_capacity_burst_off, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
