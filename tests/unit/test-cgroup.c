/* SPDX-License-Identifier: MIT */
/* The cgroup helpers against a fixture tree in a temp dir (the readers take directory fds, so a plain
 * directory with the right files stands in for a cgroup): keyed files, controllers lists, attribute
 * writes, the populated/kill/remove dance on a leaf that never empties, the cgroup backend removing a
 * dead worker's leaf from the event loop without waiting on it, our own /proc/PID/cgroup, and detection
 * on a directory that is no cgroup2 mount. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend.h"
#include "cgroup.h"
#include "cleanup.h"
#include "fd-util.h"
#include "time-util.h"
#include "worker.h"

static char root[] = "/tmp/test-cgroup.XXXXXX";
static int root_fd = -EBADF;

static int setup(void **state) {
        strcpy(root + strlen(root) - 6, "XXXXXX");
        if (!mkdtemp(root))
                return -1;
        root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return root_fd < 0 ? -1 : 0;
}

static int teardown(void **state) {
        char cmd[sizeof root + 16];

        root_fd = safe_close(root_fd);
        snprintf(cmd, sizeof cmd, "rm -rf %s", root);
        return system(cmd) == 0 ? 0 : -1;
}

#define CHECK_ELAPSED_UNDER(t0, limit)                                                                  \
        do {                                                                                            \
                usec_t _took = now_usec(CLOCK_MONOTONIC) - (t0);                                        \
                if (_took >= (limit))                                                                   \
                        fail_msg("took %llu ms, limit %llu ms: the event loop was blocked",             \
                                 (unsigned long long) (_took / USEC_PER_MSEC),                          \
                                 (unsigned long long) ((limit) / USEC_PER_MSEC));                        \
        } while (0)

static void put(const char *path, const char *content) {
        _cleanup_close_ int fd = openat(root_fd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, content, strlen(content)), 0);
}

static char *get(const char *path) {
        static char buf[4096];

        assert_true(read_string_at(root_fd, path, buf, sizeof buf) >= 0);
        return buf;
}

static void test_cgroup_read_keyed_values(void **state) {
        uint64_t v = 0;

        put("cpu.stat", "usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\nnr_periods 0\n");
        assert_int_equal(cgroup_read_keyed(root_fd, "cpu.stat", "usage_usec", &v), 0);
        assert_true(v == 123456);
        assert_int_equal(cgroup_read_keyed(root_fd, "cpu.stat", "system_usec", &v), 0);
        assert_true(v == 23456);
        assert_int_equal(cgroup_read_keyed(root_fd, "cpu.stat", "nr_periods", &v), 0);
        assert_true(v == 0);

        /* a key is a whole word: "usage" is no key, "user" does not match "user_usec" */
        v = 9;
        assert_int_equal(cgroup_read_keyed(root_fd, "cpu.stat", "usage", &v), -ENODATA);
        assert_int_equal(cgroup_read_keyed(root_fd, "cpu.stat", "user", &v), -ENODATA);
        assert_int_equal(cgroup_read_keyed(root_fd, "cpu.stat", "nr_throttled", &v), -ENODATA);
        assert_true(v == 9);

        /* the last line without its newline, and the largest value */
        put("memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 18446744073709551615");
        assert_int_equal(cgroup_read_keyed(root_fd, "memory.events", "oom_kill", &v), 0);
        assert_true(v == UINT64_MAX);
        assert_int_equal(cgroup_read_keyed(root_fd, "memory.events", "oom", &v), 0);
        assert_true(v == 1);
        assert_int_equal(cgroup_read_keyed(root_fd, "memory.events", "max", &v), 0);
        assert_true(v == 3);
}

static void test_cgroup_read_keyed_errors(void **state) {
        uint64_t v = 9;

        assert_int_equal(cgroup_read_keyed(root_fd, "memory.events", "oom_kill", &v), -ENOENT);
        put("empty", "");
        assert_int_equal(cgroup_read_keyed(root_fd, "empty", "populated", &v), -ENODATA);
        put("bad", "populated x\nfrozen 18446744073709551616\nspace  \n");
        assert_int_equal(cgroup_read_keyed(root_fd, "bad", "populated", &v), -EBADMSG);
        assert_int_equal(cgroup_read_keyed(root_fd, "bad", "frozen", &v), -EBADMSG);
        assert_int_equal(cgroup_read_keyed(root_fd, "bad", "space", &v), -EBADMSG);
        assert_true(v == 9);
}

