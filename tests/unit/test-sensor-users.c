/* SPDX-License-Identifier: MIT */
/* The worker's users after its Hello, for a commander that restarted and re-adopts the worker: the user list
 * (user-list.c) is cut into Users frames with more = true on all but the last; on the wire, every connection
 * (the inherited one and each reconnect to ELASTIC_POOL_CHANNEL, in event-loop and background-thread mode)
 * starts with Hello then the list as it is at that moment; a failed list callback sends no list and does not
 * advertise one; names that are empty or absurdly long are left out. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "macro.h"
#include "test-sensor-util.h"
#include "user-list.h"

#define TIMEOUT (5 * USEC_PER_SEC)

DEFINE_TRIVIAL_CLEANUP_FUNC(ep_sensor *, ep_sensor_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(Frame *, frame_free);

static int setup(void **state) {
        sensor_env_reset();
        return 0;
}

static int teardown(void **state) {
        sensor_env_reset();
        return 0;
}

/* ---- the application: a roster the test changes between connections */

typedef struct Roster {
        pthread_mutex_t lock; /* the sensor's thread lists while the test thread changes it */
        const char *const *names;
        size_t n;
        int fail; /* < 0: the list callback fails with it, after giving half the users */
        unsigned calls;
} Roster;

static void roster_set(Roster *r, const char *const *names, size_t n) {
        pthread_mutex_lock(&r->lock);
        r->names = names;
        r->n = n;
        pthread_mutex_unlock(&r->lock);
}

static int roster_list(void *userdata, ep_sensor_user_sink sink, void *sink_ctx) {
        Roster *r = userdata;
        int q = 0;

        pthread_mutex_lock(&r->lock);
        r->calls++;
        for (size_t i = 0; i < r->n && q >= 0; i++) {
                if (r->fail < 0 && i == r->n / 2) {
                        q = r->fail;
                        break;
                }
                q = sink(sink_ctx, r->names[i]);
        }
        pthread_mutex_unlock(&r->lock);
        return q;
}

static const ep_sensor_user_callbacks list_only = { .list = roster_list };

/* ---- the commander's side */

static bool has_capability(const ElasticPool__Hello *h, ElasticPool__Capability c) {
        for (size_t i = 0; i < h->n_capabilities; i++)
                if (h->capabilities[i] == c)
                        return true;
        return false;
}

typedef struct UserSet {
        char **names;
        size_t n;
        unsigned frames;
} UserSet;

static void user_set_done(UserSet *u) {
        for (size_t i = 0; i < u->n; i++)
                free(u->names[i]);
        free(u->names);
        *u = (UserSet) {};
}

