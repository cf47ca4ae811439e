/* SPDX-License-Identifier: MIT */
/* The configuration's value parsers: numbers, booleans, sizes and durations, every unit each accepts and
 * every way a value is refused (-EINVAL malformed, -ERANGE does not fit), blanks around values included. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "macro.h"
#include "parse-util.h"

static void test_parse_uint64_accepts(void **state) {
        static const struct {
                const char *s;
                uint64_t v;
        } table[] = {
                { "0", 0 },
                { "42", 42 },
                { "  42", 42 },
                { "42 \t\n", 42 },
                { "007", 7 },
                { "18446744073709551615", UINT64_MAX },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                uint64_t v = 1;
                assert_int_equal(parse_uint64(table[i].s, &v), 0);
                assert_true(v == table[i].v);
        }
}

static void test_parse_uint64_refuses(void **state) {
        static const struct {
                const char *s;
                int r;
        } table[] = {
                { "", -EINVAL },
                { "   ", -EINVAL },
                { "-1", -EINVAL }, /* strtoull would wrap it to UINT64_MAX */
                { "+1", -EINVAL },
                { "42x", -EINVAL },
                { "4 2", -EINVAL },
                { "0x10", -EINVAL },
                { "1.5", -EINVAL },
                { "18446744073709551616", -ERANGE },
                { "99999999999999999999", -ERANGE },
                { "99999999999999999999x", -EINVAL }, /* malformed wins over out of range */
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                uint64_t v = 77;
                assert_int_equal(parse_uint64(table[i].s, &v), table[i].r);
                assert_true(v == 77); /* untouched on failure */
        }
}

static void test_parse_uint32_range(void **state) {
        uint32_t v = 0;

        assert_int_equal(parse_uint32("4294967295", &v), 0);
        assert_true(v == UINT32_MAX);
        assert_int_equal(parse_uint32(" 12 ", &v), 0);
        assert_int_equal(v, 12);
        v = 5;
        assert_int_equal(parse_uint32("4294967296", &v), -ERANGE);
        assert_int_equal(parse_uint32("18446744073709551616", &v), -ERANGE);
        assert_int_equal(parse_uint32("x", &v), -EINVAL);
        assert_int_equal(v, 5);
}

static void test_parse_double_accepts(void **state) {
        double v = 0;

        assert_int_equal(parse_double("0.8", &v), 0);
        assert_true(v == 0.8);
        assert_int_equal(parse_double("  1.5  ", &v), 0);
        assert_true(v == 1.5);
        assert_int_equal(parse_double("-2", &v), 0);
        assert_true(v == -2.0);
        assert_int_equal(parse_double("1e3", &v), 0);
        assert_true(v == 1000.0);
        assert_int_equal(parse_double(".25", &v), 0);
        assert_true(v == 0.25);
}

static void test_parse_double_refuses(void **state) {
        double v = 7.0;

        assert_int_equal(parse_double("", &v), -EINVAL);
        assert_int_equal(parse_double("  ", &v), -EINVAL);
        assert_int_equal(parse_double("abc", &v), -EINVAL);
        assert_int_equal(parse_double("1.5x", &v), -EINVAL);
        assert_int_equal(parse_double("nan", &v), -EINVAL);
        assert_int_equal(parse_double("inf", &v), -EINVAL);
        assert_int_equal(parse_double("-infinity", &v), -EINVAL);
        /* a number too large for a double does not fit: -ERANGE, as the header promises */
        assert_int_equal(parse_double("1e999", &v), -ERANGE);
        assert_int_equal(parse_double("-1e999", &v), -ERANGE);
        assert_true(v == 7.0);
}

static void test_parse_boolean_words(void **state) {
        static const char *const yes[] = { "1", "yes", "y", "true", "t", "on", "YES", "True", "On" };
        static const char *const no[] = { "0", "no", "n", "false", "f", "off", "NO", "False", "OFF" };
        bool b;

        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                b = false;
                assert_int_equal(parse_boolean(yes[i], &b), 0);
                assert_true(b);
        }
        for (size_t i = 0; i < ELEMENTSOF(no); i++) {
                b = true;
                assert_int_equal(parse_boolean(no[i], &b), 0);
                assert_false(b);
        }
}

static void test_parse_boolean_blanks_and_garbage(void **state) {
        bool b = false;

        /* "surrounding blanks allowed" holds for booleans as for every other parser */
        assert_int_equal(parse_boolean("  yes ", &b), 0);
        assert_true(b);
        assert_int_equal(parse_boolean("\toff\n", &b), 0);
        assert_false(b);

        b = true;
        assert_int_equal(parse_boolean("", &b), -EINVAL);
        assert_int_equal(parse_boolean("  ", &b), -EINVAL);
        assert_int_equal(parse_boolean("yess", &b), -EINVAL);
        assert_int_equal(parse_boolean("ye", &b), -EINVAL);
        assert_int_equal(parse_boolean("2", &b), -EINVAL);
        assert_int_equal(parse_boolean("y es", &b), -EINVAL);
        assert_true(b);
}

