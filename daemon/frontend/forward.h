/* SPDX-License-Identifier: MIT */
#pragma once

/* The worker side of the front end: per worker, a bounded pool of keep-alive HTTP/1.1 connections over
 * the worker's Unix socket. A request is re-serialised by us (never the client's bytes): hop-by-hop
 * fields removed, Host from the authority, cookies joined (our sticky cookie taken out),
 * X-Forwarded-For / X-Forwarded-Proto / X-Request-Id, and the resolved user in X-Elastic-Pool-User
 * (a client's own copy of that field never passes). The response is parsed with http-parser, filtered
 * and streamed back through exchange_response_*().
 *
 * Contract notes (forward side, added with its implementation):
 * - The ResponseHead given to exchange_response_head() never carries framing fields (Content-Length,
 *   Transfer-Encoding): framing is has_body / has_content_length / content_length. For HEAD and 304,
 *   has_body is false and has_content_length/content_length say what the worker announced. close is
 *   always false (worker-side keep-alive is ours); the router sets it.
 * - Outcomes reach the router from the event loop, never from inside a forward_*() call (only
 *   forward_pool_free() fails its exchanges right away): e.g. a refused connect in forward_start()
 *   returns 0 and exchange_fail(x, 502, ...) follows on the next loop iteration. Every reason reads
 *   "w<worker_id> request <id>: <cause>"; it names no socket path.
 * - x->upstream is the forward side's; it is NULL once the exchange left the pool (response ended,
 *   failed, detached), and then forward_request_body()/forward_request_end() return -ENOTCONN.
 * - A WebSocket handshake (x->req.websocket) is sent as an HTTP/1.1 upgrade, without body framing. A
 *   101 to it is delivered as a head with status 101; from then on the connection is a tunnel: what the
 *   worker sends is response body as it comes (never parsed), request body is written as it is,
 *   forward_request_end() shuts our write side, the worker's EOF ends the response, no response timeout
 *   applies, and the connection is never reused nor counted against max_connections. A 101 to any other
 *   request is a 502. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "exchange.h"
#include "io-batch.h"
#include "latency.h"
#include "time-util.h"

typedef struct ForwardPool ForwardPool;

/* 0 in a numeric field means its default: 64 connections, 1024 queued, 60 s, 30 s, 0.5. */
typedef struct ForwardOptions {
        unsigned max_connections; /* per worker, WebSocket tunnels not counted */
        unsigned max_queued;      /* exchanges waiting for a free connection before 503 */
        double client_share;      /* (0, 1]: a client's share of the queue; freed connections go to the
                                     waiting client holding the fewest (slot-share.h) */
        usec_t response_timeout;  /* request sent (or last byte of it) to response head: 504 past it; also
                                     the longest wait in the queue, for a connect, for the worker to take
                                     request bytes, and between response body bytes (unless the client
                                     paused us) */
        usec_t idle_timeout;      /* idle pooled connections are closed after this; keep it below the
                                     worker's own keep-alive timeout */
        const char *cookie_name;  /* our sticky cookie, removed from the Cookie field sent on */
        unsigned worker_id;       /* for logs */
} ForwardOptions;

typedef struct ForwardCounters {
        uint64_t requests;       /* responses completed */
        uint64_t errors;         /* 5xx made by us (502/504) or aborted responses */
        usec_t busy_usec;        /* sum of exchange durations */
        LatencyHistogram latency; /* durations of the completed responses (those counted in requests) */
        unsigned inflight;       /* exchanges on this pool now (queued included) */
        unsigned connections;    /* open connections (tunnels included) */
        unsigned tunnels;        /* of which WebSocket tunnels: they do not count against max_connections */
        unsigned idle;           /* of which idle */
        /* for health (daemon/health.c): whether the worker answers at all */
        uint64_t answers;        /* response heads received (any status), cumulative */
        unsigned unanswered;     /* exchanges begun after the last answer that timed out (504) or could
                                    not connect (refused, no socket, queue full; not for want of our own
                                    descriptors): a slow worker under load answers some meanwhile */
} ForwardCounters;

/* 0 or -errno. The pool connects lazily; its connections are sources of `batch` (the front end's). */
int forward_pool_new(IoBatch *batch, const char *socket_path, const ForwardOptions *o, ForwardPool **ret);
/* Fails every exchange still on it (502 before a head, abort after) and frees. Accepts NULL. */
ForwardPool *forward_pool_free(ForwardPool *p);
/* Retiring: idle connections close now, busy ones after their current response; new exchanges are
 * refused with -ESHUTDOWN. */
void forward_pool_drain(ForwardPool *p);
/* Idle connections close now, before their idle timeout: a burst is over (frontend-trim.c) and their
 * buffers (80 KiB each) go back with the rest of its memory; the next requests open what they need.
 * Accepts NULL. */
void forward_pool_close_idle(ForwardPool *p);
const ForwardCounters *forward_pool_counters(const ForwardPool *p);
/* Exchanges waiting in p's queue for a free connection now. */
unsigned forward_pool_queued(const ForwardPool *p);

/* Sends x to the worker (or queues it for a free connection). 0, -ESHUTDOWN (draining), -EBUSY (queue
 * full), -EDQUOT (x's client, its peer address, has its share of the queue waiting already), -EBADMSG
 * (a byte in the head that must not reach a worker: CR, LF, NUL, controls, a non-token name), -EINVAL,
 * -errno; on an error nothing was sent and the caller answers the client. The user
 * resolved for x (x->user, NULL for a guest) goes in X-Elastic-Pool-User. */
int forward_start(ForwardPool *p, Exchange *x);
/* Request body pass-through, same convention as exchange_request_body(): 0, 1 over high-water (the
 * client side stops; x->client->request_body_resume(x) follows). Also -ENOTCONN (x left the pool: drop
 * the bytes), -EBADMSG (more than the Content-Length: the worker connection is closed and x left the
 * pool), -ENOBUFS (the client kept pushing far past high-water: these bytes were refused). */
int forward_request_body(Exchange *x, const void *data, size_t size);
/* 0; -EBADMSG when the body ended short of its Content-Length (the worker connection that got part of
 * it is closed, never reused, and x left the pool: answer the client yourself); -ENOTCONN. */
int forward_request_end(Exchange *x);
void forward_response_resume(Exchange *x);
/* The exchange goes away before its response ended: its connection is closed, never reused. */
void forward_detach(Exchange *x);
