/* SPDX-License-Identifier: MIT */
/* The procfs fallback against fixture /proc trees: ancestry, RSS sums over a pid list, the CPU and RSS of a
 * process tree, and processes that vanish between listing and reading. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "procfs-reading.h"
#include "test-sensor-util.h"

typedef struct Ctx {
        Fixture f;
        int proc_fd;
} Ctx;

static int setup(void **state) {
        Ctx *c = calloc(1, sizeof *c);

        assert_non_null(c);
        fixture_setup(&c->f);
        fixture_process(&c->f, 100, 1, 10, 0, 0, 0, 1);
        fixture_process(&c->f, 200, 100, 20, 0, 0, 0, 2);
        fixture_process(&c->f, 300, 200, 30, 0, 7, 3, 3);
        fixture_process(&c->f, 400, 1, 40, 0, 0, 0, 4);
        c->proc_fd = open(c->f.proc, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(c->proc_fd >= 0);
        *state = c;
        return 0;
}

static int teardown(void **state) {
        Ctx *c = *state;

        safe_close(c->proc_fd);
        fixture_teardown(&c->f);
        free(c);
        return 0;
}

static uint64_t pages(uint64_t n) {
        return n * (uint64_t) sysconf(_SC_PAGESIZE);
}

static void test_procfs_ticks_to_usec_converts(void **state) {
        long hz = sysconf(_SC_CLK_TCK);

        assert_int_equal(procfs_ticks_to_usec(0), 0);
        assert_int_equal(procfs_ticks_to_usec((uint64_t) hz), 1000000);
        assert_int_equal(procfs_ticks_to_usec((uint64_t) hz * 3 / 2), 1500000);
}

static void test_procfs_pid_descends_from_fixture(void **state) {
        Ctx *c = *state;

        assert_int_equal(procfs_pid_descends_from(c->proc_fd, 300, 100), 1);
        assert_int_equal(procfs_pid_descends_from(c->proc_fd, 100, 100), 1);
        assert_int_equal(procfs_pid_descends_from(c->proc_fd, 400, 100), 0);
        assert_int_equal(procfs_pid_descends_from(c->proc_fd, 100, 300), 0);
        assert_int_equal(procfs_pid_descends_from(c->proc_fd, 555, 100), -ESRCH);
}

static void test_procfs_pid_descends_from_fixture_loop_bounded(void **state) {
        Ctx *c = *state;

        /* a parent loop only a fixture can have: the walk gives up instead of spinning */
        fixture_process(&c->f, 600, 601, 0, 0, 0, 0, 0);
        fixture_process(&c->f, 601, 600, 0, 0, 0, 0, 0);
        assert_int_equal(procfs_pid_descends_from(c->proc_fd, 600, 100), 0);
}

static void test_procfs_sum_rss_pid_list_fixture_skips_vanished(void **state) {
        Ctx *c = *state;
        uint64_t sum = 0;

        assert_int_equal(procfs_sum_rss_pid_list(c->proc_fd, "100\n200\n999\n", 0, -1, &sum), 0);
        assert_int_equal(sum, pages(1 + 2));
        assert_int_equal(procfs_sum_rss_pid_list(c->proc_fd, "998\n999\n", 0, -1, &sum), -ENOENT);
        assert_int_equal(procfs_sum_rss_pid_list(c->proc_fd, "", 0, -1, &sum), -ENOENT);
        assert_int_equal(procfs_sum_rss_pid_list(c->proc_fd, "100\nbogus\n", 0, -1, &sum), -EINVAL);
}

static void test_procfs_sum_rss_pid_list_fixture_kept_fd(void **state) {
        Ctx *c = *state;
        _cleanup_close_ int fd = -EBADF;
        uint64_t sum = 0;

        /* 200's statm read through an fd kept open: the path under proc_fd is not even consulted */
        fixture_write(&c->f, "proc/kept-statm", "1 50 0 0 0 0 0\n");
        fd = openat(c->proc_fd, "kept-statm", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(procfs_sum_rss_pid_list(c->proc_fd, "100\n200\n", 200, fd, &sum), 0);
        assert_int_equal(sum, pages(1 + 50));
}

static void test_procfs_sum_rss_pid_list_fixture_unreadable_fails(void **state) {
        Ctx *c = *state;
        uint64_t sum = 0;

        /* a statm that exists but does not parse: the whole sum fails rather than reading low */
        fixture_write(&c->f, "proc/200/statm", "garbage\n");
        assert_int_equal(procfs_sum_rss_pid_list(c->proc_fd, "100\n200\n", 0, -1, &sum), -EINVAL);
}

static void test_procfs_tree_usage_fixture(void **state) {
        Ctx *c = *state;
        uint64_t cpu = 0, rss = 0;
        ProcTable t = {};

        assert_int_equal(procfs_tree_usage(c->proc_fd, &t, 100, &cpu, &rss), 0);
        /* 300's reaped children (7 + 3) count, in 300, once */
        assert_int_equal(cpu, procfs_ticks_to_usec(10 + 20 + 30 + 7 + 3));
        assert_int_equal(rss, pages(1 + 2 + 3));
        assert_int_equal(procfs_tree_usage(c->proc_fd, &t, 200, &cpu, &rss), 0);
        assert_int_equal(rss, pages(2 + 3));
        proc_table_done(&t);
}

static void test_procfs_tree_usage_fixture_root_gone(void **state) {
        Ctx *c = *state;
        uint64_t cpu = 0, rss = 0;
        ProcTable t = {};

        assert_int_equal(procfs_tree_usage(c->proc_fd, &t, 12345, &cpu, &rss), -ESRCH);
        proc_table_done(&t);
}

static void test_procfs_read_stat_real_proc(void **state) {
        _cleanup_close_ int proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        ProcStat st;
        uint64_t rss;

        /* the real /proc, to keep the parser honest about what the kernel prints */
        assert_true(proc_fd >= 0);
        assert_int_equal(procfs_read_stat(proc_fd, getpid(), &st), 0);
        assert_int_equal(st.ppid, getppid());
        assert_int_equal(procfs_read_rss(proc_fd, getpid(), &rss), 0);
        assert_true(rss > 0);
}

#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_procfs_ticks_to_usec_converts),
                TEST(test_procfs_pid_descends_from_fixture),
                TEST(test_procfs_pid_descends_from_fixture_loop_bounded),
                TEST(test_procfs_sum_rss_pid_list_fixture_skips_vanished),
                TEST(test_procfs_sum_rss_pid_list_fixture_kept_fd),
                TEST(test_procfs_sum_rss_pid_list_fixture_unreadable_fails),
                TEST(test_procfs_tree_usage_fixture),
                TEST(test_procfs_tree_usage_fixture_root_gone),
                cmocka_unit_test(test_procfs_read_stat_real_proc),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
