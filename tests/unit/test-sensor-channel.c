/* SPDX-License-Identifier: MIT */
/* The channel client over a real socketpair, the sensor driven through its event-loop API exactly as an
 * application would: Hello first with the right fields, reports on a fixed cadence, the move commands
 * answered through the callbacks (or with an error when there is none), a commander that sends garbage
 * gets its channel closed, and a broken channel is reconnected to ELASTIC_POOL_CHANNEL: quickly at first,
 * backing off against a commander that refuses us, never after a goodbye or a drain. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "macro.h"
#include "sensor-internal.h"
#include "test-sensor-util.h"

#define TIMEOUT (5 * USEC_PER_SEC)

DEFINE_TRIVIAL_CLEANUP_FUNC(ep_sensor *, ep_sensor_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(Frame *, frame_free);

/* The application side of the move callbacks: one user "alice" with state "state-of-alice". */
typedef struct App {
        char installed[64];
        char installed_blob[64];
        char dropped[64];
        uint64_t drain_deadline;
        bool drained;
        int install_result;
} App;

static int app_snapshot(void *userdata, const char *user, void **ret_blob, size_t *ret_size) {
        if (strcmp(user, "alice") != 0)
                return -ENOENT;
        *ret_blob = strdup("state-of-alice");
        *ret_size = strlen("state-of-alice");
        return *ret_blob ? 0 : -ENOMEM;
}

static int app_install(void *userdata, const char *user, const void *blob, size_t size) {
        App *app = userdata;

        if (app->install_result < 0)
                return app->install_result;
        snprintf(app->installed, sizeof app->installed, "%s", user);
        snprintf(app->installed_blob, sizeof app->installed_blob, "%.*s", (int) size, (const char *) blob);
        return 0;
}

static int app_drop(void *userdata, const char *user) {
        App *app = userdata;

        snprintf(app->dropped, sizeof app->dropped, "%s", user);
        return 0;
}

static void app_drain(void *userdata, uint64_t deadline_usec) {
        App *app = userdata;

        app->drain_deadline = deadline_usec;
        app->drained = true;
}

static const ep_sensor_user_callbacks app_callbacks = {
        .snapshot = app_snapshot,
        .install = app_install,
        .drop = app_drop,
};

static int setup(void **state) {
        sensor_env_reset();
        return 0;
}

static int teardown(void **state) {
        sensor_env_reset();
        return 0;
}

static bool has_capability(const ElasticPool__Hello *h, ElasticPool__Capability c) {
        for (size_t i = 0; i < h->n_capabilities; i++)
                if (h->capabilities[i] == c)
                        return true;
        return false;
}

static void test_sensor_dispatch_hello_first_with_fields(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_(frame_freep) Frame *hello = NULL, *report = NULL;
        Commander c;
        App app = {};

        assert_int_equal(setenv("ELASTIC_POOL_GROUP", "web", 1), 0);
        assert_int_equal(setenv("ELASTIC_POOL_WORKER", "7", 1), 0);
        s = commander_start(&c, "250ms");
        assert_int_equal(ep_sensor_set_user_callbacks(s, &app_callbacks, &app), 0);
        ep_sensor_set_executor_total(s, 8);

        hello = commander_next(&c, s, TIMEOUT, NULL);
        assert_non_null(hello);
        assert_int_equal(hello->body_case, ELASTIC_POOL__FRAME__BODY_HELLO);
        assert_string_equal(hello->hello->group, "web");
        assert_true(hello->hello->has_worker_id);
        assert_int_equal(hello->hello->worker_id, 7);
        assert_int_equal(hello->hello->pid, getpid());
        assert_int_equal(hello->hello->protocol_version, EP_PROTOCOL_VERSION);
        assert_string_equal(hello->hello->sensor_version, EP_VERSION);
        assert_int_equal(hello->hello->interval_usec, 250000);
        assert_true(has_capability(hello->hello, ELASTIC_POOL__CAPABILITY__CAPABILITY_SNAPSHOT_USERS));
        assert_true(has_capability(hello->hello, ELASTIC_POOL__CAPABILITY__CAPABILITY_INSTALL_USERS));
        assert_true(has_capability(hello->hello, ELASTIC_POOL__CAPABILITY__CAPABILITY_DROP_USERS));
        assert_true(has_capability(hello->hello, ELASTIC_POOL__CAPABILITY__CAPABILITY_APPLICATION_FIELDS));
        assert_int_equal(hello->hello->n_capabilities, 4);

        report = commander_next(&c, s, TIMEOUT, NULL);
        assert_non_null(report);
        assert_int_equal(report->body_case, ELASTIC_POOL__FRAME__BODY_REPORT);
        assert_int_equal(report->report->seq, 1);
        assert_int_equal(report->report->executor->total, 8);
        commander_done(&c);
}

