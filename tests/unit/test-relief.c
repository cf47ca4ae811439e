/* SPDX-License-Identifier: MIT */
/* Relief moves (daemon/relief.c) on a Manager in memory (manager-fixture.c; workers that keep no user
 * state, so every move is a re-point and ends at once): a worker over admission_threshold for a
 * smoothing period hands its heaviest users to the worker with room until its projection is under the
 * threshold, never taking the target to it, one round per period; and, with compaction, load that rises
 * and falls twice moves each user at most once per swing: relief and compaction never undo each other.
 * On the burst path (executor queues told by report rows, sampled every CAPACITY_BURST_INTERVAL): a
 * worker saturated for burst_window beside one with room begins a round long before a smoothing period,
 * again burst_window later towards a new worker; a spike, a late reading or the path off begins none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#include <cmocka.h>

#include "frame.h"
#include "macro.h"
#include "manager-fixture.h"

#define INTERVAL (5 * USEC_PER_SEC)
#define MOVABLE ((1U << ELASTIC_POOL__CAPABILITY__CAPABILITY_SNAPSHOT_USERS) | \
                 (1U << ELASTIC_POOL__CAPABILITY__CAPABILITY_INSTALL_USERS))

static Manager *m;
static Worker *w[5];

static int setup(void **state) {
        m = fixture_manager_new();
        if (getenv("DBG"))
                log_set_max_level(LOG_DEBUG);
        return 0;
}

static int teardown(void **state) {
        fixture_manager_free(m);
        m = NULL;
        return 0;
}

/* seconds of reports, every interval, from the workers given (cpu < 0: silent) */
static void run(unsigned seconds, const double *cpu, size_t n) {
        for (usec_t t = 0; t < (usec_t) seconds * USEC_PER_SEC; t += INTERVAL) {
                fixture_advance(INTERVAL);
                for (size_t i = 0; i < n; i++)
                        if (w[i] && cpu[i] >= 0 && worker_in_policy(w[i]))
                                fixture_report(w[i], READING(.cpu = cpu[i]));
        }
}
#define RUN(seconds, ...) \
        run((seconds), (const double[]){__VA_ARGS__}, ELEMENTSOF(((const double[]){__VA_ARGS__})))

static void test_relief_moves_heaviest_users_to_room(void **state) {
        SurfaceUser *u;

        w[0] = fixture_add_worker(m, WORKER_ROUTABLE);
        w[1] = fixture_add_worker(m, WORKER_ROUTABLE);
        w[2] = fixture_add_worker(m, WORKER_ROUTABLE);
        fixture_set_users(m, w[1], 4);
        /* w2-3 is the heaviest: 12/21 of w2's busy time, 0.543 of its 0.95 */
        u = surface_user_get(&m->surface, "w2-3");
        u->busy_usec = 12 * USEC_PER_SEC;
        surface_user_get(&m->surface, "w2-0")->busy_usec = 8 * USEC_PER_SEC;
        surface_user_get(&m->surface, "w2-1")->busy_usec = USEC_PER_SEC;

        RUN(25, 0.3, 0.95, 0.05);
        assert_int_equal(m->relief.rounds, 0); /* over for 25 s: not a smoothing period yet */
        RUN(10, 0.3, 0.95, 0.05);
        assert_int_equal(m->relief.rounds, 1);
        /* the heaviest alone takes w2's projection under 0.8 (0.95 - 0.543) and w3's stays under it */
        assert_int_equal(u->worker, w[2]->id);
        assert_int_equal(m->relief.moved, 1);
        assert_int_equal(surface_worker_users(&m->surface, w[1]->id), 3);
        assert_false(relief_running(&m->relief));

        /* still over (the readings lag): no second round within the period */
        RUN(25, 0.3, 0.95, 0.3);
        assert_int_equal(m->relief.rounds, 1);
}

