/* SPDX-License-Identifier: MIT */
/* Compaction by live moves (daemon/compaction.c) on a Manager in memory (manager-fixture.c: real pool,
 * capacity shell, surface, moves and drains; workers on socketpair channels whose frames the test reads
 * and answers; a test-driven clock): the ledger's pick is drained one move at a time to admission's pick
 * and retired once empty; a stale reading, rising load, a failing target or a dying worker stops the
 * drain and puts the worker back into placement (a failing target with a back-off); a user whose own
 * move fails is left be while the others move; the operator's entry points; idle users expire. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "frame.h"
#include "macro.h"
#include "manager-fixture.h"

#define MOVABLE ((1U << ELASTIC_POOL__CAPABILITY__CAPABILITY_SNAPSHOT_USERS) | \
                 (1U << ELASTIC_POOL__CAPABILITY__CAPABILITY_INSTALL_USERS))
/* occupancy_interval x smoothing_rows of the defaults: a failed drain's first back-off */
#define PERIOD (30 * USEC_PER_SEC)

static Manager *m;
static Worker *w1, *w2, *w3;

static int setup(void **state) {
        m = fixture_manager_new();
        return 0;
}

static int teardown(void **state) {
        fixture_manager_free(m);
        m = NULL;
        return 0;
}

/* w1 the reception, w2 and w3 movable; `users` on w3, the least occupied: the reports make compaction
 * pick it (H = 0.5 + 2 x 0.8 - O > 1.2) and drain it. */
static void pool_of_three(unsigned users, double cpu2) {
        w1 = fixture_add_worker(m, WORKER_ROUTABLE);
        w2 = fixture_add_worker(m, WORKER_ROUTABLE);
        w3 = fixture_add_worker(m, WORKER_ROUTABLE);
        w1->capabilities = w2->capabilities = w3->capabilities = MOVABLE;
        fixture_set_users(m, w3, users);
        fixture_report(w1, READING(.cpu = 0.05));
        fixture_report(w2, READING(.cpu = cpu2));
        fixture_report(w3, READING(.cpu = 0.02));
}

static void report_all(double cpu1, double cpu2, double cpu3) {
        fixture_report(w1, READING(.cpu = cpu1));
        fixture_report(w2, READING(.cpu = cpu2));
        fixture_report(w3, READING(.cpu = cpu3));
}

/* One live move of the drain, as the workers answer it: snapshot on `from`, install on `to`, drop on
 * `from`. Returns the user moved (a surface name, valid until it leaves). */
static const char *complete_move(Worker *from, Worker *to) {
        Frame *f = fixture_read_frame(from, ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST);
        uint64_t id = f->snapshot_request->move_id;
        SurfaceUser *u = surface_user_get(&m->surface, f->snapshot_request->user);

        assert_non_null(u);
        frame_free(f);
        /* one move at a time: nothing else was asked of the drained worker */
        assert_false(fixture_frame_pending(from));
        fixture_package(from, id, "state", NULL);
        f = fixture_read_frame(to, ELASTIC_POOL__FRAME__BODY_INSTALL);
        assert_string_equal(f->install->user, u->name);
        frame_free(f);
        fixture_install_result(to, id, true, NULL);
        f = fixture_read_frame(from, ELASTIC_POOL__FRAME__BODY_DROP);
        frame_free(f);
        assert_int_equal(u->worker, to->id);
        return u->name;
}

static void test_compaction_drains_one_move_at_a_time_then_retires(void **state) {
        pool_of_three(3, 0.30);
        assert_int_equal(m->capacity.last_compaction, DECISION_WAIT_MOVES);
        assert_int_equal(m->compaction.drain.worker, w3->id);
        assert_true(w3->evacuating);
        assert_false(worker_takes_users(w3));
        assert_string_equal(worker_why_no_users(w3), "it is being drained");
        assert_true(worker_is_routable(w3)); /* it still serves the users it has */

        for (unsigned k = 0; k < 3; k++) {
                assert_int_equal(surface_worker_users(&m->surface, w3->id), 3 - k);
                (void) complete_move(w3, w2); /* admission: w2, the only other worker with room */
        }
        assert_int_equal(surface_worker_users(&m->surface, w2->id), 3);
        assert_int_equal(m->compaction.drain.worker, 0);
        assert_int_equal(m->compaction.drains_done, 1);
        assert_non_null(strstr(m->compaction.last, "w3 drained: 3 users moved"));
        assert_false(w3->evacuating);
        assert_int_equal(w3->state, WORKER_STOPPING); /* nothing open on it: retired at once */
}