static void test_sensor_dispatch_hello_without_callbacks_no_capabilities(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_(frame_freep) Frame *hello = NULL;
        Commander c;

        s = commander_start(&c, NULL);
        hello = commander_next(&c, s, TIMEOUT, NULL);
        assert_non_null(hello);
        assert_int_equal(hello->body_case, ELASTIC_POOL__FRAME__BODY_HELLO);
        assert_int_equal(hello->hello->n_capabilities, 0);
        assert_null(hello->hello->group);
        assert_false(hello->hello->has_worker_id);
        assert_int_equal(hello->hello->interval_usec, SENSOR_INTERVAL_DEFAULT_USEC);
        commander_done(&c);
}

static void test_sensor_new_channel_fd_cloexec_and_env_unset(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        Commander c;
        int fd;

        s = commander_start(&c, NULL);
        /* children of the worker must neither inherit the fd nor find its number */
        assert_null(getenv("ELASTIC_POOL_CHANNEL_FD"));
        fd = ep_sensor_get_fd(s);
        assert_true(fd >= 0);
        assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
        assert_true(ep_sensor_get_events(s) & POLLIN);
        commander_done(&c);
}

static void test_sensor_new_channel_fd_unusable_fails(void **state) {
        _cleanup_close_ int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        ep_sensor *s = NULL;
        char buf[16];

        assert_true(null_fd >= 0);
        snprintf(buf, sizeof buf, "%d", null_fd);
        assert_int_equal(setenv("ELASTIC_POOL_CHANNEL_FD", buf, 1), 0);
        assert_int_equal(ep_sensor_new(&s), -ENOTSOCK);
        assert_null(getenv("ELASTIC_POOL_CHANNEL_FD"));
        assert_int_equal(setenv("ELASTIC_POOL_CHANNEL_FD", "three", 1), 0);
        assert_int_equal(ep_sensor_new(&s), -EINVAL);
        assert_int_equal(setenv("ELASTIC_POOL_CHANNEL_FD", "987", 1), 0); /* not open */
        assert_int_equal(ep_sensor_new(&s), -EBADF);
        assert_null(s);
}

static void test_sensor_dispatch_reports_on_fixed_cadence(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        const usec_t interval = 100 * USEC_PER_MSEC;
        uint64_t t[6], prev_slot = 0;
        Commander c;

        s = commander_start(&c, "100ms");
        for (unsigned i = 0; i < ELEMENTSOF(t); i++) {
                _cleanup_(frame_freep) Frame *f =
                        commander_expect(&c, s, ELASTIC_POOL__FRAME__BODY_REPORT, TIMEOUT);
                assert_int_equal(f->report->seq, i + 1);
                t[i] = f->report->monotonic_usec;
        }
        /* every report sits on the grid first + k * interval, a little late at most, k strictly rising:
         * lateness never accumulates into drift */
        for (unsigned i = 1; i < ELEMENTSOF(t); i++) {
                uint64_t since = t[i] - t[0], slot = (since + interval / 2) / interval;
                int64_t off = (int64_t) since - (int64_t) (slot * interval);

                assert_true(slot > prev_slot);
                assert_true(off > -(int64_t) (20 * USEC_PER_MSEC) && off < (int64_t) (50 * USEC_PER_MSEC));
                prev_slot = slot;
        }
        commander_done(&c);
}

