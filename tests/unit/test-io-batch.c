/* SPDX-License-Identifier: MIT */
/* The front end's batch of sockets (daemon/frontend/io-batch.c) on a real sd-event loop and real socket
 * pairs: every socket ready at a wake-up is dispatched in that one wake-up, a source freed by another's
 * handler in the same batch is neither called nor touched (ASan watches), edges stay edges, and the
 * deferred calls run after the sockets, a bounded number of rounds; a busy batch polls again at once.
 * The batched reads and writes (IoSourceOps): first reads done for every ready socket before any handler
 * (with io_uring: in one call), writes asked for by handlers and deferred calls done together after them,
 * never for a source freed meanwhile. Run twice by CTest: unit/io-batch and unit/io-batch-io-uring. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "io-batch.h"
#include "io-uring-mode.h"
#include "macro.h"
#include "time-util.h"

#define N_PAIRS 16

typedef struct Pair {
        int fd[2];      /* [0] watched, [1] written by the test */
        IoSource *s;
        unsigned calls;
        unsigned order; /* the batch's call sequence number of the last call */
        uint32_t revents;
        struct Pair *victim; /* freed by this one's handler */
        bool drain;          /* read what is there */
        bool free_self;
        /* the batched reads and writes */
        char rbuf[16];
        ssize_t read_result; /* what read_done was told; 1000: never called */
        unsigned read_order; /* the call sequence number of read_done */
        bool decline;        /* read_done returns false */
        unsigned prepares, sends_done, send_order;
        ssize_t send_result;
        struct Pair *send_victim; /* freed by this one's send_done */
        bool send_again;          /* send_done asks for another write, once */
} Pair;

typedef struct Env {
        sd_event *event;
        IoBatch *batch;
        Pair pairs[N_PAIRS];
        unsigned seq;
} Env;

static Env *env;

static int setup(void **state) {
        env = calloc(1, sizeof *env);
        assert_non_null(env);
        assert_int_equal(sd_event_new(&env->event), 0);
        assert_int_equal(io_batch_new(env->event, &env->batch), 0);
        io_uring_mode_apply(env->batch);
        for (unsigned i = 0; i < N_PAIRS; i++)
                assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                                            env->pairs[i].fd), 0);
        return 0;
}

static int teardown(void **state) {
        for (unsigned i = 0; i < N_PAIRS; i++) {
                env->pairs[i].s = io_source_free(env->pairs[i].s);
                safe_close(env->pairs[i].fd[0]);
                safe_close(env->pairs[i].fd[1]);
        }
        env->batch = io_batch_unref(env->batch);
        sd_event_unref(env->event);
        free(env);
        return 0;
}

static void kick(Pair *p) {
        assert_int_equal(write(p->fd[1], "x", 1), 1);
}

static void drain(Pair *p) {
        char buf[64];

        while (read(p->fd[0], buf, sizeof buf) > 0)
                ;
}

static void on_io(IoSource *s, int fd, uint32_t revents, void *userdata) {
        Pair *p = userdata;

        assert_ptr_equal(s, p->s);
        assert_int_equal(fd, p->fd[0]);
        p->calls++;
        p->order = ++env->seq;
        p->revents = revents;
        if (p->drain)
                drain(p);
        if (p->victim && p->victim->s) {
                p->victim->s = io_source_free(p->victim->s);
                p->victim->fd[0] = safe_close(p->victim->fd[0]); /* the fd number may come back at once */
        }
        if (p->free_self)
                p->s = io_source_free(p->s);
}

static void watch(Pair *p) {
        assert_int_equal(io_batch_add_io(env->batch, &p->s, p->fd[0], EPOLLIN | EPOLLRDHUP | EPOLLET, on_io, p),
                         0);
}

/* sd_event_run() counts an interrupted wait as an iteration, and each io_uring of the tests before, torn
 * down, interrupts one wait of ours (its exit work, which runs a little later, notifies every task that
 * used it): such an iteration, which dispatched nothing of the batch's, is not one. */
#define INTERRUPTIONS_MAX 8
static IoBatchStats batch_stats(void) {
        return env->batch ? io_batch_get_stats(env->batch) : (IoBatchStats) {};
}

static bool batch_moved(const IoBatchStats *before) {
        IoBatchStats now = batch_stats();

        if (!env->batch) /* the test let go of it: sd_event_run()'s answer it is */
                return true;
        return now.wakeups != before->wakeups || now.deferred != before->deferred || now.io_ops != before->io_ops;
}