/* A reading that goes stale holds the drain: the move under way ends, the next does not start, and the
 * worker takes users again; the hold is what the status shows. */
static void test_compaction_drain_held_puts_worker_back(void **state) {
        Frame *f;

        pool_of_three(3, 0.30);
        (void) complete_move(w3, w2);
        f = fixture_read_frame(
                w3, ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST); /* the second move is under way */
        uint64_t id = f->snapshot_request->move_id;
        frame_free(f);

        fixture_advance(16 * USEC_PER_SEC); /* w2 silent past stale_after x interval = 15 s */
        fixture_report(w1, READING(.cpu = 0.05));
        fixture_report(w3, READING(.cpu = 0.02));
        fixture_package(w3, id, "state", NULL);
        frame_free(fixture_read_frame(w2, ELASTIC_POOL__FRAME__BODY_INSTALL));
        fixture_install_result(w2, id, true, NULL);

        assert_int_equal(m->compaction.drain.worker, 0);
        assert_false(w3->evacuating);
        assert_int_equal(w3->state, WORKER_ROUTABLE);
        assert_int_equal(surface_worker_users(&m->surface, w3->id), 1);
        assert_non_null(strstr(m->compaction.last, "stopped after 2 of 3 users moved: held: w2"));
        fixture_report(w1, READING(.cpu = 0.05));
        assert_int_equal(m->capacity.last_compaction, DECISION_HELD);
        assert_non_null(strstr(m->capacity.compaction_hold.reason, "w2"));
}

/* Load that rises during the drain (the survivors would be over their thresholds) stops it. */
static void test_compaction_drain_stops_when_load_rises(void **state) {
        pool_of_three(3, 0.30);
        (void) complete_move(w3, w2);
        frame_free(fixture_read_frame(w3, ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST));
        /* O = 0.55 + 0.85 + 0.05 once the windows (6 rows) hold nothing else: without w3 C = 1.3,
         * H = -0.15: the survivors would be over their thresholds */
        for (unsigned k = 0; k < 6; k++) {
                fixture_advance(USEC_PER_SEC);
                report_all(0.55, 0.85, 0.05);
        }
        assert_int_equal(m->compaction.drain.worker, w3->id); /* a move is under way: it ends first */
        fixture_advance(10 * USEC_PER_SEC);
        moves_expire(&m->moves, fixture_now); /* w3 never answers the snapshot */
        assert_int_equal(m->compaction.drain.worker, 0);
        assert_false(w3->evacuating);
        assert_non_null(strstr(m->compaction.last, "the load rose"));
        assert_int_equal(m->compaction.failures, 0); /* the source's silence is not a target failure */
}

/* A target that refuses (or never answers) the install stops the drain; the next waits a back-off that
 * doubles, shown as the compaction hold's reason. */