static Frame snapshot_request(ElasticPool__SnapshotRequest *m, uint64_t move, const char *user) {
        Frame f = ELASTIC_POOL__FRAME__INIT;

        elastic_pool__snapshot_request__init(m);
        m->has_move_id = true;
        m->move_id = move;
        m->user = (char *) user;
        f.body_case = ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST;
        f.snapshot_request = m;
        return f;
}

static Frame install(ElasticPool__Install *m, uint64_t move, const char *user, const char *blob) {
        Frame f = ELASTIC_POOL__FRAME__INIT;

        elastic_pool__install__init(m);
        m->has_move_id = true;
        m->move_id = move;
        m->user = (char *) user;
        m->has_blob = true;
        m->blob = (ProtobufCBinaryData) { .len = strlen(blob), .data = (uint8_t *) blob };
        f.body_case = ELASTIC_POOL__FRAME__BODY_INSTALL;
        f.install = m;
        return f;
}

static void test_sensor_dispatch_snapshot_request_answers_package(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_(frame_freep) Frame *p = NULL, *q = NULL;
        ElasticPool__SnapshotRequest m;
        Frame f;
        Commander c;
        App app = {};

        s = commander_start(&c, NULL);
        assert_int_equal(ep_sensor_set_user_callbacks(s, &app_callbacks, &app), 0);
        f = snapshot_request(&m, 41, "alice");
        commander_send(&c, &f);
        p = commander_expect(&c, s, ELASTIC_POOL__FRAME__BODY_PACKAGE, TIMEOUT);
        assert_int_equal(p->package->move_id, 41);
        assert_string_equal(p->package->user, "alice");
        assert_true(p->package->has_blob);
        assert_int_equal(p->package->blob.len, strlen("state-of-alice"));
        assert_memory_equal(p->package->blob.data, "state-of-alice", p->package->blob.len);
        assert_null(p->package->error);
        assert_false(p->package->has_unknown_user);

        /* a user the application does not know (-ENOENT) is said so apart: the commander re-points it */
        f = snapshot_request(&m, 42, "mallory");
        commander_send(&c, &f);
        q = commander_expect(&c, s, ELASTIC_POOL__FRAME__BODY_PACKAGE, TIMEOUT);
        assert_int_equal(q->package->move_id, 42);
        assert_false(q->package->has_blob);
        assert_non_null(q->package->error);
        assert_non_null(strstr(q->package->error, "not known"));
        assert_true(q->package->has_unknown_user && q->package->unknown_user);
        commander_done(&c);
}

static void test_sensor_dispatch_install_answers_result(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_(frame_freep) Frame *ok = NULL, *bad = NULL;
        ElasticPool__Install m;
        Frame f;
        Commander c;
        App app = {};

        s = commander_start(&c, NULL);
        assert_int_equal(ep_sensor_set_user_callbacks(s, &app_callbacks, &app), 0);
        f = install(&m, 7, "bob", "state-of-bob");
        commander_send(&c, &f);
        ok = commander_expect(&c, s, ELASTIC_POOL__FRAME__BODY_INSTALL_RESULT, TIMEOUT);
        assert_int_equal(ok->install_result->move_id, 7);
        assert_string_equal(ok->install_result->user, "bob");
        assert_true(ok->install_result->has_ok && ok->install_result->ok);
        assert_null(ok->install_result->error);
        assert_string_equal(app.installed, "bob");
        assert_string_equal(app.installed_blob, "state-of-bob");

        app.install_result = -ENOSPC;
        f = install(&m, 8, "carol", "x");
        commander_send(&c, &f);
        bad = commander_expect(&c, s, ELASTIC_POOL__FRAME__BODY_INSTALL_RESULT, TIMEOUT);
        assert_int_equal(bad->install_result->move_id, 8);
        assert_true(bad->install_result->has_ok && !bad->install_result->ok);
        assert_non_null(strstr(bad->install_result->error, "carol"));
        commander_done(&c);
}

