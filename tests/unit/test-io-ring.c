/* SPDX-License-Identifier: MIT */
/* Socket reads and writes in batches (daemon/frontend/io-ring.c) on real socket pairs: the same results
 * with one system call each and through io_uring; many operations in one io_uring_enter() (counted); a
 * socket without bytes or room answers -EAGAIN at once instead of being waited for; a closed peer is
 * -EPIPE, not SIGPIPE; more operations than the ring holds go in chunks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "io-ring.h"
#include "macro.h"

#define N 16

typedef struct Pairs {
        int fd[N][2];
} Pairs;

static void pairs_open(Pairs *p) {
        for (unsigned i = 0; i < N; i++)
                assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, p->fd[i]), 0);
}

static void pairs_close(Pairs *p) {
        for (unsigned i = 0; i < N; i++) {
                safe_close(p->fd[i][0]);
                safe_close(p->fd[i][1]);
        }
}

/* A ring through io_uring, or a skip that says why the kernel gives none. */
static IoRing *uring_or_skip(unsigned entries) {
        IoRing *r;
        int e;

        assert_int_equal(io_ring_new(&r), 0);
        e = io_ring_start_uring(r, entries);
        if (e < 0) {
                io_ring_free(r);
                printf("SKIP: the kernel gives no io_uring: %s\n", strerror(-e));
                skip();
        }
        assert_true(io_ring_uring(r));
        return r;
}

/* Sends "m<i>" on every pair's [0], then reads every [1]: the results and the bytes, and the system calls
 * this took. */
static void round_trip(IoRing *r, Pairs *p, uint64_t *ret_calls) {
        char out[N][8], in[N][8];
        IoOp ops[N];
        uint64_t calls = io_ring_get_stats(r).calls;

        for (unsigned i = 0; i < N; i++) {
                int k = snprintf(out[i], sizeof out[i], "m%u", i);
                ops[i] = (IoOp) { .kind = IO_OP_SEND, .fd = p->fd[i][0],
                                  .iov = { .iov_base = out[i], .iov_len = (size_t) k } };
        }
        io_ring_run(r, ops, N);
        for (unsigned i = 0; i < N; i++) {
                assert_int_equal(ops[i].result, (ssize_t) strlen(out[i]));
                ops[i] = (IoOp) { .kind = IO_OP_RECV, .fd = p->fd[i][1],
                                  .iov = { .iov_base = in[i], .iov_len = sizeof in[i] } };
        }
        io_ring_run(r, ops, N);
        for (unsigned i = 0; i < N; i++) {
                assert_int_equal(ops[i].result, (ssize_t) strlen(out[i]));
                assert_memory_equal(in[i], out[i], strlen(out[i]));
        }
        *ret_calls = io_ring_get_stats(r).calls - calls;
}

static void test_io_ring_run_syscalls_one_each(void **state) {
        Pairs p;
        IoRing *r;
        uint64_t calls;

        pairs_open(&p);
        assert_int_equal(io_ring_new(&r), 0);
        assert_false(io_ring_uring(r));
        round_trip(r, &p, &calls);
        assert_int_equal(calls, 2 * N);
        assert_int_equal(io_ring_get_stats(r).ops, 2 * N);
        io_ring_free(r);
        pairs_close(&p);
}

static void test_io_ring_run_uring_one_call_for_many(void **state) {
        Pairs p;
        IoRing *r = uring_or_skip(64);
        uint64_t calls;

        pairs_open(&p);
        round_trip(r, &p, &calls);
        assert_int_equal(calls, 2); /* all sends in one io_uring_enter(), all reads in another */
        assert_int_equal(io_ring_get_stats(r).ops, 2 * N);
        io_ring_free(r);
        pairs_close(&p);
}

/* Nothing to read, no room to write, a closed peer: answered at once, in both modes. */
static void check_edges(IoRing *r) {
        static char big[64 * 1024];
        char b[8];
        int fd[2], gone[2];
        IoOp op;

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, gone), 0);

        op = (IoOp) { .kind = IO_OP_RECV, .fd = fd[0], .iov = { .iov_base = b, .iov_len = sizeof b } };
        io_ring_run(r, &op, 1);
        assert_int_equal(op.result, -EAGAIN);

        for (;;) { /* fill the socket */
                op = (IoOp) { .kind = IO_OP_SEND, .fd = fd[0], .iov = { .iov_base = big, .iov_len = sizeof big } };
                io_ring_run(r, &op, 1);
                if (op.result < 0)
                        break;
        }
        assert_int_equal(op.result, -EAGAIN);

        safe_close(gone[1]);
        op = (IoOp) { .kind = IO_OP_SEND, .fd = gone[0], .iov = { .iov_base = b, .iov_len = 1 } };
        io_ring_run(r, &op, 1); /* MSG_NOSIGNAL: a SIGPIPE would end the test here */
        assert_int_equal(op.result, -EPIPE);
        op = (IoOp) { .kind = IO_OP_RECV, .fd = gone[0], .iov = { .iov_base = b, .iov_len = sizeof b } };
        io_ring_run(r, &op, 1);
        assert_int_equal(op.result, 0); /* EOF */

        safe_close(fd[0]);
        safe_close(fd[1]);
        safe_close(gone[0]);
}

static void test_io_ring_run_edges_syscalls(void **state) {
        IoRing *r;

        assert_int_equal(io_ring_new(&r), 0);
        check_edges(r);
        io_ring_free(r);
}

static void test_io_ring_run_edges_uring(void **state) {
        IoRing *r = uring_or_skip(8);

        check_edges(r);
        assert_true(io_ring_uring(r)); /* none of them made the ring give up */
        io_ring_free(r);
}

static void test_io_ring_run_uring_chunks_past_entries(void **state) {
        Pairs p;
        IoRing *r = uring_or_skip(4);
        uint64_t calls;

        pairs_open(&p);
        round_trip(r, &p, &calls);
        assert_int_equal(calls, 2 * (N / 4));
        io_ring_free(r);
        pairs_close(&p);
}

static void test_io_ring_stop_uring_back_to_syscalls(void **state) {
        Pairs p;
        IoRing *r = uring_or_skip(64);
        uint64_t calls;

        pairs_open(&p);
        io_ring_stop_uring(r);
        assert_false(io_ring_uring(r));
        round_trip(r, &p, &calls);
        assert_int_equal(calls, 2 * N);
        io_ring_free(r);
        pairs_close(&p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_io_ring_run_syscalls_one_each),
                cmocka_unit_test(test_io_ring_run_uring_one_call_for_many),
                cmocka_unit_test(test_io_ring_run_edges_syscalls),
                cmocka_unit_test(test_io_ring_run_edges_uring),
                cmocka_unit_test(test_io_ring_run_uring_chunks_past_entries),
                cmocka_unit_test(test_io_ring_stop_uring_back_to_syscalls),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