/* One loop iteration that finds something: what one wake-up of the commander does. */
static void run_once(void) {
        IoBatchStats before = batch_stats();

        for (unsigned i = 0; i <= INTERRUPTIONS_MAX; i++) {
                assert_int_equal(sd_event_run(env->event, 1000 * USEC_PER_MSEC), 1);
                if (batch_moved(&before))
                        return;
        }
        fail_msg("%u loop iterations dispatched nothing of the batch's", INTERRUPTIONS_MAX + 1);
}

/* Nothing to dispatch: the loop times out. */
static void run_idle(void) {
        IoBatchStats before = batch_stats();
        int r = sd_event_run(env->event, 20 * USEC_PER_MSEC);

        for (unsigned i = 0; r == 1 && !batch_moved(&before) && i < INTERRUPTIONS_MAX; i++)
                r = sd_event_run(env->event, 20 * USEC_PER_MSEC); /* interrupted: wait again */
        assert_int_equal(r, 0);
        assert_false(batch_moved(&before));
}

static void test_io_batch_all_ready_in_one_wakeup(void **state) {
        IoBatchStats st;

        for (unsigned i = 0; i < N_PAIRS; i++) {
                env->pairs[i].drain = true;
                watch(&env->pairs[i]);
                kick(&env->pairs[i]);
        }
        run_once();
        for (unsigned i = 0; i < N_PAIRS; i++) {
                assert_int_equal(env->pairs[i].calls, 1);
                assert_true(env->pairs[i].revents & EPOLLIN);
        }
        st = io_batch_get_stats(env->batch);
        assert_int_equal(st.wakeups, 1);
        assert_int_equal(st.events, N_PAIRS);
        run_idle();
}

static void test_io_batch_free_other_in_same_batch(void **state) {
        Pair *a = &env->pairs[0], *b = &env->pairs[1];

        /* whichever runs first frees the other: the other's event, already taken, must be skipped */
        a->victim = b;
        b->victim = a;
        watch(a);
        watch(b);
        kick(a);
        kick(b);
        run_once();
        assert_int_equal(a->calls + b->calls, 1);
        assert_int_equal(io_batch_get_stats(env->batch).events, 2);
}

/* The handler that runs first frees the other source, closes its fd and opens a new socket, which takes
 * the lowest free number, the one just closed, and watches it: the stale event must reach neither. */
static Pair *reuse_into;

static void on_io_reuses(IoSource *s, int fd, uint32_t revents, void *userdata) {
        Pair *c = reuse_into;

        on_io(s, fd, revents, userdata);
        if (c->s)
                return;
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, c->fd), 0);
        kick(c);
        watch(c);
}

static void test_io_batch_free_and_reuse_fd_in_same_batch(void **state) {
        Pair *a = &env->pairs[0], *b = &env->pairs[1], *c = &env->pairs[2];
        int victim_fds[2] = { a->fd[0], b->fd[0] };

        safe_close(c->fd[0]);
        safe_close(c->fd[1]);
        c->fd[0] = c->fd[1] = -EBADF;
        c->drain = true;
        reuse_into = c;
        a->victim = b;
        b->victim = a;
        assert_int_equal(io_batch_add_io(env->batch, &a->s, a->fd[0], EPOLLIN | EPOLLET, on_io_reuses, a), 0);
        assert_int_equal(io_batch_add_io(env->batch, &b->s, b->fd[0], EPOLLIN | EPOLLET, on_io_reuses, b), 0);
        kick(a);
        kick(b);
        run_once();
        assert_int_equal(a->calls + b->calls, 1);
        assert_int_equal(c->calls, 0);
        assert_true(c->fd[0] == victim_fds[0] || c->fd[0] == victim_fds[1]); /* the number did come back */
        run_once(); /* the new socket's own event, in its own right */
        assert_int_equal(c->calls, 1);
}

static void test_io_batch_free_self(void **state) {
        Pair *a = &env->pairs[0];

        a->free_self = true;
        watch(a);
        kick(a);
        run_once();
        assert_int_equal(a->calls, 1);
        assert_null(a->s);
        kick(a);
        run_idle();
        assert_int_equal(a->calls, 1);
}

