/* SPDX-License-Identifier: MIT */
/* The cgroup reader against fixture trees that stand in for /proc and /sys/fs/cgroup: which source answers
 * (cgroup v2, an exclusively owned v1 memory cgroup, procfs), that what cannot be read is absent and never
 * 0, and that a source failing for one tick does not silently switch to another. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup-reading.h"
#include "cleanup.h"
#include "test-sensor-util.h"

#define CGROUP2 ELASTIC_POOL__CPU_SOURCE__CPU_SOURCE_CGROUP2
#define CPU_PROCFS ELASTIC_POOL__CPU_SOURCE__CPU_SOURCE_PROCFS
#define MEM_CGROUP2 ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP2
#define MEM_CGROUP1 ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP1
#define MEM_PROCFS ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_PROCFS

#define PSI_FILE                                             \
        "some avg10=%s avg60=0.00 avg300=0.00 total=1\n"      \
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
#define FOREIGN_PID 999001

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof *f);

        assert_non_null(f);
        fixture_setup(f);
        /* this process: 100 + 50 ticks of its own, 10 + 5 of reaped children, 300 resident pages */
        fixture_process(f, getpid(), 1, 100, 50, 10, 5, 300);
        fixture_write(f, "proc/loadavg", "0.50 0.25 0.12 1/100 1234\n");
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        fixture_teardown(f);
        free(f);
        return 0;
}

/* The leaf of a hybrid host: unified/ is the v2 mount; memory.current only when with_memory_current. */
static void make_v2_leaf(Fixture *f, bool with_memory_current) {
        fixture_write(f, "cgroup/unified/ep/w1/cpu.stat",
                      "usage_usec 5000\nuser_usec 3000\nsystem_usec 2000\n");
        fixture_write(f, "cgroup/unified/ep/w1/cpu.pressure", PSI_FILE, "1.25");
        fixture_write(f, "cgroup/unified/ep/w1/memory.pressure", PSI_FILE, "0.50");
        fixture_write(f, "cgroup/unified/ep/w1/cgroup.procs", "%d\n", (int) getpid());
        if (with_memory_current)
                fixture_write(f, "cgroup/unified/ep/w1/memory.current", "123456789\n");
}

static void open_reader(Fixture *f, CgroupReader *r) {
        assert_int_equal(cgroup_reader_init(r, f->proc, f->cgroup, true), 0);
}

static uint64_t page_bytes(uint64_t pages) {
        return pages * (uint64_t) sysconf(_SC_PAGESIZE);
}

static void test_cgroup_reader_read_fixture_v2_memory_current(void **state) {
        Fixture *f = *state;
        CgroupReader r;
        Readings rd;

        fixture_write(f, "proc/self/cgroup", "4:memory:/elsewhere\n0::/ep/w1\n");
        make_v2_leaf(f, true);
        open_reader(f, &r);
        cgroup_reader_read(&r, &rd);

        assert_string_equal(cgroup_reader_v2_path(&r), "/ep/w1");
        assert_true(rd.has_cpu_usage);
        assert_int_equal(rd.cpu_source, CGROUP2);
        assert_int_equal(rd.cpu_usage_usec, 5000);
        assert_true(rd.has_memory);
        assert_int_equal(rd.memory_source, MEM_CGROUP2);
        assert_int_equal(rd.memory_bytes, 123456789);
        assert_true(rd.has_cpu_pressure && rd.has_memory_pressure);
        assert_true(rd.cpu_some_avg10 > 1.249 && rd.cpu_some_avg10 < 1.251);
        assert_true(rd.memory_some_avg10 > 0.499 && rd.memory_some_avg10 < 0.501);
        assert_true(rd.has_load);
        assert_true(rd.load[0] > 0.499 && rd.load[0] < 0.501);
        cgroup_reader_done(&r);
}

static void test_cgroup_reader_read_fixture_unified_layout(void **state) {
        Fixture *f = *state;
        CgroupReader r;
        Readings rd;

        /* no unified/ directory: the root itself is the v2 mount, as on a pure cgroup v2 host */
        fixture_write(f, "proc/self/cgroup", "0::/w2\n");
        fixture_write(f, "cgroup/w2/cpu.stat", "usage_usec 77\n");
        fixture_write(f, "cgroup/w2/memory.current", "4096\n");
        open_reader(f, &r);
        cgroup_reader_read(&r, &rd);
        assert_int_equal(rd.cpu_usage_usec, 77);
        assert_int_equal(rd.memory_source, MEM_CGROUP2);
        assert_int_equal(rd.memory_bytes, 4096);
        assert_false(rd.has_cpu_pressure); /* no PSI files there: absent, not 0 */
        cgroup_reader_done(&r);
}

