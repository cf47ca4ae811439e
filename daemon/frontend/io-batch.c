/* SPDX-License-Identifier: MIT */
/* The front end's own epoll set inside the sd-event loop (io-batch.h). sd-event's loop iteration is
 * prepare, epoll_wait, dispatch ONE source; with a source still pending it polls again with timeout 0
 * first. Under load nearly every iteration was one socket and one epoll_wait, plus the iterations of the
 * defer sources the sockets' handlers enabled. Here a wake-up of the loop dispatches every socket that is
 * ready and the deferred calls they scheduled, so the loop's cost is paid per batch. */
#include "io-batch.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "cleanup.h"
#include "io-ring.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "time-util.h"

struct IoSource {
        IoBatch *batch;
        int fd; /* -1: a deferred call */
        uint32_t events;
        bool enabled; /* io: in the set; defer: on the pending list */
        bool first;
        bool dead;    /* freed during a dispatch: its memory waits on the graveyard */
        io_batch_io_handler_t on_io;
        io_batch_defer_handler_t on_defer;
        void *userdata;
        uint64_t seq;          /* when it was scheduled: a round runs what was scheduled before it began */
        IoSource *prev, *next; /* the pending list, or the graveyard (next only) */
        const IoSourceOps *ops;
        bool send_wanted;                /* on the send list */
        IoSource *send_prev, *send_next; /* the send list */
};

struct IoBatch {
        unsigned n_ref;
        sd_event *event;
        sd_event_source *io;    /* the set's fd in the loop */
        sd_event_source *defer; /* the loop's next iteration, for calls scheduled outside a dispatch */
        int epfd;
        unsigned dispatching;
        bool defer_on;
        IoSource *pending, *pending_tail;
        uint64_t seq;
        IoSource *graveyard;
        IoBatchStats stats;
        uint64_t now; /* the loop's time of this iteration while dispatching; 0 outside */
        IoSource *sends, *sends_tail; /* asked for a write at the next flush */
        IoRing *ring;
        /* one poll's reads or one flush's writes, and whose they are */
        IoOp ops[IO_BATCH_MAX];
        IoSource *op_source[IO_BATCH_MAX];
        unsigned op_event[IO_BATCH_MAX];
};

static void pending_unlink(IoBatch *b, IoSource *s) {
        QUEUE_REMOVE(b->pending, b->pending_tail, s, prev, next);
        s->enabled = false;
}

static void pending_append(IoBatch *b, IoSource *s) {
        s->seq = ++b->seq;
        QUEUE_APPEND(b->pending, b->pending_tail, s, prev, next);
        s->enabled = true;
}

/* The loop's defer source is on exactly while calls or writes wait and no dispatch of ours will run them. */
static void defer_update(IoBatch *b) {
        bool want = (b->pending || b->sends) && b->dispatching == 0;

        if (want == b->defer_on || !b->defer)
                return;
        if (sd_event_source_set_enabled(b->defer, want ? SD_EVENT_ONESHOT : SD_EVENT_OFF) >= 0)
                b->defer_on = want;
}

static void source_release(IoSource *s) {
        IoBatch *b = s->batch;

        free(s);
        io_batch_unref(b);
}

static void bury(IoBatch *b) {
        while (b->graveyard) {
                IoSource *s = b->graveyard;

                b->graveyard = s->next;
                source_release(s);
        }
}

static void run_deferred(IoBatch *b) {
        for (unsigned round = 0; round < IO_BATCH_DEFER_ROUNDS && b->pending; round++) {
                uint64_t limit = b->seq;

                while (b->pending && b->pending->seq <= limit) {
                        IoSource *s = b->pending;

                        pending_unlink(b, s); /* off before the call, which may enable it again */
                        b->stats.deferred++;
                        s->on_defer(s, s->userdata);
                }
        }
}

static void send_unlink(IoBatch *b, IoSource *s) {
        QUEUE_REMOVE(b->sends, b->sends_tail, s, send_prev, send_next);
        s->send_wanted = false;
}

/* One flush: the writes asked for before it began, at most IO_BATCH_MAX, in one go. A write asked for by a
 * send_done waits for the next flush. */