/* A user too heavy for the target is passed over for the heaviest one that fits. */
static void test_relief_passes_over_a_user_too_heavy(void **state) {
        w[0] = fixture_add_worker(m, WORKER_ROUTABLE);
        w[1] = fixture_add_worker(m, WORKER_ROUTABLE);
        w[2] = fixture_add_worker(m, WORKER_ROUTABLE);
        fixture_set_users(m, w[1], 3);
        surface_user_get(&m->surface, "w2-0")->busy_usec = 18 * USEC_PER_SEC; /* 0.855: too heavy */
        surface_user_get(&m->surface, "w2-1")->busy_usec = 2 * USEC_PER_SEC;  /* 0.095 */
        RUN(35, 0.3, 0.95, 0.5);
        assert_int_equal(m->relief.moved, 1);
        assert_int_equal(surface_user_get(&m->surface, "w2-1")->worker, w[2]->id);
        assert_int_equal(surface_user_get(&m->surface, "w2-0")->worker, w[1]->id);
        assert_int_equal(surface_user_get(&m->surface, "w2-2")->worker, w[1]->id); /* no share, no move */
}

/* Equal shares while nobody has measured consumption; the target's projection stays under the
 * threshold: a round stops before the move that would take it there. */
static void test_relief_never_fills_the_target(void **state) {
        w[0] = fixture_add_worker(m, WORKER_ROUTABLE);
        w[1] = fixture_add_worker(m, WORKER_ROUTABLE);
        w[2] = fixture_add_worker(m, WORKER_ROUTABLE);
        fixture_set_users(m, w[1], 4); /* 0.95 / 4 = 0.2375 each */

        RUN(35, 0.3, 0.95, 0.45);
        assert_int_equal(m->relief.rounds, 1);
        assert_int_equal(m->relief.moved, 1); /* 0.45 + 0.2375 = 0.69; a second would reach 0.925 */
        assert_int_equal(surface_worker_users(&m->surface, w[2]->id), 1);
}

static void test_relief_off_by_configuration(void **state) {
        m->config.relief_moves = false;
        w[0] = fixture_add_worker(m, WORKER_ROUTABLE);
        w[1] = fixture_add_worker(m, WORKER_ROUTABLE);
        w[2] = fixture_add_worker(m, WORKER_ROUTABLE);
        fixture_set_users(m, w[1], 4);
        RUN(60, 0.3, 0.95, 0.05);
        assert_int_equal(m->relief.rounds, 0);
        assert_int_equal(surface_worker_users(&m->surface, w[1]->id), 4);
}

/* Load rises (w2 full, a new worker relieves it), falls (compaction drains the new worker back onto
 * w2), rises (another new worker relieves w2), falls (drained again). Each swing moves each user at
 * most once, relief and compaction never both run, and nothing is stopped half-way. */
static void test_relief_and_compaction_take_turns(void **state) {
        uint64_t moves_before;
        SurfaceUser *u;

        w[0] = fixture_add_worker(m, WORKER_ROUTABLE);
        w[1] = fixture_add_worker(m, WORKER_ROUTABLE);
        fixture_set_users(m, w[1], 8);

        for (unsigned swing = 0; swing < 2; swing++) {
                /* rise: w2 full; scale-up would spawn (the fixture only decides it): a worker arrives */
                RUN(30, 0.3, 0.95);
                w[2 + swing] = fixture_add_worker(m, WORKER_ROUTABLE);
                moves_before = m->moves.next_id;
                for (unsigned t = 0; t < 12 && m->relief.rounds == swing; t++)
                        if (swing == 0)
                                RUN(5, 0.3, 0.95, 0.05);
                        else
                                RUN(5, 0.3, 0.95, -1, 0.05);
                /* the relieved load follows the users that moved */
                if (swing == 0)
                        RUN(40, 0.3, 0.7, 0.3);
                else
                        RUN(40, 0.3, 0.7, -1, 0.3);
                CHECK_EXPLAINED(m->relief.rounds == swing + 1, "swing %u: %llu relief rounds", swing,
                                (unsigned long long) m->relief.rounds);
                assert_int_equal(m->compaction.drains_done, swing);
                assert_int_equal(m->relief.moved, 2 * (swing + 1)); /* 0.95 - 2 x 0.119 < 0.8 */
                assert_int_equal(m->moves.next_id - moves_before, 2);
                assert_int_equal(surface_worker_users(&m->surface, w[2 + swing]->id), 2);

                /* fall: the ledger compacts the least occupied, the relieving worker, onto w2 */
                moves_before = m->moves.next_id;
                if (swing == 0)
                        RUN(60, 0.05, 0.1, 0.05);
                else
                        RUN(60, 0.05, 0.1, -1, 0.05);
                assert_int_equal(m->compaction.drains_done, swing + 1);
                assert_int_equal(m->relief.rounds, swing + 1);
                assert_int_equal(m->moves.next_id - moves_before, 2);
                assert_int_equal(w[2 + swing]->state, WORKER_STOPPING);
                assert_int_equal(surface_worker_users(&m->surface, w[1]->id), 8);
        }
        assert_int_equal(m->compaction.drains_stopped, 0);
        for (unsigned k = 0; k < 8; k++) {
                char name[16];
                snprintf(name, sizeof name, "w2-%u", k);
                u = surface_user_get(&m->surface, name);
                assert_non_null(u); /* everyone still logged in */
        }
}

