/* SPDX-License-Identifier: MIT */
/* The surface: users placed, re-placed and forgotten with the per-worker counts kept exact; a worker's
 * death sweeping its users; the open-requests dict (unique keys, counts per worker and per user, close
 * attributing consumption, sweep by age); and requests that outlive their user's logout never being
 * counted against the next login of the same name (a move's quiesce waits on those counts). */
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
        return surface_init(&s);
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

static void open_request(Exchange *x, const char *user, unsigned worker, usec_t started) {
        *x = (Exchange) { .user = (char *) user, .worker = worker, .started = started };
        assert_int_equal(surface_request_open(&s, x), 0);
        assert_true(x->key[0] != 0);
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
        assert_int_equal(surface_worker_open(&s, 5000), 0);
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

static void test_surface_request_open_counts(void **state) {
        SurfaceUser *a = place("alice", 1, T0);
        Exchange x[4];

        place("bob", 2, T0);
        open_request(&x[0], "alice", 1, T0);
        open_request(&x[1], "alice", 1, T0);
        open_request(&x[2], NULL, 1, T0); /* a guest */
        open_request(&x[3], "bob", 2, T0);
        assert_int_equal(surface_worker_open(&s, 1), 3);
        assert_int_equal(surface_worker_open(&s, 2), 1);
        assert_int_equal(a->open, 2);
        assert_int_equal(surface_user_get(&s, "bob")->open, 1);
        assert_int_equal(strmap_size(&s.open), 4);
        /* keys are unique (client request ids may repeat) */
        for (int i = 0; i < 4; i++)
                for (int j = i + 1; j < 4; j++)
                        assert_string_not_equal(x[i].key, x[j].key);
        assert_ptr_equal(strmap_get(&s.open, x[1].key), &x[1]);
        for (int i = 0; i < 4; i++)
                surface_request_close(&s, &x[i], T0 + 1);
}

static void test_surface_request_close_attributes(void **state) {
        SurfaceUser *a = place("alice", 1, T0);
        Exchange x, y, g;

        open_request(&x, "alice", 1, T0);
        open_request(&y, "alice", 1, T0 + 100);
        open_request(&g, NULL, 1, T0);
        surface_request_close(&s, &x, T0 + 250);
        assert_int_equal(x.key[0], 0); /* out of the dict */
        assert_int_equal(a->open, 1);
        assert_true(a->requests == 1);
        assert_true(a->busy_usec == 250);
        assert_int_equal(surface_worker_open(&s, 1), 2);
        surface_request_close(&s, &y, T0 + 400);
        assert_true(a->requests == 2);
        assert_true(a->busy_usec == 250 + 300);
        assert_int_equal(a->open, 0);
        surface_request_close(&s, &g, T0 + 400); /* a guest's consumption goes nowhere */
        assert_int_equal(surface_worker_open(&s, 1), 0);
        assert_int_equal(strmap_size(&s.open), 0);

        /* a second close of the same exchange does not decrement again */
        surface_request_close(&s, &x, T0 + 500);
        assert_int_equal(surface_worker_open(&s, 1), 0);
        assert_int_equal(a->open, 0);
}

static void test_surface_request_close_user_forgotten(void **state) {
        SurfaceUser *a = place("alice", 1, T0);
        Exchange x;

        open_request(&x, "alice", 1, T0);
        assert_int_equal(a->open, 1);
        surface_user_forget(&s, a); /* logout while its request is open */
        surface_request_close(&s, &x, T0 + 10);
        assert_int_equal(surface_worker_open(&s, 1), 0);
        assert_null(surface_user_get(&s, "alice"));
}

static void test_surface_relogin_not_charged_for_old_requests(void **state) {
        SurfaceUser *a = place("alice", 1, T0);
        Exchange old[2], fresh;

        open_request(&old[0], "alice", 1, T0);
        open_request(&old[1], "alice", 1, T0);
        /* alice logs out (on old[0]'s response) while old[1] is still in flight, and logs in again */
        surface_user_forget(&s, a);
        a = place("alice", 2, T0 + 10);
        assert_int_equal(a->open, 0);
        open_request(&fresh, "alice", 2, T0 + 20);
        assert_int_equal(a->open, 1);

        /* the requests of the first session end: they are no longer alice's, and must not make her
         * look quiesced while her new request is in flight */
        surface_request_close(&s, &old[0], T0 + 30);
        surface_request_close(&s, &old[1], T0 + 30);
        assert_int_equal(a->open, 1);
        assert_true(a->requests == 0); /* consumption of the old session is forgotten with it */
        assert_int_equal(surface_worker_open(&s, 1), 0);
        assert_int_equal(surface_worker_open(&s, 2), 1);

        surface_request_close(&s, &fresh, T0 + 40);
        assert_int_equal(a->open, 0);
        assert_true(a->requests == 1);
        assert_true(a->busy_usec == 20);
}

static void test_surface_relogin_after_worker_gone(void **state) {
        SurfaceUser *a = place("alice", 3, T0);
        Exchange old, fresh;

        place("bob", 4, T0);
        open_request(&old, "alice", 3, T0);
        assert_int_equal(surface_worker_gone(&s, 3), 1);
        a = place("alice", 4, T0 + 1);
        open_request(&fresh, "alice", 4, T0 + 1);
        surface_request_close(&s, &old, T0 + 2); /* answered 502 by the dead worker's pool */
        assert_int_equal(a->open, 1);
        assert_int_equal(surface_worker_open(&s, 3), 0);
        surface_request_close(&s, &fresh, T0 + 3);
        assert_int_equal(a->open, 0);
        assert_int_equal(surface_user_get(&s, "bob")->open, 0);
}

static void test_surface_sweep_by_age(void **state) {
        SurfaceUser *a = place("alice", 1, T0);
        Exchange x[5];
        unsigned n;

        for (int i = 0; i < 5; i++)
                open_request(&x[i], i < 3 ? "alice" : NULL, 1 + i % 2, T0 + (usec_t) i * USEC_PER_SEC);
        /* max_age 2.5 s at T0 + 4 s: the ones started at T0 and T0 + 1 s */
        n = surface_sweep(&s, T0 + 4 * USEC_PER_SEC, 2500 * USEC_PER_MSEC);
        assert_int_equal(n, 2);
        assert_int_equal(strmap_size(&s.open), 3);
        assert_int_equal(x[0].key[0], 0);
        assert_int_equal(x[1].key[0], 0);
        assert_true(x[2].key[0] != 0);
        assert_int_equal(a->open, 1);
        assert_int_equal(surface_worker_open(&s, 1), 2); /* x[2], x[4] */
        assert_int_equal(surface_worker_open(&s, 2), 1); /* x[3] */

        /* exactly max_age old is swept too */
        n = surface_sweep(&s, T0 + 4 * USEC_PER_SEC, 2 * USEC_PER_SEC);
        assert_int_equal(n, 1);

        /* a swept request that ends later is not counted down twice, its consumption still counts */
        surface_request_close(&s, &x[0], T0 + 10 * USEC_PER_SEC);
        assert_int_equal(a->open, 0);
        assert_int_equal(surface_worker_open(&s, 1), 1);
        assert_true(a->requests == 1);
        assert_int_equal(surface_sweep(&s, T0 + 100 * USEC_PER_SEC, USEC_PER_SEC), 2);
        assert_int_equal(strmap_size(&s.open), 0);
        assert_int_equal(surface_worker_open(&s, 1), 0);
        assert_int_equal(surface_worker_open(&s, 2), 0);
}

static void test_surface_many_requests_unique_keys(void **state) {
        static Exchange x[2000];
        StrMap seen;

        strmap_init(&seen);
        for (unsigned i = 0; i < 2000; i++) {
                open_request(&x[i], NULL, 1 + i % 7, T0);
                assert_int_equal(strmap_put(&seen, x[i].key, &x[i], NULL), 0);
                if (i % 3 == 0)
                        surface_request_close(&s, &x[i], T0);
        }
        strmap_done(&seen);
        unsigned total = 0;
        for (unsigned w = 1; w <= 7; w++)
                total += surface_worker_open(&s, w);
        assert_int_equal(total, 2000 - 667);
        assert_int_equal(strmap_size(&s.open), total);
        for (unsigned i = 0; i < 2000; i++)
                surface_request_close(&s, &x[i], T0);
        for (unsigned w = 1; w <= 7; w++)
                assert_int_equal(surface_worker_open(&s, w), 0);
}

static void test_surface_done_frees_everything(void **state) {
        Exchange x;

        /* ASan's leak check is the assertion here */
        place("alice", 1, T0);
        place("bob", 2, T0);
        open_request(&x, "alice", 1, T0);
        surface_user_forget(&s, surface_user_get(&s, "alice"));
        surface_done(&s);
        assert_int_equal(surface_init(&s), 0);
        assert_int_equal(surface_worker_users(&s, 1), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_surface_user_place_new_and_replace, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_user_forget, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_worker_slots_grow, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_worker_gone_sweeps_its_users, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_request_open_counts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_request_close_attributes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_request_close_user_forgotten, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_relogin_not_charged_for_old_requests, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_relogin_after_worker_gone, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_sweep_by_age, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_many_requests_unique_keys, setup, teardown),
                cmocka_unit_test_setup_teardown(test_surface_done_frees_everything, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