static void test_cgroup_has_controller(void **state) {
        put("cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
        assert_true(cgroup_has_controller(root_fd, "cpu"));
        assert_true(cgroup_has_controller(root_fd, "cpuset"));
        assert_true(cgroup_has_controller(root_fd, "memory"));
        assert_true(cgroup_has_controller(root_fd, "misc")); /* the last word */
        assert_false(cgroup_has_controller(root_fd, "mem"));
        assert_false(cgroup_has_controller(root_fd, "set"));
        assert_false(cgroup_has_controller(root_fd, "freezer"));
        assert_false(cgroup_has_controller(root_fd, "")); /* an empty name used to loop forever */

        put("cgroup.controllers", "memory");
        assert_true(cgroup_has_controller(root_fd, "memory"));
        put("cgroup.controllers", "");
        assert_false(cgroup_has_controller(root_fd, "memory"));
        assert_int_equal(unlinkat(root_fd, "cgroup.controllers", 0), 0);
        assert_false(cgroup_has_controller(root_fd, "memory"));
}

static void test_cgroup_write_attr_regular_file(void **state) {
        put("memory.max", "max\n");
        assert_int_equal(cgroup_write_attr(root_fd, "memory.max", "536870912"), 0);
        assert_string_equal(get("memory.max"), "536870912");
        /* the attribute must exist: writes never create files in a cgroup */
        assert_int_equal(cgroup_write_attr(root_fd, "memory.high", "1"), -ENOENT);
        assert_int_equal(faccessat(root_fd, "memory.high", F_OK, 0), -1);
        assert_int_equal(cgroup_write_attr(-1, "memory.max", "1"), -EBADF);
}

static void test_cgroup_attach_pid_writes_procs(void **state) {
        put("cgroup.procs", "");
        assert_int_equal(cgroup_attach_pid(root_fd, 4242), 0);
        assert_string_equal(get("cgroup.procs"), "4242");
        put("cgroup.procs", "");
        assert_int_equal(cgroup_attach_pid(root_fd, 0), 0); /* 0: the caller itself */
        assert_string_equal(get("cgroup.procs"), "0");
}

static void test_cgroup_enable_controllers(void **state) {
        put("cgroup.controllers", "cpu memory pids\n");
        put("cgroup.subtree_control", "");
        /* io is not offered: skipped; on a real cgroup each "+x" is its own write */
        assert_int_equal(cgroup_enable_controllers(root_fd, "cpu io memory"), 2);
        assert_string_equal(get("cgroup.subtree_control"), "+memory");
        assert_int_equal(cgroup_enable_controllers(root_fd, "  "), 0);
        assert_int_equal(unlinkat(root_fd, "cgroup.subtree_control", 0), 0);
        assert_int_equal(cgroup_enable_controllers(root_fd, "cpu"), 0); /* the write failed: not counted */
}

static void test_cgroup_is_empty(void **state) {
        assert_false(cgroup_is_empty(root_fd)); /* no cgroup.events: not known to be empty */
        put("cgroup.events", "populated 1\nfrozen 0\n");
        assert_false(cgroup_is_empty(root_fd));
        put("cgroup.events", "populated 0\nfrozen 0\n");
        assert_true(cgroup_is_empty(root_fd));
}

static void test_cgroup_kill_and_remove_missing_is_done(void **state) {
        assert_int_equal(cgroup_kill_and_remove(root_fd, "w9", USEC_PER_SEC), 0);
}

static void test_cgroup_kill_and_remove_not_a_cgroup(void **state) {
        /* without cgroup.events the leaf is not known to be empty, and without cgroup.kill it cannot be
         * emptied: the error comes back, nothing is removed */
        assert_int_equal(mkdirat(root_fd, "w1", 0755), 0);
        assert_int_equal(cgroup_kill_and_remove(root_fd, "w1", USEC_PER_SEC), -ENOENT);
        assert_int_equal(faccessat(root_fd, "w1", F_OK, 0), 0);
}

static void *empty_later(void *arg) {
        usleep(20 * 1000);
        put("w3/cgroup.events", "populated 0\n"); /* what the kernel does once the last process left */
        return NULL;
}

static void test_cgroup_kill_and_remove_wakes_on_events(void **state) {
        pthread_t t;
        usec_t t0;
        int r;

        assert_int_equal(mkdirat(root_fd, "w3", 0755), 0);
        put("w3/cgroup.events", "populated 1\n");
        put("w3/cgroup.kill", "");
        assert_int_equal(pthread_create(&t, NULL, empty_later, NULL), 0);
        t0 = now_usec(CLOCK_MONOTONIC);
        r = cgroup_kill_and_remove(root_fd, "w3", 10 * USEC_PER_SEC);
        assert_int_equal(pthread_join(t, NULL), 0);
        /* woken by the modify event, long before the timeout; then rmdir() of a plain directory that
         * still holds its fixture files fails (cgroupfs interface files do not count on a real leaf) */
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 < 5 * USEC_PER_SEC);
        assert_int_equal(r, -ENOTEMPTY);
        assert_string_equal(get("w3/cgroup.kill"), "1");
}