static void make_v1(Fixture *f, const char *procs) {
        fixture_write(f, "cgroup/memory/ep-w1/memory.usage_in_bytes", "4096000\n");
        fixture_write(f, "cgroup/memory/ep-w1/cgroup.procs", "%s", procs);
}

static void test_cgroup_reader_read_fixture_v1_owned_memory(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *procs = NULL;
        CgroupReader r;
        Readings rd;

        fixture_write(f, "proc/self/cgroup", "4:memory:/ep-w1\n0::/ep/w1\n");
        make_v2_leaf(f, false);
        assert_true(asprintf(&procs, "%d\n", (int) getpid()) > 0);
        make_v1(f, procs);
        open_reader(f, &r);
        cgroup_reader_read(&r, &rd);
        assert_true(rd.has_memory);
        assert_int_equal(rd.memory_source, MEM_CGROUP1);
        assert_int_equal(rd.memory_bytes, 4096000);
        assert_int_equal(rd.cpu_source, CGROUP2); /* cpu stays with v2: only memory lives on v1 */
        cgroup_reader_done(&r);
}

static void test_cgroup_reader_read_fixture_v1_descendant_accepted(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *procs = NULL;
        CgroupReader r;
        Readings rd;

        fixture_write(f, "proc/self/cgroup", "4:memory:/ep-w1\n0::/ep/w1\n");
        make_v2_leaf(f, false);
        fixture_process(f, 777001, getpid(), 1, 1, 0, 0, 10);    /* our child */
        fixture_process(f, 777002, 777001, 1, 1, 0, 0, 10);      /* and grandchild */
        assert_true(asprintf(&procs, "%d\n777001\n777002\n", (int) getpid()) > 0);
        make_v1(f, procs);
        open_reader(f, &r);
        cgroup_reader_read(&r, &rd);
        assert_int_equal(rd.memory_source, MEM_CGROUP1);
        cgroup_reader_done(&r);
}

static void test_cgroup_reader_read_fixture_v1_foreign_pid_rejected(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *procs = NULL;
        CgroupReader r;
        Readings rd;

        fixture_write(f, "proc/self/cgroup", "4:memory:/ep-w1\n0::/ep/w1\n");
        make_v2_leaf(f, false);
        fixture_process(f, FOREIGN_PID, 1, 1, 1, 0, 0, 10000);
        assert_true(asprintf(&procs, "%d\n%d\n", (int) getpid(), FOREIGN_PID) > 0);
        make_v1(f, procs);
        open_reader(f, &r);
        cgroup_reader_read(&r, &rd);
        /* shared v1 cgroup: its usage is not ours; procfs over our v2 cgroup's processes instead */
        assert_true(rd.has_memory);
        assert_int_equal(rd.memory_source, MEM_PROCFS);
        assert_int_equal(rd.memory_bytes, page_bytes(300));
        cgroup_reader_done(&r);
}

static void test_cgroup_reader_read_fixture_v1_root_rejected(void **state) {
        Fixture *f = *state;
        CgroupReader r;
        Readings rd;

        fixture_write(f, "proc/self/cgroup", "4:memory:/\n0::/ep/w1\n");
        make_v2_leaf(f, false);
        fixture_write(f, "cgroup/memory/memory.usage_in_bytes", "999999999\n");
        fixture_write(f, "cgroup/memory/cgroup.procs", "%d\n", (int) getpid());
        open_reader(f, &r);
        cgroup_reader_read(&r, &rd);
        assert_int_equal(rd.memory_source, MEM_PROCFS);
        assert_int_equal(rd.memory_bytes, page_bytes(300));
        cgroup_reader_done(&r);
}

static void test_cgroup_reader_read_fixture_v1_child_cgroup_rejected(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *procs = NULL;
        CgroupReader r;
        Readings rd;

        fixture_write(f, "proc/self/cgroup", "4:memory:/ep-w1\n0::/ep/w1\n");
        make_v2_leaf(f, false);
        assert_true(asprintf(&procs, "%d\n", (int) getpid()) > 0);
        make_v1(f, procs);
        /* hierarchical accounting: whoever sits in a child cgroup is in our usage yet not in our procs */
        fixture_mkdir(f, "cgroup/memory/ep-w1/someone-else");
        open_reader(f, &r);
        cgroup_reader_read(&r, &rd);
        assert_int_equal(rd.memory_source, MEM_PROCFS);
        cgroup_reader_done(&r);
}

