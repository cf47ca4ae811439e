/* SPDX-License-Identifier: MIT */
/* The memory of one unpacked frame: allocations are aligned and apart, the first is the block's, large
 * ones spill and are freed with it (or before, when protobuf-c frees its scratch arrays), and a frame
 * from the decoder is freed whole by frame_free(). The sanitizer build, where every allocation but the
 * first spills, proves nothing leaks and nothing is freed twice. */
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frame-block.h"
#include "frame.h"
#include "macro.h"

static void *alloc(FrameBlock *b, size_t size) {
        ProtobufCAllocator *a = frame_block_allocator(b);

        return a->alloc(a->allocator_data, size);
}

static void give_back(FrameBlock *b, void *p) {
        ProtobufCAllocator *a = frame_block_allocator(b);

        a->free(a->allocator_data, p);
}

static void test_frame_block_allocations_aligned_and_apart(void **state) {
        FrameBlock *b = frame_block_new();
        static const size_t sizes[] = { 40, 1, 192, 48, 7, 56 };
        uint8_t *p[ELEMENTSOF(sizes)];

        assert_non_null(b);
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                p[i] = alloc(b, sizes[i]);
                assert_non_null(p[i]);
                assert_int_equal((uintptr_t) p[i] % alignof(max_align_t), 0);
                memset(p[i], (int) i + 1, sizes[i]);
        }
        assert_ptr_equal(p[0], frame_block_first(b));
        assert_ptr_equal(frame_block_of(p[0]), b);
        /* freeing the frame's own memory is a no-op: it goes with the block */
        give_back(b, p[0]);
        give_back(b, NULL);
        /* none overlaps another */
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                for (size_t k = 0; k < sizes[i]; k++)
                        assert_int_equal(p[i][k], (uint8_t) (i + 1));
        assert_null(frame_block_free(b));
        assert_null(frame_block_free(NULL));
}

/* Spills are freed in any order while the block lives, and the rest with the block. */
static void test_frame_block_spills_freed_in_any_order(void **state) {
        FrameBlock *b = frame_block_new();
        uint8_t *big[5];

        assert_non_null(b);
        for (size_t i = 0; i < ELEMENTSOF(big); i++) {
                big[i] = alloc(b, 4096 + i);
                assert_non_null(big[i]);
                assert_int_equal((uintptr_t) big[i] % alignof(max_align_t), 0);
                memset(big[i], 0xa0 + (int) i, 4096 + i);
        }
        give_back(b, big[2]); /* the middle */
        give_back(b, big[4]); /* the newest: the head of the chain */
        give_back(b, big[0]); /* the oldest: its tail */
        assert_int_equal(big[1][4096], 0xa1);
        assert_int_equal(big[3][4098], 0xa3);
        /* a small one still fits in the block after the spills */
        assert_ptr_equal(alloc(b, 16), frame_block_first(b));
        frame_block_free(b); /* big[1] and big[3] go with it */
}

/* A block given back is kept for the next frame: taken again, it starts empty, its whole room free and no
 * spill of its last frame left in its chain. */
static void test_frame_block_taken_again_starts_empty(void **state) {
        FrameBlock *b = frame_block_new();
        uint8_t *p;

        assert_non_null(b);
        assert_ptr_equal(alloc(b, 700), frame_block_first(b));
        assert_non_null(alloc(b, 700)); /* the block is full: a spill */
        frame_block_free(b);
        for (unsigned i = 0; i < 3; i++) {
                b = frame_block_new();
                assert_non_null(b);
                p = alloc(b, 700);
                assert_ptr_equal(p, frame_block_first(b));
                assert_ptr_equal(frame_block_of(p), b);
                memset(p, 0x5a, 700);
                frame_block_free(b);
        }
}

static void *block_in_thread(void *unused) {
        FrameBlock *b = frame_block_new();

        if (!b)
                return NULL;
        memset(alloc(b, 64), 1, 64);
        frame_block_free(b); /* kept as the thread's spare, if any */
        return b;
}

/* A thread that decoded a frame and ended leaves no block behind (the sensor's thread may start and end
 * again inside an application). With one malloc arena the main one holds every thread's blocks, so its
 * use after 200 such threads shows any block left (160 KB); under AddressSanitizer, which keeps no spare,
 * mallinfo2() says nothing and LeakSanitizer watches instead. */
static void test_frame_block_thread_end_leaves_nothing(void **state) {
        struct mallinfo2 before, after;

        (void) mallopt(M_ARENA_MAX, 1); /* AddressSanitizer's allocator has no arenas to limit */
        before = mallinfo2();
        for (unsigned i = 0; i < 200; i++) {
                pthread_t t;
                void *ret;

                assert_int_equal(pthread_create(&t, NULL, block_in_thread, NULL), 0);
                assert_int_equal(pthread_join(t, &ret), 0);
                assert_non_null(ret);
        }
        after = mallinfo2();
        assert_true(after.uordblks < before.uordblks + 32 * 1024);
}

static void test_frame_block_impossible_size_refused(void **state) {
        FrameBlock *b = frame_block_new();

        assert_non_null(b);
        assert_null(alloc(b, SIZE_MAX));
        assert_null(alloc(b, SIZE_MAX - 8));
        frame_block_free(b);
}

/* A Users frame of thousands of names does not fit in a block: the names and protobuf-c's scratch
 * arrays spill, the frame decodes whole, and frame_free() takes all of it back. */
static void test_frame_block_users_frame_round_trip(void **state) {
        enum { N = 5000 };
        ElasticPool__Users u = ELASTIC_POOL__USERS__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT, *got = NULL;
        static char names[N][16];
        static char *list[N];
        FrameDecoder d;
        uint8_t *buf;
        size_t size, used;

        for (size_t i = 0; i < N; i++) {
                snprintf(names[i], sizeof names[i], "user-%zu", i);
                list[i] = names[i];
        }
        u.n_users = N, u.users = list;
        u.has_more = true, u.more = true;
        f.body_case = ELASTIC_POOL__FRAME__BODY_USERS, f.users = &u;
        assert_int_equal(frame_encode(&f, 0, &buf, &size), 0);

        frame_decoder_init(&d, 0);
        assert_int_equal(frame_decoder_feed(&d, buf, size, &used, &got), 1);
        assert_int_equal(used, size);
        assert_int_equal(got->body_case, ELASTIC_POOL__FRAME__BODY_USERS);
        assert_int_equal(got->users->n_users, N);
        for (size_t i = 0; i < N; i += 997)
                assert_string_equal(got->users->users[i], names[i]);
        assert_string_equal(got->users->users[N - 1], names[N - 1]);
        assert_true(got->users->more);
        assert_null(frame_free(got));
        assert_null(frame_free(NULL));
        frame_decoder_done(&d);
        free(buf);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_frame_block_allocations_aligned_and_apart),
                cmocka_unit_test(test_frame_block_spills_freed_in_any_order),
                cmocka_unit_test(test_frame_block_taken_again_starts_empty),
                cmocka_unit_test(test_frame_block_thread_end_leaves_nothing),
                cmocka_unit_test(test_frame_block_impossible_size_refused),
                cmocka_unit_test(test_frame_block_users_frame_round_trip),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