static void test_cgroup_kill_and_remove_empty_leaf_goes(void **state) {
        /* populated 0 already: no kill, straight to rmdir(); the fixture's one file has to go first,
         * where cgroupfs would remove its interface files itself */
        assert_int_equal(mkdirat(root_fd, "w4", 0755), 0);
        put("w4/cgroup.events", "populated 0\n");
        assert_int_equal(cgroup_kill_and_remove(root_fd, "w4", USEC_PER_SEC), -ENOTEMPTY);
        assert_int_equal(faccessat(root_fd, "w4/cgroup.kill", F_OK, 0), -1); /* never killed */
}

static void test_cgroup_kill_and_remove_stays_populated(void **state) {
        usec_t t0;

        assert_int_equal(mkdirat(root_fd, "w2", 0755), 0);
        put("w2/cgroup.events", "populated 1\n");
        put("w2/cgroup.kill", "");
        t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(cgroup_kill_and_remove(root_fd, "w2", 50 * USEC_PER_MSEC), -EBUSY);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 >= 50 * USEC_PER_MSEC);
        assert_string_equal(get("w2/cgroup.kill"), "1");
        assert_int_equal(faccessat(root_fd, "w2", F_OK, 0), 0); /* left in place */
}

static void test_cgroup_kill_and_try_remove_never_waits(void **state) {
        usec_t t0;

        assert_int_equal(cgroup_kill_and_try_remove(root_fd, "w9"), 0); /* gone already */
        assert_int_equal(mkdirat(root_fd, "w5", 0755), 0);
        put("w5/cgroup.events", "populated 1\n");
        put("w5/cgroup.kill", "");
        t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(cgroup_kill_and_try_remove(root_fd, "w5"), -EBUSY);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 < 100 * USEC_PER_MSEC);
        assert_string_equal(get("w5/cgroup.kill"), "1");
        assert_int_equal(faccessat(root_fd, "w5", F_OK, 0), 0);
        /* emptied: on to rmdir() (which the fixture's own files make fail) */
        put("w5/cgroup.events", "populated 0\n");
        assert_int_equal(cgroup_kill_and_try_remove(root_fd, "w5"), -ENOTEMPTY);
}

/* The cgroup backend over the fixture tree, as cgroup_init() leaves it (root not ours to remove). */
static void fixture_backend(Backend *b, sd_event *e) {
        *b = (Backend) {
                .vtable = &backend_cgroup_vtable,
                .event = e,
                .layout = CGROUP_LAYOUT_UNIFIED,
                .cgroup_mount = (char *) "",
                .root = root,
                .root_fd = root_fd,
        };
}