/* ---- the burst path ---- */

/* The gate, pure: one row per condition, at now = T0 + 60 s with burst_window 1.5 s, gap_max 750 ms. */
static void test_relief_burst_due_table(void **state) {
        const usec_t now = FIXTURE_T0 + 60 * USEC_PER_SEC, ms = USEC_PER_MSEC;
        const BurstParams on = { .window = 1500 * ms, .queue = 8, .gap_max = 750 * ms };
        const BurstParams off = { .window = 0, .queue = 8, .gap_max = 750 * ms };
        const struct {
                const char *name;
                const BurstParams *p;
                usec_t last, over_for; /* the last sample and the streak, before now (over_for 0: none) */
                int late;
                usec_t round_ago;      /* the worker's last round (0: never) */
                bool due;
        } rows[] = {
                { "saturated for burst_window", &on, 0, 1500 * ms, -1, 0, true },
                { "saturated longer, last round long ago", &on, 0, 9000 * ms, -1, 30000 * ms, true },
                { "a spike so far", &on, 0, 1250 * ms, -1, 0, false },
                { "not saturated", &on, 0, 0, -1, 0, false },
                { "a signal late", &on, 0, 1500 * ms, BURST_EXECUTOR_QUEUE, 0, false },
                { "the last sample too old", &on, 1000 * ms, 3000 * ms, -1, 0, false },
                { "the gate: a round 1.25 s ago", &on, 0, 9000 * ms, -1, 1250 * ms, false },
                { "the gate: a round burst_window ago", &on, 0, 9000 * ms, -1, 1500 * ms, true },
                { "the path off", &off, 0, 9000 * ms, -1, 0, false },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                usec_t round = rows[i].round_ago ? now - rows[i].round_ago : 0;
                BurstTrack t = BURST_TRACK_INIT;

                t.last = now - rows[i].last;
                t.over_since = rows[i].over_for > 0 ? now - rows[i].over_for : 0;
                t.late = rows[i].late;
                t.waiting = rows[i].over_for > 0 ? 12 : 0;
                CHECK_EXPLAINED(relief_burst_due(&t, rows[i].p, round, now) == rows[i].due,
                                "%s: due should be %d", rows[i].name, rows[i].due);
        }
        /* never sampled: nothing is known, nothing is due */
        assert_false(relief_burst_due(&BURST_TRACK_INIT, &on, 0, now));
}

/* A report row on the grid: light CPU, the executor full while `queue` requests wait. */
static void report_queue(Worker *wk, uint32_t queue) {
        Row row = { .received = fixture_now, .seq = wk->window.total + 1, .has_cpu = true, .cpu = 0.1,
                    .has_executor = true, .executor_busy = queue > 0 ? 1 : 0, .executor_total = 1,
                    .has_executor_queue = true, .executor_queue = queue };

        capacity_take_row(&m->capacity, wk, &row);
}

