/* SPDX-License-Identifier: MIT */
#include "frame-block.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "list.h"

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
/* AddressSanitizer sees an overrun of one allocation into the next only when each is its own: under it,
 * the block holds the frame alone and the rest of it is poisoned, and everything else spills. */
#define BLOCK_SANITIZED 1
#else
#define BLOCK_SANITIZED 0
#define ASAN_POISON_MEMORY_REGION(p, n) ((void) (p), (void) (n))
#define ASAN_UNPOISON_MEMORY_REGION(p, n) ((void) (p), (void) (n))
#endif

/* A report unpacks into about 500 bytes (the frame, the report, four small submessages): a block of
 * this size holds one whole and stays within glibc's per-thread cache of small chunks. */
#define FRAME_BLOCK_BYTES 768U
#define ALIGNMENT _Alignof(max_align_t)

/* One freed block kept for the next frame: frames are decoded one at a time, so a report's path through
 * the channel stops paying a malloc() and a free() for its block. At most one block per thread stays
 * allocated this way, freed when the thread ends (the sensor's thread may end and start again inside an
 * application). Under AddressSanitizer each block is allocated anew, so that a frame used after
 * frame_free() is caught. */
#define BLOCK_KEEP_SPARE (!BLOCK_SANITIZED)

typedef struct Spill {
        struct Spill *prev, *next;
        max_align_t data[];
} Spill;

struct FrameBlock {
        ProtobufCAllocator allocator;
        Spill *spills;
        size_t used;
        max_align_t data[FRAME_BLOCK_BYTES / sizeof(max_align_t)];
};

static void *spill_alloc(FrameBlock *b, size_t size) {
        Spill *s;

        if (size > SIZE_MAX - sizeof(Spill))
                return NULL;
        s = malloc(sizeof(Spill) + size);
        if (!s)
                return NULL;
        LIST_PREPEND(b->spills, s, prev, next);
        return s->data;
}

static void *block_alloc(void *userdata, size_t size) {
        FrameBlock *b = userdata;
        size_t n = (size + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
        void *p;

        if (n < size || n > sizeof b->data - b->used || (BLOCK_SANITIZED && b->used > 0))
                return spill_alloc(b, size);
        p = (uint8_t *) b->data + b->used;
        b->used += n;
        if (BLOCK_SANITIZED)
                ASAN_POISON_MEMORY_REGION((uint8_t *) b->data + b->used, sizeof b->data - b->used);
        return p;
}

/* Memory in the block goes with the block; a spill goes now. */
static void block_free(void *userdata, void *p) {
        FrameBlock *b = userdata;
        const uint8_t *start = (const uint8_t *) b->data;
        Spill *s;

        if (!p || ((const uint8_t *) p >= start && (const uint8_t *) p < start + sizeof b->data))
                return;
        s = (Spill *) ((uint8_t *) p - offsetof(Spill, data));
        LIST_REMOVE(b->spills, s, prev, next);
        free(s);
}

static _Thread_local FrameBlock *spare;
static _Thread_local bool spare_registered;
static pthread_key_t spare_key;
static bool spare_key_made;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

/* The key's destructor runs as the thread ends, while its thread-local variables still exist. A block
 * kept after it (by another destructor decoding a frame) registers again, which runs it once more. */
static void spare_release(void *unused) {
        free(spare);
        spare = NULL;
        spare_registered = false;
}

static void spare_key_new(void) {
        spare_key_made = pthread_key_create(&spare_key, spare_release) == 0;
}

/* Whether b is now this thread's spare: not when it has one, nor when its end could not free it. */
static bool keep_spare(FrameBlock *b) {
        if (!BLOCK_KEEP_SPARE || spare)
                return false;
        if (!spare_registered) {
                (void) pthread_once(&spare_once, spare_key_new);
                /* any non-NULL value makes the destructor run */
                if (!spare_key_made || pthread_setspecific(spare_key, &spare_registered) != 0)
                        return false;
                spare_registered = true;
        }
        spare = b;
        return true;
}

FrameBlock *frame_block_new(void) {
        FrameBlock *b = spare;

        if (b)
                spare = NULL;
        else
                b = malloc(sizeof *b);
        if (!b)
                return NULL;
        b->allocator = (ProtobufCAllocator) { .alloc = block_alloc, .free = block_free, .allocator_data = b };
        b->spills = NULL;
        b->used = 0;
        return b;
}

FrameBlock *frame_block_free(FrameBlock *b) {
        if (!b)
                return NULL;
        while (b->spills) {
                Spill *s = b->spills;
                LIST_REMOVE(b->spills, s, prev, next);
                free(s);
        }
        ASAN_UNPOISON_MEMORY_REGION(b->data, sizeof b->data);
        if (!keep_spare(b))
                free(b);
        return NULL;
}

ProtobufCAllocator *frame_block_allocator(FrameBlock *b) {
        return &b->allocator;
}

void *frame_block_first(FrameBlock *b) {
        return b->data;
}

FrameBlock *frame_block_of(void *m) {
        return (FrameBlock *) ((uint8_t *) m - offsetof(FrameBlock, data));
}
