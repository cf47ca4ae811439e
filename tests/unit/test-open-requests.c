/* SPDX-License-Identifier: MIT */
/* The front end's open requests: a dict with a unique key per request (client request ids may repeat),
 * exact counts per worker, an end removing an entry once and only once, and the sweep of entries older
 * than the limit (what an exchange that leaked its entry would otherwise hold forever). */
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
        assert_true(x->key[0] != 0);
}

static void test_open_requests_add_counts(void **state) {
        Exchange x[4];

        open_request(&x[0], 1, T0);
        open_request(&x[1], 1, T0);
        open_request(&x[2], 1, T0); /* a guest's counts for its worker as well */
        open_request(&x[3], 2, T0);
        assert_int_equal(open_requests_worker(&o, 1), 3);
        assert_int_equal(open_requests_worker(&o, 2), 1);
        assert_int_equal(strmap_size(&o.dict), 4);
        /* keys are unique (client request ids may repeat) */
        for (int i = 0; i < 4; i++)
                for (int j = i + 1; j < 4; j++)
                        assert_string_not_equal(x[i].key, x[j].key);
        assert_ptr_equal(strmap_get(&o.dict, x[1].key), &x[1]);
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
        assert_int_equal(x.key[0], 0); /* out of the dict */
        assert_int_equal(open_requests_worker(&o, 1), 1);
        assert_true(open_requests_remove(&o, &y));
        assert_int_equal(open_requests_worker(&o, 1), 0);
        assert_int_equal(strmap_size(&o.dict), 0);
        /* a second end of the same exchange does not count down again (the router tells the commander
         * of an end only when this says it was still open) */
        assert_false(open_requests_remove(&o, &x));
        assert_int_equal(open_requests_worker(&o, 1), 0);
}

static unsigned sweep(usec_t now, usec_t max_age) {
        size_t cursor = 0;
        unsigned n = 0;
        Exchange *x;

        while (open_requests_sweep(&o, &cursor, now, max_age, &x)) {
                assert_int_equal(x->key[0], 0);
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
        assert_int_equal(strmap_size(&o.dict), 3);
        assert_int_equal(x[0].key[0], 0);
        assert_int_equal(x[1].key[0], 0);
        assert_true(x[2].key[0] != 0);
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
        assert_int_equal(strmap_size(&o.dict), 0);
        assert_int_equal(open_requests_worker(&o, 1), 0);
        assert_int_equal(open_requests_worker(&o, 2), 0);
}

static void test_open_requests_many_unique_keys(void **state) {
        static Exchange x[2000];
        unsigned total = 0;
        StrMap seen;

        strmap_init(&seen);
        for (unsigned i = 0; i < 2000; i++) {
                open_request(&x[i], 1 + i % 7, T0);
                assert_int_equal(strmap_put(&seen, x[i].key, &x[i], NULL), 0);
                if (i % 3 == 0)
                        assert_true(open_requests_remove(&o, &x[i]));
        }
        strmap_done(&seen);
        for (unsigned w = 1; w <= 7; w++)
                total += open_requests_worker(&o, w);
        assert_int_equal(total, 2000 - 667);
        assert_int_equal(strmap_size(&o.dict), total);
        for (unsigned i = 0; i < 2000; i++)
                (void) open_requests_remove(&o, &x[i]);
        for (unsigned w = 1; w <= 7; w++)
                assert_int_equal(open_requests_worker(&o, w), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_open_requests_add_counts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_requests_remove_once, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_requests_sweep_by_age, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_requests_many_unique_keys, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
