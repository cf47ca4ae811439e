/* SPDX-License-Identifier: MIT */
/* The parsers of the kernel files the sensor reads: real-world contents, the corner cases the kernel
 * produces (command names with spaces and parentheses, co-mounted v1 controllers, paths with colons),
 * and malformed input refused rather than read as 0. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "kernel-parse.h"

static void test_parse_cgroup_membership_hybrid(void **state) {
        char *v2 = NULL, *v1 = NULL;

        assert_int_equal(parse_cgroup_membership("9:name=systemd:/\n8:pids:/\n4:memory:/process_api/9b4b\n"
                                                 "2:cpuacct:/\n0::/ep-test/leaf\n",
                                                 &v2, &v1),
                         0);
        assert_string_equal(v2, "/ep-test/leaf");
        assert_string_equal(v1, "/process_api/9b4b");
        free(v2);
        free(v1);
}

static void test_parse_cgroup_membership_unified_only(void **state) {
        char *v2 = NULL, *v1 = NULL;

        assert_int_equal(parse_cgroup_membership("0::/system.slice/web.service\n", &v2, &v1), 0);
        assert_string_equal(v2, "/system.slice/web.service");
        assert_null(v1);
        free(v2);
}

static void test_parse_cgroup_membership_comounted_memory(void **state) {
        char *v2 = NULL, *v1 = NULL;

        /* "memory" must match a whole controller name, not "memory_pressure" or a substring */
        assert_int_equal(parse_cgroup_membership("5:memoryx:/no\n3:cpu,memory,blkio:/w1\n", &v2, &v1), 0);
        assert_null(v2);
        assert_string_equal(v1, "/w1");
        free(v1);
}

static void test_parse_cgroup_membership_path_with_colon(void **state) {
        char *v2 = NULL, *v1 = NULL;

        assert_int_equal(parse_cgroup_membership("0::/a:b/c", &v2, &v1), 0);
        assert_string_equal(v2, "/a:b/c");
        free(v2);
}

static void test_parse_cgroup_membership_empty(void **state) {
        char *v2 = NULL, *v1 = NULL;

        assert_int_equal(parse_cgroup_membership("", &v2, &v1), 0);
        assert_null(v2);
        assert_null(v1);
        assert_int_equal(parse_cgroup_membership("garbage\n0::\n", &v2, &v1), 0);
        assert_null(v2);
}

static void test_parse_cpu_stat_usage_valid(void **state) {
        uint64_t v = 0;

        assert_int_equal(parse_cpu_stat_usage("usage_usec 45241703\nuser_usec 20825488\n", &v), 0);
        assert_int_equal(v, 45241703);
        /* with the cpu controller enabled the line order may differ */
        assert_int_equal(parse_cpu_stat_usage("nr_periods 0\nusage_usec 7\n", &v), 0);
        assert_int_equal(v, 7);
}

static void test_parse_cpu_stat_usage_malformed(void **state) {
        uint64_t v = 42;

        assert_int_equal(parse_cpu_stat_usage("user_usec 1\n", &v), -EINVAL);
        assert_int_equal(parse_cpu_stat_usage("usage_usec x\n", &v), -EINVAL);
        assert_int_equal(parse_cpu_stat_usage("usage_usec 12x\n", &v), -EINVAL);
        assert_int_equal(parse_cpu_stat_usage("xusage_usec 12\n", &v), -EINVAL);
        assert_int_equal(parse_cpu_stat_usage("usage_usec 99999999999999999999999\n", &v), -ERANGE);
        assert_int_equal(v, 42);
}

