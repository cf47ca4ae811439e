/* SPDX-License-Identifier: MIT */
#include "frame-block.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* A report unpacks into about 500 bytes (the frame, the report, four small submessages): a block of
 * this size holds one whole and stays within glibc's per-thread cache of small chunks. */
#define FRAME_BLOCK_BYTES 768U

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
        *s = (Spill) { .next = b->spills };
        if (b->spills)
                b->spills->prev = s;
        b->spills = s;
        return s->data;
}

static void *block_alloc(void *userdata, size_t size) {
        FrameBlock *b = userdata;
        size_t n = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
        void *p;

        if (n < size || n > sizeof b->data - b->used)
                return spill_alloc(b, size);
        p = (uint8_t *) b->data + b->used;
        b->used += n;
        return p;
}

/* Memory in the block goes with the block; a spill goes now. */
static void block_free(void *userdata, void *p) {
        FrameBlock *b = userdata;
        Spill *s;

        if (!p || ((uint8_t *) p >= (uint8_t *) b->data && (uint8_t *) p < (uint8_t *) b->data + sizeof b->data))
                return;
        s = (Spill *) ((uint8_t *) p - offsetof(Spill, data));
        if (s->prev)
                s->prev->next = s->next;
        else
                b->spills = s->next;
        if (s->next)
                s->next->prev = s->prev;
        free(s);
}

FrameBlock *frame_block_new(void) {
        FrameBlock *b = malloc(sizeof *b);

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
                b->spills = s->next;
                free(s);
        }
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
