/* SPDX-License-Identifier: MIT */
/* nghttp2's allocator: per-loop free lists of small blocks in size classes. A request costs nghttp2 a
 * handful of small allocations (its stream, the copy of the response's header list, the outbound item,
 * the decoded header's buffers) that live a few hundred microseconds; with 64 streams in flight the
 * blocks outnumber glibc's per-thread cache (7 per size) and every one went through malloc's bins, about
 * 3 % of the commander's CPU per h2c request. Blocks come back to their class's list up to a byte bound,
 * and the lists are emptied with the other per-loop pools when a burst is over (frontend-trim.c). Under
 * AddressSanitizer a block on a list, and the bytes of a block past what was asked for, are poisoned: a
 * use after free or an overrun is still caught (the macros are no-ops in other builds). */
#include <sanitizer/asan_interface.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "h2-internal.h"
#include "macro.h"

#define H2_MEM_CLASSES 6                 /* 32, 64, ... 1024 bytes, header included */
#define H2_MEM_SMALLEST 32U
#define H2_MEM_LIST_BYTES (128U * 1024U) /* what one class's list may hold */
#define H2_MEM_LARGE UINT32_MAX          /* a block malloc'd for its size, freed at once */

/* Before every block: which class it belongs to (or H2_MEM_LARGE) and the size asked for. */
typedef struct BlockHeader {
        alignas(max_align_t) uint32_t cls;
        uint32_t size;
} BlockHeader;

typedef struct FreeBlock {
        struct FreeBlock *next;
} FreeBlock;

static _Thread_local FreeBlock *lists[H2_MEM_CLASSES];
static _Thread_local unsigned list_len[H2_MEM_CLASSES];

static size_t class_size(unsigned cls) {
        return (size_t) H2_MEM_SMALLEST << cls;
}

static unsigned class_of(size_t total) {
        for (unsigned cls = 0; cls < H2_MEM_CLASSES; cls++)
                if (total <= class_size(cls))
                        return cls;
        return H2_MEM_LARGE;
}

static void *block_data(BlockHeader *h) {
        return h + 1;
}

static BlockHeader *block_header(void *p) {
        return (BlockHeader *) p - 1;
}

static size_t block_capacity(const BlockHeader *h) {
        return h->cls == H2_MEM_LARGE ? h->size : class_size(h->cls) - sizeof(BlockHeader);
}

/* The block holds `size` bytes for its user now: those are addressable, the rest of it is not. */
static void block_set_size(BlockHeader *h, size_t size) {
        size_t cap = block_capacity(h);

        h->size = (uint32_t) size;
        ASAN_UNPOISON_MEMORY_REGION(block_data(h), size);
        ASAN_POISON_MEMORY_REGION((char *) block_data(h) + size, cap - size);
}

static void *mem_malloc(size_t size, void *userdata) {
        size_t total = sizeof(BlockHeader) + size;
        unsigned cls;
        BlockHeader *h;

        if (size > UINT32_MAX - 2 * sizeof(BlockHeader))
                return NULL;
        cls = class_of(total);
        if (cls != H2_MEM_LARGE && lists[cls]) {
                FreeBlock *f = lists[cls];

                lists[cls] = f->next;
                list_len[cls]--;
                h = (BlockHeader *) f;
        } else {
                h = malloc(cls == H2_MEM_LARGE ? total : class_size(cls));
                if (!h)
                        return NULL;
        }
        h->cls = cls;
        h->size = (uint32_t) size;
        if (cls != H2_MEM_LARGE)
                block_set_size(h, size);
        return block_data(h);
}

static void mem_free(void *p, void *userdata) {
        BlockHeader *h;
        unsigned cls;

        if (!p)
                return;
        h = block_header(p);
        cls = h->cls;
        if (cls == H2_MEM_LARGE || (list_len[cls] + 1) * class_size(cls) > H2_MEM_LIST_BYTES) {
                free(h);
                return;
        }
        ((FreeBlock *) h)->next = lists[cls];
        lists[cls] = (FreeBlock *) h;
        list_len[cls]++;
        /* the user's bytes only: the leak checker follows the list through the headers */
        ASAN_POISON_MEMORY_REGION(block_data(h), class_size(cls) - sizeof(BlockHeader));
}

static void *mem_calloc(size_t n, size_t size, void *userdata) {
        size_t total;
        void *p;

        if (__builtin_mul_overflow(n, size, &total))
                return NULL;
        p = mem_malloc(total, userdata);
        if (p)
                memset(p, 0, total);
        return p;
}

static void *mem_realloc(void *p, size_t size, void *userdata) {
        BlockHeader *h;
        void *q;

        if (!p)
                return mem_malloc(size, userdata);
        h = block_header(p);
        if (size <= block_capacity(h) && h->cls != H2_MEM_LARGE) {
                block_set_size(h, size);
                return p;
        }
        q = mem_malloc(size, userdata);
        if (!q)
                return NULL;
        memcpy(q, p, MIN((size_t) h->size, size));
        mem_free(p, userdata);
        return q;
}

nghttp2_mem *h2_mem(void) {
        static nghttp2_mem mem = { /* not const: nghttp2 takes it so (and copies it) */
                .malloc = mem_malloc,
                .free = mem_free,
                .calloc = mem_calloc,
                .realloc = mem_realloc,
        };

        return &mem;
}

void h2_mem_pool_release(void) {
        for (unsigned cls = 0; cls < H2_MEM_CLASSES; cls++) {
                while (lists[cls]) {
                        FreeBlock *f = lists[cls];
                        BlockHeader *h = (BlockHeader *) f;

                        ASAN_UNPOISON_MEMORY_REGION(block_data(h), class_size(cls) - sizeof(BlockHeader));
                        lists[cls] = f->next;
                        free(f);
                }
                list_len[cls] = 0;
        }
}

size_t h2_mem_pool_bytes(void) {
        size_t n = 0;

        for (unsigned cls = 0; cls < H2_MEM_CLASSES; cls++)
                n += list_len[cls] * class_size(cls);
        return n;
}
