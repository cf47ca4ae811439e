/* SPDX-License-Identifier: MIT */
#pragma once

/* One wake-up, many connections: the front end's sockets (client connections of both protocols, worker
 * connections) sit in an epoll set of their own, which the sd-event loop watches as ONE io source. When it
 * is readable, one epoll_wait(timeout 0) takes up to IO_BATCH_MAX ready sockets and each one's handler runs
 * in the same dispatch; then the deferred calls the handlers scheduled (a flush, a connection moving on)
 * run too, before the loop goes back to sleep. sd-event alone dispatches one source per iteration and calls
 * epoll_wait before each, about two per HTTP/1.1 request.
 *
 * The calls mirror sd-event's (io source, defer source, enable, free) so the protocol sides keep their
 * shape. A source freed while a batch is being dispatched is only marked dead and freed when the batch is
 * over: a handler may end another connection whose event is later in the same batch.
 *
 * Reads and writes in batches too (io-ring.h: one io_uring_enter() for all of them, where the kernel
 * lets us). A source with IoSourceOps has the first read of each ready socket done for it before any
 * handler of the poll runs, all of the poll's in one call, and writes what it asked for with
 * io_source_want_send() in one call for the whole batch once the handlers and deferred calls are done.
 * Without io_uring the writes still wait for that flush (one system call each: the same order of events
 * either way) and the handlers do their own reads. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <systemd/sd-event.h>

/* Sockets taken per wake-up at most; what is left is taken at the next one (the inner set stays readable). */
#define IO_BATCH_MAX 256
/* A poll that found at least IO_BATCH_AGAIN ready sockets is followed by another, up to IO_BATCH_POLLS per
 * wake-up, before the loop's other sources get their turn. */
#define IO_BATCH_AGAIN 4
#define IO_BATCH_POLLS 4
/* Rounds of deferred calls per poll: a call a deferred call schedules runs in the next round, so one
 * that keeps rescheduling itself (a busy client yielding) cannot hold the loop; past the last round the
 * rest waits for the next loop iteration. */
#define IO_BATCH_DEFER_ROUNDS 4

typedef struct IoBatch IoBatch;
typedef struct IoSource IoSource;

typedef void (*io_batch_io_handler_t)(IoSource *s, int fd, uint32_t revents, void *userdata);
typedef void (*io_batch_defer_handler_t)(IoSource *s, void *userdata);

/* What the batch reads and writes for a source (io_source_set_ops()); any member may be NULL. */
typedef struct IoSourceOps {
        /* The socket is ready (revents as epoll said): true, with where to read, to have its first read done
         * with the others of the poll; false to leave every read to on_io. */
        bool (*read_prepare)(IoSource *s, uint32_t revents, struct iovec *ret, void *userdata);
        /* That read's result: bytes, 0 (the peer closed) or -errno. true: the source took in what the read
         * told, and on_io gets revents without EPOLLIN (possibly none at all: it still runs, to act on the
         * bytes); false: on_io gets the event as it came and reads itself (an EOF or error it reports). */
        bool (*read_done)(IoSource *s, ssize_t result, void *userdata);
        /* At the flush after io_source_want_send(): what to write now; false when nothing is due any more. */
        bool (*send_prepare)(IoSource *s, struct iovec *ret, void *userdata);
        /* The write's result: bytes taken (maybe fewer than offered: the socket is full) or -errno. */
        void (*send_done)(IoSource *s, ssize_t result, void *userdata);
} IoSourceOps;

typedef struct IoBatchStats {
        uint64_t wakeups;   /* dispatches of the inner set */
        uint64_t events;    /* ready sockets those returned */
        uint64_t deferred;  /* deferred calls run */
        unsigned largest;   /* the most ready sockets one wake-up took */
        uint64_t io_calls;  /* system calls the batched reads and writes took (io_uring_enter()s, or one each) */
        uint64_t io_ops;    /* batched reads and writes done */
} IoBatchStats;

/* The batch of one loop; its sources keep it alive (the owner's unref may come before theirs). 0 or
 * -errno. */
int io_batch_new(sd_event *event, IoBatch **ret);
IoBatch *io_batch_ref(IoBatch *b);
/* Returns NULL. The last reference disables the loop's source and closes the set. */
IoBatch *io_batch_unref(IoBatch *b);
sd_event *io_batch_get_event(IoBatch *b);
/* The batched reads and writes go through io_uring from now on. 0, or -errno when the kernel gives no ring
 * (they then stay one system call each; the caller says so). */
int io_batch_start_uring(IoBatch *b);
/* Back to one system call each (between dispatches). */
void io_batch_stop_uring(IoBatch *b);
bool io_batch_uring(const IoBatch *b);
IoBatchStats io_batch_get_stats(const IoBatch *b);
/* The loop's time of this iteration (CLOCK_MONOTONIC, us), read once per dispatch of the batch; outside
 * one, sd_event_now()'s. */
uint64_t io_batch_now(const IoBatch *b);

/* An event handler of the loop's own (an accept, a timer) as if it were the batch's: the writes and deferred
 * calls it causes are done when it leaves, not with the loop's next iteration. Nested in a dispatch, the
 * dispatch does them. */
void io_batch_enter(IoBatch *b);
void io_batch_leave(IoBatch *b);

/* fd into the set with `events` (EPOLLET as the caller asks), enabled. 0 or -errno (epoll_ctl's). */
int io_batch_add_io(IoBatch *b, IoSource **ret, int fd, uint32_t events, io_batch_io_handler_t cb,
                    void *userdata);
/* A deferred call, off until enabled; enabled, it runs once (then it is off again) after the ready sockets
 * of the current batch, or from the loop's next iteration when enabled outside a batch. 0 or -ENOMEM. */
int io_batch_add_defer(IoBatch *b, IoSource **ret, io_batch_defer_handler_t cb, void *userdata);

/* ops must outlive s (a static table). */
void io_source_set_ops(IoSource *s, const IoSourceOps *ops);
/* A write at the batch's next flush, through the source's send_prepare/send_done: after the handlers and
 * deferred calls of the dispatch under way, or in the loop's next iteration when asked outside one. At
 * most one write per source per flush; asking again before it changes nothing (send_prepare looks at the
 * source's state when the flush comes). 0 or -EINVAL (no send ops, or freed). */
int io_source_want_send(IoSource *s);
/* Whether a write waits for the batch's next flush. */
bool io_source_send_wanted(const IoSource *s);

/* Dispatched before the other sockets of a batch (worker connections: their responses are handed over
 * before the clients' deferred flushes, so an h2 connection sends what completed together in one write). */
void io_source_set_first(IoSource *s, bool first);
/* Sets the mask again even when unchanged: epoll then looks at the socket anew, so an edge-triggered
 * source with bytes left is reported in a later batch. 0 or -errno. */
int io_source_set_io_events(IoSource *s, uint32_t events);
/* An io source leaves or rejoins the set; a deferred call is scheduled or cancelled. 0 or -errno. */
int io_source_set_enabled(IoSource *s, bool enabled);
bool io_source_get_enabled(const IoSource *s);
/* Disables and releases the source (NULL is fine); returns NULL. Does not close the fd. */
IoSource *io_source_free(IoSource *s);