static void test_sensor_dispatch_missing_callbacks_answer_errors(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_(frame_freep) Frame *p = NULL, *r = NULL;
        ElasticPool__SnapshotRequest sm;
        ElasticPool__Install im;
        Frame f;
        Commander c;

        s = commander_start(&c, NULL);
        f = snapshot_request(&sm, 1, "alice");
        commander_send(&c, &f);
        p = commander_expect(&c, s, ELASTIC_POOL__FRAME__BODY_PACKAGE, TIMEOUT);
        assert_false(p->package->has_blob);
        assert_non_null(strstr(p->package->error, "cannot snapshot"));

        f = install(&im, 2, "alice", "x");
        commander_send(&c, &f);
        r = commander_expect(&c, s, ELASTIC_POOL__FRAME__BODY_INSTALL_RESULT, TIMEOUT);
        assert_false(r->install_result->ok);
        assert_non_null(strstr(r->install_result->error, "cannot install"));
        /* the channel survives a worker that cannot move users */
        assert_true(ep_sensor_get_fd(s) >= 0);
        commander_done(&c);
}

static bool app_drained(void *userdata) {
        App *app = userdata;
        return app->drained && app->dropped[0];
}

static bool app_drained_only(void *userdata) {
        App *app = userdata;
        return app->drained;
}

static void test_sensor_dispatch_drop_and_drain_reach_callbacks(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        ElasticPool__Drop d = ELASTIC_POOL__DROP__INIT;
        ElasticPool__Drain dr = ELASTIC_POOL__DRAIN__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        Commander c;
        App app = {};

        s = commander_start(&c, NULL);
        assert_int_equal(ep_sensor_set_user_callbacks(s, &app_callbacks, &app), 0);
        ep_sensor_set_drain_callback(s, app_drain, &app);
        d.has_move_id = true, d.move_id = 3, d.user = (char *) "dave";
        f.body_case = ELASTIC_POOL__FRAME__BODY_DROP, f.drop = &d;
        commander_send(&c, &f);
        dr.has_deadline_usec = true, dr.deadline_usec = 123456789, dr.reason = (char *) "compaction";
        f.body_case = ELASTIC_POOL__FRAME__BODY_DRAIN, f.drain = &dr;
        commander_send(&c, &f);
        assert_true(sensor_drive_until(s, app_drained, &app, TIMEOUT));
        assert_string_equal(app.dropped, "dave");
        assert_int_equal(app.drain_deadline, 123456789);
        commander_done(&c);
}

static void test_sensor_dispatch_garbage_closes_channel(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        static const uint8_t oversize[] = { 0xff, 0xff, 0xff, 0xff, 1, 2, 3 };
        uint64_t t;
        Commander c;

        s = commander_start(&c, NULL);
        commander_send_raw(&c, oversize, sizeof oversize);
        assert_true(commander_wait_eof(&c, s, TIMEOUT));
        assert_int_equal(ep_sensor_get_fd(s), -1);
        /* without ELASTIC_POOL_CHANNEL nothing to reconnect to: only the next tick is scheduled */
        assert_int_equal(ep_sensor_get_timeout(s, &t), 0);
        assert_true(t > now_usec(CLOCK_MONOTONIC) + USEC_PER_SEC);
        commander_done(&c);
}

static void test_sensor_dispatch_undecodable_frame_closes_channel(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        static const uint8_t junk[] = { 0, 0, 0, 3, 0xff, 0xff, 0xff };
        Commander c;

        s = commander_start(&c, NULL);
        commander_send_raw(&c, junk, sizeof junk);
        assert_true(commander_wait_eof(&c, s, TIMEOUT));
        assert_int_equal(ep_sensor_get_fd(s), -1);
        commander_done(&c);
}

