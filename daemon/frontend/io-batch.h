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
 * over: a handler may end another connection whose event is later in the same batch. */

#include <stdbool.h>
#include <stdint.h>
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

typedef struct IoBatchStats {
        uint64_t wakeups;   /* dispatches of the inner set */
        uint64_t events;    /* ready sockets those returned */
        uint64_t deferred;  /* deferred calls run */
        unsigned largest;   /* the most ready sockets one wake-up took */
} IoBatchStats;

/* The batch of one loop; its sources keep it alive (the owner's unref may come before theirs). 0 or
 * -errno. */
int io_batch_new(sd_event *event, IoBatch **ret);
IoBatch *io_batch_ref(IoBatch *b);
/* Returns NULL. The last reference disables the loop's source and closes the set. */
IoBatch *io_batch_unref(IoBatch *b);
sd_event *io_batch_get_event(IoBatch *b);
IoBatchStats io_batch_get_stats(const IoBatch *b);
/* The loop's time of this iteration (CLOCK_MONOTONIC, us), read once per dispatch of the batch; outside
 * one, sd_event_now()'s. */
uint64_t io_batch_now(const IoBatch *b);

/* fd into the set with `events` (EPOLLET as the caller asks), enabled. 0 or -errno (epoll_ctl's). */
int io_batch_add_io(IoBatch *b, IoSource **ret, int fd, uint32_t events, io_batch_io_handler_t cb,
                    void *userdata);
/* A deferred call, off until enabled; enabled, it runs once (then it is off again) after the ready sockets
 * of the current batch, or from the loop's next iteration when enabled outside a batch. 0 or -ENOMEM. */
int io_batch_add_defer(IoBatch *b, IoSource **ret, io_batch_defer_handler_t cb, void *userdata);

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
