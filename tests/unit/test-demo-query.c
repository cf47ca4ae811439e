/* SPDX-License-Identifier: MIT */
/* The demo worker's request-target handling: path/query split, percent-decoding, and the bounded
 * numeric parameters of /work, including every malformed form that must become a 400. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "query.h"

static void split(const char *url, Target *t) {
        assert_int_equal(target_split(url, strlen(url), t), 0);
}

static void test_target_split_path_and_query(void **state) {
        Target t;

        split("/work?cpu_ms=5&x", &t);
        assert_true(target_path_is(&t, "/work"));
        assert_false(target_path_is(&t, "/wor"));
        assert_int_equal(t.query_len, strlen("cpu_ms=5&x"));
        assert_memory_equal(t.query, "cpu_ms=5&x", t.query_len);

        split("/", &t);
        assert_true(target_path_is(&t, "/"));
        assert_null(t.query);

        split("/state#frag?no", &t);
        assert_true(target_path_is(&t, "/state"));
        assert_null(t.query);

        split("/a?b=1#c", &t);
        assert_int_equal(t.query_len, 3);
}

static void test_target_split_absolute_form(void **state) {
        Target t;

        split("http://example.com:8080/hello?x=1", &t);
        assert_true(target_path_is(&t, "/hello"));
        assert_memory_equal(t.query, "x=1", 3);
        split("https://h/", &t);
        assert_true(target_path_is(&t, "/"));
}

static void test_target_split_invalid(void **state) {
        Target t;

        assert_int_equal(target_split("*", 1, &t), -EINVAL);
        assert_int_equal(target_split("", 0, &t), -EINVAL);
        assert_int_equal(target_split("work", 4, &t), -EINVAL);
        assert_int_equal(target_split("http://host", 11, &t), -EINVAL);
}

static int get(const char *query, const char *name, char *buf, size_t size) {
        return query_get(query, strlen(query), name, buf, size);
}

static void test_query_get_decodes(void **state) {
        char buf[64];

        assert_int_equal(get("user=bob%40example.com&x=1", "user", buf, sizeof buf), 15);
        assert_string_equal(buf, "bob@example.com");
        assert_int_equal(get("a=1&b=x+y%2Fz", "b", buf, sizeof buf), 5);
        assert_string_equal(buf, "x y/z");
        assert_int_equal(get("flag&v=2", "flag", buf, sizeof buf), 0);
        assert_string_equal(buf, "");
        assert_int_equal(get("v=1&v=2", "v", buf, sizeof buf), 1);
        assert_string_equal(buf, "1");
        assert_int_equal(get("vv=1&v=3", "v", buf, sizeof buf), 1);
        assert_string_equal(buf, "3");
}

static void test_query_get_absent_and_bad(void **state) {
        char buf[4];

        assert_int_equal(query_get(NULL, 0, "x", buf, sizeof buf), -ENOENT);
        assert_int_equal(get("", "x", buf, sizeof buf), -ENOENT);
        assert_int_equal(get("xy=1", "x", buf, sizeof buf), -ENOENT);
        assert_int_equal(get("x=%zz", "x", buf, sizeof buf), -EINVAL);
        assert_int_equal(get("x=%2", "x", buf, sizeof buf), -EINVAL);
        assert_int_equal(get("x=%", "x", buf, sizeof buf), -EINVAL);
        assert_int_equal(get("x=a%00b", "x", buf, sizeof buf), -EINVAL);
        assert_int_equal(get("x=abcd", "x", buf, sizeof buf), -ENOBUFS);
        assert_int_equal(get("x=abc", "x", buf, sizeof buf), 3);
}

static int num(const char *query, uint64_t max, uint64_t *ret) {
        return query_get_uint64(query, strlen(query), "n", max, 77, ret);
}

static void test_query_get_uint64_bounds(void **state) {
        uint64_t v;

        assert_int_equal(num("n=0", 10, &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(num("n=10", 10, &v), 0);
        assert_int_equal(v, 10);
        assert_int_equal(num("x=1", 10, &v), 0);
        assert_int_equal(v, 77); /* absent: the default */
        assert_int_equal(num("n=11", 10, &v), -ERANGE);
        assert_int_equal(num("n=99999999999999999999999", UINT64_MAX, &v), -ERANGE);
        assert_int_equal(num("n=18446744073709551615", UINT64_MAX, &v), 0);
        assert_int_equal(v, UINT64_MAX);
}

static void test_query_get_uint64_malformed(void **state) {
        static const char *const bad[] = { "n=", "n", "n=abc", "n=-1", "n=+1", "n=1.5", "n=%201", "n=1%20",
                                           "n=0x10", "n=1e3" };
        uint64_t v;

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                assert_int_equal(num(bad[i], 100, &v), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_target_split_path_and_query),
                cmocka_unit_test(test_target_split_absolute_form),
                cmocka_unit_test(test_target_split_invalid),
                cmocka_unit_test(test_query_get_decodes),
                cmocka_unit_test(test_query_get_absent_and_bad),
                cmocka_unit_test(test_query_get_uint64_bounds),
                cmocka_unit_test(test_query_get_uint64_malformed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
