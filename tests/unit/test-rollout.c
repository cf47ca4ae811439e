/* SPDX-License-Identifier: MIT */
/* The rolling reload (daemon/rollout.c) on a Manager in memory (manager-fixture.c: workers without user
 * state, so every move is a re-point that ends at once; spawning given up, so a worker of the new
 * definition is added by the test as if it had been spawned). Once one new worker is routable, new users
 * and the reception go to it; the old workers are replaced one at a time, the old reception first, each
 * next one only after the last is gone and a further new worker is routable; a new definition that
 * cannot be spawned stops the rollout and the old workers take users again; a reload during a rollout
 * supersedes it; under reload_state=require-compatible a worker whose users cannot be carried keeps them
 * and an empty one is retired. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "log.h"
#include "macro.h"
#include "manager-fixture.h"
#include "pool-internal.h"

static Manager *m;

static int setup(void **state) {
        m = fixture_manager_new();
        /* the workers the test adds as if the rollout had spawned them must not look like surplus before
         * the rollout starts */
        m->config.compaction_margin = 100;
        capacity_setup_parameters(&m->capacity);
        if (getenv("DBG"))
                log_set_max_level(LOG_DEBUG);
        return 0;
}

static int teardown(void **state) {
        fixture_manager_free(m);
        m = NULL;
        return 0;
}

/* A worker of the current definition, as if the rollout had spawned it and it became routable. */
static Worker *new_worker(void) {
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);

        w->exec_generation = m->pool.exec_generation;
        return w;
}

/* A fresh reading of every worker in the policies' world: drains rest on readings. */
static void reports(void) {
        fixture_advance(USEC_PER_SEC);
        for (size_t i = 0; i < m->pool.n_workers; i++)
                if (worker_in_policy(m->pool.workers[i]))
                        fixture_report(m->pool.workers[i], READING(.cpu = 0.1));
}

static void dies(Worker *w) {
        siginfo_t si = { .si_code = CLD_EXITED, .si_status = 0 };

        pool_worker_exited(&m->pool, w, &si);
}

static void test_rollout_one_at_a_time(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE), *w3;

        fixture_set_users(m, w1, 2);
        fixture_set_users(m, w2, 2);
        m->pool.exec_generation = 1;
        w3 = new_worker();
        reports();
        rollout_start(&m->rollout, fixture_now);
        assert_true(m->rollout.active);
        assert_int_equal(m->rollout.total, 2);
        /* the new version takes over the reception; the old ones take no new users */
        assert_true(m->pool.rolling);
        assert_ptr_equal(m->pool.reception, w3);
        assert_false(worker_takes_users(w2));
        assert_string_equal(worker_why_no_users(w2),
                            "it runs the old definition while a rolling reload replaces it");
        assert_true(worker_takes_users(w3));
        assert_null(worker_why_no_users(w3));
        /* the old reception went first: its users re-pointed to w3, it is retiring; w2 untouched */
        assert_int_equal(surface_worker_users(&m->surface, w1->id), 0);
        assert_int_equal(surface_worker_users(&m->surface, w3->id), 2);
        assert_true(w1->state == WORKER_DRAINING || w1->state == WORKER_STOPPING);
        assert_int_equal(w2->state, WORKER_ROUTABLE);
        assert_false(w2->evacuating);
        /* w2 waits for w1 to be gone and for a second new worker */
        rollout_step(&m->rollout, fixture_now);
        assert_int_equal(w2->state, WORKER_ROUTABLE);
        Worker *w4 = new_worker();
        reports();
        rollout_step(&m->rollout, fixture_now);
        assert_int_equal(w2->state, WORKER_ROUTABLE);
        dies(w1);
        /* the death stepped it: w2 drained to the new workers and retired */
        assert_int_equal(surface_worker_users(&m->surface, w2->id), 0);
        assert_int_equal(surface_worker_users(&m->surface, w3->id) + surface_worker_users(&m->surface, w4->id), 4);
        assert_true(w2->state == WORKER_DRAINING || w2->state == WORKER_STOPPING);
        assert_true(m->rollout.active);
        dies(w2);
        assert_false(m->rollout.active);
        assert_false(m->pool.rolling);
        assert_string_equal(m->rollout.last, "2 workers replaced");
        assert_int_equal(m->rollout.done, 1);
}

/* Spawning is given up in the fixture: the new definition cannot start. */
static void test_rollout_stops_when_the_new_definition_cannot_start(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE);

        m->pool.exec_generation = 1;
        rollout_start(&m->rollout, fixture_now);
        assert_false(m->rollout.active);
        assert_int_equal(m->rollout.stopped, 1);
        assert_non_null(strstr(m->rollout.last, "cannot spawn a worker of the new definition"));
        assert_true(worker_takes_users(w1));
        assert_ptr_equal(m->pool.reception, w1);
}

static void test_rollout_superseded(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w3;

        (void) fixture_add_worker(m, WORKER_ROUTABLE);
        m->pool.exec_generation = 1;
        w3 = new_worker();
        rollout_start(&m->rollout, fixture_now);
        assert_true(m->pool.rolling);
        /* another reload before the first ends: every worker not of the newest definition is old */
        m->pool.exec_generation = 2;
        rollout_start(&m->rollout, fixture_now);
        assert_true(m->rollout.active);
        assert_int_equal(m->rollout.total, 3); /* w1 (still leaving), w2, and w3 of the superseded one */
        assert_false(m->pool.rolling);         /* until a worker of the newest one is routable */
        assert_true(worker_takes_users(w3));
        (void) w1;
}

static void test_rollout_require_compatible(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE), *w3;

        m->config.reload_state = RELOAD_STATE_REQUIRE_COMPATIBLE;
        w1->package_format = strdup("shop-v1");
        w2->package_format = strdup("shop-v1");
        fixture_set_users(m, w1, 3);
        m->pool.exec_generation = 1;
        w3 = new_worker();
        w3->package_format = strdup("shop-v2");
        reports();
        rollout_start(&m->rollout, fixture_now);
        /* the empty w2 goes first; w1's users cannot be carried: it keeps them */
        assert_true(w2->state == WORKER_DRAINING || w2->state == WORKER_STOPPING);
        new_worker()->package_format = strdup("shop-v2"); /* w2's replacement */
        reports();
        dies(w2);
        assert_int_equal(surface_worker_users(&m->surface, w1->id), 3);
        assert_int_equal(w1->state, WORKER_ROUTABLE);
        assert_false(w1->evacuating);
        assert_false(worker_takes_users(w1));
        assert_non_null(strstr(m->rollout.progress, "reload_state=require-compatible"));
        assert_true(m->rollout.active);
        /* once its users left, it is retired and the rollout ends */
        fixture_set_users(m, w1, 0);
        rollout_step(&m->rollout, fixture_now);
        assert_true(w1->state == WORKER_DRAINING || w1->state == WORKER_STOPPING);
        dies(w1);
        assert_false(m->rollout.active);
        assert_int_equal(m->rollout.done, 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_rollout_one_at_a_time, setup, teardown),
                cmocka_unit_test_setup_teardown(test_rollout_stops_when_the_new_definition_cannot_start, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_rollout_superseded, setup, teardown),
                cmocka_unit_test_setup_teardown(test_rollout_require_compatible, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