static int compare_names(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static void user_set_take(UserSet *u, const ElasticPool__Users *m) {
        u->names = realloc(u->names, (u->n + m->n_users) * sizeof(char *));
        assert_true(u->names || u->n + m->n_users == 0);
        for (size_t i = 0; i < m->n_users; i++) {
                u->names[u->n] = strdup(m->users[i]);
                assert_non_null(u->names[u->n++]);
        }
        u->frames++;
}

/* Reads Users frames, each the next frame on the channel, up to the one without more; the union sorted. */
static void read_user_set(Commander *c, ep_sensor *s, UserSet *ret) {
        *ret = (UserSet) {};
        for (;;) {
                _cleanup_(frame_freep) Frame *f = commander_next(c, s, TIMEOUT, NULL);

                assert_non_null(f);
                assert_int_equal(f->body_case, ELASTIC_POOL__FRAME__BODY_USERS);
                /* no frame larger than the budget of names, plus its own few bytes */
                assert_true(elastic_pool__frame__get_packed_size(f) <= USER_LIST_FRAME_BUDGET + 16);
                user_set_take(ret, f->users);
                if (!f->users->more)
                        break;
                assert_true(f->users->has_more);
        }
        if (ret->n > 0)
                qsort(ret->names, ret->n, sizeof(char *), compare_names);
}

/* The users, sorted and joined by ',', into buf. */
static const char *joined(const UserSet *u, char *buf, size_t size) {
        size_t off = 0;

        buf[0] = 0;
        for (size_t i = 0; i < u->n; i++)
                off += (size_t) snprintf(buf + off, size - off, "%s%s", i > 0 ? "," : "", u->names[i]);
        assert_true(off < size);
        return buf;
}

/* Hello, then the users, as every connection must begin; the Hello must promise the list. */
static void expect_hello_and_users(Commander *c, ep_sensor *s, const char *expected) {
        _cleanup_(frame_freep) Frame *hello = commander_next(c, s, TIMEOUT, NULL);
        _cleanup_(user_set_done) UserSet u = {};
        char buf[256];

        assert_non_null(hello);
        assert_int_equal(hello->body_case, ELASTIC_POOL__FRAME__BODY_HELLO);
        assert_true(has_capability(hello->hello, ELASTIC_POOL__CAPABILITY__CAPABILITY_LIST_USERS));
        read_user_set(c, s, &u);
        assert_int_equal(u.frames, 1);
        assert_string_equal(joined(&u, buf, sizeof buf), expected);
}

typedef struct ChannelDir {
        char dir[64], path[128];
} ChannelDir;

static void channel_dir_init(ChannelDir *d) {
        snprintf(d->dir, sizeof d->dir, "/tmp/ep-sensor-users.XXXXXX");
        assert_non_null(mkdtemp(d->dir));
        snprintf(d->path, sizeof d->path, "%s/channel.sock", d->dir);
        assert_int_equal(setenv("ELASTIC_POOL_CHANNEL", d->path, 1), 0);
}

static void channel_dir_done(ChannelDir *d) {
        (void) unlink(d->path);
        (void) rmdir(d->dir);
}

/* ---- user-list.c */

static int collect_frame(void *userdata, const Frame *f) {
        UserSet *u = userdata;

        assert_int_equal(f->body_case, ELASTIC_POOL__FRAME__BODY_USERS);
        /* each but the last says more; the last leaves it absent */
        assert_int_equal(f->users->has_more, f->users->more);
        user_set_take(u, f->users);
        return 0;
}

static void test_user_list_add_skips_empty_and_long(void **state) {
        _cleanup_(user_list_done) UserList l = {};
        char long_name[USER_LIST_NAME_MAX + 2];

        memset(long_name, 'x', sizeof long_name - 1);
        long_name[sizeof long_name - 1] = 0;
        assert_int_equal(user_list_add(&l, "alice"), 0);
        assert_int_equal(user_list_add(&l, ""), 0);
        assert_int_equal(user_list_add(&l, long_name), 0);
        assert_int_equal(user_list_add(&l, NULL), 0);
        long_name[USER_LIST_NAME_MAX] = 0; /* exactly the maximum is a name */
        assert_int_equal(user_list_add(&l, long_name), 0);
        assert_int_equal(l.n, 2);
        assert_int_equal(l.skipped, 3);
        assert_int_equal(l.skipped_first_length, 0);
}

static void test_user_list_foreach_frame_empty_gives_one_frame(void **state) {
        _cleanup_(user_list_done) UserList l = {};
        _cleanup_(user_set_done) UserSet u = {};

        assert_int_equal(user_list_foreach_frame(&l, USER_LIST_FRAME_BUDGET, collect_frame, &u), 0);
        assert_int_equal(u.frames, 1);
        assert_int_equal(u.n, 0);
}

static void test_user_list_foreach_frame_splits_at_budget(void **state) {
        _cleanup_(user_list_done) UserList l = {};
        _cleanup_(user_set_done) UserSet u = {};
        char name[16];

        for (unsigned i = 0; i < 10; i++) {
                snprintf(name, sizeof name, "u%u", i); /* 2 bytes, 4 encoded: tag, length, name */
                assert_int_equal(user_list_add(&l, name), 0);
        }
        /* 3 names fit in 12 bytes, not 4: frames of 3, 3, 3, 1 */
        assert_int_equal(user_list_foreach_frame(&l, 12, collect_frame, &u), 0);
        assert_int_equal(u.frames, 4);
        assert_int_equal(u.n, 10);
        for (unsigned i = 0; i < 10; i++) {
                snprintf(name, sizeof name, "u%u", i);
                assert_string_equal(u.names[i], name); /* in order */
        }
        user_set_done(&u);
        /* a name larger than the budget still goes, alone */
        assert_int_equal(user_list_foreach_frame(&l, 1, collect_frame, &u), 0);
        assert_int_equal(u.frames, 10);
}

static int refuse_second(void *userdata, const Frame *f) {
        unsigned *n = userdata;
        return ++*n == 2 ? -ECONNRESET : 0;
}

static void test_user_list_foreach_frame_stops_at_error(void **state) {
        _cleanup_(user_list_done) UserList l = {};
        unsigned n = 0;

        for (unsigned i = 0; i < 5; i++)
                assert_int_equal(user_list_add(&l, "someone"), 0);
        assert_int_equal(user_list_foreach_frame(&l, 9, refuse_second, &n), -ECONNRESET);
        assert_int_equal(n, 2);
}

/* ---- on the wire */

static const char *const first_users[] = { "bob", "alice" };
static const char *const later_users[] = { "carol", "alice", "dave" };

static void test_sensor_users_after_hello_on_inherited_channel(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_(frame_freep) Frame *report = NULL;
        Roster r = { .lock = PTHREAD_MUTEX_INITIALIZER };
        Commander c;

        roster_set(&r, first_users, ELEMENTSOF(first_users));
        s = commander_start(&c, "200ms");
        assert_int_equal(ep_sensor_set_user_callbacks(s, &list_only, &r), 0);
        expect_hello_and_users(&c, s, "alice,bob");
        report = commander_next(&c, s, TIMEOUT, NULL);
        assert_non_null(report);
        assert_int_equal(report->body_case, ELASTIC_POOL__FRAME__BODY_REPORT);
        assert_int_equal(r.calls, 1); /* once per connection, not per report */
        commander_done(&c);
}

static void test_sensor_users_empty_list_is_one_empty_frame(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        Roster r = { .lock = PTHREAD_MUTEX_INITIALIZER };
        Commander c;

        s = commander_start(&c, NULL);
        assert_int_equal(ep_sensor_set_user_callbacks(s, &list_only, &r), 0);
        expect_hello_and_users(&c, s, "");
        commander_done(&c);
}

static void test_sensor_users_without_list_callback_none(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_(frame_freep) Frame *hello = NULL, *next = NULL;
        Commander c;

        s = commander_start(&c, "200ms");
        hello = commander_next(&c, s, TIMEOUT, NULL);
        assert_non_null(hello);
        assert_false(has_capability(hello->hello, ELASTIC_POOL__CAPABILITY__CAPABILITY_LIST_USERS));
        next = commander_next(&c, s, TIMEOUT, NULL);
        assert_non_null(next);
        assert_int_equal(next->body_case, ELASTIC_POOL__FRAME__BODY_REPORT);
        commander_done(&c);
}

static void test_sensor_users_failing_list_sends_none(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_(frame_freep) Frame *hello = NULL, *next = NULL;
        Roster r = { .lock = PTHREAD_MUTEX_INITIALIZER, .fail = -EIO };
        Commander c;

        roster_set(&r, later_users, ELEMENTSOF(later_users));
        s = commander_start(&c, "200ms");
        assert_int_equal(ep_sensor_set_user_callbacks(s, &list_only, &r), 0);
        hello = commander_next(&c, s, TIMEOUT, NULL);
        assert_non_null(hello);
        assert_int_equal(hello->body_case, ELASTIC_POOL__FRAME__BODY_HELLO);
        /* the Hello promises no list, and the half that was given never leaves the worker */
        assert_false(has_capability(hello->hello, ELASTIC_POOL__CAPABILITY__CAPABILITY_LIST_USERS));
        next = commander_next(&c, s, TIMEOUT, NULL);
        assert_non_null(next);
        assert_int_equal(next->body_case, ELASTIC_POOL__FRAME__BODY_REPORT);
        assert_int_equal(r.calls, 1);
        assert_true(ep_sensor_get_fd(s) >= 0); /* the channel itself is fine */
        commander_done(&c);
}

static void test_sensor_users_bad_names_left_out(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_free_ char *huge = malloc(64 * 1024);
        const char *names[] = { "alice", "", NULL, "bob" };
        Roster r = { .lock = PTHREAD_MUTEX_INITIALIZER };
        Commander c;

        assert_non_null(huge);
        memset(huge, 'h', 64 * 1024 - 1);
        huge[64 * 1024 - 1] = 0;
        names[2] = huge;
        roster_set(&r, names, ELEMENTSOF(names));
        s = commander_start(&c, NULL);
        assert_int_equal(ep_sensor_set_user_callbacks(s, &list_only, &r), 0);
        expect_hello_and_users(&c, s, "alice,bob");
        commander_done(&c);
}

static void test_sensor_users_long_list_split_with_more(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_(frame_freep) Frame *hello = NULL;
        _cleanup_(user_set_done) UserSet u = {};
        Roster r = { .lock = PTHREAD_MUTEX_INITIALIZER };
        const size_t n = 3000, len = 1000;
        char **names;
        Commander c;

        /* 3000 names of 1000 bytes: about 3 MB, so three frames of at most 1 MiB of names */
        names = calloc(n, sizeof *names);
        assert_non_null(names);
        for (size_t i = 0; i < n; i++) {
                names[i] = malloc(len + 1);
                assert_non_null(names[i]);
                char prefix[16];
                int k = snprintf(prefix, sizeof prefix, "user-%04zu", i);

                memset(names[i], 'x', len);
                names[i][len] = 0;
                memcpy(names[i], prefix, (size_t) k);
        }
        roster_set(&r, (const char *const *) names, n);
        s = commander_start(&c, NULL);
        assert_int_equal(ep_sensor_set_user_callbacks(s, &list_only, &r), 0);
        hello = commander_next(&c, s, TIMEOUT, NULL);
        assert_non_null(hello);
        assert_int_equal(hello->body_case, ELASTIC_POOL__FRAME__BODY_HELLO);
        read_user_set(&c, s, &u);
        assert_int_equal(u.frames, 3);
        assert_int_equal(u.n, n);
        for (size_t i = 0; i < n; i++) /* generated in sorted order: the union is exactly the list */
                assert_string_equal(u.names[i], names[i]);
        commander_done(&c);
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

static void test_sensor_users_again_after_reconnect(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_close_ int listen_fd = -EBADF;
        Roster r = { .lock = PTHREAD_MUTEX_INITIALIZER };
        Commander c;
        ChannelDir d;

        channel_dir_init(&d);
        listen_fd = commander_listen(d.path);
        roster_set(&r, first_users, ELEMENTSOF(first_users));
        s = commander_start(&c, "1h");
        assert_int_equal(ep_sensor_set_user_callbacks(s, &list_only, &r), 0);
        expect_hello_and_users(&c, s, "alice,bob");

        /* users come and go, then the commander dies; its successor listens on ELASTIC_POOL_CHANNEL */
        roster_set(&r, later_users, ELEMENTSOF(later_users));
        commander_done(&c);
        assert_true(commander_accept(&c, listen_fd, s, TIMEOUT));
        expect_hello_and_users(&c, s, "alice,carol,dave");
        assert_int_equal(r.calls, 2);
        commander_done(&c);
        channel_dir_done(&d);
}

static void test_sensor_users_again_after_reconnect_thread(void **state) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_close_ int listen_fd = -EBADF;
        Roster r = { .lock = PTHREAD_MUTEX_INITIALIZER };
        Commander c;
        ChannelDir d;

        channel_dir_init(&d);
        listen_fd = commander_listen(d.path);
        roster_set(&r, first_users, ELEMENTSOF(first_users));
        s = commander_start(&c, "1h");
        assert_int_equal(ep_sensor_set_user_callbacks(s, &list_only, &r), 0);
        assert_int_equal(ep_sensor_start_thread(s), 0);
        expect_hello_and_users(&c, NULL, "alice,bob");

        roster_set(&r, later_users, ELEMENTSOF(later_users));
        commander_done(&c);
        assert_true(commander_accept(&c, listen_fd, NULL, TIMEOUT));
        expect_hello_and_users(&c, NULL, "alice,carol,dave");
        ep_sensor_free(TAKE_PTR(s)); /* joins the thread before the roster goes */
        commander_done(&c);
        channel_dir_done(&d);
}

#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_user_list_add_skips_empty_and_long),
                cmocka_unit_test(test_user_list_foreach_frame_empty_gives_one_frame),
                cmocka_unit_test(test_user_list_foreach_frame_splits_at_budget),
                cmocka_unit_test(test_user_list_foreach_frame_stops_at_error),
                TEST(test_sensor_users_after_hello_on_inherited_channel),
                TEST(test_sensor_users_empty_list_is_one_empty_frame),
                TEST(test_sensor_users_without_list_callback_none),
                TEST(test_sensor_users_failing_list_sends_none),
                TEST(test_sensor_users_bad_names_left_out),
                TEST(test_sensor_users_long_list_split_with_more),
                TEST(test_sensor_users_again_after_reconnect),
                TEST(test_sensor_users_again_after_reconnect_thread),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
