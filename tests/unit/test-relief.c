/* SPDX-License-Identifier: MIT */
/* Relief moves (daemon/relief.c) on a Manager in memory (manager-fixture.c; workers that keep no user
 * state, so every move is a re-point and ends at once): a worker over admission_threshold for a
 * smoothing period hands its heaviest users to the worker with room until its projection is under the
 * threshold, never taking the target to it, one round per period; and, with compaction, load that rises
 * and falls twice moves each user at most once per swing: relief and compaction never undo each other. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#include <cmocka.h>

#include "macro.h"
#include "manager-fixture.h"

#define INTERVAL (5 * USEC_PER_SEC)

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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_relief_moves_heaviest_users_to_room, setup, teardown),
                cmocka_unit_test_setup_teardown(test_relief_never_fills_the_target, setup, teardown),
                cmocka_unit_test_setup_teardown(test_relief_passes_over_a_user_too_heavy, setup, teardown),
                cmocka_unit_test_setup_teardown(test_relief_off_by_configuration, setup, teardown),
                cmocka_unit_test_setup_teardown(test_relief_and_compaction_take_turns, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