static void test_cgroup_reader_read_fixture_v1_recheck_notices_foreign_pid(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *procs = NULL;
        CgroupReader r;
        Readings rd;

        fixture_write(f, "proc/self/cgroup", "4:memory:/ep-w1\n0::/ep/w1\n");
        make_v2_leaf(f, false);
        assert_true(asprintf(&procs, "%d\n", (int) getpid()) > 0);
        make_v1(f, procs);
        open_reader(f, &r);
        cgroup_reader_read(&r, &rd);
        assert_int_equal(rd.memory_source, MEM_CGROUP1);

        fixture_process(f, FOREIGN_PID, 1, 1, 1, 0, 0, 10);
        fixture_write(f, "cgroup/memory/ep-w1/cgroup.procs", "%d\n%d\n", (int) getpid(), FOREIGN_PID);
        /* not re-checked on every tick (that costs a scan), but within CGROUP_RECHECK_TICKS */
        for (unsigned i = 2; i < CGROUP_RECHECK_TICKS; i++) {
                cgroup_reader_read(&r, &rd);
                assert_int_equal(rd.memory_source, MEM_CGROUP1);
        }
        cgroup_reader_read(&r, &rd);
        assert_int_equal(rd.memory_source, MEM_PROCFS);
        assert_int_equal(rd.generation, 1); /* a source verdict, not a move: cpu stays comparable */
        cgroup_reader_done(&r);
}

static void test_cgroup_reader_read_fixture_missing_files_absent(void **state) {
        Fixture *f = *state;
        CgroupReader r;
        Readings rd;
        char rel[64];

        /* an own cgroup directory without a single file, and no procfs for this process either */
        fixture_write(f, "proc/self/cgroup", "0::/ep/empty\n");
        fixture_mkdir(f, "cgroup/unified/ep/empty");
        snprintf(rel, sizeof rel, "proc/%d/stat", (int) getpid());
        fixture_remove(f, rel);
        snprintf(rel, sizeof rel, "proc/%d/statm", (int) getpid());
        fixture_remove(f, rel);
        fixture_remove(f, "proc/loadavg");

        open_reader(f, &r);
        cgroup_reader_read(&r, &rd);
        assert_false(rd.has_cpu_usage);
        assert_false(rd.has_memory);
        assert_false(rd.has_cpu_pressure);
        assert_false(rd.has_memory_pressure);
        assert_false(rd.has_load);
        assert_int_equal(rd.memory_bytes, 0); /* untouched, and flagged absent */
        cgroup_reader_done(&r);
}