/* An early report: the executor queue only, off the grid (the sensor's crossing of burst_queue). */
static void early_queue(Worker *wk, uint32_t queue) {
        Row row = { .received = fixture_now, .early = true, .has_executor = true, .executor_busy = 1,
                    .executor_total = 1, .has_executor_queue = true, .executor_queue = queue };

        capacity_take_row(&m->capacity, wk, &row);
}

/* burst samples for span, one every CAPACITY_BURST_INTERVAL (the timer's work) */
static void sample_for(usec_t span) {
        for (usec_t t = 0; t < span; t += CAPACITY_BURST_INTERVAL) {
                fixture_advance(CAPACITY_BURST_INTERVAL);
                capacity_burst_sample(&m->capacity, fixture_now);
        }
}

/* w1 (the reception) keeps 8 users who logged in at once, w2 beside it idle: a quiet smoothed past for
 * both, then w1's executor queue at 12 (saturated), w2's at 0. */
static void burst_pool(void) {
        w[0] = fixture_add_worker(m, WORKER_ROUTABLE);
        w[1] = fixture_add_worker(m, WORKER_ROUTABLE);
        fixture_set_users(m, w[0], 8);
        for (unsigned i = 0; i < m->config.smoothing_rows; i++) {
                fixture_advance(m->config.occupancy_interval);
                report_queue(w[0], 0);
                report_queue(w[1], 0);
        }
        report_queue(w[0], 12);
        report_queue(w[1], 0);
}

typedef enum BurstCase {
        BURST_CASE_SUSTAINED, /* saturated past burst_window */
        BURST_CASE_SPIKE,     /* saturated for 1 s, then calm */
        BURST_CASE_LATE,      /* its reports stopped: the queue is late, not full */
        BURST_CASE_OFF,       /* burst_window = 0 */
} BurstCase;

/* The table: what a burst of each kind on w1, beside w2 with room, does within burst_window + 1 s
 * (about 1/12 of a smoothing period: the smoothed path alone begins nothing in that time). */
static void test_relief_burst_rounds_table(void **state) {
        const struct {
                BurstCase kind;
                uint64_t rounds;
                unsigned left; /* users on w1 afterwards */
        } rows[] = {
                /* 1.0 - 5 x 1/8 < reception_threshold 0.5; w2 at 0.1 + 5/8 stays under 0.8 */
                { BURST_CASE_SUSTAINED, 1, 3 },
                { BURST_CASE_SPIKE, 0, 8 },
                { BURST_CASE_LATE, 0, 8 },
                { BURST_CASE_OFF, 0, 8 },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                if (i > 0)
                        teardown(state), setup(state);
                burst_pool();
                switch (rows[i].kind) {
                case BURST_CASE_SUSTAINED:
                        sample_for(m->config.burst_window + USEC_PER_SEC);
                        break;
                case BURST_CASE_SPIKE:
                        sample_for(USEC_PER_SEC);
                        early_queue(w[0], 2);
                        sample_for(m->config.burst_window);
                        break;
                case BURST_CASE_LATE:
                        /* past the stale horizon (stale_after x interval) without a report of w1 */
                        fixture_advance(m->config.stale_after * m->config.occupancy_interval);
                        report_queue(w[1], 0);
                        sample_for(m->config.burst_window + USEC_PER_SEC);
                        assert_int_equal(w[0]->burst.late, BURST_EXECUTOR_QUEUE);
                        break;
                case BURST_CASE_OFF:
                        m->config.burst_window = 0;
                        capacity_setup_parameters(&m->capacity);
                        sample_for(m->config.occupancy_interval);
                        break;
                }
                CHECK_EXPLAINED(m->relief.burst_rounds == rows[i].rounds &&
                                        surface_worker_users(&m->surface, w[0]->id) == rows[i].left,
                                "row %zu: %llu burst rounds, %u users left on w1", i,
                                (unsigned long long) m->relief.burst_rounds,
                                surface_worker_users(&m->surface, w[0]->id));
                assert_int_equal(m->relief.rounds, m->relief.burst_rounds);
        }
}

