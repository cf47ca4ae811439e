/* SPDX-License-Identifier: MIT */
/* The D-Bus contract's pure parts: a group's label in its bus name (injective, a valid bus name element
 * whatever the group is called, bounded), the bus kinds, and the commander's choice of bus (EP_BUS or the
 * uid). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bus-api.h"
#include "bus.h"
#include "macro.h"

static void test_bus_api_group_label_table(void **state) {
        static const struct {
                const char *group, *label;
        } table[] = {
                {"web", "web"},   {"Web2", "Web2"},
                {"a-b", "a_2db"}, {"a_b", "a_5fb"},       /* '_' escaped too: a_2db and a-b stay apart */
                {"a.b", "a_2eb"}, {"9lives", "_39lives"}, /* a bus name element may not begin with a digit */
                {"x9", "x9"},     {"", "_"},
                {"é", "_c3_a9"},  {"a b/c", "a_20b_2fc"},
        };
        char buf[BUS_API_NAME_MAX];

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                assert_int_equal(bus_api_group_label(table[i].group, buf, sizeof buf), 0);
                assert_string_equal(buf, table[i].label);
        }
}

static void test_bus_api_group_name_prefix(void **state) {
        char buf[BUS_API_NAME_MAX];

        assert_int_equal(bus_api_group_name("web-1", buf, sizeof buf), 0);
        assert_string_equal(buf, "org.elasticpool.Group1.web_2d1");
}

/* Every name it makes is a valid well-known bus name: elements of [A-Za-z0-9_-] not starting with a
 * digit, at most 255 bytes. */
static void test_bus_api_group_name_valid_for_every_byte(void **state) {
        char group[3] = "", buf[BUS_API_NAME_MAX];

        for (unsigned c = 1; c < 256; c++) {
                group[0] = (char) c;
                group[1] = (char) c;
                assert_int_equal(bus_api_group_name(group, buf, sizeof buf), 0);
                for (const char *p = buf + strlen(BUS_API_NAME_PREFIX); *p; p++)
                        assert_true((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                                    (*p >= '0' && *p <= '9') || *p == '_');
                assert_false(buf[strlen(BUS_API_NAME_PREFIX)] >= '0' &&
                             buf[strlen(BUS_API_NAME_PREFIX)] <= '9');
        }
}

static void test_bus_api_group_name_too_long(void **state) {
        char group[300], buf[BUS_API_NAME_MAX], small[8];

        memset(group, 'a', sizeof group - 1);
        group[sizeof group - 1] = 0;
        assert_int_equal(bus_api_group_name(group, buf, sizeof buf), -ENAMETOOLONG);
        /* the longest that fits: 255 bytes in all */
        group[255 - strlen(BUS_API_NAME_PREFIX)] = 0;
        assert_int_equal(bus_api_group_name(group, buf, sizeof buf), 0);
        assert_int_equal(strlen(buf), 255);
        memset(group, '-', 100);
        group[100] = 0;
        assert_int_equal(bus_api_group_name(group, buf, sizeof buf), -ENAMETOOLONG); /* 300 escaped bytes */
        assert_int_equal(bus_api_group_label("abcdefgh", small, sizeof small), -ENAMETOOLONG);
        assert_int_equal(bus_api_group_label("-", small, 3), -ENAMETOOLONG);
        assert_int_equal(bus_api_group_label("-", small, 4), 0);
}

static void test_bus_api_kind_strings(void **state) {
        for (BusApiKind k = 0; k < _BUS_API_KIND_MAX; k++)
                assert_int_equal(bus_api_kind_from_string(bus_api_kind_to_string(k)), k);
        assert_int_equal(bus_api_kind_from_string("session"), _BUS_API_KIND_INVALID);
        assert_int_equal(bus_api_kind_from_string(NULL), _BUS_API_KIND_INVALID);
        assert_null(bus_api_kind_to_string(_BUS_API_KIND_MAX));
        assert_int_equal(bus_api_kind_default(0), BUS_API_SYSTEM);
        assert_int_equal(bus_api_kind_default(1000), BUS_API_USER);
}

static void test_bus_choose_env_over_uid(void **state) {
        assert_int_equal(bus_choose(NULL, 0), BUS_API_SYSTEM);
        assert_int_equal(bus_choose(NULL, 1000), BUS_API_USER);
        assert_int_equal(bus_choose("", 0), BUS_API_SYSTEM);
        assert_int_equal(bus_choose("user", 0), BUS_API_USER);
        assert_int_equal(bus_choose("system", 1000), BUS_API_SYSTEM);
        assert_int_equal(bus_choose("none", 0), BUS_API_NONE);
        /* unknown: logged, the default */
        assert_int_equal(bus_choose("kdbus", 1000), BUS_API_USER);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bus_api_group_label_table),
                cmocka_unit_test(test_bus_api_group_name_prefix),
                cmocka_unit_test(test_bus_api_group_name_valid_for_every_byte),
                cmocka_unit_test(test_bus_api_group_name_too_long),
                cmocka_unit_test(test_bus_api_kind_strings),
                cmocka_unit_test(test_bus_choose_env_over_uid),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
