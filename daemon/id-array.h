/* SPDX-License-Identifier: MIT */
#pragma once

/* Arrays indexed by worker id (per-worker counts, per-worker pools). Ids are never reused within a
 * commander's life, so they only climb: such an array grows, by doubling, and never shrinks. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* Grows *array, of *slots elements of size bytes, until index fits; what it adds is zeroed. 0, or
 * -ENOMEM with the array as it was. (The project builds with -fno-strict-aliasing: the array's own
 * pointer is written through void **.) */
static inline int id_array_ensure(void **array, unsigned *slots, unsigned index, size_t size) {
        unsigned n;
        void *a;

        if (index < *slots)
                return 0;
        n = MAX(MAX(index + 1, *slots * 2), 16U);
        a = reallocarray(*array, n, size);
        if (!a)
                return -ENOMEM;
        memset((char *) a + (size_t) *slots * size, 0, (size_t) (n - *slots) * size);
        *array = a;
        *slots = n;
        return 0;
}

/* ID_ARRAY_ENSURE(p->counts, p->slots, id): the same for an array of any type. */
#define ID_ARRAY_ENSURE(array, slots, index) id_array_ensure((void **) &(array), &(slots), (index), sizeof *(array))