static void test_sensor_dispatch_unexpected_frame_closes_channel(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        ElasticPool__Hello h = ELASTIC_POOL__HELLO__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        Commander c;

        s = commander_start(&c, NULL);
        /* a Hello is the worker's to send; from the commander it means we do not understand each other */
        f.body_case = ELASTIC_POOL__FRAME__BODY_HELLO, f.hello = &h;
        commander_send(&c, &f);
        assert_true(commander_wait_eof(&c, s, TIMEOUT));
        commander_done(&c);
}

/* A temp dir for the commander's channel.sock; removed by channel_dir_done(). */
typedef struct ChannelDir {
        char dir[64], path[128];
} ChannelDir;

static void channel_dir_init(ChannelDir *d) {
        snprintf(d->dir, sizeof d->dir, "/tmp/ep-sensor-channel.XXXXXX");
        assert_non_null(mkdtemp(d->dir));
        snprintf(d->path, sizeof d->path, "%s/channel.sock", d->dir);
        assert_int_equal(setenv("ELASTIC_POOL_CHANNEL", d->path, 1), 0);
}

static void channel_dir_done(ChannelDir *d) {
        (void) unlink(d->path);
        (void) rmdir(d->dir);
}

static void test_sensor_dispatch_reconnects_to_channel_path(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_(frame_freep) Frame *hello1 = NULL, *hello2 = NULL, *report = NULL;
        _cleanup_close_ int listen_fd = -EBADF;
        Commander c, again;
        usec_t closed_at;
        ChannelDir d;

        channel_dir_init(&d);
        listen_fd = commander_listen(d.path);
        s = commander_start(&c, "200ms");
        /* the worker's children must not find it: they would connect as if they were the worker */
        assert_null(getenv("ELASTIC_POOL_CHANNEL"));
        hello1 = commander_expect(&c, s, ELASTIC_POOL__FRAME__BODY_HELLO, TIMEOUT);

        /* the commander goes away */
        commander_done(&c);
        closed_at = now_usec(CLOCK_MONOTONIC);
        assert_true(commander_accept(&again, listen_fd, s, TIMEOUT));
        /* with backoff, but a quick first attempt: 100 ms jittered down to 50 ms at most */
        assert_true(now_usec(CLOCK_MONOTONIC) - closed_at >= 50 * USEC_PER_MSEC);
        assert_true(now_usec(CLOCK_MONOTONIC) - closed_at < USEC_PER_SEC);

        hello2 = commander_next(&again, s, TIMEOUT, NULL);
        assert_non_null(hello2);
        assert_int_equal(hello2->body_case, ELASTIC_POOL__FRAME__BODY_HELLO); /* first again */
        assert_int_equal(hello2->hello->pid, getpid());
        report = commander_expect(&again, s, ELASTIC_POOL__FRAME__BODY_REPORT, TIMEOUT);
        assert_true(report->report->seq >= 2);
        commander_done(&again);
        channel_dir_done(&d);
}

/* Accepts the sensor's next connection and closes it at once, as a commander refusing a peer does;
 * returns when that was. */
static usec_t refuse_next(int listen_fd, ep_sensor *s) {
        Commander c;

        assert_true(commander_accept(&c, listen_fd, s, TIMEOUT));
        commander_done(&c);
        return now_usec(CLOCK_MONOTONIC);
}

static void test_sensor_dispatch_refused_peer_backs_off(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_close_ int listen_fd = -EBADF;
        usec_t t[6];
        Commander c;
        ChannelDir d;

        channel_dir_init(&d);
        listen_fd = commander_listen(d.path);
        s = commander_start(&c, "1h");
        frame_free(commander_expect(&c, s, ELASTIC_POOL__FRAME__BODY_HELLO, TIMEOUT));
        commander_done(&c);
        t[0] = now_usec(CLOCK_MONOTONIC);
        for (unsigned i = 1; i < ELEMENTSOF(t); i++)
                t[i] = refuse_next(listen_fd, s);
        /* each wait at least half of 100, 200, 400, 800, 1600 ms: the delay doubles, no spinning */
        for (unsigned i = 1; i < ELEMENTSOF(t); i++)
                assert_true(t[i] - t[i - 1] >= (50U << (i - 1)) * USEC_PER_MSEC);
        channel_dir_done(&d);
}

