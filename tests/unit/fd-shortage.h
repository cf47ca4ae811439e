/* SPDX-License-Identifier: MIT */
#pragma once

/* Out of descriptors on purpose, for the tests of accept loops (include after cmocka.h): the soft
 * RLIMIT_NOFILE goes down to the next free descriptor number, so the next accept4() fails with EMFILE
 * while everything already open stays usable. */

#include <sys/resource.h>
#include <unistd.h>

#include "cleanup.h"

/* Lowers the limit; *ret_old is what fd_shortage_end() puts back. */
static inline void fd_shortage_begin(struct rlimit *ret_old) {
        struct rlimit low;
        int probe = dup(STDERR_FILENO);

        assert_true(probe >= 0);
        safe_close(probe); /* descriptors are numbered lowest free first: this is the next one */
        assert_int_equal(getrlimit(RLIMIT_NOFILE, ret_old), 0);
        low = (struct rlimit) { .rlim_cur = (rlim_t) probe, .rlim_max = ret_old->rlim_max };
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
}

static inline void fd_shortage_end(const struct rlimit *old) {
        assert_int_equal(setrlimit(RLIMIT_NOFILE, old), 0);
}
