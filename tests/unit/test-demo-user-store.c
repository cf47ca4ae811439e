/* SPDX-License-Identifier: MIT */
/* The demo worker's user store: login/bump/drop, the snapshot package round trip that a live move relies
 * on (counter and blob intact), refusal of every damaged or foreign package with -EBADMSG, and the walk over
 * every user that the sensor's list callback announces to a commander. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cleanup.h"
#include "user-store.h"

static void test_user_name_is_valid(void **state) {
        char long_name[USER_NAME_MAX + 2];

        assert_true(user_name_is_valid("alice", 5));
        assert_true(user_name_is_valid("a.b_c-d@e.f", 11));
        assert_false(user_name_is_valid("", 0));
        assert_false(user_name_is_valid("a b", 3));
        assert_false(user_name_is_valid("a/b", 3));
        assert_false(user_name_is_valid("a\0b", 3));
        memset(long_name, 'x', sizeof long_name);
        assert_true(user_name_is_valid(long_name, USER_NAME_MAX));
        assert_false(user_name_is_valid(long_name, USER_NAME_MAX + 1));
}

static void test_user_crc32_known_value(void **state) {
        assert_int_equal(user_crc32("123456789", 9), 0xcbf43926); /* the CRC-32/IEEE check value */
        assert_int_equal(user_crc32(NULL, 0), 0);
}

static void test_user_store_login_bump_drop(void **state) {
        _cleanup_(user_store_freep) UserStore *s = NULL;
        uint64_t counter;
        uint32_t crc, crc2;

        assert_int_equal(user_store_new(1000, &s), 0);
        assert_int_equal(user_store_login(s, "alice"), 1);
        assert_int_equal(user_store_login(s, "alice"), 0); /* kept, not reset */
        assert_int_equal(user_store_login(s, "bad name"), -EINVAL);
        assert_int_equal(user_store_count(s), 1);

        for (uint64_t i = 1; i <= 3; i++) {
                assert_int_equal(user_store_bump(s, "alice", &counter, &crc), 0);
                assert_int_equal(counter, i);
        }
        assert_int_equal(user_store_bump(s, "bob", &counter, &crc), -ENOENT);

        assert_int_equal(user_store_drop(s, "alice"), 0);
        assert_int_equal(user_store_drop(s, "alice"), -ENOENT);
        assert_int_equal(user_store_count(s), 0);

        /* A fresh login has the same blob: it is made from the name alone. */
        assert_int_equal(user_store_login(s, "alice"), 1);
        assert_int_equal(user_store_bump(s, "alice", &counter, &crc2), 0);
        assert_int_equal(counter, 1);
        assert_int_equal(crc, crc2);
}

static void test_user_store_many_users(void **state) {
        _cleanup_(user_store_freep) UserStore *s = NULL;
        uint64_t counter;
        uint32_t crc;
        char name[32];

        assert_int_equal(user_store_new(0, &s), 0);
        for (int i = 0; i < 5000; i++) {
                snprintf(name, sizeof name, "user%d", i);
                assert_int_equal(user_store_login(s, name), 1);
        }
        assert_int_equal(user_store_count(s), 5000);
        for (int i = 0; i < 5000; i += 7) {
                snprintf(name, sizeof name, "user%d", i);
                assert_int_equal(user_store_bump(s, name, &counter, &crc), 0);
                assert_int_equal(counter, 1);
        }
        for (int i = 0; i < 5000; i += 2) {
                snprintf(name, sizeof name, "user%d", i);
                assert_int_equal(user_store_drop(s, name), 0);
        }
        assert_int_equal(user_store_count(s), 2500);
        assert_int_equal(user_store_exists(s, "user1"), 0);
        assert_int_equal(user_store_exists(s, "user2"), -ENOENT);
}

static void test_user_store_snapshot_install_round_trip(void **state) {
        _cleanup_(user_store_freep) UserStore *a = NULL, *b = NULL;
        _cleanup_free_ void *pkg = NULL;
        uint64_t counter;
        uint32_t crc_a, crc_b;
        size_t size;

        assert_int_equal(user_store_new(100000, &a), 0);
        assert_int_equal(user_store_new(0, &b), 0); /* the target's own blob size does not matter */
        assert_int_equal(user_store_login(a, "mover"), 1);
        for (int i = 0; i < 41; i++)
                assert_int_equal(user_store_bump(a, "mover", &counter, &crc_a), 0);

        assert_int_equal(user_store_snapshot(a, "mover", &pkg, &size), 0);
        assert_int_equal(size, USER_PACKAGE_HEADER_SIZE + 100000);
        assert_int_equal(user_store_snapshot(a, "nobody", &(void *) { NULL }, &(size_t) { 0 }), -ENOENT);

        assert_int_equal(user_store_install(b, "mover", pkg, size), 0);
        assert_int_equal(user_store_bump(b, "mover", &counter, &crc_b), 0);
        assert_int_equal(counter, 42);
        assert_int_equal(crc_a, crc_b);

        /* Installing over an existing copy replaces it. */
        assert_int_equal(user_store_install(b, "mover", pkg, size), 0);
        assert_int_equal(user_store_bump(b, "mover", &counter, &crc_b), 0);
        assert_int_equal(counter, 42);
        assert_int_equal(user_store_count(b), 1);
        assert_int_equal(user_store_install(b, "bad name", pkg, size), -EINVAL);
}