static void test_io_batch_edge_triggered(void **state) {
        Pair *a = &env->pairs[0];

        watch(a); /* does not read: the bytes stay, the edge is spent */
        kick(a);
        run_once();
        assert_int_equal(a->calls, 1);
        run_idle();
        assert_int_equal(a->calls, 1);
        kick(a); /* a new edge */
        run_once();
        assert_int_equal(a->calls, 2);
        /* setting the mask again looks at the socket anew: bytes left are reported once more */
        assert_int_equal(io_source_set_io_events(a->s, EPOLLIN | EPOLLRDHUP | EPOLLET), 0);
        run_once();
        assert_int_equal(a->calls, 3);
        run_idle();
}

static void test_io_batch_disabled_not_dispatched(void **state) {
        Pair *a = &env->pairs[0], *b = &env->pairs[1];

        a->drain = b->drain = true;
        watch(a);
        watch(b);
        assert_int_equal(io_source_set_enabled(b->s, false), 0);
        assert_false(io_source_get_enabled(b->s));
        kick(a);
        kick(b);
        run_once();
        assert_int_equal(a->calls, 1);
        assert_int_equal(b->calls, 0);
        assert_int_equal(io_source_set_enabled(b->s, true), 0);
        run_once(); /* rejoining, a ready socket is reported at once */
        assert_int_equal(b->calls, 1);
}

static void test_io_batch_first_before_others(void **state) {
        for (unsigned i = 0; i < 4; i++) {
                env->pairs[i].drain = true;
                watch(&env->pairs[i]);
        }
        io_source_set_first(env->pairs[3].s, true);
        for (unsigned i = 0; i < 4; i++)
                kick(&env->pairs[i]);
        run_once();
        assert_int_equal(env->pairs[3].order, 1);
}

/* A handler that makes another socket ready (a worker's answer arriving while the batch runs). */
static Pair *kicked_by_handler;

static void on_io_kicks(IoSource *s, int fd, uint32_t revents, void *userdata) {
        on_io(s, fd, revents, userdata);
        if (kicked_by_handler) {
                kick(kicked_by_handler);
                kicked_by_handler = NULL;
        }
}

static void watch_kicking(Pair *p) {
        assert_int_equal(io_batch_add_io(env->batch, &p->s, p->fd[0], EPOLLIN | EPOLLET, on_io_kicks, p), 0);
}

static void test_io_batch_busy_batch_polls_again(void **state) {
        Pair *late = &env->pairs[IO_BATCH_AGAIN];

        /* a batch of IO_BATCH_AGAIN sockets is busy: what became ready meanwhile is taken in the same wake-up */
        for (unsigned i = 0; i <= IO_BATCH_AGAIN; i++) {
                env->pairs[i].drain = true;
                watch_kicking(&env->pairs[i]);
        }
        kicked_by_handler = late;
        for (unsigned i = 0; i < IO_BATCH_AGAIN; i++)
                kick(&env->pairs[i]);
        run_once();
        assert_int_equal(late->calls, 1);
        assert_int_equal(io_batch_get_stats(env->batch).wakeups, 1);
        assert_int_equal(io_batch_get_stats(env->batch).events, IO_BATCH_AGAIN + 1);
        run_idle();
}

static void test_io_batch_quiet_batch_sleeps(void **state) {
        Pair *a = &env->pairs[0], *late = &env->pairs[1];

        /* one socket is no load: the loop's other sources get their turn before the next poll */
        a->drain = late->drain = true;
        watch_kicking(a);
        watch_kicking(late);
        kicked_by_handler = late;
        kick(a);
        run_once();
        assert_int_equal(late->calls, 0);
        run_once();
        assert_int_equal(late->calls, 1);
        assert_int_equal(io_batch_get_stats(env->batch).wakeups, 2);
}

/* ---- deferred calls ---- */

typedef struct Deferred {
        IoSource *s;
        unsigned calls, order;
        bool again; /* schedules itself again every time */
} Deferred;

static void on_defer(IoSource *s, void *userdata) {
        Deferred *d = userdata;

        d->calls++;
        d->order = ++env->seq;
        if (d->again)
                assert_int_equal(io_source_set_enabled(s, true), 0);
}

static Deferred *deferred_of_pair;

static void on_io_schedules(IoSource *s, int fd, uint32_t revents, void *userdata) {
        on_io(s, fd, revents, userdata);
        assert_int_equal(io_source_set_enabled(deferred_of_pair->s, true), 0);
}