/* A dead worker whose leaf w<id> still holds a process (its own child, say) that did not exit yet. */
static Worker *dead_worker_with_leftovers(unsigned id) {
        char path[64];
        Worker *w;

        snprintf(path, sizeof path, "w%u", id);
        assert_int_equal(mkdirat(root_fd, path, 0755), 0);
        snprintf(path, sizeof path, "w%u/cgroup.events", id);
        put(path, "populated 1\n");
        snprintf(path, sizeof path, "w%u/cgroup.kill", id);
        put(path, "");
        assert_int_equal(worker_new(NULL, id, &w), 0);
        assert_true(asprintf(&w->place.cgroup_path, "/w%u", id) > 0);
        return w;
}

static void run_loop_for(sd_event *e, usec_t span) {
        usec_t end = now_usec(CLOCK_MONOTONIC) + span;

        while (now_usec(CLOCK_MONOTONIC) < end)
                assert_true(sd_event_run(e, 10 * USEC_PER_MSEC) >= 0);
}

static void test_cgroup_backend_release_does_not_block(void **state) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        Worker *w = dead_worker_with_leftovers(7);
        Backend b;
        usec_t t0;

        assert_true(sd_event_new(&e) >= 0);
        fixture_backend(&b, e);
        /* the worker died and its child did not (yet): release kills the leaf and returns at once,
         * where it used to poll() up to 5 s on the commander's only loop */
        t0 = now_usec(CLOCK_MONOTONIC);
        b.vtable->release(&b, w);
        CHECK_ELAPSED_UNDER(t0, 200 * USEC_PER_MSEC);
        assert_string_equal(get("w7/cgroup.kill"), "1");
        assert_int_equal(faccessat(root_fd, "w7", F_OK, 0), 0);

        /* the loop tries again, killing anew what is still there */
        put("w7/cgroup.kill", "");
        run_loop_for(e, 100 * USEC_PER_MSEC);
        assert_string_equal(get("w7/cgroup.kill"), "1");

        /* once empty the retry goes to rmdir() (which the fixture's files make fail: logged, done) and
         * stops; nothing is killed again */
        put("w7/cgroup.events", "populated 0\n");
        put("w7/cgroup.kill", "");
        run_loop_for(e, 1200 * USEC_PER_MSEC);
        assert_string_equal(get("w7/cgroup.kill"), "");
        assert_null(b.data);
        worker_free(w);
        b.vtable->done(&b);
}

static void test_cgroup_backend_release_gives_up(void **state) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        Worker *w = dead_worker_with_leftovers(8);
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        Backend b;

        assert_true(sd_event_new(&e) >= 0);
        fixture_backend(&b, e);
        b.vtable->release(&b, w);
        /* a leaf that never empties: retried with back-off for about 5 s, then left with a warning */
        while (b.data) {
                assert_true(now_usec(CLOCK_MONOTONIC) - t0 < 15 * USEC_PER_SEC);
                assert_true(sd_event_run(e, 100 * USEC_PER_MSEC) >= 0);
        }
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 >= 4 * USEC_PER_SEC);
        put("w8/cgroup.kill", "");
        run_loop_for(e, 1100 * USEC_PER_MSEC);
        assert_string_equal(get("w8/cgroup.kill"), ""); /* no more attempts */
        assert_int_equal(faccessat(root_fd, "w8", F_OK, 0), 0);
        worker_free(w);
        b.vtable->done(&b);
}

static void test_cgroup_backend_done_finishes_pending(void **state) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        Worker *w = dead_worker_with_leftovers(9);
        Backend b;

        assert_true(sd_event_new(&e) >= 0);
        fixture_backend(&b, e);
        b.vtable->release(&b, w);
        assert_non_null(b.data);
        /* the commander leaves its loop with the leaf still emptying: done() waits for it there (the
         * fixture's files make the final rmdir() fail; on cgroupfs it succeeds) and frees the retry */
        put("w9/cgroup.events", "populated 0\n");
        put("w9/cgroup.kill", "");
        b.vtable->done(&b);
        assert_null(b.data);
        assert_string_equal(get("w9/cgroup.kill"), ""); /* empty already: not killed again */
        worker_free(w);
}