/* Keeps the connection open for span, reading (and dropping) what the sensor sends. */
static void hold_for(Commander *c, ep_sensor *s, usec_t span) {
        usec_t deadline = now_usec(CLOCK_MONOTONIC) + span, now;

        while ((now = now_usec(CLOCK_MONOTONIC)) < deadline)
                frame_free(commander_next(c, s, deadline - now, NULL));
}

static void test_sensor_dispatch_backoff_resets_after_healthy_connection(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_close_ int listen_fd = -EBADF;
        Commander c, held;
        usec_t closed_at;
        ChannelDir d;

        channel_dir_init(&d);
        listen_fd = commander_listen(d.path);
        s = commander_start(&c, "1h");
        frame_free(commander_expect(&c, s, ELASTIC_POOL__FRAME__BODY_HELLO, TIMEOUT));
        commander_done(&c);
        /* after three refusals the delay has grown to 400-800 ms, and would double after the next break */
        for (unsigned i = 0; i < 3; i++)
                (void) refuse_next(listen_fd, s);
        assert_true(commander_accept(&held, listen_fd, s, TIMEOUT));
        /* a connection that lives CHANNEL_HEALTHY_USEC (5 s) was a success */
        hold_for(&held, s, 5200 * USEC_PER_MSEC);
        commander_done(&held);
        closed_at = now_usec(CLOCK_MONOTONIC);
        assert_true(commander_accept(&c, listen_fd, s, TIMEOUT));
        assert_true(now_usec(CLOCK_MONOTONIC) - closed_at < 300 * USEC_PER_MSEC);
        commander_done(&c);
        channel_dir_done(&d);
}

/* Drives the sensor for span and says whether it knocked on listen_fd meanwhile. */
static bool knocked_within(int listen_fd, ep_sensor *s, usec_t span) {
        Commander c;

        if (!commander_accept(&c, listen_fd, s, span))
                return false;
        commander_done(&c);
        return true;
}

static void test_sensor_dispatch_no_reconnect_after_drain(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        ElasticPool__Drain dr = ELASTIC_POOL__DRAIN__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        _cleanup_close_ int listen_fd = -EBADF;
        Commander c;
        ChannelDir d;
        App app = {};
        uint64_t t;

        channel_dir_init(&d);
        listen_fd = commander_listen(d.path);
        s = commander_start(&c, "1h");
        ep_sensor_set_drain_callback(s, app_drain, &app);
        frame_free(commander_expect(&c, s, ELASTIC_POOL__FRAME__BODY_HELLO, TIMEOUT));
        f.body_case = ELASTIC_POOL__FRAME__BODY_DRAIN, f.drain = &dr;
        commander_send(&c, &f);
        assert_true(sensor_drive_until(s, app_drained_only, &app, TIMEOUT));
        /* the commander dies while the worker drains: the worker is leaving, not to be re-adopted */
        commander_done(&c);
        assert_false(knocked_within(listen_fd, s, USEC_PER_SEC));
        assert_int_equal(ep_sensor_get_fd(s), -1);
        assert_int_equal(ep_sensor_get_timeout(s, &t), 0);
        assert_true(t > now_usec(CLOCK_MONOTONIC) + USEC_PER_SEC); /* only the hourly tick */
        channel_dir_done(&d);
}

