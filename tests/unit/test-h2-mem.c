/* SPDX-License-Identifier: MIT */
/* nghttp2's allocator (daemon/frontend/h2-mem.c): a small block freed is handed out again for its size
 * class, calloc zeroes a reused block, realloc keeps the bytes across classes, large blocks and blocks
 * past a class's byte bound go back to malloc, and the release empties the lists. ASan watches the
 * rest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdalign.h>
#include <string.h>

#include "h2-internal.h"

static void *m(size_t n) {
        return h2_mem()->malloc(n, NULL);
}

static void f(void *p) {
        h2_mem()->free(p, NULL);
}

static int teardown(void **state) {
        h2_mem_pool_release();
        return 0;
}

static void test_h2_mem_reuses_small_blocks(void **state) {
        void *a = m(40), *b;

        assert_non_null(a);
        assert_int_equal((uintptr_t) a % alignof(max_align_t), 0);
        f(a);
        assert_true(h2_mem_pool_bytes() > 0);
        b = m(33); /* the same class */
        assert_ptr_equal(a, b);
        assert_int_equal(h2_mem_pool_bytes(), 0);
        f(b);
        f(NULL);
}

static void test_h2_mem_calloc_zeroes_a_reused_block(void **state) {
        unsigned char *a = m(100), *b;

        memset(a, 0xa5, 100);
        f(a);
        b = h2_mem()->calloc(10, 10, NULL);
        assert_ptr_equal(a, b);
        for (int i = 0; i < 100; i++)
                assert_int_equal(b[i], 0);
        f(b);
        assert_null(h2_mem()->calloc(SIZE_MAX / 2, 3, NULL));
}

static void test_h2_mem_realloc_keeps_bytes(void **state) {
        char *p = h2_mem()->realloc(NULL, 10, NULL), *q;

        memcpy(p, "0123456789", 10);
        q = h2_mem()->realloc(p, 12, NULL); /* room in its block: the same one */
        assert_ptr_equal(p, q);
        q = h2_mem()->realloc(q, 5000, NULL); /* past the classes */
        assert_memory_equal(q, "0123456789", 10);
        memset(q + 10, 'x', 4990);
        q = h2_mem()->realloc(q, 20000, NULL);
        assert_memory_equal(q, "0123456789", 10);
        assert_int_equal(q[4999], 'x');
        f(q);
}

static void test_h2_mem_large_and_bounded(void **state) {
        enum { N = 10000 };
        static void *blocks[N];

        f(m(100000)); /* large: freed at once */
        assert_int_equal(h2_mem_pool_bytes(), 0);
        for (int i = 0; i < N; i++)
                blocks[i] = m(16);
        for (int i = 0; i < N; i++)
                f(blocks[i]);
        assert_true(h2_mem_pool_bytes() > 0);
        assert_true(h2_mem_pool_bytes() <= 128 * 1024);
        h2_mem_pool_release();
        assert_int_equal(h2_mem_pool_bytes(), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_teardown(test_h2_mem_reuses_small_blocks, teardown),
                cmocka_unit_test_teardown(test_h2_mem_calloc_zeroes_a_reused_block, teardown),
                cmocka_unit_test_teardown(test_h2_mem_realloc_keeps_bytes, teardown),
                cmocka_unit_test_teardown(test_h2_mem_large_and_bounded, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
