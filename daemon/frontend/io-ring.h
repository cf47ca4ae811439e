/* SPDX-License-Identifier: MIT */
#pragma once

/* Many socket reads and writes for the price of one system call. On a host where every kernel entry is
 * dear (page-table isolation, a paravirtualised guest: about 1.2 us each on the machines the benchmarks
 * run on) a forwarded request's four reads and writes cost more in entries than in work. An IoRing hands
 * a whole list of them to io_uring in one io_uring_enter(); without io_uring (an old kernel, a seccomp
 * filter, io_uring_disabled) the same list is done one system call each, so callers have one code path.
 *
 * Every operation completes before io_ring_run() returns: each carries MSG_DONTWAIT, which makes io_uring
 * answer a socket without room or bytes with -EAGAIN at once instead of polling it on our behalf. So a
 * buffer only has to live across the call, and readiness stays epoll's (io-batch.h). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

typedef struct IoRing IoRing;

typedef enum IoOpKind {
        IO_OP_RECV,
        IO_OP_SEND, /* MSG_NOSIGNAL too: a closed peer is -EPIPE, never SIGPIPE */
} IoOpKind;

typedef struct IoOp {
        IoOpKind kind;
        int fd;
        struct iovec iov;
        ssize_t result; /* out: bytes (0 for a recv: the peer closed) or -errno */
} IoOp;

typedef struct IoRingStats {
        uint64_t calls; /* system calls made: io_uring_enter()s, or one per operation without a ring */
        uint64_t ops;   /* operations done */
} IoRingStats;

/* A ring that does its operations one system call each until io_ring_start_uring() succeeds. 0 or
 * -ENOMEM. */
int io_ring_new(IoRing **ret);
/* Returns NULL. */
IoRing *io_ring_free(IoRing *r);
/* From now on up to `entries` operations per io_uring_enter(). 0, or -errno when the kernel will not give
 * us a ring (-ENOSYS, -EPERM under a seccomp filter or kernel.io_uring_disabled, -ENOMEM): r then stays on
 * one system call per operation, and the caller says so. */
int io_ring_start_uring(IoRing *r, unsigned entries);
/* Back to one system call per operation (not from inside io_ring_run()). */
void io_ring_stop_uring(IoRing *r);
/* Whether io_ring_run() goes through io_uring. */
bool io_ring_uring(const IoRing *r);

/* Does ops[0, n) in order and fills in each result. Never fails as a whole: should io_uring fail us
 * (it says so once), the ring falls back to one system call per operation for good. */
void io_ring_run(IoRing *r, IoOp *ops, size_t n);
IoRingStats io_ring_get_stats(const IoRing *r);
