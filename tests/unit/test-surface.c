/* SPDX-License-Identifier: MIT */
/* The surface: users placed, re-placed and forgotten with the per-worker counts kept exact; a worker's
 * death sweeping its users; each user's open requests and consumption, counted by ticket; requests that
 * outlive their user's logout never being counted against the next login of the same name (a move's
 * quiesce waits on those counts); a login taking over the request it was answered on. The front end's
 * dict of open requests is tested in test-open-requests.c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "surface.h"

#define T0 (1000 * USEC_PER_SEC)

static Surface s;

static int setup(void **state) {
        surface_init(&s);
        return 0;
}

static int teardown(void **state) {
        surface_done(&s);
        return 0;
}

static SurfaceUser *place(const char *name, unsigned worker, usec_t now) {
        SurfaceUser *u = NULL;

        assert_int_equal(surface_user_place(&s, name, worker, now, &u), 0);
        assert_non_null(u);
        assert_string_equal(u->name, name);
        assert_int_equal(u->worker, worker);
        return u;
}

/* A request of user (NULL: a guest) began: its ticket. */
static uint64_t start(const char *user) {
        return surface_request_started(&s, user, T0);
}

static void test_surface_user_place_new_and_replace(void **state) {
        SurfaceUser *a, *again;

        assert_null(surface_user_get(&s, "alice"));
        a = place("alice", 1, T0);
        assert_true(a->placed_at == T0);
        assert_ptr_equal(surface_user_get(&s, "alice"), a);
        assert_int_equal(surface_worker_users(&s, 1), 1);

        /* re-placed elsewhere: the same record moves, the counts follow */
        again = place("alice", 2, T0 + 5);
        assert_ptr_equal(again, a);
        assert_true(a->placed_at == T0 + 5);
        assert_int_equal(surface_worker_users(&s, 1), 0);
        assert_int_equal(surface_worker_users(&s, 2), 1);

        /* a move is no request: what user_expiry measures from stays at the login */
        assert_true(a->last_seen == T0);

        /* re-placed on the same worker: counted once */
        place("alice", 2, T0 + 6);
        assert_int_equal(surface_worker_users(&s, 2), 1);

        place("bob", 2, T0);
        place("carol", 1, T0);
        assert_int_equal(surface_worker_users(&s, 2), 2);
        assert_int_equal(surface_worker_users(&s, 1), 1);
        assert_int_equal(strmap_size(&s.users), 3);
        /* NULL ret is allowed */
        assert_int_equal(surface_user_place(&s, "dave", 3, T0, NULL), 0);
        assert_int_equal(surface_worker_users(&s, 3), 1);
}

static void test_surface_user_forget(void **state) {
        SurfaceUser *a = place("alice", 1, T0);

        place("bob", 1, T0);
        surface_user_forget(&s, a);
        assert_null(surface_user_get(&s, "alice"));
        assert_int_equal(surface_worker_users(&s, 1), 1);
        surface_user_forget(&s, NULL); /* nothing */
        surface_user_forget(&s, surface_user_get(&s, "bob"));
        assert_int_equal(surface_worker_users(&s, 1), 0);
        assert_int_equal(strmap_size(&s.users), 0);
        /* a forgotten user logs in again from scratch */
        a = place("alice", 4, T0 + 1);
        assert_true(a->requests == 0);
        assert_int_equal(surface_worker_users(&s, 4), 1);
}

static void test_surface_worker_slots_grow(void **state) {
        /* ids are never reused, so they climb: far ids grow the per-worker arrays */
        for (unsigned w = 1; w <= 2000; w += 37)
                place("roamer", w, T0); /* re-placed each round */
        assert_int_equal(surface_worker_users(&s, 1999), 1);
        assert_int_equal(surface_worker_users(&s, 1), 0);
        assert_int_equal(surface_worker_users(&s, 5000), 0); /* beyond the arrays: 0, never a read past */
        assert_int_equal(surface_worker_users(&s, 0), 0);
}

static void test_surface_worker_gone_sweeps_its_users(void **state) {
        char name[32];
        unsigned n;

        for (unsigned i = 0; i < 300; i++) {
                snprintf(name, sizeof name, "user-%u", i);
                place(name, 1 + i % 3, T0);
        }
        assert_int_equal(surface_worker_users(&s, 2), 100);
        n = surface_worker_gone(&s, 2);
        assert_int_equal(n, 100);
        assert_int_equal(surface_worker_users(&s, 2), 0);
        assert_int_equal(surface_worker_users(&s, 1), 100);
        assert_int_equal(surface_worker_users(&s, 3), 100);
        assert_int_equal(strmap_size(&s.users), 200);
        for (unsigned i = 0; i < 300; i++) {
                snprintf(name, sizeof name, "user-%u", i);
                SurfaceUser *u = surface_user_get(&s, name);
                if (i % 3 == 1)
                        assert_null(u);
                else {
                        assert_non_null(u);
                        assert_int_equal(u->worker, 1 + i % 3);
                }
        }
        assert_int_equal(surface_worker_gone(&s, 2), 0);
        assert_int_equal(surface_worker_gone(&s, 99), 0);
}

