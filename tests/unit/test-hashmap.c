/* SPDX-License-Identifier: MIT */
/* StrMap: put/get/replace/remove, iteration that removes the current entry, growth across several
 * resizes, tombstones reused instead of piling up, and 100 000 random operations checked against a
 * plain array after every step (run it under ASan: borrowed keys, slots and resizes are all exercised). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hashmap.h"
#include "macro.h"

#define KEYS 3000U

/* Two copies of every key: the map must keep whichever pointer was put last (keys are borrowed). */
static char keys_a[KEYS][16], keys_b[KEYS][16];

static int setup(void **state) {
        for (unsigned i = 0; i < KEYS; i++) {
                snprintf(keys_a[i], sizeof keys_a[i], "user-%u", i);
                memcpy(keys_b[i], keys_a[i], sizeof keys_b[i]);
        }
        return 0;
}

static void *val(unsigned i) {
        return (void *) (uintptr_t) (0x1000 + i);
}

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t rng(void) {
        /* xorshift64*: deterministic, so a failure replays */
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * 0x2545f4914f6cdd1dULL;
}

static void test_strmap_empty(void **state) {
        StrMap m;
        size_t i = 0;

        strmap_init(&m);
        assert_int_equal(strmap_size(&m), 0);
        assert_null(strmap_get(&m, "nobody"));
        assert_null(strmap_remove(&m, "nobody"));
        assert_false(strmap_next(&m, &i, NULL, NULL));
        strmap_done(&m);
        strmap_done(&m); /* twice is fine */
}

static void test_strmap_put_get_replace_remove(void **state) {
        void *old = NULL;
        StrMap m;

        strmap_init(&m);
        assert_int_equal(strmap_put(&m, keys_a[1], val(1), NULL), 0);
        assert_int_equal(strmap_put(&m, keys_a[2], val(2), &old), 0);
        assert_null(old); /* untouched when nothing was replaced */
        assert_int_equal(strmap_size(&m), 2);
        assert_ptr_equal(strmap_get(&m, "user-1"), val(1)); /* looked up by content, not pointer */
        assert_ptr_equal(strmap_get(&m, keys_b[2]), val(2));
        assert_null(strmap_get(&m, "user-3"));
        assert_null(strmap_get(&m, "user-")); /* no prefix matches */
        assert_null(strmap_get(&m, "user-10"));

        assert_int_equal(strmap_put(&m, keys_b[1], val(11), &old), 1);
        assert_ptr_equal(old, val(1));
        assert_int_equal(strmap_size(&m), 2);
        assert_ptr_equal(strmap_get(&m, "user-1"), val(11));
        /* the map now borrows the new key */
        {
                const char *k;
                void *v;
                bool seen = false;
                for (size_t i = 0; strmap_next(&m, &i, &k, &v);)
                        if (v == val(11)) {
                                assert_ptr_equal(k, keys_b[1]);
                                seen = true;
                        }
                assert_true(seen);
        }
        assert_int_equal(strmap_put(&m, keys_a[1], val(12), NULL), 1);

        assert_ptr_equal(strmap_remove(&m, "user-1"), val(12));
        assert_null(strmap_remove(&m, "user-1"));
        assert_null(strmap_get(&m, "user-1"));
        assert_int_equal(strmap_size(&m), 1);
        assert_ptr_equal(strmap_get(&m, "user-2"), val(2));

        /* the empty key is a key like any other */
        assert_int_equal(strmap_put(&m, "", val(0), NULL), 0);
        assert_ptr_equal(strmap_get(&m, ""), val(0));
        strmap_done(&m);
}

static void test_strmap_growth_across_resizes(void **state) {
        size_t resizes = 0, capacity = 0;
        StrMap m;

        strmap_init(&m);
        for (unsigned i = 0; i < KEYS; i++) {
                assert_int_equal(strmap_put(&m, keys_a[i], val(i), NULL), 0);
                if (m.capacity != capacity) {
                        capacity = m.capacity;
                        resizes++;
                }
                /* power of two, and the load never reaches 3/4 */
                assert_int_equal(m.capacity & (m.capacity - 1), 0);
                assert_true((m.count + m.tombstones) * 4 <= m.capacity * 3);
        }
        assert_true(resizes >= 8); /* 16 → 8192 */
        assert_int_equal(strmap_size(&m), KEYS);
        for (unsigned i = 0; i < KEYS; i++)
                assert_ptr_equal(strmap_get(&m, keys_a[i]), val(i));
        strmap_done(&m);
}

static void test_strmap_tombstones_reused(void **state) {
        StrMap m;

        strmap_init(&m);
        /* the same key put and removed forever: its tombstone is reused, the table never grows */
        for (unsigned round = 0; round < 10000; round++) {
                assert_int_equal(strmap_put(&m, keys_a[7], val(7), NULL), 0);
                assert_ptr_equal(strmap_remove(&m, keys_a[7]), val(7));
        }
        assert_int_equal(m.capacity, 16);
        assert_true(m.tombstones <= 1);

        /* a stream of distinct short-lived keys (request ids): tombstones pile up only until a rehash
         * in place clears them; the table stays at its first size */
        for (unsigned i = 0; i < KEYS; i++) {
                assert_int_equal(strmap_put(&m, keys_a[i], val(i), NULL), 0);
                if (i >= 4)
                        assert_ptr_equal(strmap_remove(&m, keys_a[i - 4]), val(i - 4));
                assert_true(m.count <= 5);
                assert_true((m.count + m.tombstones) * 4 <= m.capacity * 3);
        }
        assert_int_equal(m.capacity, 16);
        assert_int_equal(strmap_size(&m), 4);
        for (unsigned i = KEYS - 4; i < KEYS; i++)
                assert_ptr_equal(strmap_get(&m, keys_a[i]), val(i));
        strmap_done(&m);
}

