/* SPDX-License-Identifier: MIT */
/* The front end's open requests: a list of the exchanges themselves (client request ids may repeat),
 * exact counts per worker, an end removing an entry once and only once, and the sweep of entries older
 * than the limit (what an exchange that leaked its entry would otherwise hold forever), which requests
 * may end during. */
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
#include "open-requests.h"

#define T0 (1000 * USEC_PER_SEC)

static OpenRequests o;

static int setup(void **state) {
        open_requests_init(&o);
        return 0;
}

static int teardown(void **state) {
        open_requests_done(&o);
        return 0;
}

static void open_request(Exchange *x, unsigned worker, usec_t started) {
        *x = (Exchange) { .worker = worker, .started = started };
        assert_int_equal(open_requests_add(&o, x), 0);
        assert_true(x->open);
}

static void test_open_requests_add_counts(void **state) {
        Exchange x[4];

        open_request(&x[0], 1, T0);
        open_request(&x[1], 1, T0);
        open_request(&x[2], 1, T0); /* a guest's counts for its worker as well */
        open_request(&x[3], 2, T0);
        assert_int_equal(open_requests_worker(&o, 1), 3);
        assert_int_equal(open_requests_worker(&o, 2), 1);
        assert_int_equal(open_requests_count(&o), 4);
        /* opened twice: one entry (the list would loop otherwise), counted once */
        assert_int_equal(open_requests_add(&o, &x[1]), 0);
        assert_int_equal(open_requests_count(&o), 4);
        assert_int_equal(open_requests_worker(&o, 1), 3);
        /* opened again on another worker: counted for that one now */
        x[1].worker = 2;
        assert_int_equal(open_requests_add(&o, &x[1]), 0);
        assert_int_equal(open_requests_count(&o), 4);
        assert_int_equal(open_requests_worker(&o, 1), 2);
        assert_int_equal(open_requests_worker(&o, 2), 2);
        x[1].worker = 1;
        assert_int_equal(open_requests_add(&o, &x[1]), 0);
        /* ids never seen: 0, never a read past the arrays */
        assert_int_equal(open_requests_worker(&o, 5000), 0);
        assert_int_equal(open_requests_worker(&o, 0), 0);
        for (int i = 0; i < 4; i++)
                assert_true(open_requests_remove(&o, &x[i]));
}

static void test_open_requests_remove_once(void **state) {
        Exchange x, y;

        open_request(&x, 1, T0);
        open_request(&y, 1, T0 + 100);
        assert_true(open_requests_remove(&o, &x));
        assert_false(x.open); /* out of the list */
        assert_int_equal(open_requests_worker(&o, 1), 1);
        assert_true(open_requests_remove(&o, &y));
        assert_int_equal(open_requests_worker(&o, 1), 0);
        assert_int_equal(open_requests_count(&o), 0);
        /* a second end of the same exchange does not count down again (the router tells the commander
         * of an end only when this says it was still open) */
        assert_false(open_requests_remove(&o, &x));
        assert_int_equal(open_requests_worker(&o, 1), 0);
}

static unsigned sweep(usec_t now, usec_t max_age) {
        unsigned n = 0;
        Exchange *x;

        open_requests_sweep_begin(&o);
        while (open_requests_sweep_next(&o, now, max_age, &x)) {
                assert_false(x->open);
                n++;
        }
        return n;
}

static void test_open_requests_sweep_by_age(void **state) {
        Exchange x[5];

        for (int i = 0; i < 5; i++)
                open_request(&x[i], 1 + i % 2, T0 + (usec_t) i * USEC_PER_SEC);
        /* max_age 2.5 s at T0 + 4 s: the ones started at T0 and T0 + 1 s */
        assert_int_equal(sweep(T0 + 4 * USEC_PER_SEC, 2500 * USEC_PER_MSEC), 2);
        assert_int_equal(open_requests_count(&o), 3);
        assert_false(x[0].open);
        assert_false(x[1].open);
        assert_true(x[2].open);
        assert_int_equal(open_requests_worker(&o, 1), 2); /* x[2], x[4] */
        assert_int_equal(open_requests_worker(&o, 2), 1); /* x[3] */

        /* exactly max_age old is swept too */
        assert_int_equal(sweep(T0 + 4 * USEC_PER_SEC, 2 * USEC_PER_SEC), 1);

        /* a swept request that ends later is not counted down twice */
        assert_false(open_requests_remove(&o, &x[0]));
        assert_int_equal(open_requests_worker(&o, 1), 1);
        /* one that started after now (a caller's stale clock) is young, not 2^64 us old */
        assert_int_equal(sweep(T0, USEC_PER_SEC), 0);
        assert_int_equal(sweep(T0 + 100 * USEC_PER_SEC, USEC_PER_SEC), 2);
        assert_int_equal(open_requests_count(&o), 0);
        assert_int_equal(open_requests_worker(&o, 1), 0);
        assert_int_equal(open_requests_worker(&o, 2), 0);
}

/* What the router does with a swept request may end others (a drained worker's last exchange, say): the
 * sweep goes on past them, neither reading an ended entry nor missing an old one. */
static void test_open_requests_sweep_while_ending(void **state) {
        Exchange x[4], *got;

        for (int i = 0; i < 4; i++)
                open_request(&x[i], 1, T0);
        open_requests_sweep_begin(&o);
        assert_true(open_requests_sweep_next(&o, T0 + 10 * USEC_PER_SEC, USEC_PER_SEC, &got));
        assert_ptr_equal(got, &x[0]);
        assert_true(open_requests_remove(&o, &x[1])); /* the sweep's next entry ends meanwhile */
        assert_true(open_requests_sweep_next(&o, T0 + 10 * USEC_PER_SEC, USEC_PER_SEC, &got));
        assert_ptr_equal(got, &x[2]);
        assert_true(open_requests_remove(&o, &x[3]));
        assert_false(open_requests_sweep_next(&o, T0 + 10 * USEC_PER_SEC, USEC_PER_SEC, &got));
        assert_int_equal(open_requests_count(&o), 0);
        assert_int_equal(open_requests_worker(&o, 1), 0);
}

static void test_open_requests_many(void **state) {
        static Exchange x[2000];
        unsigned total = 0;

        for (unsigned i = 0; i < 2000; i++) {
                open_request(&x[i], 1 + i % 7, T0);
                if (i % 3 == 0)
                        assert_true(open_requests_remove(&o, &x[i]));
        }
        for (unsigned w = 1; w <= 7; w++)
                total += open_requests_worker(&o, w);
        assert_int_equal(total, 2000 - 667);
        assert_int_equal(open_requests_count(&o), total);
        for (unsigned i = 0; i < 2000; i++)
                (void) open_requests_remove(&o, &x[i]);
        for (unsigned w = 1; w <= 7; w++)
                assert_int_equal(open_requests_worker(&o, w), 0);
        assert_int_equal(open_requests_count(&o), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_open_requests_add_counts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_requests_remove_once, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_requests_sweep_by_age, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_requests_sweep_while_ending, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_requests_many, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