static void test_compaction_failing_target_backs_off(void **state) {
        Frame *f;
        uint64_t id;

        pool_of_three(2, 0.30);
        f = fixture_read_frame(w3, ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST);
        id = f->snapshot_request->move_id;
        frame_free(f);
        fixture_package(w3, id, "state", NULL);
        frame_free(fixture_read_frame(w2, ELASTIC_POOL__FRAME__BODY_INSTALL));
        fixture_install_result(w2, id, false, "disk full");
        frame_free(
                fixture_read_frame(w2, ELASTIC_POOL__FRAME__BODY_DROP)); /* in case it installs after all */

        assert_int_equal(m->compaction.drain.worker, 0);
        assert_false(w3->evacuating);
        assert_int_equal(surface_worker_users(&m->surface, w3->id), 2); /* nobody moved */
        assert_int_equal(m->compaction.failures, 1);
        assert_int_equal(m->compaction.backoff_until, fixture_now + PERIOD);

        fixture_advance(USEC_PER_SEC);
        report_all(0.05, 0.30, 0.02);
        assert_int_equal(m->compaction.drain.worker, 0);
        assert_int_equal(m->capacity.compaction_hold.kind, DECISION_WAIT);
        assert_non_null(strstr(m->capacity.compaction_hold.reason, "backing off after 1 failed drains"));
        assert_non_null(strstr(m->capacity.compaction_hold.reason, "w2 refused the install: disk full"));

        /* past the back-off the next ledger check drains again; a second failure doubles it */
        fixture_advance(PERIOD);
        report_all(0.05, 0.30, 0.02);
        assert_int_equal(m->compaction.drain.worker, w3->id);
        f = fixture_read_frame(w3, ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST);
        id = f->snapshot_request->move_id;
        frame_free(f);
        fixture_package(w3, id, "state", NULL);
        frame_free(fixture_read_frame(w2, ELASTIC_POOL__FRAME__BODY_INSTALL));
        fixture_advance(10 * USEC_PER_SEC);
        moves_expire(&m->moves, fixture_now); /* now w2 stays silent */
        assert_int_equal(m->compaction.failures, 2);
        assert_int_equal(m->compaction.backoff_until, fixture_now + 2 * PERIOD);
        frame_free(
                fixture_read_frame(w2, ELASTIC_POOL__FRAME__BODY_DROP)); /* it must not keep a late copy */
}

/* A user whose own move fails (its worker cannot snapshot it) is left be; the others move on. */
static void test_compaction_user_failure_defers_that_user(void **state) {
        Frame *f;
        char first[32];

        pool_of_three(3, 0.30);
        f = fixture_read_frame(w3, ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST);
        snprintf(first, sizeof first, "%s", f->snapshot_request->user);
        fixture_package(w3, f->snapshot_request->move_id, NULL, "no such user");
        frame_free(f);
        assert_int_equal(m->compaction.drain.deferred, 1);
        (void) complete_move(w3, w2);
        (void) complete_move(w3, w2);
        /* only the deferred one is left: the drain waits for its back-off, asking nothing */
        assert_int_equal(surface_user_get(&m->surface, first)->worker, w3->id);
        assert_int_equal(m->compaction.drain.worker, w3->id);
        assert_false(fixture_frame_pending(w3));
        fixture_advance(PERIOD);
        report_all(0.05, 0.30, 0.02);
        assert_string_equal(complete_move(w3, w2), first);
        assert_int_equal(w3->state, WORKER_STOPPING);
        assert_int_equal(m->compaction.failures, 0);
}

/* The drained worker dying mid-move ends the drain (its users are placed again on their next request);
 * the target dying mid-move aborts the move and stops the drain. */
static void test_compaction_worker_death_mid_move(void **state) {
        pool_of_three(2, 0.30);
        frame_free(fixture_read_frame(w3, ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST));
        m->pool.hooks->worker_gone(w3, m);
        assert_int_equal(m->compaction.drain.worker, 0);
        assert_null(m->moves.list);
        assert_int_equal(surface_worker_users(&m->surface, w3->id), 0); /* no stale surface entry */
        assert_int_equal(m->compaction.failures, 0);
        teardown(state);
        setup(state);

        pool_of_three(2, 0.30);
        Frame *f = fixture_read_frame(w3, ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST);
        fixture_package(w3, f->snapshot_request->move_id, "state", NULL);
        frame_free(f);
        m->pool.hooks->worker_gone(w2, m);
        assert_int_equal(m->compaction.drain.worker, 0);
        assert_false(w3->evacuating);
        assert_int_equal(surface_worker_users(&m->surface, w3->id), 2); /* they stay where they were */
        assert_int_equal(m->compaction.failures, 1);
}

