/* SPDX-License-Identifier: MIT */
/* A list of socket reads and writes in one io_uring_enter() (io-ring.h), or one system call each. */
#include "io-ring.h"

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "log.h"
#include "macro.h"

struct IoRing {
        struct io_uring ring;
        bool uring;
        unsigned entries;
        IoRingStats stats;
};

int io_ring_new(IoRing **ret) {
        IoRing *r = calloc(1, sizeof *r);

        if (!r)
                return -ENOMEM;
        *ret = r;
        return 0;
}

IoRing *io_ring_free(IoRing *r) {
        if (!r)
                return NULL;
        if (r->uring)
                io_uring_queue_exit(&r->ring);
        free(r);
        return NULL;
}

int io_ring_start_uring(IoRing *r, unsigned entries) {
        /* Only this thread submits, and nothing of ours runs asynchronously in the kernel (MSG_DONTWAIT):
         * no task-work interrupts, no locking for other submitters. Older kernels (before 6.0) refuse the
         * flags they do not know with EINVAL; a plain ring does the same job there. */
        static const unsigned flag_sets[] = {
                IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER,
                0,
        };
        int e = -EINVAL;

        if (!r || entries == 0)
                return -EINVAL;
        if (r->uring)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(flag_sets) && e == -EINVAL; i++) {
                struct io_uring_params params = { .flags = flag_sets[i] };

                e = io_uring_queue_init_params(entries, &r->ring, &params);
        }
        if (e < 0)
                return e;
        r->uring = true;
        r->entries = entries;
        return 0;
}

void io_ring_stop_uring(IoRing *r) {
        if (!r || !r->uring)
                return;
        io_uring_queue_exit(&r->ring);
        r->uring = false;
}

bool io_ring_uring(const IoRing *r) {
        return r && r->uring;
}

IoRingStats io_ring_get_stats(const IoRing *r) {
        return r ? r->stats : (IoRingStats) {};
}

static ssize_t op_syscall(const IoOp *op) {
        ssize_t k;

        do
                k = op->kind == IO_OP_SEND
                            ? send(op->fd, op->iov.iov_base, op->iov.iov_len, MSG_NOSIGNAL | MSG_DONTWAIT)
                            : recv(op->fd, op->iov.iov_base, op->iov.iov_len, MSG_DONTWAIT);
        while (k < 0 && errno == EINTR);
        return k < 0 ? -errno : k;
}

static void run_syscalls(IoRing *r, IoOp *ops, size_t n) {
        for (size_t i = 0; i < n; i++)
                ops[i].result = op_syscall(&ops[i]);
        r->stats.calls += n;
        r->stats.ops += n;
}

/* The ring failed us in a way it should not: say so once and never use it again. What it did not take
 * stays in its submission queue, which io_uring_queue_exit() discards unseen, so no operation runs twice. */
static void ring_fail(IoRing *r, int error) {
        log_warning_errno(error, "Front end: io_uring failed (%m); reads and writes go on with one system "
                          "call each");
        io_ring_stop_uring(r);
}

/* Every operation of a chunk completes within the call (MSG_DONTWAIT), so the completions are all
 * there once io_uring_submit_and_wait() returns; io_uring_wait_cqe() then only reads the ring. */
static size_t reap(IoRing *r, IoOp *ops, size_t submitted) {
        size_t got = 0;

        while (got < submitted) {
                struct io_uring_cqe *cqe;
                int e = io_uring_wait_cqe(&r->ring, &cqe);

                if (e == -EINTR)
                        continue;
                if (e < 0)
                        return got;
                ops[io_uring_cqe_get_data64(cqe)].result = cqe->res;
                io_uring_cqe_seen(&r->ring, cqe);
                got++;
        }
        return got;
}

/* Up to r->entries operations in one io_uring_enter(). Returns how many the kernel took; fewer than n only
 * when the ring failed (it is off afterwards, and the rest is for system calls). One it took and whose
 * completion never came (it cannot, short of a kernel bug) reads -EIO rather than being done twice. */
static size_t run_chunk(IoRing *r, IoOp *ops, size_t n) {
        size_t submitted, got;
        int k;

        for (size_t i = 0; i < n; i++) {
                struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring); /* never NULL: n <= entries, all reaped */

                if (ops[i].kind == IO_OP_SEND)
                        io_uring_prep_send(sqe, ops[i].fd, ops[i].iov.iov_base, ops[i].iov.iov_len,
                                           MSG_NOSIGNAL | MSG_DONTWAIT);
                else
                        io_uring_prep_recv(sqe, ops[i].fd, ops[i].iov.iov_base, ops[i].iov.iov_len,
                                           MSG_DONTWAIT);
                io_uring_sqe_set_data64(sqe, i);
                ops[i].result = -EIO;
        }
        do
                k = io_uring_submit_and_wait(&r->ring, (unsigned) n);
        while (k == -EINTR);
        r->stats.calls++;
        /* A short submission returns without waiting; the kernel takes entries in order, so ops[0, k) ran. */
        submitted = k < 0 ? 0 : (size_t) k;
        got = reap(r, ops, submitted);
        r->stats.ops += submitted;
        if (got < n)
                ring_fail(r, k < 0 ? k : -EIO);
        return submitted;
}

void io_ring_run(IoRing *r, IoOp *ops, size_t n) {
        size_t done = 0;

        while (done < n) {
                if (!r->uring) {
                        run_syscalls(r, ops + done, n - done);
                        return;
                }
                done += run_chunk(r, ops + done, MIN(n - done, (size_t) r->entries));
        }
}