static void test_io_batch_defer_after_sockets_same_wakeup(void **state) {
        Deferred d = {};
        Pair *a = &env->pairs[0], *b = &env->pairs[1];

        assert_int_equal(io_batch_add_defer(env->batch, &d.s, on_defer, &d), 0);
        deferred_of_pair = &d;
        a->drain = b->drain = true;
        assert_int_equal(io_batch_add_io(env->batch, &a->s, a->fd[0], EPOLLIN | EPOLLET, on_io_schedules, a), 0);
        watch(b);
        kick(a);
        kick(b);
        run_once(); /* one iteration: both sockets, then the call one of them scheduled */
        assert_int_equal(d.calls, 1);
        assert_int_equal(d.order, 3);
        assert_false(io_source_get_enabled(d.s));
        run_idle();
        assert_int_equal(d.calls, 1);
        d.s = io_source_free(d.s);
}

static void test_io_batch_defer_outside_batch(void **state) {
        Deferred d = {};

        assert_int_equal(io_batch_add_defer(env->batch, &d.s, on_defer, &d), 0);
        run_idle();
        assert_int_equal(io_source_set_enabled(d.s, true), 0);
        assert_int_equal(io_source_set_enabled(d.s, true), 0); /* once, however often enabled */
        run_once();
        assert_int_equal(d.calls, 1);
        run_idle();
        /* cancelled before the loop ran it: never runs */
        assert_int_equal(io_source_set_enabled(d.s, true), 0);
        assert_int_equal(io_source_set_enabled(d.s, false), 0);
        run_idle();
        assert_int_equal(d.calls, 1);
        d.s = io_source_free(d.s);
}

static void test_io_batch_defer_rescheduling_bounded(void **state) {
        Deferred d = { .again = true };

        assert_int_equal(io_batch_add_defer(env->batch, &d.s, on_defer, &d), 0);
        assert_int_equal(io_source_set_enabled(d.s, true), 0);
        run_once(); /* returns: the loop gets its turn */
        assert_int_equal(d.calls, IO_BATCH_DEFER_ROUNDS);
        run_once();
        assert_int_equal(d.calls, 2 * IO_BATCH_DEFER_ROUNDS);
        d.s = io_source_free(d.s); /* freed while scheduled */
        run_idle();
}

/* The time handlers read: the loop's time of the iteration, the same for every socket of the batch and
 * for the deferred calls after them (sd_event_now()'s answer, read once), and the loop's again outside. */
static uint64_t seen_now[2];

static void on_io_reads_now(IoSource *s, int fd, uint32_t revents, void *userdata) {
        Pair *p = userdata;

        seen_now[p == &env->pairs[0] ? 0 : 1] = io_batch_now(env->batch);
        drain(p);
}

static void test_io_batch_now_is_the_iterations(void **state) {
        Pair *a = &env->pairs[0], *b = &env->pairs[1];
        uint64_t loop_now, before;

        before = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(io_batch_add_io(env->batch, &a->s, a->fd[0], EPOLLIN, on_io_reads_now, a), 0);
        assert_int_equal(io_batch_add_io(env->batch, &b->s, b->fd[0], EPOLLIN, on_io_reads_now, b), 0);
        kick(a);
        kick(b);
        run_once();
        assert_int_equal(sd_event_now(env->event, CLOCK_MONOTONIC, &loop_now), 0);
        assert_true(seen_now[0] >= before);
        assert_true(seen_now[0] == loop_now);
        assert_true(seen_now[1] == loop_now);
        /* outside a dispatch: the loop's answer, never 0 */
        assert_true(io_batch_now(env->batch) == loop_now);
        assert_true(io_batch_now(NULL) >= before);
}

static void test_io_batch_outlives_owner(void **state) {
        Pair *a = &env->pairs[0];
        Deferred d = {};

        a->drain = true;
        watch(a);
        assert_int_equal(io_batch_add_defer(env->batch, &d.s, on_defer, &d), 0);
        env->batch = io_batch_unref(env->batch); /* the sources keep it */
        kick(a);
        run_once();
        assert_int_equal(a->calls, 1);
        d.s = io_source_free(d.s);
        a->s = io_source_free(a->s); /* the last one frees it (ASan: no leak) */
}

/* ---- batched reads and writes ---- */

static bool t_read_prepare(IoSource *s, uint32_t revents, struct iovec *ret, void *userdata) {
        Pair *p = userdata;

        assert_true(revents & EPOLLIN);
        *ret = (struct iovec) { .iov_base = p->rbuf, .iov_len = sizeof p->rbuf };
        return true;
}