static void flush_sends(IoBatch *b) {
        IoSource *last = b->sends_tail;
        size_t n = 0;

        while (b->sends && n < IO_BATCH_MAX) {
                IoSource *s = b->sends;
                struct iovec iov;
                bool end = s == last;

                send_unlink(b, s);
                if (s->ops->send_prepare(s, &iov, s->userdata)) {
                        b->ops[n] = (IoOp) { .kind = IO_OP_SEND, .fd = s->fd, .iov = iov };
                        b->op_source[n++] = s;
                }
                if (end)
                        break;
        }
        if (n == 0)
                return;
        io_ring_run(b->ring, b->ops, n);
        for (size_t i = 0; i < n; i++) {
                IoSource *s = b->op_source[i];

                if (!s->dead) /* an earlier send_done may have ended it */
                        s->ops->send_done(s, b->ops[i].result, s->userdata);
        }
}

/* The deferred calls and the writes they and the handlers asked for, in turns: a send_done may schedule
 * a call (a connection moving on) and a call may ask for a write. Bounded like run_deferred(); what is
 * left waits for the loop's next iteration. */
static void settle(IoBatch *b) {
        for (unsigned round = 0; round < IO_BATCH_DEFER_ROUNDS; round++) {
                run_deferred(b);
                if (!b->sends)
                        return;
                flush_sends(b);
                if (!b->pending && !b->sends)
                        return;
        }
}

/* The first read of every ready socket whose source wants it, all in one call, before any handler runs.
 * Only with io_uring: without it the same read costs the same system call in the handler. */
static void preread(IoBatch *b, struct epoll_event *ev, int n) {
        size_t k = 0;

        if (!io_ring_uring(b->ring))
                return;
        for (int i = 0; i < n; i++) {
                IoSource *s = ev[i].data.ptr;
                struct iovec iov;

                if (s->dead || !s->enabled || !s->ops || !s->ops->read_prepare || !(ev[i].events & EPOLLIN))
                        continue;
                if (!s->ops->read_prepare(s, ev[i].events, &iov, s->userdata))
                        continue;
                b->ops[k] = (IoOp) { .kind = IO_OP_RECV, .fd = s->fd, .iov = iov };
                b->op_event[k++] = (unsigned) i;
        }
        if (k == 0)
                return;
        io_ring_run(b->ring, b->ops, k);
        for (size_t j = 0; j < k; j++) {
                struct epoll_event *e = &ev[b->op_event[j]];
                IoSource *s = e->data.ptr;

                if (!s->dead && s->ops->read_done(s, b->ops[j].result, s->userdata))
                        e->events &= ~(uint32_t) EPOLLIN;
        }
}

static void dispatch_ready(IoBatch *b, const struct epoll_event *ev, int n, bool first) {
        for (int i = 0; i < n; i++) {
                IoSource *s = ev[i].data.ptr;

                /* dead or disabled by an earlier handler of this batch: its event is stale */
                if (s->dead || !s->enabled || s->first != first)
                        continue;
                s->on_io(s, s->fd, ev[i].events, s->userdata);
        }
}

/* sd_event_now() answers the iteration's time too, but each call costs a locked compare-and-swap (its
 * check that the process did not fork): handlers ask several times per request. */
static void dispatch_begin(IoBatch *b) {
        if (b->dispatching++ > 0)
                return;
        if (sd_event_now(b->event, CLOCK_MONOTONIC, &b->now) < 0)
                b->now = 0;
}

static void dispatch_end(IoBatch *b) {
        if (--b->dispatching > 0)
                return;
        b->now = 0;
        bury(b);
        defer_update(b);
}

/* One poll of the set and what it found: the ready sockets, then the deferred calls they scheduled. Returns
 * how many sockets were ready. */
static int poll_once(IoBatch *b) {
        struct epoll_event ev[IO_BATCH_MAX];
        int n = epoll_wait(b->epfd, ev, IO_BATCH_MAX, 0);

        if (n < 0) {
                if (errno != EINTR)
                        log_warning_errno(errno, "Front end: epoll_wait on its own set failed, ignoring: %m");
                return 0;
        }
        b->stats.events += (uint64_t) n;
        b->stats.largest = MAX(b->stats.largest, (unsigned) n);
        preread(b, ev, n);
        dispatch_ready(b, ev, n, true);
        dispatch_ready(b, ev, n, false);
        settle(b);
        return n;
}