static void test_strmap_next_removing_current(void **state) {
        bool seen[KEYS] = {};
        unsigned visits = 0;
        const char *k;
        void *v;
        StrMap m;

        strmap_init(&m);
        for (unsigned i = 0; i < 1000; i++)
                assert_int_equal(strmap_put(&m, keys_a[i], val(i), NULL), 0);
        /* remove every odd entry while walking: each entry is visited exactly once */
        for (size_t i = 0; strmap_next(&m, &i, &k, &v);) {
                unsigned id = (unsigned) ((uintptr_t) v - 0x1000);
                assert_true(id < 1000);
                assert_false(seen[id]);
                seen[id] = true;
                visits++;
                assert_string_equal(k, keys_a[id]);
                if (id % 2)
                        assert_ptr_equal(strmap_remove(&m, k), v);
        }
        assert_int_equal(visits, 1000);
        assert_int_equal(strmap_size(&m), 500);
        for (unsigned i = 0; i < 1000; i++)
                assert_ptr_equal(strmap_get(&m, keys_a[i]), i % 2 ? NULL : val(i));

        /* and removing everything while walking empties it */
        for (size_t i = 0; strmap_next(&m, &i, &k, NULL);)
                assert_non_null(strmap_remove(&m, k));
        assert_int_equal(strmap_size(&m), 0);
        strmap_done(&m);
}

typedef struct Reference {
        bool present[KEYS];
        bool in_b[KEYS]; /* which copy of the key the map borrows */
        void *value[KEYS];
        size_t count;
} Reference;

static void check_iteration(const StrMap *m, const Reference *ref) {
        static bool seen[KEYS];
        size_t visits = 0;
        const char *k;
        void *v;

        memset(seen, 0, sizeof seen);
        for (size_t i = 0; strmap_next(m, &i, &k, &v);) {
                unsigned id;
                assert_int_equal(sscanf(k, "user-%u", &id), 1);
                assert_true(id < KEYS);
                assert_true(ref->present[id]);
                assert_false(seen[id]);
                seen[id] = true;
                assert_ptr_equal(v, ref->value[id]);
                assert_ptr_equal(k, ref->in_b[id] ? keys_b[id] : keys_a[id]);
                visits++;
        }
        assert_int_equal(visits, ref->count);
}

static void test_strmap_random_against_reference(void **state) {
        static Reference ref;
        StrMap m;

        memset(&ref, 0, sizeof ref);
        strmap_init(&m);
        for (unsigned op = 0; op < 100000; op++) {
                uint64_t x = rng();
                /* a key space that grows and shrinks: sometimes few keys (churn on tombstones), sometimes
                 * all of them (resizes) */
                unsigned span = (op / 20000) % 2 ? KEYS : 200;
                unsigned id = (unsigned) ((x >> 8) % span);
                unsigned kind = (unsigned) (x % 10);
                void *old = NULL;

                if (kind < 5) { /* put */
                        bool b = (x >> 40) & 1;
                        void *value = (void *) (uintptr_t) (x | 1);
                        int r = strmap_put(&m, b ? keys_b[id] : keys_a[id], value, &old);
                        assert_int_equal(r, ref.present[id] ? 1 : 0);
                        if (ref.present[id])
                                assert_ptr_equal(old, ref.value[id]);
                        else
                                ref.count++;
                        ref.present[id] = true;
                        ref.in_b[id] = b;
                        ref.value[id] = value;
                } else if (kind < 9) { /* remove */
                        void *v = strmap_remove(&m, keys_a[id]);
                        assert_ptr_equal(v, ref.present[id] ? ref.value[id] : NULL);
                        if (ref.present[id])
                                ref.count--;
                        ref.present[id] = false;
                } else /* get */
                        assert_ptr_equal(strmap_get(&m, keys_b[id]), ref.present[id] ? ref.value[id] : NULL);

                assert_int_equal(strmap_size(&m), ref.count);
                assert_true((m.count + m.tombstones) * 4 <= m.capacity * 3);
                if (op % 5000 == 0)
                        check_iteration(&m, &ref);
        }
        check_iteration(&m, &ref);
        for (unsigned id = 0; id < KEYS; id++)
                assert_ptr_equal(strmap_get(&m, keys_a[id]), ref.present[id] ? ref.value[id] : NULL);
        strmap_done(&m);
}

static void test_strmap_seeds_differ(void **state) {
        StrMap a, b;

        /* a per-map seed: two maps do not share a hash function a client could learn */
        strmap_init(&a);
        strmap_init(&b);
        assert_true(a.seed != b.seed);
        strmap_done(&a);
        strmap_done(&b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_strmap_empty),
                cmocka_unit_test(test_strmap_put_get_replace_remove),
                cmocka_unit_test(test_strmap_growth_across_resizes),
                cmocka_unit_test(test_strmap_tombstones_reused),
                cmocka_unit_test(test_strmap_next_removing_current),
                cmocka_unit_test(test_strmap_random_against_reference),
                cmocka_unit_test(test_strmap_seeds_differ),
        };
        return cmocka_run_group_tests(tests, setup, NULL);
}