/* After a burst round, w1 (still saturated) and w2 (now saturated too) leave nobody with room; a worker
 * that joins takes users from w1 once burst_window has passed since w1's last round, not a smoothing
 * period. */
static void test_relief_burst_gate_is_burst_window(void **state) {
        usec_t first;

        burst_pool();
        sample_for(m->config.burst_window + CAPACITY_BURST_INTERVAL);
        assert_int_equal(m->relief.burst_rounds, 1);
        first = m->relief.workers[w[0]->id].last_round;
        assert_int_equal(surface_worker_users(&m->surface, w[0]->id), 3);
        early_queue(w[1], 12); /* its new users fill it */

        w[2] = fixture_add_worker(m, WORKER_ROUTABLE);
        while (fixture_now + CAPACITY_BURST_INTERVAL < first + m->config.burst_window)
                sample_for(CAPACITY_BURST_INTERVAL);
        assert_int_equal(m->relief.burst_rounds, 1);
        sample_for(CAPACITY_BURST_INTERVAL);
        assert_int_equal(m->relief.burst_rounds, 2);
        /* 1.0 - 2 x 1/3 < 0.5: two of w1's three users go to w3, which has no reading yet (0.0) */
        assert_int_equal(surface_worker_users(&m->surface, w[2]->id), 2);
        assert_int_equal(surface_worker_users(&m->surface, w[0]->id), 1);
        assert_int_equal(surface_worker_users(&m->surface, w[1]->id), 5);
        assert_true(fixture_now - first < m->config.occupancy_interval * m->config.smoothing_rows);
}

/* Workers that keep user state: a burst round asks w1 for every package it needs at once, not one
 * after the other, and ends with the last of them (one failing moves the others all the same). */
static void test_relief_burst_moves_side_by_side(void **state) {
        uint64_t ids[8];
        unsigned n = 0;

        burst_pool();
        w[0]->capabilities = w[1]->capabilities = MOVABLE;
        sample_for(m->config.burst_window + CAPACITY_BURST_INTERVAL);
        assert_int_equal(m->relief.burst_rounds, 1);
        /* 1.0 - 5 x 1/8 < reception_threshold: five snapshot requests, none answered yet */
        while (fixture_frame_pending(w[0]) && n < ELEMENTSOF(ids)) {
                Frame *f = fixture_read_frame(w[0], ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST);

                ids[n++] = f->snapshot_request->move_id;
                frame_free(f);
        }
        assert_int_equal(n, 5);
        assert_int_equal(m->relief.n_batch, 5);
        assert_true(relief_running(&m->relief));
        for (unsigned i = 0; i < n; i++) {
                Frame *f;

                fixture_package(w[0], ids[i], i == 0 ? NULL : "state", i == 0 ? "no such user" : NULL);
                if (i == 0)
                        continue;
                f = fixture_read_frame(w[1], ELASTIC_POOL__FRAME__BODY_INSTALL);
                frame_free(f);
                fixture_install_result(w[1], ids[i], true, NULL);
                assert_int_equal(relief_running(&m->relief), i < n - 1);
        }
        assert_int_equal(m->relief.moved, 4);
        assert_int_equal(surface_worker_users(&m->surface, w[1]->id), 4);
        assert_int_equal(m->relief.n_batch, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_relief_moves_heaviest_users_to_room, setup, teardown),
                cmocka_unit_test_setup_teardown(test_relief_never_fills_the_target, setup, teardown),
                cmocka_unit_test_setup_teardown(test_relief_passes_over_a_user_too_heavy, setup, teardown),
                cmocka_unit_test_setup_teardown(test_relief_off_by_configuration, setup, teardown),
                cmocka_unit_test_setup_teardown(test_relief_and_compaction_take_turns, setup, teardown),
                cmocka_unit_test(test_relief_burst_due_table),
                cmocka_unit_test_setup_teardown(test_relief_burst_rounds_table, setup, teardown),
                cmocka_unit_test_setup_teardown(test_relief_burst_gate_is_burst_window, setup, teardown),
                cmocka_unit_test_setup_teardown(test_relief_burst_moves_side_by_side, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