static int on_ready(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        IoBatch *b = io_batch_ref(userdata);

        dispatch_begin(b);
        b->stats.wakeups++;
        /* A busy batch took long enough for more to arrive: polling again at once is cheaper than going
         * back to sleep and being woken (a loop iteration, an epoll_wait that blocks, a context switch). */
        for (unsigned i = 0; i < IO_BATCH_POLLS && poll_once(b) >= IO_BATCH_AGAIN; i++)
                ;
        dispatch_end(b);
        io_batch_unref(b);
        return 0;
}

void io_batch_enter(IoBatch *b) {
        io_batch_ref(b);
        dispatch_begin(b);
}

void io_batch_leave(IoBatch *b) {
        if (b->dispatching == 1)
                settle(b);
        dispatch_end(b);
        io_batch_unref(b);
}

static int on_defer(sd_event_source *es, void *userdata) {
        IoBatch *b = io_batch_ref(userdata);

        b->defer_on = false; /* a oneshot: off now */
        dispatch_begin(b);
        settle(b);
        dispatch_end(b);
        io_batch_unref(b);
        return 0;
}

static void batch_destroy(IoBatch *b) {
        b->io = sd_event_source_disable_unref(b->io);
        b->defer = sd_event_source_disable_unref(b->defer);
        b->ring = io_ring_free(b->ring);
        safe_close(b->epfd);
        sd_event_unref(b->event);
        free(b);
}

int io_batch_new(sd_event *event, IoBatch **ret) {
        IoBatch *b;
        int r;

        if (!event || !ret)
                return -EINVAL;
        b = calloc(1, sizeof *b);
        if (!b)
                return -ENOMEM;
        b->n_ref = 1;
        b->event = sd_event_ref(event);
        b->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (b->epfd < 0) {
                r = -errno;
                goto fail;
        }
        r = io_ring_new(&b->ring);
        if (r < 0)
                goto fail;
        r = sd_event_add_io(event, &b->io, b->epfd, EPOLLIN, on_ready, b);
        if (r < 0)
                goto fail;
        r = sd_event_add_defer(event, &b->defer, on_defer, b);
        if (r < 0)
                goto fail;
        r = sd_event_source_set_enabled(b->defer, SD_EVENT_OFF);
        if (r < 0)
                goto fail;
        *ret = b;
        return 0;
fail:
        batch_destroy(b);
        return r;
}

IoBatch *io_batch_ref(IoBatch *b) {
        if (b)
                b->n_ref++;
        return b;
}

IoBatch *io_batch_unref(IoBatch *b) {
        if (!b)
                return NULL;
        assert(b->n_ref > 0);
        if (--b->n_ref > 0)
                return NULL;
        assert(!b->graveyard && !b->pending && !b->sends);
        batch_destroy(b);
        return NULL;
}

sd_event *io_batch_get_event(IoBatch *b) {
        return b->event;
}

IoBatchStats io_batch_get_stats(const IoBatch *b) {
        IoBatchStats st = b->stats;
        IoRingStats r = io_ring_get_stats(b->ring);

        st.io_calls = r.calls;
        st.io_ops = r.ops;
        return st;
}

int io_batch_start_uring(IoBatch *b) {
        return io_ring_start_uring(b->ring, IO_BATCH_MAX);
}

void io_batch_stop_uring(IoBatch *b) {
        assert(b->dispatching == 0);
        io_ring_stop_uring(b->ring);
}

bool io_batch_uring(const IoBatch *b) {
        return io_ring_uring(b->ring);
}

uint64_t io_batch_now(const IoBatch *b) {
        uint64_t t;

        if (b && b->now > 0)
                return b->now;
        if (!b || sd_event_now(b->event, CLOCK_MONOTONIC, &t) < 0)
                return now_usec(CLOCK_MONOTONIC);
        return t;
}