static bool t_read_done(IoSource *s, ssize_t result, void *userdata) {
        Pair *p = userdata;

        p->read_result = result;
        p->read_order = ++env->seq;
        return !p->decline;
}

static bool t_send_prepare(IoSource *s, struct iovec *ret, void *userdata) {
        Pair *p = userdata;

        p->prepares++;
        p->send_order = ++env->seq;
        *ret = (struct iovec) { .iov_base = (char *) "y", .iov_len = 1 };
        return true;
}

static void t_send_done(IoSource *s, ssize_t result, void *userdata) {
        Pair *p = userdata;

        p->sends_done++;
        p->send_result = result;
        if (p->send_victim && p->send_victim->s)
                p->send_victim->s = io_source_free(p->send_victim->s);
        if (p->send_again) {
                p->send_again = false;
                assert_int_equal(io_source_want_send(s), 0);
        }
}

static const IoSourceOps t_ops = {
        .read_prepare = t_read_prepare,
        .read_done = t_read_done,
        .send_prepare = t_send_prepare,
        .send_done = t_send_done,
};

static void watch_ops(Pair *p) {
        watch(p);
        io_source_set_ops(p->s, &t_ops);
        p->read_result = 1000;
}

/* What the peer got: the bytes our sends wrote. */
static size_t peer_got(Pair *p) {
        char buf[64];
        ssize_t n = read(p->fd[1], buf, sizeof buf);

        return n > 0 ? (size_t) n : 0;
}

static void test_io_batch_preread_before_every_handler(void **state) {
        uint64_t calls;

        for (unsigned i = 0; i < 4; i++) {
                watch_ops(&env->pairs[i]);
                kick(&env->pairs[i]);
        }
        calls = io_batch_get_stats(env->batch).io_calls;
        run_once();
        for (unsigned i = 0; i < 4; i++) {
                Pair *p = &env->pairs[i];

                assert_int_equal(p->calls, 1);
                if (!io_batch_uring(env->batch)) { /* the handler reads for itself */
                        assert_int_equal(p->read_result, 1000);
                        assert_true(p->revents & EPOLLIN);
                        continue;
                }
                assert_int_equal(p->read_result, 1);
                assert_int_equal(p->rbuf[0], 'x');
                assert_false(p->revents & EPOLLIN); /* the read told it: not again */
                assert_true(p->read_order < env->pairs[0].order); /* every read before the first handler */
        }
        if (io_batch_uring(env->batch))
                assert_int_equal(io_batch_get_stats(env->batch).io_calls - calls, 1);
}

static void test_io_batch_preread_declined_passes_the_event(void **state) {
        Pair *a = &env->pairs[0];

        if (!io_batch_uring(env->batch))
                skip(); /* no batched reads without io_uring: the handlers read (the test above) */
        watch_ops(a);
        a->decline = true;
        kick(a);
        run_once();
        assert_int_equal(a->read_result, 1);
        assert_true(a->revents & EPOLLIN);
}

/* A handler that asks three other sources for a write, and schedules a deferred call that asks a fourth. */
static Deferred *deferred_sender;
static Pair *send_targets[3];

static void on_io_asks_sends(IoSource *s, int fd, uint32_t revents, void *userdata) {
        on_io(s, fd, revents, userdata);
        for (unsigned i = 0; i < ELEMENTSOF(send_targets); i++)
                assert_int_equal(io_source_want_send(send_targets[i]->s), 0);
        assert_int_equal(io_source_want_send(send_targets[0]->s), 0); /* twice before the flush: one write */
        assert_int_equal(io_source_set_enabled(deferred_sender->s, true), 0);
}

static Pair *deferred_target;

static void on_defer_asks_send(IoSource *s, void *userdata) {
        on_defer(s, userdata);
        assert_int_equal(io_source_want_send(deferred_target->s), 0);
}