static void test_sensor_goodbye_no_reconnect(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_close_ int listen_fd = -EBADF;
        Commander c;
        ChannelDir d;

        channel_dir_init(&d);
        listen_fd = commander_listen(d.path);
        s = commander_start(&c, "1h");
        frame_free(commander_expect(&c, s, ELASTIC_POOL__FRAME__BODY_HELLO, TIMEOUT));
        ep_sensor_goodbye(s, "shutdown");
        assert_true(commander_wait_eof(&c, NULL, TIMEOUT));
        commander_done(&c);
        assert_false(knocked_within(listen_fd, s, USEC_PER_SEC));
        channel_dir_done(&d);
}

static void test_sensor_dispatch_reconnects_after_commander_goodbye(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_(frame_freep) Frame *hello = NULL;
        ElasticPool__Goodbye g = ELASTIC_POOL__GOODBYE__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        _cleanup_close_ int listen_fd = -EBADF;
        Commander c;
        ChannelDir d;

        channel_dir_init(&d);
        listen_fd = commander_listen(d.path);
        s = commander_start(&c, "1h");
        frame_free(commander_expect(&c, s, ELASTIC_POOL__FRAME__BODY_HELLO, TIMEOUT));
        /* a commander that restarts on purpose says so; its successor adopts us like after a crash */
        g.reason = (char *) "restart";
        f.body_case = ELASTIC_POOL__FRAME__BODY_GOODBYE, f.goodbye = &g;
        commander_send(&c, &f);
        assert_true(commander_wait_eof(&c, s, TIMEOUT));
        commander_done(&c);
        assert_true(commander_accept(&c, listen_fd, s, TIMEOUT));
        hello = commander_next(&c, s, TIMEOUT, NULL);
        assert_non_null(hello);
        assert_int_equal(hello->body_case, ELASTIC_POOL__FRAME__BODY_HELLO);
        commander_done(&c);
        channel_dir_done(&d);
}

static void test_sensor_goodbye_sends_goodbye_and_stays_closed(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_(frame_freep) Frame *hello = NULL, *bye = NULL;
        Commander c;

        s = commander_start(&c, NULL);
        hello = commander_next(&c, s, TIMEOUT, NULL);
        assert_int_equal(hello->body_case, ELASTIC_POOL__FRAME__BODY_HELLO);
        ep_sensor_goodbye(s, "shutting down");
        bye = commander_expect(&c, NULL, ELASTIC_POOL__FRAME__BODY_GOODBYE, TIMEOUT);
        assert_string_equal(bye->goodbye->reason, "shutting down");
        assert_true(commander_wait_eof(&c, NULL, TIMEOUT));
        assert_int_equal(ep_sensor_get_fd(s), -1);
        commander_done(&c);
}

#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                TEST(test_sensor_dispatch_hello_first_with_fields),
                TEST(test_sensor_dispatch_hello_without_callbacks_no_capabilities),
                TEST(test_sensor_new_channel_fd_cloexec_and_env_unset),
                TEST(test_sensor_new_channel_fd_unusable_fails),
                TEST(test_sensor_dispatch_reports_on_fixed_cadence),
                TEST(test_sensor_dispatch_snapshot_request_answers_package),
                TEST(test_sensor_dispatch_install_answers_result),
                TEST(test_sensor_dispatch_missing_callbacks_answer_errors),
                TEST(test_sensor_dispatch_drop_and_drain_reach_callbacks),
                TEST(test_sensor_dispatch_garbage_closes_channel),
                TEST(test_sensor_dispatch_undecodable_frame_closes_channel),
                TEST(test_sensor_dispatch_unexpected_frame_closes_channel),
                TEST(test_sensor_dispatch_reconnects_to_channel_path),
                TEST(test_sensor_dispatch_refused_peer_backs_off),
                TEST(test_sensor_dispatch_backoff_resets_after_healthy_connection),
                TEST(test_sensor_dispatch_no_reconnect_after_drain),
                TEST(test_sensor_dispatch_reconnects_after_commander_goodbye),
                TEST(test_sensor_goodbye_no_reconnect),
                TEST(test_sensor_goodbye_sends_goodbye_and_stays_closed),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