/* A worker whose users keep no state (no snapshot capability) has them re-pointed: no frame at all. */
static void test_compaction_repoints_stateless_users(void **state) {
        w1 = fixture_add_worker(m, WORKER_ROUTABLE);
        w2 = fixture_add_worker(m, WORKER_ROUTABLE);
        w3 = fixture_add_worker(m, WORKER_ROUTABLE);
        fixture_set_users(m, w3, 5);
        report_all(0.05, 0.30, 0.02);
        frame_free(
                fixture_read_frame(w3, ELASTIC_POOL__FRAME__BODY_DRAIN)); /* the retire: nothing before it */
        assert_int_equal(surface_worker_users(&m->surface, w2->id), 5);
        assert_int_equal(w3->state, WORKER_STOPPING);
        assert_non_null(strstr(m->compaction.last, "5 users moved (5 re-pointed)"));
}

/* Two workers: the last non-reception one drains onto the reception, the sole survivor. */
static void test_compaction_drains_onto_the_reception(void **state) {
        w1 = fixture_add_worker(m, WORKER_ROUTABLE);
        w2 = fixture_add_worker(m, WORKER_ROUTABLE);
        w1->capabilities = w2->capabilities = MOVABLE;
        fixture_set_users(m, w2, 1);
        fixture_report(w1, READING(.cpu = 0.05));
        fixture_report(w2, READING(.cpu = 0.02)); /* C = 1.3, H = 1.23 > 1.2 */
        assert_int_equal(m->compaction.drain.worker, w2->id);
        (void) complete_move(w2, w1);
        assert_int_equal(w2->state, WORKER_STOPPING);
}

static void test_compaction_operator_entry_points(void **state) {
        char why[256];

        /* a busy pool the ledger would not compact */
        w1 = fixture_add_worker(m, WORKER_ROUTABLE);
        w2 = fixture_add_worker(m, WORKER_ROUTABLE);
        w3 = fixture_add_worker(m, WORKER_ROUTABLE);
        w1->capabilities = w2->capabilities = w3->capabilities = MOVABLE;
        fixture_set_users(m, w2, 1);
        fixture_set_users(m, w3, 1);
        report_all(0.45, 0.6, 0.5);
        assert_int_equal(m->capacity.last_compaction, DECISION_NONE);

        /* move a user */
        assert_int_equal(compaction_move_user(&m->compaction, "nobody", w2->id, fixture_now), -ENOENT);
        assert_int_equal(compaction_move_user(&m->compaction, "w3-0", 9, fixture_now), -EHOSTUNREACH);
        assert_int_equal(compaction_move_user(&m->compaction, "w3-0", w2->id, fixture_now), 0);
        (void) complete_move(w3, w2);

        /* retire a worker: never the reception; with users, drained first whatever the ledger says */
        assert_int_equal(compaction_retire(&m->compaction, w1->id, fixture_now), -EPERM);
        assert_int_equal(compaction_retire(&m->compaction, 42, fixture_now), -ENOENT);
        assert_int_equal(compaction_retire(&m->compaction, w2->id, fixture_now), 0);
        assert_true(m->compaction.drain.asked);
        (void) complete_move(w2, w3);
        (void) complete_move(w2, w3);
        assert_int_equal(surface_user_get(&m->surface, "w3-0")->worker, w3->id);
        assert_int_equal(w2->state, WORKER_STOPPING);

        /* compact now: w3 has users and the ledger would say no; at the floor, refused with the reason */
        m->capacity.policy.min_workers = 2;
        assert_int_equal(compaction_now(&m->compaction, why, sizeof why, fixture_now), -EAGAIN);
        assert_non_null(strstr(why, "min_workers=2"));
        m->capacity.policy.min_workers = 1;
        fixture_advance(USEC_PER_SEC);
        fixture_report(w1, READING(.cpu = 0.45));
        fixture_report(w3, READING(.cpu = 0.5));
        assert_int_equal(compaction_now(&m->compaction, why, sizeof why, fixture_now), 0);
        assert_int_equal(m->compaction.drain.worker, w3->id);
        (void) complete_move(w3, w1);
        (void) complete_move(w3, w1);
        assert_int_equal(w3->state, WORKER_STOPPING);
}

/* The operator moves a user off the drained worker while the drain's own move runs: the drain counts
 * and waits on its own move only. */