static void test_surface_request_started_counts(void **state) {
        SurfaceUser *a = place("alice", 1, T0);
        uint64_t t[4];

        place("bob", 2, T0);
        t[0] = start("alice");
        t[1] = start("alice");
        t[2] = start(NULL);     /* a guest: counted for nobody */
        t[3] = start("nobody"); /* a name the surface does not know: nobody either */
        assert_int_equal(a->open, 2);
        assert_int_equal(surface_user_get(&s, "bob")->open, 0);
        assert_true(t[0] == a->incarnation && t[1] == a->incarnation);
        assert_true(t[2] == 0 && t[3] == 0);
        assert_true(start("bob") == surface_user_get(&s, "bob")->incarnation);
        assert_int_equal(surface_user_get(&s, "bob")->open, 1);
        /* every user has its own incarnation */
        assert_true(a->incarnation != surface_user_get(&s, "bob")->incarnation);
}

static void test_surface_request_ended_attributes(void **state) {
        SurfaceUser *a = place("alice", 1, T0);
        uint64_t x = start("alice"), y = start("alice");

        assert_ptr_equal(surface_request_ended(&s, "alice", x, 250), a);
        assert_int_equal(a->open, 1);
        assert_true(a->requests == 1);
        assert_true(a->busy_usec == 250);
        assert_ptr_equal(surface_request_ended(&s, "alice", y, 300), a);
        assert_true(a->requests == 2);
        assert_true(a->busy_usec == 250 + 300);
        assert_int_equal(a->open, 0);
        /* a guest's consumption goes nowhere */
        assert_null(surface_request_ended(&s, NULL, 0, 400));
        /* an end counted down never takes the count below zero */
        (void) surface_request_ended(&s, "alice", x, 10);
        assert_int_equal(a->open, 0);
}

static void test_surface_request_ended_user_forgotten(void **state) {
        SurfaceUser *a = place("alice", 1, T0);
        uint64_t x = start("alice");

        assert_int_equal(a->open, 1);
        surface_user_forget(&s, a); /* logout while its request is open */
        assert_null(surface_request_ended(&s, "alice", x, 10));
        assert_null(surface_user_get(&s, "alice"));
}

static void test_surface_relogin_not_charged_for_old_requests(void **state) {
        SurfaceUser *a = place("alice", 1, T0);
        uint64_t old[2], fresh;

        old[0] = start("alice");
        old[1] = start("alice");
        /* alice logs out (on old[0]'s response) while old[1] is still in flight, and logs in again */
        surface_user_forget(&s, a);
        a = place("alice", 2, T0 + 10);
        assert_int_equal(a->open, 0);
        fresh = start("alice");
        assert_int_equal(a->open, 1);

        /* the requests of the first session end: they are no longer alice's, and must not make her
         * look quiesced while her new request is in flight */
        (void) surface_request_ended(&s, "alice", old[0], 30);
        (void) surface_request_ended(&s, "alice", old[1], 30);
        assert_int_equal(a->open, 1);
        assert_true(a->requests == 0); /* consumption of the old session is forgotten with it */

        (void) surface_request_ended(&s, "alice", fresh, 20);
        assert_int_equal(a->open, 0);
        assert_true(a->requests == 1);
        assert_true(a->busy_usec == 20);
}

static void test_surface_relogin_after_worker_gone(void **state) {
        SurfaceUser *a = place("alice", 3, T0);
        uint64_t old, fresh;

        place("bob", 4, T0);
        old = start("alice");
        assert_int_equal(surface_worker_gone(&s, 3), 1);
        a = place("alice", 4, T0 + 1);
        fresh = start("alice");
        (void) surface_request_ended(&s, "alice", old, 2); /* answered 502 by the dead worker's pool */
        assert_int_equal(a->open, 1);
        (void) surface_request_ended(&s, "alice", fresh, 2);
        assert_int_equal(a->open, 0);
        assert_int_equal(surface_user_get(&s, "bob")->open, 0);
}

/* A login answered on a request takes it over: it stops counting for whom it counted (who may be
 * quiesced now), and counts for the user who logged in. */
static void test_surface_request_transfer(void **state) {
        SurfaceUser *a = place("alice", 1, T0), *b = place("bob", 1, T0);
        uint64_t t = start("alice"), guest = start(NULL);

        assert_ptr_equal(surface_request_transfer(&s, "alice", &t, b), a); /* alice has nothing open now */
        assert_int_equal(a->open, 0);
        assert_int_equal(b->open, 1);
        assert_true(t == b->incarnation);
        (void) surface_request_ended(&s, "bob", t, 5);
        assert_int_equal(b->open, 0);
        assert_true(b->requests == 1);

        /* a guest's request logs alice in: nobody loses a request */
        assert_null(surface_request_transfer(&s, NULL, &guest, a));
        assert_int_equal(a->open, 1);
        /* a ticket of an earlier session takes nothing from the user of that name now */
        t = start("bob");
        surface_user_forget(&s, b);
        b = place("bob", 2, T0 + 1);
        (void) start("bob");
        assert_null(surface_request_transfer(&s, "bob", &t, a));
        assert_int_equal(b->open, 1);
        assert_int_equal(a->open, 2);
}

static void test_surface_done_frees_everything(void **state) {
        /* ASan's leak check is the assertion here */
        place("alice", 1, T0);
        place("bob", 2, T0);
        (void) start("alice");
        surface_user_forget(&s, surface_user_get(&s, "alice"));
        surface_done(&s);
        surface_init(&s);
        assert_int_equal(surface_worker_users(&s, 1), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_surface_user_place_new_and_replace, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_user_forget, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_worker_slots_grow, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_worker_gone_sweeps_its_users, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_request_started_counts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_request_ended_attributes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_request_ended_user_forgotten, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_relogin_not_charged_for_old_requests, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_relogin_after_worker_gone, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_request_transfer, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_done_frees_everything, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
