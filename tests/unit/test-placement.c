/* SPDX-License-Identifier: MIT */
/* The commander's answers to its front end (daemon/placement.c, CommanderOps) on a Manager in memory
 * (manager-fixture.c: real pool, capacity shell, surface and moves; workers on socketpair channels, a
 * test-driven clock): a guest goes to the reception; a user to its worker, placed again reception-first
 * when it is unknown or its worker retires, held while it moves; a login counts the request it was
 * answered on and, on a reception over its keep threshold, is passed on by a live move that waits for
 * that request to end; a logout forgets the user and cancels its move; a draining worker with nothing
 * open stops. */
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

#define SNAPSHOT (1U << ELASTIC_POOL__CAPABILITY__CAPABILITY_SNAPSHOT_USERS)
#define INSTALL (1U << ELASTIC_POOL__CAPABILITY__CAPABILITY_INSTALL_USERS)

static Manager *m;
static const CommanderOps *ops = &placement_ops;
static void *pl;

static int setup(void **state) {
        m = fixture_manager_new();
        pl = &m->placement;
        return 0;
}

static int teardown(void **state) {
        fixture_manager_free(m);
        m = NULL;
        return 0;
}

static Route route(const char *user) {
        Route r;

        ops->route_user(pl, user, "the test does not know it", &r);
        return r;
}

static void test_placement_route_guest(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE);

        (void) fixture_add_worker(m, WORKER_ROUTABLE);
        assert_int_equal(ops->route_guest(pl), w1->id);
        /* the reception retiring: a new one is picked, guests go there */
        pool_retire_worker(&m->pool, w1, "test");
        assert_int_equal(ops->route_guest(pl), 2);
        pool_retire_worker(&m->pool, pool_get_worker(&m->pool, 2), "test");
        assert_int_equal(ops->route_guest(pl), 0);
}

static void test_placement_route_user(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE);
        SurfaceUser *u;
        Route r;

        /* unknown: placed reception-first, and kept there */
        r = route("alice");
        assert_false(r.held);
        assert_int_equal(r.worker, w1->id);
        u = surface_user_get(&m->surface, "alice");
        assert_non_null(u);
        assert_int_equal(u->worker, w1->id);

        /* a user on a worker that takes users stays there */
        assert_int_equal(surface_user_place(&m->surface, "bob", w2->id, fixture_now, NULL), 0);
        assert_int_equal(route("bob").worker, w2->id);

        /* its worker retires: placed again, on the reception */
        pool_retire_worker(&m->pool, w2, "test");
        assert_int_equal(route("bob").worker, w1->id);
        assert_int_equal(surface_user_get(&m->surface, "bob")->worker, w1->id);

        /* moving: held, whatever its worker */
        u->move = (Move *) &u;
        r = route("alice");
        assert_true(r.held);
        assert_int_equal(r.worker, 0);
        u->move = NULL;
}

static void test_placement_route_user_without_routable_worker(void **state) {
        Route r = route("carol");

        assert_false(r.held);
        assert_int_equal(r.worker, 0);
        assert_null(surface_user_get(&m->surface, "carol"));
}

static void test_placement_requests_counted_by_ticket(void **state) {
        uint64_t t;
        SurfaceUser *u;

        (void) fixture_add_worker(m, WORKER_ROUTABLE);
        (void) route("dave");
        u = surface_user_get(&m->surface, "dave");
        t = ops->request_started(pl, "dave", fixture_now);
        assert_true(t == u->incarnation);
        assert_int_equal(u->open, 1);
        ops->request_ended(pl, "dave", t, 40);
        assert_int_equal(u->open, 0);
        assert_true(u->requests == 1 && u->busy_usec == 40);
        assert_true(ops->request_started(pl, "nobody", fixture_now) == 0);
        ops->request_ended(pl, "nobody", 0, 1); /* nothing to count */
}

static void test_placement_login_stays_on_a_quiet_reception(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE);
        uint64_t ticket = 0;
        SurfaceUser *u;

        (void) fixture_add_worker(m, WORKER_ROUTABLE);
        /* a guest's request on the reception logs erin in: it now counts as hers */
        assert_int_equal(ops->login(pl, "erin", w1->id, NULL, &ticket), 1);
        u = surface_user_get(&m->surface, "erin");
        assert_non_null(u);
        assert_int_equal(u->worker, w1->id);
        assert_true(ticket == u->incarnation);
        assert_int_equal(u->open, 1);
        assert_null(u->move); /* the reception is under its keep threshold: kept */
        /* logged in again where she lives: nothing changes */
        assert_int_equal(ops->login(pl, "erin", w1->id, "erin", &ticket), 0);
        assert_int_equal(u->open, 1);
}

/* A reception over its keep threshold passes a login on by a live move, which waits for the login's own
 * request to end (quiesce) and then asks the reception for the user's package. */