static void test_cgroup_reader_read_fixture_memory_current_failure_absent(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int dir_fd = -EBADF, saved = -EBADF;
        CgroupReader r;
        Readings rd;

        fixture_write(f, "proc/self/cgroup", "0::/ep/w1\n");
        make_v2_leaf(f, true);
        open_reader(f, &r);
        cgroup_reader_read(&r, &rd);
        assert_int_equal(rd.memory_source, MEM_CGROUP2);

        /* make the kept memory.current fd fail its next pread (EISDIR) */
        saved = dup(r.memory_current_fd);
        dir_fd = open(f->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(saved >= 0 && dir_fd >= 0);
        assert_true(dup2(dir_fd, r.memory_current_fd) >= 0);
        cgroup_reader_read(&r, &rd);
        assert_false(rd.has_memory);
        /* absent this tick, and no silent switch to procfs (whose number means something else) */
        assert_int_equal(r.memory_source, MEM_CGROUP2);
        assert_true(rd.has_cpu_usage);

        assert_true(dup2(saved, r.memory_current_fd) >= 0);
        cgroup_reader_read(&r, &rd);
        assert_true(rd.has_memory);
        assert_int_equal(rd.memory_source, MEM_CGROUP2);
        assert_int_equal(rd.memory_bytes, 123456789);
        cgroup_reader_done(&r);
}

static void test_cgroup_reader_read_fixture_root_cgroup_uses_procfs(void **state) {
        Fixture *f = *state;
        CgroupReader r;
        Readings rd;

        /* "/" is the root: its files exist but count the whole host */
        fixture_write(f, "proc/self/cgroup", "0::/\n");
        fixture_write(f, "cgroup/unified/cpu.stat", "usage_usec 999999999\n");
        fixture_write(f, "cgroup/unified/cpu.pressure", PSI_FILE, "9.00");
        open_reader(f, &r);
        cgroup_reader_read(&r, &rd);
        assert_true(rd.has_cpu_usage);
        assert_int_equal(rd.cpu_source, CPU_PROCFS);
        assert_int_equal(rd.cpu_usage_usec, procfs_ticks_to_usec(100 + 50 + 10 + 5));
        assert_true(rd.has_memory);
        assert_int_equal(rd.memory_source, MEM_PROCFS);
        assert_int_equal(rd.memory_bytes, page_bytes(300));
        assert_false(rd.has_cpu_pressure);
        assert_false(rd.has_memory_pressure);
        cgroup_reader_done(&r);
}

static void test_cgroup_reader_read_fixture_v2_procfs_sums_cgroup_procs(void **state) {
        Fixture *f = *state;
        CgroupReader r;
        Readings rd;

        fixture_write(f, "proc/self/cgroup", "0::/ep/w1\n");
        make_v2_leaf(f, false);
        fixture_process(f, 777001, 1, 1, 1, 0, 0, 200);
        /* 777003 is listed but exited before we read it: skipped, not an error */
        fixture_write(f, "cgroup/unified/ep/w1/cgroup.procs", "%d\n777001\n777003\n", (int) getpid());
        open_reader(f, &r);
        cgroup_reader_read(&r, &rd);
        assert_int_equal(rd.memory_source, MEM_PROCFS);
        assert_int_equal(rd.memory_bytes, page_bytes(300 + 200));
        cgroup_reader_done(&r);
}

static void test_cgroup_reader_read_fixture_watch_pid_tree(void **state) {
        Fixture *f = *state;
        CgroupReader r;
        Readings rd;

        fixture_write(f, "proc/self/cgroup", "0::/\n");
        fixture_process(f, 5000, getpid(), 10, 10, 3, 2, 100); /* the watched child */
        fixture_process(f, 5001, 5000, 20, 0, 0, 0, 50);       /* its child */
        fixture_process(f, 4990, 5001, 5, 0, 0, 0, 25);        /* a grandchild with a lower (wrapped) pid */
        fixture_process(f, 5002, 1, 1000, 0, 0, 0, 9999);      /* unrelated */
        open_reader(f, &r);
        cgroup_reader_watch_pid(&r, 5000);
        cgroup_reader_read(&r, &rd);
        assert_int_equal(rd.cpu_source, CPU_PROCFS);
        assert_int_equal(rd.cpu_usage_usec, procfs_ticks_to_usec(25 + 20 + 5));
        assert_int_equal(rd.memory_source, MEM_PROCFS);
        assert_int_equal(rd.memory_bytes, page_bytes(100 + 50 + 25));
        cgroup_reader_done(&r);
}

static void test_cgroup_reader_read_fixture_moved_cgroup_resolved_again(void **state) {
        Fixture *f = *state;
        CgroupReader r;
        Readings rd;

        fixture_write(f, "proc/self/cgroup", "0::/ep/w1\n");
        make_v2_leaf(f, true);
        open_reader(f, &r);
        cgroup_reader_read(&r, &rd);
        assert_int_equal(rd.generation, 1);

        /* the process was moved to another cgroup meanwhile */
        fixture_write(f, "cgroup/unified/ep/w9/cpu.stat", "usage_usec 42\n");
        fixture_write(f, "cgroup/unified/ep/w9/memory.current", "8192\n");
        fixture_write(f, "proc/self/cgroup", "0::/ep/w9\n");
        for (unsigned i = 0; i < CGROUP_RECHECK_TICKS; i++)
                cgroup_reader_read(&r, &rd);
        assert_string_equal(cgroup_reader_v2_path(&r), "/ep/w9");
        assert_int_equal(rd.generation, 2); /* cpu must not compare w1's counter with w9's */
        assert_int_equal(rd.cpu_usage_usec, 42);
        assert_int_equal(rd.memory_bytes, 8192);
        cgroup_reader_done(&r);
}

static void test_cgroup_reader_init_fixture_no_proc(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *nowhere = NULL;
        CgroupReader r;
        Readings rd;

        assert_true(asprintf(&nowhere, "%s/does-not-exist", f->root) > 0);
        assert_int_equal(cgroup_reader_init(&r, nowhere, nowhere, true), 0);
        cgroup_reader_read(&r, &rd);
        assert_false(rd.has_cpu_usage || rd.has_memory || rd.has_load || rd.has_cpu_pressure);
        assert_null(cgroup_reader_v2_path(&r));
        cgroup_reader_done(&r);
}

#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                TEST(test_cgroup_reader_read_fixture_v2_memory_current),
                TEST(test_cgroup_reader_read_fixture_unified_layout),
                TEST(test_cgroup_reader_read_fixture_v1_owned_memory),
                TEST(test_cgroup_reader_read_fixture_v1_descendant_accepted),
                TEST(test_cgroup_reader_read_fixture_v1_foreign_pid_rejected),
                TEST(test_cgroup_reader_read_fixture_v1_root_rejected),
                TEST(test_cgroup_reader_read_fixture_v1_child_cgroup_rejected),
                TEST(test_cgroup_reader_read_fixture_v1_recheck_notices_foreign_pid),
                TEST(test_cgroup_reader_read_fixture_missing_files_absent),
                TEST(test_cgroup_reader_read_fixture_memory_current_failure_absent),
                TEST(test_cgroup_reader_read_fixture_root_cgroup_uses_procfs),
                TEST(test_cgroup_reader_read_fixture_v2_procfs_sums_cgroup_procs),
                TEST(test_cgroup_reader_read_fixture_watch_pid_tree),
                TEST(test_cgroup_reader_read_fixture_moved_cgroup_resolved_again),
                TEST(test_cgroup_reader_init_fixture_no_proc),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