static void test_parse_size_every_unit(void **state) {
        static const struct {
                const char *s;
                uint64_t v;
        } table[] = {
                { "0", 0 },
                { "512", 512 },
                { "512B", 512 },
                { "64K", 64ULL << 10 },
                { "64KB", 64ULL << 10 },
                { "64KiB", 64ULL << 10 },
                { "64k", 64ULL << 10 },
                { "3M", 3ULL << 20 },
                { "3MB", 3ULL << 20 },
                { "3MiB", 3ULL << 20 },
                { "3m", 3ULL << 20 },
                { "2G", 2ULL << 30 },
                { "2GB", 2ULL << 30 },
                { "2GiB", 2ULL << 30 },
                { "2gib", 2ULL << 30 },
                { "5T", 5ULL << 40 },
                { "5TB", 5ULL << 40 },
                { "5TiB", 5ULL << 40 },
                { "1.5G", 3ULL << 29 },
                { "0.5K", 512 },
                { ".5K", 512 },
                { "  100 M  ", 100ULL << 20 },
                { "16777215T", 16777215ULL << 40 },
                { "9007199254740992", 9007199254740992ULL }, /* 2^53: exact */
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                uint64_t v = 1;
                assert_int_equal(parse_size(table[i].s, &v), 0);
                assert_true(v == table[i].v);
        }
}

static void test_parse_size_refuses(void **state) {
        static const struct {
                const char *s;
                int r;
        } table[] = {
                { "", -EINVAL },
                { "  ", -EINVAL },
                { "K", -EINVAL },
                { "-1K", -EINVAL },
                { "+1K", -EINVAL },
                { "12Q", -EINVAL },
                { "12KK", -EINVAL },
                { "12 K B", -EINVAL },
                { "1E", -EINVAL },
                { ".", -EINVAL },
                { "0x10", -EINVAL }, /* strtod() would read 16 */
                { "0X1p4K", -EINVAL },
                { "16777216T", -ERANGE }, /* 2^64 */
                { "18446744073709551616", -ERANGE },
                { "1e400", -ERANGE },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                uint64_t v = 77;
                assert_int_equal(parse_size(table[i].s, &v), table[i].r);
                assert_true(v == 77);
        }
}

static void test_parse_duration_every_unit(void **state) {
        static const struct {
                const char *s;
                usec_t v;
        } table[] = {
                { "0", 0 },
                { "5", 5 * USEC_PER_SEC }, /* a bare number is seconds */
                { "250us", 250 },
                { "250usec", 250 },
                { "500ms", 500 * USEC_PER_MSEC },
                { "500msec", 500 * USEC_PER_MSEC },
                { "5s", 5 * USEC_PER_SEC },
                { "5sec", 5 * USEC_PER_SEC },
                { "2m", 120 * USEC_PER_SEC },
                { "2min", 120 * USEC_PER_SEC },
                { "1h", 3600 * USEC_PER_SEC },
                { "1hr", 3600 * USEC_PER_SEC },
                { "1d", 86400 * USEC_PER_SEC },
                { "1.5s", 1500 * USEC_PER_MSEC },
                { "0.5ms", 500 },
                { ".5s", 500 * USEC_PER_MSEC },
                { "2.5us", 3 }, /* rounded, not truncated */
                { " 10 MS ", 10 * USEC_PER_MSEC },
                { "5S", 5 * USEC_PER_SEC },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                usec_t v = 1;
                assert_int_equal(parse_duration(table[i].s, &v), 0);
                assert_true(v == table[i].v);
        }
}

static void test_parse_duration_refuses(void **state) {
        static const struct {
                const char *s;
                int r;
        } table[] = {
                { "", -EINVAL },
                { "s", -EINVAL },
                { "-5s", -EINVAL },
                { "5ss", -EINVAL },
                { "5 years", -EINVAL },
                { "1min 30s", -EINVAL }, /* one number, one unit */
                { "5w", -EINVAL },
                { "0x10s", -EINVAL },
                { "infinity", -EINVAL },
                { "213503982335d", -ERANGE }, /* 2^64 us is about 213 503 982 d */
                { "1e300", -ERANGE },
                { "1e999s", -ERANGE },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                usec_t v = 77;
                assert_int_equal(parse_duration(table[i].s, &v), table[i].r);
                assert_true(v == 77);
        }
}

static void test_parse_duration_largest_fits(void **state) {
        usec_t v = 0;

        /* 213 503 d fits in 2^64 us and never reads as USEC_INFINITY */
        assert_int_equal(parse_duration("213503d", &v), 0);
        assert_true(v == 213503ULL * 86400ULL * USEC_PER_SEC);
        assert_true(v != USEC_INFINITY);
        assert_int_equal(parse_duration("18446744073709549568us", &v), 0); /* 2^64 - 2048: a double */
        assert_true(v != USEC_INFINITY);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_uint64_accepts),
                cmocka_unit_test(test_parse_uint64_refuses),
                cmocka_unit_test(test_parse_uint32_range),
                cmocka_unit_test(test_parse_double_accepts),
                cmocka_unit_test(test_parse_double_refuses),
                cmocka_unit_test(test_parse_boolean_words),
                cmocka_unit_test(test_parse_boolean_blanks_and_garbage),
                cmocka_unit_test(test_parse_size_every_unit),
                cmocka_unit_test(test_parse_size_refuses),
                cmocka_unit_test(test_parse_duration_every_unit),
                cmocka_unit_test(test_parse_duration_refuses),
                cmocka_unit_test(test_parse_duration_largest_fits),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
