/* SPDX-License-Identifier: MIT */
#pragma once

/* Scope-bound cleanup. Build a result in a guarded local, publish it with TAKE_PTR()/TAKE_FD() on
 * success: every early return then releases what was acquired so far. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

/* free() that returns NULL, for "p = mfree(p)". */
static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

/* close() that keeps errno intact and ignores negative fds; returns -EBADF so "fd = safe_close(fd)"
 * leaves the variable invalid. */
static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}

static inline void closep(int *fd) {
        safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Declares "static inline void name##p(type **p)" that calls func on a non-NULL pointer. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                 \
        static inline void func##p(type *p) {                   \
                if (*p)                                         \
                        (void) func(*p);                        \
        }

#define TAKE_PTR(p)                             \
        ({                                      \
                typeof(p) _ptr_ = (p);          \
                (p) = NULL;                     \
                _ptr_;                          \
        })

#define TAKE_FD(fd)                             \
        ({                                      \
                int _fd_ = (fd);                \
                (fd) = -EBADF;                  \
                _fd_;                           \
        })
