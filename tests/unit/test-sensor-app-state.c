/* SPDX-License-Identifier: MIT */
/* The application's side: fields absent until first set, distinct active users per interval (system
 * requests not counted), the executor helpers, and setters hammered from several threads at once. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "app-state.h"

static void test_app_state_snapshot_absent_until_set(void **state) {
        AppState a;
        AppFields f;

        app_state_init(&a);
        assert_false(app_state_any_set(&a));
        app_state_snapshot(&a, &f);
        assert_false(f.has_users || f.has_pages || f.has_connections || f.has_active_users ||
                     f.has_executor || f.has_backlog);

        app_state_set_users(&a, 0); /* set to 0 is known to be 0 */
        app_state_set_backlog(&a, 5, 6);
        assert_true(app_state_any_set(&a));
        app_state_snapshot(&a, &f);
        assert_true(f.has_users);
        assert_int_equal(f.users, 0);
        assert_true(f.has_backlog);
        assert_int_equal(f.pending, 5);
        assert_int_equal(f.outbox, 6);
        assert_false(f.has_pages || f.has_connections || f.has_executor || f.has_active_users);
        app_state_done(&a);
}

static void test_app_state_user_active_counts_distinct(void **state) {
        AppState a;
        AppFields f;

        app_state_init(&a);
        app_state_user_active(&a, "alice", false);
        app_state_user_active(&a, "bob", false);
        app_state_user_active(&a, "alice", false);
        app_state_snapshot(&a, &f);
        assert_true(f.has_active_users);
        assert_int_equal(f.active_users, 2);
        app_state_done(&a);
}

static void test_app_state_user_active_system_not_counted(void **state) {
        AppState a;
        AppFields f;

        app_state_init(&a);
        app_state_user_active(&a, "monitor", true);
        app_state_user_active(&a, NULL, false); /* a guest without an id */
        app_state_snapshot(&a, &f);
        /* the application tracks activity, so 0 is a real 0 here */
        assert_true(f.has_active_users);
        assert_int_equal(f.active_users, 0);
        app_state_user_active(&a, "monitor", true);
        app_state_user_active(&a, "carol", false);
        app_state_snapshot(&a, &f);
        assert_int_equal(f.active_users, 1);
        app_state_done(&a);
}

static void test_app_state_snapshot_resets_active_users(void **state) {
        AppState a;
        AppFields f;

        app_state_init(&a);
        app_state_user_active(&a, "alice", false);
        app_state_snapshot(&a, &f);
        assert_int_equal(f.active_users, 1);
        app_state_snapshot(&a, &f);
        assert_true(f.has_active_users);
        assert_int_equal(f.active_users, 0);
        app_state_user_active(&a, "alice", false);
        app_state_snapshot(&a, &f);
        assert_int_equal(f.active_users, 1);
        app_state_done(&a);
}

static void test_app_state_user_active_many_users(void **state) {
        AppState a;
        AppFields f;
        char name[32];

        app_state_init(&a);
        for (unsigned round = 0; round < 2; round++)
                for (unsigned i = 0; i < 20000; i++) {
                        snprintf(name, sizeof name, "user-%u", i);
                        app_state_user_active(&a, name, false);
                }
        app_state_snapshot(&a, &f);
        assert_int_equal(f.active_users, 20000);
        /* the grown set is handed back once the burst is over, and counting goes on */
        app_state_user_active(&a, "x", false);
        app_state_snapshot(&a, &f);
        assert_int_equal(f.active_users, 1);
        assert_true(a.active.capacity <= 4096);
        app_state_done(&a);
}

static void test_app_state_executor_helpers(void **state) {
        AppState a;
        AppFields f;

        app_state_init(&a);
        app_state_set_executor_total(&a, 4);
        app_state_snapshot(&a, &f);
        assert_true(f.has_executor);
        assert_int_equal(f.total, 4);
        assert_int_equal(f.busy, 0);
        assert_int_equal(f.queue_depth, 0);

        app_state_request_queued(&a);
        app_state_request_queued(&a);
        app_state_request_begin(&a);
        app_state_snapshot(&a, &f);
        assert_int_equal(f.busy, 1);
        assert_int_equal(f.queue_depth, 1);
        app_state_request_end(&a);
        app_state_snapshot(&a, &f);
        assert_int_equal(f.busy, 0);
        assert_int_equal(f.queue_depth, 1);

        app_state_set_executor(&a, 7, 8, 9);
        app_state_snapshot(&a, &f);
        assert_int_equal(f.busy, 7);
        assert_int_equal(f.total, 8);
        assert_int_equal(f.queue_depth, 9);
        app_state_done(&a);
}

static void test_app_state_executor_helpers_saturate_at_zero(void **state) {
        AppState a;
        AppFields f;

        app_state_init(&a);
        /* an application that never calls request_queued(): begin must not wrap the queue to 2^32-1 */
        app_state_request_begin(&a);
        app_state_request_end(&a);
        app_state_request_end(&a);
        app_state_snapshot(&a, &f);
        assert_true(f.has_executor);
        assert_int_equal(f.busy, 0);
        assert_int_equal(f.queue_depth, 0);
        app_state_done(&a);
}

#define THREADS 4
#define ROUNDS 20000

static void *hammer(void *userdata) {
        AppState *a = userdata;
        char name[32];

        for (unsigned i = 0; i < ROUNDS; i++) {
                app_state_request_queued(a);
                app_state_request_begin(a);
                snprintf(name, sizeof name, "u%u", i % 100);
                app_state_user_active(a, name, false);
                app_state_request_end(a);
        }
        return NULL;
}

static void test_app_state_setters_from_threads(void **state) {
        pthread_t t[THREADS];
        unsigned snapshots = 0;
        AppState a;
        AppFields f;

        app_state_init(&a);
        for (unsigned i = 0; i < THREADS; i++)
                assert_int_equal(pthread_create(&t[i], NULL, hammer, &a), 0);
        /* reports taken while the threads run never see more users than exist */
        for (unsigned i = 0; i < 100; i++, snapshots++) {
                app_state_snapshot(&a, &f);
                assert_true(f.active_users <= 100);
        }
        for (unsigned i = 0; i < THREADS; i++)
                assert_int_equal(pthread_join(t[i], NULL), 0);
        app_state_snapshot(&a, &f);
        assert_int_equal(f.busy, 0);
        assert_int_equal(f.queue_depth, 0);
        assert_true(snapshots == 100);
        app_state_done(&a);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_app_state_snapshot_absent_until_set),
                cmocka_unit_test(test_app_state_user_active_counts_distinct),
                cmocka_unit_test(test_app_state_user_active_system_not_counted),
                cmocka_unit_test(test_app_state_snapshot_resets_active_users),
                cmocka_unit_test(test_app_state_user_active_many_users),
                cmocka_unit_test(test_app_state_executor_helpers),
                cmocka_unit_test(test_app_state_executor_helpers_saturate_at_zero),
                cmocka_unit_test(test_app_state_setters_from_threads),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