static IoSource *source_new(IoBatch *b, int fd, void *userdata) {
        IoSource *s = calloc(1, sizeof *s);

        if (!s)
                return NULL;
        s->batch = io_batch_ref(b);
        s->fd = fd;
        s->userdata = userdata;
        return s;
}

static int epoll_update(IoSource *s, int op) {
        struct epoll_event ev = { .events = s->events, .data.ptr = s };

        return RET_NERRNO(epoll_ctl(s->batch->epfd, op, s->fd, &ev));
}

int io_batch_add_io(IoBatch *b, IoSource **ret, int fd, uint32_t events, io_batch_io_handler_t cb,
                    void *userdata) {
        IoSource *s;
        int r;

        if (!b || !ret || fd < 0 || !cb)
                return -EINVAL;
        s = source_new(b, fd, userdata);
        if (!s)
                return -ENOMEM;
        s->events = events;
        s->on_io = cb;
        r = epoll_update(s, EPOLL_CTL_ADD);
        if (r < 0) {
                source_release(s);
                return r;
        }
        s->enabled = true;
        *ret = s;
        return 0;
}

int io_batch_add_defer(IoBatch *b, IoSource **ret, io_batch_defer_handler_t cb, void *userdata) {
        IoSource *s;

        if (!b || !ret || !cb)
                return -EINVAL;
        s = source_new(b, -1, userdata);
        if (!s)
                return -ENOMEM;
        s->on_defer = cb;
        *ret = s;
        return 0;
}

void io_source_set_ops(IoSource *s, const IoSourceOps *ops) {
        s->ops = ops;
}

int io_source_want_send(IoSource *s) {
        IoBatch *b;

        if (!s || s->dead || s->fd < 0 || !s->ops || !s->ops->send_prepare || !s->ops->send_done)
                return -EINVAL;
        if (s->send_wanted)
                return 0;
        b = s->batch;
        QUEUE_APPEND(b->sends, b->sends_tail, s, send_prev, send_next);
        s->send_wanted = true;
        defer_update(b);
        return 0;
}

bool io_source_send_wanted(const IoSource *s) {
        return s && s->send_wanted;
}

void io_source_set_first(IoSource *s, bool first) {
        s->first = first;
}

int io_source_set_io_events(IoSource *s, uint32_t events) {
        int r;

        if (!s || s->fd < 0 || s->dead)
                return -EINVAL;
        s->events = events;
        if (!s->enabled)
                return 0;
        r = epoll_update(s, EPOLL_CTL_MOD);
        return r;
}

static int defer_set_enabled(IoSource *s, bool enabled) {
        IoBatch *b = s->batch;

        if (enabled == s->enabled)
                return 0;
        if (enabled)
                pending_append(b, s);
        else
                pending_unlink(b, s);
        defer_update(b);
        return 0;
}

int io_source_set_enabled(IoSource *s, bool enabled) {
        int r;

        if (!s || s->dead)
                return -EINVAL;
        if (s->fd < 0)
                return defer_set_enabled(s, enabled);
        if (enabled == s->enabled)
                return 0;
        r = epoll_update(s, enabled ? EPOLL_CTL_ADD : EPOLL_CTL_DEL);
        if (r < 0)
                return r;
        s->enabled = enabled;
        return 0;
}

bool io_source_get_enabled(const IoSource *s) {
        return s && !s->dead && s->enabled;
}

IoSource *io_source_free(IoSource *s) {
        IoBatch *b;

        if (!s)
                return NULL;
        b = s->batch;
        assert(!s->dead);
        if (s->send_wanted) {
                send_unlink(b, s);
                defer_update(b);
        }
        if (s->fd < 0)
                (void) defer_set_enabled(s, false);
        else if (s->enabled)
                (void) epoll_update(s, EPOLL_CTL_DEL); /* EBADF when the fd went first: gone from the set too */
        s->enabled = false;
        if (b->dispatching == 0) {
                source_release(s);
                return NULL;
        }
        /* an event of this batch may still point at it */
        s->dead = true;
        s->next = b->graveyard;
        b->graveyard = s;
        return NULL;
}