static void test_parse_psi_some_avg10_valid(void **state) {
        double v = -1;

        assert_int_equal(parse_psi_some_avg10("some avg10=1.38 avg60=0.13 avg300=0.04 total=5167955\n"
                                              "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                                              &v),
                         0);
        assert_true(v > 1.379 && v < 1.381);
        assert_int_equal(parse_psi_some_avg10("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", &v), 0);
        assert_true(v == 0.0);
}

static void test_parse_psi_some_avg10_malformed(void **state) {
        double v;

        assert_int_equal(parse_psi_some_avg10("full avg10=1.00 avg60=0.00 avg300=0.00 total=0\n", &v),
                         -EINVAL);
        assert_int_equal(parse_psi_some_avg10("some avg60=1.00\nfull avg10=2.00\n", &v), -EINVAL);
        assert_int_equal(parse_psi_some_avg10("some avg10=x\n", &v), -EINVAL);
        assert_int_equal(parse_psi_some_avg10("", &v), -EINVAL);
}

static void test_parse_loadavg_valid(void **state) {
        double l[3];

        assert_int_equal(parse_loadavg("1.81 1.03 0.44 3/123 4567\n", l), 0);
        assert_true(l[0] > 1.809 && l[0] < 1.811);
        assert_true(l[1] > 1.029 && l[1] < 1.031);
        assert_true(l[2] > 0.439 && l[2] < 0.441);
}

static void test_parse_loadavg_malformed(void **state) {
        double l[3] = { 9, 9, 9 };

        assert_int_equal(parse_loadavg("1.81 1.03\n", l), -EINVAL);
        assert_int_equal(parse_loadavg("1,81 1.03 0.44\n", l), -EINVAL);
        assert_true(l[0] == 9);
}

static void test_parse_decimal_fixed_values(void **state) {
        const char *end;
        double v;

        /* by hand, so an application's setlocale(LC_NUMERIC) cannot turn "0.38" into 0 */
        assert_int_equal(parse_decimal_fixed("0.38 rest", &end, &v), 0);
        assert_true(v > 0.379 && v < 0.381);
        assert_string_equal(end, " rest");
        assert_int_equal(parse_decimal_fixed("12", &end, &v), 0);
        assert_true(v == 12.0);
        assert_int_equal(parse_decimal_fixed("1.", &end, &v), -EINVAL);
        assert_int_equal(parse_decimal_fixed("-1.0", &end, &v), -EINVAL);
}

static void test_parse_proc_stat_comm_with_spaces_and_parens(void **state) {
        ProcStat st;

        assert_int_equal(parse_proc_stat("4133 (bash (x) y) S 4132 4133 4133 0 -1 4194560 100 0 0 0 "
                                         "1500 250 30 -1 20 0 1 0 12345 1000 250\n",
                                         &st),
                         0);
        assert_int_equal(st.ppid, 4132);
        assert_int_equal(st.utime, 1500);
        assert_int_equal(st.stime, 250);
        assert_int_equal(st.cutime, 30);
        assert_int_equal(st.cstime, 0); /* printed signed; a negative one reads as nothing */
}

static void test_parse_proc_stat_truncated(void **state) {
        ProcStat st;

        assert_int_equal(parse_proc_stat("4133 (bash) S 4132 4133 4133 0 -1 4194560 100 0 0 0 1500\n", &st),
                         -EINVAL);
        assert_int_equal(parse_proc_stat("no parenthesis at all", &st), -EINVAL);
        assert_int_equal(parse_proc_stat("1 (x) S a 1 1 0 -1 0 0 0 0 0 1 1 1 1\n", &st), -EINVAL);
}

static void test_parse_statm_resident_valid(void **state) {
        uint64_t pages = 0;

        assert_int_equal(parse_statm_resident("10000 452 100 10 0 500 0\n", &pages), 0);
        assert_int_equal(pages, 452);
        assert_int_equal(parse_statm_resident("10000\n", &pages), -EINVAL);
        assert_int_equal(parse_statm_resident("", &pages), -EINVAL);
}

static void test_parse_pid_list_next_steps(void **state) {
        const char *p = "12\n345\n\n";
        pid_t pid;

        assert_int_equal(parse_pid_list_next(&p, &pid), 1);
        assert_int_equal(pid, 12);
        assert_int_equal(parse_pid_list_next(&p, &pid), 1);
        assert_int_equal(pid, 345);
        assert_int_equal(parse_pid_list_next(&p, &pid), 0);

        p = "12\nx\n";
        assert_int_equal(parse_pid_list_next(&p, &pid), 1);
        assert_int_equal(parse_pid_list_next(&p, &pid), -EINVAL);
        p = "0\n";
        assert_int_equal(parse_pid_list_next(&p, &pid), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_cgroup_membership_hybrid),
                cmocka_unit_test(test_parse_cgroup_membership_unified_only),
                cmocka_unit_test(test_parse_cgroup_membership_comounted_memory),
                cmocka_unit_test(test_parse_cgroup_membership_path_with_colon),
                cmocka_unit_test(test_parse_cgroup_membership_empty),
                cmocka_unit_test(test_parse_cpu_stat_usage_valid),
                cmocka_unit_test(test_parse_cpu_stat_usage_malformed),
                cmocka_unit_test(test_parse_psi_some_avg10_valid),
                cmocka_unit_test(test_parse_psi_some_avg10_malformed),
                cmocka_unit_test(test_parse_loadavg_valid),
                cmocka_unit_test(test_parse_loadavg_malformed),
                cmocka_unit_test(test_parse_decimal_fixed_values),
                cmocka_unit_test(test_parse_proc_stat_comm_with_spaces_and_parens),
                cmocka_unit_test(test_parse_proc_stat_truncated),
                cmocka_unit_test(test_parse_statm_resident_valid),
                cmocka_unit_test(test_parse_pid_list_next_steps),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
