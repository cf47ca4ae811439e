/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define CLAMP(x, lo, hi) MIN(MAX((x), (lo)), (hi))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)
#define _noreturn_ __attribute__((noreturn))
#define _always_inline_ inline __attribute__((always_inline))
#define ERRNO_VALUE(e) (abs(e))
#define RET_NERRNO(expr) ((expr) < 0 ? -errno : 0)

#define CACHE_LINE_SIZE 64U

/* Asks the CPU to fetch every cache line of [p, p + size), for writing or for reading. A hint: it never
 * faults and changes nothing. */
static inline void prefetch_range(const void *p, size_t size, bool write) {
        uintptr_t a = (uintptr_t) p & ~(uintptr_t) (CACHE_LINE_SIZE - 1), end = (uintptr_t) p + size;

        for (; a < end; a += CACHE_LINE_SIZE)
                if (write)
                        __builtin_prefetch((const void *) a, 1);
                else
                        __builtin_prefetch((const void *) a, 0);
}

static inline bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return streq(a, b);
}

static inline const char *strempty(const char *s) {
        return s ? s : "";
}

static inline const char *strna(const char *s) {
        return s ? s : "n/a";
}

/* Returns the rest of s after prefix, or NULL when s does not start with it. */
static inline const char *startswith(const char *s, const char *prefix) {
        size_t l = strlen(prefix);
        return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}
