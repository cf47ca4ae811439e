/* SPDX-License-Identifier: MIT */
/* Background-thread mode: the sensor's own poll loop sends the Hello and the reports, serves move commands,
 * picks up a new interval at once, and ep_sensor_free()/ep_sensor_goodbye() stop and join it cleanly (run
 * under ASan/UBSan in the sanitizer build). The test thread only plays the commander here. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cleanup.h"
#include "test-sensor-util.h"

#define TIMEOUT (5 * USEC_PER_SEC)

DEFINE_TRIVIAL_CLEANUP_FUNC(Frame *, frame_free);

static int setup(void **state) {
        sensor_env_reset();
        return 0;
}

static int teardown(void **state) {
        sensor_env_reset();
        return 0;
}

static int snapshot(void *userdata, const char *user, void **ret_blob, size_t *ret_size) {
        *ret_blob = strdup(user);
        *ret_size = strlen(user);
        return *ret_blob ? 0 : -ENOMEM;
}

static void test_sensor_start_thread_reports_then_free_joins(void **state) {
        ep_sensor *s;
        Commander c;
        uint64_t t;

        s = commander_start(&c, "50ms");
        assert_int_equal(ep_sensor_start_thread(s), 0);
        assert_int_equal(ep_sensor_start_thread(s), -EBUSY);
        /* the application's loop API is not to be used while the thread drives the sensor */
        assert_int_equal(ep_sensor_dispatch(s), -EBUSY);
        assert_int_equal(ep_sensor_get_timeout(s, &t), -EBUSY);
        assert_int_equal(ep_sensor_get_fd(s), -1);

        {
                _cleanup_(frame_freep) Frame *hello = commander_next(&c, NULL, TIMEOUT, NULL);
                assert_non_null(hello);
                assert_int_equal(hello->body_case, ELASTIC_POOL__FRAME__BODY_HELLO);
        }
        for (unsigned i = 1; i <= 3; i++) {
                _cleanup_(frame_freep) Frame *r =
                        commander_expect(&c, NULL, ELASTIC_POOL__FRAME__BODY_REPORT, TIMEOUT);
                assert_int_equal(r->report->seq, i);
        }
        /* setters from this thread while the sensor thread reads them */
        ep_sensor_set_users(s, 2);
        ep_sensor_user_active(s, "alice", false);
        ep_sensor_free(s);
        /* the channel went with the sensor */
        assert_true(commander_wait_eof(&c, NULL, TIMEOUT));
        commander_done(&c);
}

static void test_sensor_start_thread_serves_snapshot(void **state) {
        static const ep_sensor_user_callbacks cb = { .snapshot = snapshot };
        _cleanup_(frame_freep) Frame *p = NULL;
        ElasticPool__SnapshotRequest m = ELASTIC_POOL__SNAPSHOT_REQUEST__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        ep_sensor *s;
        Commander c;

        s = commander_start(&c, "1s");
        assert_int_equal(ep_sensor_start_thread(s), 0);
        /* callbacks may be set while the thread runs */
        assert_int_equal(ep_sensor_set_user_callbacks(s, &cb, NULL), 0);
        m.has_move_id = true, m.move_id = 9, m.user = (char *) "zoe";
        f.body_case = ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST, f.snapshot_request = &m;
        commander_send(&c, &f);
        p = commander_expect(&c, NULL, ELASTIC_POOL__FRAME__BODY_PACKAGE, TIMEOUT);
        assert_int_equal(p->package->move_id, 9);
        assert_memory_equal(p->package->blob.data, "zoe", 3);
        ep_sensor_free(s);
        commander_done(&c);
}

static void test_sensor_start_thread_set_interval_applies_at_once(void **state) {
        _cleanup_(frame_freep) Frame *first = NULL, *second = NULL;
        usec_t asked;
        ep_sensor *s;
        Commander c;

        s = commander_start(&c, "1h");
        assert_int_equal(ep_sensor_start_thread(s), 0);
        first = commander_expect(&c, NULL, ELASTIC_POOL__FRAME__BODY_REPORT, TIMEOUT);
        asked = now_usec(CLOCK_MONOTONIC);
        /* an hour to the next tick, then 100 ms: the thread wakes up and re-plans from the last tick */
        assert_int_equal(ep_sensor_set_interval(s, 100 * USEC_PER_MSEC), 0);
        second = commander_expect(&c, NULL, ELASTIC_POOL__FRAME__BODY_REPORT, TIMEOUT);
        assert_int_equal(second->report->seq, 2);
        assert_true(now_usec(CLOCK_MONOTONIC) - asked < 2 * USEC_PER_SEC);
        ep_sensor_free(s);
        commander_done(&c);
}

static void test_sensor_goodbye_stops_thread(void **state) {
        _cleanup_(frame_freep) Frame *bye = NULL;
        ep_sensor *s;
        Commander c;

        s = commander_start(&c, "50ms");
        assert_int_equal(ep_sensor_start_thread(s), 0);
        ep_sensor_goodbye(s, "retired");
        bye = commander_expect(&c, NULL, ELASTIC_POOL__FRAME__BODY_GOODBYE, TIMEOUT);
        assert_string_equal(bye->goodbye->reason, "retired");
        assert_true(commander_wait_eof(&c, NULL, TIMEOUT));
        /* stopped: the loop API is the caller's again */
        assert_int_equal(ep_sensor_dispatch(s), 0);
        ep_sensor_free(s);
        commander_done(&c);
}

static void test_sensor_start_thread_without_channel(void **state) {
        ep_sensor *s = NULL;

        assert_int_equal(ep_sensor_new(&s), 0);
        assert_int_equal(ep_sensor_start_thread(s), 0);
        ep_sensor_set_executor(s, 1, 2, 3);
        ep_sensor_free(s);
}

#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                TEST(test_sensor_start_thread_reports_then_free_joins),
                TEST(test_sensor_start_thread_serves_snapshot),
                TEST(test_sensor_start_thread_set_interval_applies_at_once),
                TEST(test_sensor_goodbye_stops_thread),
                TEST(test_sensor_start_thread_without_channel),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