static void test_io_batch_sends_after_handlers_and_deferred_calls(void **state) {
        Pair *a = &env->pairs[0];
        Deferred d = {};
        uint64_t calls;

        assert_int_equal(io_batch_add_defer(env->batch, &d.s, on_defer_asks_send, &d), 0);
        deferred_sender = &d;
        for (unsigned i = 1; i <= 4; i++)
                watch_ops(&env->pairs[i]);
        send_targets[0] = &env->pairs[1];
        send_targets[1] = &env->pairs[2];
        send_targets[2] = &env->pairs[3];
        deferred_target = &env->pairs[4];
        a->drain = true;
        assert_int_equal(io_batch_add_io(env->batch, &a->s, a->fd[0], EPOLLIN | EPOLLET, on_io_asks_sends, a), 0);
        kick(a);
        calls = io_batch_get_stats(env->batch).io_calls;
        run_once();
        for (unsigned i = 1; i <= 4; i++) {
                Pair *p = &env->pairs[i];

                assert_int_equal(p->prepares, 1);
                assert_int_equal(p->sends_done, 1);
                assert_int_equal(p->send_result, 1);
                assert_true(p->send_order > d.order); /* after the deferred call too */
                assert_int_equal(peer_got(p), 1);
        }
        /* the four writes went together: one io_uring_enter(), or four send() calls */
        assert_int_equal(io_batch_get_stats(env->batch).io_calls - calls, io_batch_uring(env->batch) ? 1 : 4);
        run_idle();
        d.s = io_source_free(d.s);
}

static void test_io_batch_send_outside_batch_next_iteration(void **state) {
        Pair *a = &env->pairs[0];

        watch_ops(a);
        assert_int_equal(io_source_want_send(a->s), 0);
        assert_int_equal(a->prepares, 0); /* not from inside the call */
        run_once();
        assert_int_equal(a->sends_done, 1);
        assert_int_equal(peer_got(a), 1);
        run_idle();
}

static void test_io_batch_send_freed_before_flush(void **state) {
        Pair *a = &env->pairs[0];

        watch_ops(a);
        assert_int_equal(io_source_want_send(a->s), 0);
        a->s = io_source_free(a->s);
        run_idle(); /* nothing left to flush: the loop has nothing to do */
        assert_int_equal(a->prepares, 0);
        assert_int_equal(io_source_want_send(NULL), -EINVAL);
}

static void test_io_batch_send_done_frees_another_of_the_flush(void **state) {
        Pair *a = &env->pairs[0], *b = &env->pairs[1];

        watch_ops(a);
        watch_ops(b);
        a->send_victim = b;
        b->send_victim = a;
        assert_int_equal(io_source_want_send(a->s), 0);
        assert_int_equal(io_source_want_send(b->s), 0);
        run_once();
        /* both were written in the one flush; whichever heard first freed the other, which hears nothing */
        assert_int_equal(a->prepares + b->prepares, 2);
        assert_int_equal(a->sends_done + b->sends_done, 1);
}

static void test_io_batch_send_done_asks_again_same_wakeup(void **state) {
        Pair *a = &env->pairs[0];

        watch_ops(a);
        a->send_again = true;
        assert_int_equal(io_source_want_send(a->s), 0);
        run_once();
        assert_int_equal(a->sends_done, 2); /* the second flush of the same dispatch */
        assert_int_equal(peer_got(a), 2);
        run_idle();
}

static void test_io_batch_enter_leave_flushes_on_leave(void **state) {
        Pair *a = &env->pairs[0];

        watch_ops(a);
        io_batch_enter(env->batch);
        assert_int_equal(io_source_want_send(a->s), 0);
        io_batch_enter(env->batch); /* nested: the outer one flushes */
        io_batch_leave(env->batch);
        assert_int_equal(a->sends_done, 0);
        io_batch_leave(env->batch);
        assert_int_equal(a->sends_done, 1);
        assert_int_equal(peer_got(a), 1);
        run_idle();
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_io_batch_all_ready_in_one_wakeup, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_free_other_in_same_batch, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_free_and_reuse_fd_in_same_batch, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_free_self, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_edge_triggered, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_disabled_not_dispatched, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_first_before_others, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_busy_batch_polls_again, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_quiet_batch_sleeps, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_defer_after_sockets_same_wakeup, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_defer_outside_batch, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_defer_rescheduling_bounded, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_now_is_the_iterations, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_outlives_owner, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_preread_before_every_handler, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_preread_declined_passes_the_event, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_sends_after_handlers_and_deferred_calls, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_send_outside_batch_next_iteration, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_send_freed_before_flush, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_send_done_frees_another_of_the_flush, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_send_done_asks_again_same_wakeup, setup, teardown),
                cmocka_unit_test_setup_teardown(test_io_batch_enter_leave_flushes_on_leave, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