static void test_cgroup_pid_path_self(void **state) {
        _cleanup_free_ char *self = NULL, *by_pid = NULL;
        char expect[4096];
        FILE *f;

        assert_int_equal(cgroup_pid_path(0, &self), 0);
        assert_int_equal(cgroup_pid_path(getpid(), &by_pid), 0);
        assert_string_equal(self, by_pid);
        assert_true(self[0] == '/');
        assert_null(strchr(self, '\n'));

        /* the same as the 0:: line, read independently */
        f = fopen("/proc/self/cgroup", "re");
        assert_non_null(f);
        expect[0] = 0;
        while (fgets(expect, sizeof expect, f))
                if (strncmp(expect, "0::", 3) == 0)
                        break;
        fclose(f);
        expect[strcspn(expect, "\n")] = 0;
        assert_string_equal(self, expect + 3);
}

static void test_cgroup_pid_path_no_such_pid(void **state) {
        char *p = NULL;

        /* above pid_max (at most 2^22): no /proc entry */
        assert_int_equal(cgroup_pid_path(1 << 23, &p), -ENOENT);
        assert_null(p);
}

static void test_cgroup_detect_not_a_cgroup(void **state) {
        CgroupLayout layout = CGROUP_LAYOUT_UNIFIED;
        char *mount = (char *) "untouched";

        assert_int_equal(cgroup_detect(root, &layout, &mount), 0);
        assert_int_equal(layout, CGROUP_LAYOUT_NONE);
        assert_null(mount);

        layout = CGROUP_LAYOUT_UNIFIED;
        assert_int_equal(cgroup_detect("/nonexistent/sys/fs/cgroup", &layout, &mount), 0);
        assert_int_equal(layout, CGROUP_LAYOUT_NONE);
        assert_null(mount);
}

static void test_cgroup_detect_this_host(void **state) {
        _cleanup_free_ char *mount = NULL;
        CgroupLayout layout;
        struct statfs fs;

        assert_int_equal(cgroup_detect("/sys/fs/cgroup", &layout, &mount), 0);
        /* whatever this host has, the answer agrees with statfs() */
        if (statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) {
                assert_int_equal(layout, CGROUP_LAYOUT_UNIFIED);
                assert_string_equal(mount, "/sys/fs/cgroup");
        } else if (statfs("/sys/fs/cgroup/unified", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) {
                assert_int_equal(layout, CGROUP_LAYOUT_HYBRID);
                assert_string_equal(mount, "/sys/fs/cgroup/unified");
        } else {
                assert_int_equal(layout, CGROUP_LAYOUT_NONE);
                assert_null(mount);
        }
}

static void test_cgroup_layout_to_string(void **state) {
        assert_string_equal(cgroup_layout_to_string(CGROUP_LAYOUT_NONE), "none");
        assert_string_equal(cgroup_layout_to_string(CGROUP_LAYOUT_UNIFIED), "unified");
        assert_string_equal(cgroup_layout_to_string(CGROUP_LAYOUT_HYBRID), "hybrid");
        assert_null(cgroup_layout_to_string(_CGROUP_LAYOUT_MAX));
        assert_null(cgroup_layout_to_string(_CGROUP_LAYOUT_INVALID));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_cgroup_read_keyed_values, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_read_keyed_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_has_controller, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_write_attr_regular_file, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_attach_pid_writes_procs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_enable_controllers, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_is_empty, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_kill_and_remove_missing_is_done, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_kill_and_remove_not_a_cgroup, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_kill_and_remove_wakes_on_events, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_kill_and_remove_empty_leaf_goes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_kill_and_remove_stays_populated, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_kill_and_try_remove_never_waits, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_backend_release_does_not_block, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_backend_release_gives_up, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cgroup_backend_done_finishes_pending, setup, teardown),
                cmocka_unit_test(test_cgroup_pid_path_self),
                cmocka_unit_test(test_cgroup_pid_path_no_such_pid),
                cmocka_unit_test_setup_teardown(test_cgroup_detect_not_a_cgroup, setup, teardown),
                cmocka_unit_test(test_cgroup_detect_this_host),
                cmocka_unit_test(test_cgroup_layout_to_string),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