static void test_placement_login_passed_on_by_a_move(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE);
        uint64_t ticket = 0;
        SurfaceUser *u;
        Frame *f;

        (void) fixture_add_worker(m, WORKER_ROUTABLE);
        w1->capabilities = SNAPSHOT;
        w2->capabilities = INSTALL;
        pool_get_worker(&m->pool, 3)->capabilities = INSTALL;
        fixture_report(w1, READING(.cpu = 0.9));
        fixture_report(w2, READING(.cpu = 0.1));
        fixture_report(pool_get_worker(&m->pool, 3), READING(.cpu = 0.6));

        assert_int_equal(ops->login(pl, "frank", w1->id, NULL, &ticket), 1);
        u = surface_user_get(&m->surface, "frank");
        assert_non_null(u->move);
        assert_int_equal(u->move->to, w2->id); /* admission: the least occupied under the threshold */
        assert_int_equal(u->move->state, MOVE_QUIESCE);
        assert_true(route("frank").held);

        /* the login request ends: quiesced, the snapshot is asked of the reception */
        ops->request_ended(pl, "frank", ticket, 10);
        assert_int_equal(u->move->state, MOVE_SNAPSHOT);
        f = fixture_read_frame(w1, ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST);
        assert_string_equal(f->snapshot_request->user, "frank");
        frame_free(f);

        /* logging out cancels the move and forgets the user */
        ops->logout(pl, "frank");
        assert_null(surface_user_get(&m->surface, "frank"));
        assert_null(m->moves.list);
}

/* Without the capabilities a move needs, a passed-on login stays where it logged in. */
static void test_placement_login_kept_without_capabilities(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE);
        uint64_t ticket = 0;

        (void) fixture_add_worker(m, WORKER_ROUTABLE);
        fixture_report(w1, READING(.cpu = 0.9));
        assert_int_equal(ops->login(pl, "gina", w1->id, NULL, &ticket), 1);
        assert_null(surface_user_get(&m->surface, "gina")->move);
        assert_int_equal(surface_user_get(&m->surface, "gina")->worker, w1->id);
}

/* A request answered as one user logs another in: it stops counting for the first. */
static void test_placement_login_takes_the_request_over(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE);
        uint64_t ticket;

        (void) route("hank");
        ticket = ops->request_started(pl, "hank", fixture_now);
        assert_int_equal(surface_user_get(&m->surface, "hank")->open, 1);
        assert_int_equal(ops->login(pl, "ivy", w1->id, "hank", &ticket), 1);
        assert_int_equal(surface_user_get(&m->surface, "hank")->open, 0);
        assert_int_equal(surface_user_get(&m->surface, "ivy")->open, 1);
        assert_true(ticket == surface_user_get(&m->surface, "ivy")->incarnation);
}

static void test_placement_worker_idle_stops_a_draining_worker(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_DRAINING);

        ops->worker_idle(pl, w1->id);
        assert_int_equal(w1->state, WORKER_ROUTABLE);
        ops->worker_idle(pl, w2->id); /* nothing open on it (no front end here): it stops */
        assert_int_equal(w2->state, WORKER_STOPPING);
        ops->worker_idle(pl, 99); /* gone already: nothing */
}

/* A worker's Users frame (after a reconnect, or a commander restart) places every user it holds there
 * again, so its requests stay sticky; a user the surface has on another worker stays where it is, and
 * absence forgets nobody. */
static void test_placement_users_announced(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE);
        char *names[] = { (char *) "ann", (char *) "bob", (char *) "" };
        ElasticPool__Users u = ELASTIC_POOL__USERS__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        Route r;

        /* carol was placed on w1 and has not reached it yet: w1 does not list her */
        ops->route_user(pl, "carol", "test", &r);
        assert_int_equal(r.worker, w1->id);
        u.users = names;
        u.n_users = ELEMENTSOF(names);
        f.body_case = ELASTIC_POOL__FRAME__BODY_USERS;
        f.users = &u;
        pool_handle_frame(w2, &f);
        assert_int_equal(route("ann").worker, w2->id);
        assert_int_equal(route("bob").worker, w2->id);
        assert_int_equal(route("carol").worker, w1->id);
        assert_int_equal(surface_worker_users(&m->surface, w2->id), 2);

        /* w1 claims ann too (a crash in the middle of her move): she stays on w2 */
        names[1] = (char *) "ann";
        u.n_users = 2;
        pool_handle_frame(w1, &f);
        assert_int_equal(route("ann").worker, w2->id);
        assert_int_equal(placement_users_announced(&m->placement, w2->id, names, 2), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_placement_route_guest, setup, teardown),
                cmocka_unit_test_setup_teardown(test_placement_route_user, setup, teardown),
                cmocka_unit_test_setup_teardown(test_placement_route_user_without_routable_worker, setup, teardown),
                cmocka_unit_test_setup_teardown(test_placement_requests_counted_by_ticket, setup, teardown),
                cmocka_unit_test_setup_teardown(test_placement_login_stays_on_a_quiet_reception, setup, teardown),
                cmocka_unit_test_setup_teardown(test_placement_login_passed_on_by_a_move, setup, teardown),
                cmocka_unit_test_setup_teardown(test_placement_login_kept_without_capabilities, setup, teardown),
                cmocka_unit_test_setup_teardown(test_placement_login_takes_the_request_over, setup, teardown),
                cmocka_unit_test_setup_teardown(test_placement_worker_idle_stops_a_draining_worker, setup, teardown),
                cmocka_unit_test_setup_teardown(test_placement_users_announced, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
