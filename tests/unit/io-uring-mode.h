/* SPDX-License-Identifier: MIT */
#pragma once

/* The front end's unit tests run twice: as unit/X with one system call per socket read and write, the
 * daemon's default, and as unit/X-io-uring (EP_TEST_IO_URING=1) with the batch's reads and writes through
 * io_uring ([frontend] io_uring = yes, daemon/frontend/io-ring.h). The same tests, the same assertions:
 * both must behave alike. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io-batch.h"

static inline void io_uring_mode_apply(IoBatch *b) {
        int r;

        if (!getenv("EP_TEST_IO_URING"))
                return;
        r = io_batch_start_uring(b);
        if (r < 0) {
                printf("SKIP: EP_TEST_IO_URING=1, but the kernel gives no io_uring: %s\n", strerror(-r));
                exit(77);
        }
}