static void test_user_package_parse_refuses_damage(void **state) {
        _cleanup_free_ uint8_t *pkg = NULL;
        const uint8_t blob[] = { 1, 2, 3, 4, 5 };
        const void *out_blob;
        size_t size, out_size;
        uint64_t counter;

        assert_int_equal(user_package_build(7, blob, sizeof blob, (void **) &pkg, &size), 0);
        assert_int_equal(user_package_parse(pkg, size, &counter, &out_blob, &out_size), 0);
        assert_int_equal(counter, 7);
        assert_int_equal(out_size, sizeof blob);
        assert_memory_equal(out_blob, blob, sizeof blob);

        /* Every truncation, every extension and every single flipped bit is refused. */
        for (size_t l = 0; l < size; l++)
                assert_int_equal(user_package_parse(pkg, l, &counter, &out_blob, &out_size), -EBADMSG);
        {
                _cleanup_free_ uint8_t *longer = calloc(1, size + 1);
                memcpy(longer, pkg, size);
                assert_int_equal(user_package_parse(longer, size + 1, &counter, &out_blob, &out_size),
                                 -EBADMSG);
        }
        for (size_t i = 0; i < size; i++)
                for (int bit = 0; bit < 8; bit++) {
                        if (i >= 8 && i < 16)
                                continue; /* the counter: any value is a valid counter */
                        pkg[i] ^= (uint8_t) (1 << bit);
                        assert_int_equal(user_package_parse(pkg, size, &counter, &out_blob, &out_size),
                                         -EBADMSG);
                        pkg[i] ^= (uint8_t) (1 << bit);
                }
        assert_int_equal(user_package_parse(NULL, 0, &counter, &out_blob, &out_size), -EBADMSG);
}

static void test_user_package_parse_random_garbage(void **state) {
        uint8_t buf[256];
        const void *out_blob;
        size_t out_size;
        uint64_t counter;

        srand(42);
        for (int n = 0; n < 20000; n++) {
                size_t l = (size_t) rand() % sizeof buf;
                for (size_t i = 0; i < l; i++)
                        buf[i] = (uint8_t) rand();
                if (n % 2 == 0 && l >= 4)
                        memcpy(buf, "EPDU", 4); /* get past the magic half of the time */
                assert_int_equal(user_package_parse(buf, l, &counter, &out_blob, &out_size), -EBADMSG);
        }
}

static int count_user(const UserInfo *u, void *userdata) {
        (*(unsigned *) userdata)++;
        return 0;
}

static int stop_at_first(const UserInfo *u, void *userdata) {
        (*(unsigned *) userdata)++;
        return -ECANCELED;
}

static void test_user_store_foreach(void **state) {
        _cleanup_(user_store_freep) UserStore *s = NULL;
        unsigned n = 0;

        assert_int_equal(user_store_new(16, &s), 0);
        assert_int_equal(user_store_login(s, "a"), 1);
        assert_int_equal(user_store_login(s, "b"), 1);
        assert_int_equal(user_store_foreach(s, count_user, &n), 0);
        assert_int_equal(n, 2);
        n = 0;
        assert_int_equal(user_store_foreach(s, stop_at_first, &n), -ECANCELED);
        assert_int_equal(n, 1);
}

#define SEEN_USERS 300U

/* Which of the users u0..u299 a walk visited, and how often. */
static int mark_seen(const UserInfo *u, void *userdata) {
        unsigned *seen = userdata;
        unsigned i;

        assert_int_equal(sscanf(u->name, "u%u", &i), 1);
        assert_true(i < SEEN_USERS);
        seen[i]++;
        return 0;
}

static void test_user_store_foreach_visits_each_user_once(void **state) {
        _cleanup_(user_store_freep) UserStore *s = NULL;
        _cleanup_free_ void *package = NULL;
        unsigned seen[SEEN_USERS] = {};
        size_t size;
        char name[16];

        /* enough users that the table grows on the way: a walk sees the table as it is now */
        assert_int_equal(user_store_new(0, &s), 0);
        for (unsigned i = 0; i < SEEN_USERS - 1; i++) {
                snprintf(name, sizeof name, "u%u", i);
                assert_int_equal(user_store_login(s, name), 1);
        }
        assert_int_equal(user_store_drop(s, "u7"), 0);
        assert_int_equal(user_store_snapshot(s, "u8", &package, &size), 0);
        snprintf(name, sizeof name, "u%u", SEEN_USERS - 1);
        assert_int_equal(user_store_install(s, name, package, size), 0); /* a user that moved in */
        assert_int_equal(user_store_foreach(s, mark_seen, seen), 0);
        for (unsigned i = 0; i < SEEN_USERS; i++)
                assert_int_equal(seen[i], i == 7 ? 0 : 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_user_name_is_valid),
                cmocka_unit_test(test_user_crc32_known_value),
                cmocka_unit_test(test_user_store_login_bump_drop),
                cmocka_unit_test(test_user_store_many_users),
                cmocka_unit_test(test_user_store_snapshot_install_round_trip),
                cmocka_unit_test(test_user_package_parse_refuses_damage),
                cmocka_unit_test(test_user_package_parse_random_garbage),
                cmocka_unit_test(test_user_store_foreach),
                cmocka_unit_test(test_user_store_foreach_visits_each_user_once),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