static void test_compaction_operator_move_during_a_drain(void **state) {
        Frame *mine, *theirs;
        const char *other = NULL;
        SurfaceUser *u;

        pool_of_three(3, 0.30);
        mine = fixture_read_frame(w3, ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST);
        for (size_t i = 0; (u = surface_next_user(&m->surface, &i));)
                if (u->worker == w3->id && !u->move)
                        other = u->name;
        assert_non_null(other);
        assert_int_equal(compaction_move_user(&m->compaction, other, w1->id, fixture_now), 0);
        theirs = fixture_read_frame(w3, ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST);
        fixture_package(w3, theirs->snapshot_request->move_id, "state", NULL);
        frame_free(fixture_read_frame(w1, ELASTIC_POOL__FRAME__BODY_INSTALL));
        fixture_install_result(w1, theirs->snapshot_request->move_id, true, NULL);
        frame_free(fixture_read_frame(w3, ELASTIC_POOL__FRAME__BODY_DROP));
        assert_true(m->compaction.drain.moving); /* still waiting on its own */
        assert_int_equal(m->compaction.drain.moved, 0);
        assert_false(fixture_frame_pending(w3));          /* and not starting a second one */

        fixture_package(w3, mine->snapshot_request->move_id, "state", NULL);
        frame_free(fixture_read_frame(w2, ELASTIC_POOL__FRAME__BODY_INSTALL));
        fixture_install_result(w2, mine->snapshot_request->move_id, true, NULL);
        frame_free(fixture_read_frame(w3, ELASTIC_POOL__FRAME__BODY_DROP));
        assert_int_equal(m->compaction.drain.moved, 1);
        frame_free(mine);
        frame_free(theirs);
        (void) complete_move(w3, w2); /* the last one */
        assert_int_equal(w3->state, WORKER_STOPPING);
}

/* Users without a request for user_expiry leave the surface and their worker drops them; a user with a
 * request open, or seen lately, stays. */
static void test_compaction_idle_users_expire(void **state) {
        usec_t expiry = config_user_expiry(&m->config);
        uint64_t ticket;
        Frame *f;

        w1 = fixture_add_worker(m, WORKER_ROUTABLE);
        fixture_set_users(m, w1, 3); /* w1-0, w1-1, w1-2, seen at placement */
        ticket = placement_ops.request_started(&m->placement, "w1-1", fixture_now);
        fixture_advance(expiry - USEC_PER_SEC);
        (void) placement_ops.request_started(&m->placement, "w1-2", fixture_now);
        fixture_advance(USEC_PER_SEC);

        assert_int_equal(placement_expire_users(&m->placement, expiry, fixture_now), 1);
        assert_null(surface_user_get(&m->surface, "w1-0"));
        assert_non_null(surface_user_get(&m->surface, "w1-1")); /* its request is still open */
        assert_non_null(surface_user_get(&m->surface, "w1-2"));
        f = fixture_read_frame(w1, ELASTIC_POOL__FRAME__BODY_DROP);
        assert_string_equal(f->drop->user, "w1-0");
        frame_free(f);
        placement_ops.request_ended(&m->placement, "w1-1", ticket, 1);
        assert_int_equal(placement_expire_users(&m->placement, expiry, fixture_now), 1);
        assert_int_equal(surface_worker_users(&m->surface, w1->id), 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_compaction_drains_one_move_at_a_time_then_retires,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(test_compaction_drain_held_puts_worker_back, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_compaction_drain_stops_when_load_rises, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_compaction_failing_target_backs_off, setup, teardown),
                cmocka_unit_test_setup_teardown(test_compaction_user_failure_defers_that_user, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_compaction_worker_death_mid_move, setup, teardown),
                cmocka_unit_test_setup_teardown(test_compaction_repoints_stateless_users, setup, teardown),
                cmocka_unit_test_setup_teardown(test_compaction_drains_onto_the_reception, setup, teardown),
                cmocka_unit_test_setup_teardown(test_compaction_operator_entry_points, setup, teardown),
                cmocka_unit_test_setup_teardown(test_compaction_operator_move_during_a_drain, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_compaction_idle_users_expire, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
