/* SPDX-License-Identifier: MIT */
/* The worker side of the front end: per worker a pool of keep-alive HTTP/1.1 connections over its Unix
 * socket, and a queue of exchanges waiting for one. This file is the pool (queue, the one timer, the
 * deferred callouts) and the API of forward.h; forward-conn.c is one connection, forward-response.c the
 * response parser, forward-serialize.c the request head and the response field filter. Which waiting
 * exchange gets a connection that came free is slot-share.c's answer: the client holding the fewest
 * first, not the oldest request.
 *
 * Shape of the fast path (a keep-alive connection is idle): forward_start() takes the most recently
 * used idle connection, serialises the head into that connection's buffer and sends it with one
 * sendmsg(); the response is read into the connection's read buffer and handed to the router by
 * pointer. No allocation, no timer re-arm: one pool timer serves every deadline, checked lazily.
 * Re-entrancy: see forward-internal.h. */
#include <errno.h>
#include <http_parser.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cleanup.h"
#include "forward-internal.h"
#include "log.h"
#include "macro.h"

static void pool_destroy(ForwardPool *p);
static void pool_run_pending(ForwardPool *p);

void forward_pool_arm(ForwardPool *p, usec_t when) {
        if (p->dead || (p->timer_armed && p->timer_at <= when))
                return;
        if (sd_event_source_set_time(p->timer, when) < 0 ||
            sd_event_source_set_enabled(p->timer, SD_EVENT_ONESHOT) < 0) {
                log_warning("w%u: failed to arm the forward timer, deadlines may be late", p->o.worker_id);
                return;
        }
        p->timer_at = when;
        p->timer_armed = true;
}

static void pool_rearm(ForwardPool *p) {
        usec_t next = USEC_INFINITY;

        if (p->timed.head)
                next = MIN(next, container_of(p->timed.head, Connection, timed_link)->check_at);
        if (p->idle.tail)
                next = MIN(next, container_of(p->idle.tail, Connection, idle_link)->idle_since +
                                         p->o.idle_timeout);
        if (p->queue.head)
                next = MIN(next, container_of(p->queue.head, Waiter, link)->deadline);
        p->timer_armed = false;
        if (next == USEC_INFINITY)
                (void) sd_event_source_set_enabled(p->timer, SD_EVENT_OFF);
        else
                forward_pool_arm(p, next);
}

void forward_pool_pending_add(ForwardPool *p, Connection *c, unsigned what) {
        if (c->pending == 0) {
                list_insert_after(&p->pending, p->pending.tail, &c->pending_link);
                (void) io_source_set_enabled(p->defer, true);
        }
        c->pending |= what;
}

void forward_pool_pending_remove(ForwardPool *p, Connection *c) {
        if (c->pending == 0)
                return;
        list_remove(&p->pending, &c->pending_link);
        c->pending = 0;
}

static void waiter_free(Waiter *w) {
        free(w->data);
        free(w);
}

/* The exchange leaves the queue (detached, timed out, the pool goes): counters, no callout. */
static Exchange *waiter_drop(Waiter *w) {
        ForwardPool *p = w->up.pool;
        Exchange *x = w->up.x;

        slot_share_unqueue(&p->share, w->client, w->ready ? &w->share_link : NULL);
        list_remove(&p->queue, &w->link);
        x->upstream = NULL;
        p->counters.inflight--;
        p->counters.busy_usec += forward_pool_now(p) - w->up.started;
        waiter_free(w);
        return x;
}

/* Moves a ready exchange from the queue onto c (idle, or new without a socket). */
static void conn_take_waiter(Connection *c, Waiter *w) {
        ForwardPool *p = c->up.pool;
        Exchange *x = w->up.x;
        int r;

        slot_share_take(&p->share, w->client, &w->share_link);
        c->client = w->client;
        list_remove(&p->queue, &w->link);
        r = forward_conn_attach(c, x, w->up.started);
        if (r >= 0 && w->len > 0)
                r = forward_conn_body_feed(c, w->data, w->len, false);
        if (r >= 0 && w->body.ended && c->body.chunked)
                r = forward_conn_body_feed(c, NULL, 0, true);
        if (r < 0) {
                /* the head was checked when it was queued: only -ENOMEM gets here */
                c->up.x = x;
                x->upstream = &c->up;
                c->up.started = w->up.started;
                waiter_free(w);
                forward_conn_fail(c, 502, "out of memory queueing the request");
                return;
        }
        c->body.remaining = w->body.remaining;
        c->body.ended = w->body.ended;
        c->body_paused = w->paused;
        if (c->hold && c->body.ended)
                c->hold = false;
        waiter_free(w);
        forward_conn_start(c);
}

/* The ready exchange that gets the next free connection, or NULL. */
static Waiter *pool_next_waiter(ForwardPool *p) {
        ShareClient *client;
        ShareLink *l = slot_share_next(&p->share, &client);

        return l ? container_of(l, Waiter, share_link) : NULL;
}

void forward_pool_dispatch_queue(ForwardPool *p) {
        if (p->queue_busy) {
                p->queue_again = true;
                return;
        }
        p->queue_busy = true;
        do {
                p->queue_again = false;
                for (Waiter *w; !p->dead && (w = pool_next_waiter(p));) {
                        Connection *c;

                        if (p->idle.head) {
                                c = container_of(p->idle.head, Connection, idle_link);
                                list_remove(&p->idle, &c->idle_link);
                                p->counters.idle--;
                                c->state = CONN_ACTIVE;
                        } else if (p->counters.connections - p->counters.tunnels < p->o.max_connections) {
                                if (forward_conn_new(p, &c) < 0)
                                        break; /* it waits (and times out) */
                        } else
                                break;
                        conn_take_waiter(c, w);
                }
        } while (p->queue_again);
        p->queue_busy = false;
}

/* The response ended and the request was fully written: keep the socket for the next exchange. */
void forward_conn_recycle(Connection *c) {
        ForwardPool *p = c->up.pool;
        Waiter *w = pool_next_waiter(p);

        if (w) {
                c->state = CONN_ACTIVE;
                conn_take_waiter(c, w);
        } else if (p->draining)
                forward_conn_discard(c);
        else
                forward_conn_go_idle(c);
}

void forward_pool_enter(ForwardPool *p) {
        p->depth++;
}

void forward_pool_leave(ForwardPool *p) {
        if (p->depth == 1 && !p->dead)
                pool_run_pending(p);
        if (--p->depth == 0 && p->dead)
                pool_destroy(p);
}

static void pending_fail(Connection *c) {
        ForwardPool *p = c->up.pool;
        char reason[REASON_MAX];
        unsigned status = c->fail_status;
        Exchange *x;

        memcpy(reason, c->reason, sizeof(reason));
        x = forward_conn_release(c);
        c->state = CONN_CLOSED;
        if (c->dispatching == 0)
                forward_conn_destroy(c);
        if (x) {
                p->counters.errors++;
                exchange_fail(x, status, reason);
        }
}

static void pending_resume(Connection *c, unsigned what) {
        Exchange *x = c->up.x;

        forward_conn_hold(c);
        if ((what & PENDING_RESPONSE_RESUME) && forward_conn_still(c, x)) {
                c->last_activity = forward_pool_now(c->up.pool);
                /* what is buffered first, then the socket: the edge for its bytes came while paused */
                if (forward_conn_parse(c) && c->readable)
                        forward_conn_read(c);
                if (forward_conn_still(c, x))
                        forward_conn_timed_update(c);
        }
        if ((what & PENDING_REQUEST_RESUME) && forward_conn_still(c, x) && c->body_paused &&
            (c->write_broken || forward_conn_pending_out(c) < FORWARD_BODY_LOW_WATER)) {
                c->body_paused = false;
                if (x->client && x->client->request_body_resume)
                        x->client->request_body_resume(x);
        }
        forward_conn_unhold(c);
}

static void pool_run_pending(ForwardPool *p) {
        while (p->pending.head && !p->dead) {
                Connection *c = container_of(p->pending.head, Connection, pending_link);
                unsigned what = c->pending;

                forward_pool_pending_remove(p, c);
                if (what & PENDING_FAIL) {
                        if (c->state == CONN_FAILED)
                                pending_fail(c);
                } else
                        pending_resume(c, what);
        }
        if (!p->dead && !p->pending.head)
                (void) io_source_set_enabled(p->defer, false);
}

static void on_defer(IoSource *s, void *userdata) {
        ForwardPool *p = userdata;

        forward_pool_enter(p);
        forward_pool_leave(p); /* runs the pending list */
}

static void pool_expire_waiters(ForwardPool *p, usec_t now) {
        char span[32], reason[REASON_MAX];

        (void) format_timespan(span, sizeof(span), p->o.response_timeout);
        while (p->queue.head && !p->dead) {
                Waiter *w = container_of(p->queue.head, Waiter, link);
                Exchange *x;

                if (w->deadline > now)
                        break;
                x = waiter_drop(w);
                p->counters.errors++;
                (void) snprintf(reason, sizeof(reason),
                                "w%u request %s: no free connection to the worker within %s", p->o.worker_id,
                                x->id[0] ? x->id : "-", span);
                exchange_fail(x, 504, reason);
        }
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        ForwardPool *p = userdata;
        usec_t now = forward_pool_now(p);

        forward_pool_enter(p);
        p->timer_armed = false;
        while (p->timed.head && !p->dead) {
                Connection *c = container_of(p->timed.head, Connection, timed_link);
                usec_t d;

                if (c->check_at > now)
                        break;
                forward_conn_timed_remove(c);
                d = forward_conn_deadline(c);
                if (d == USEC_INFINITY)
                        continue;
                if (d > now)
                        forward_conn_timed_insert(c, d);
                else
                        forward_conn_timeout(c, now);
        }
        while (p->idle.tail && !p->dead) {
                Connection *c = container_of(p->idle.tail, Connection, idle_link);

                if (c->idle_since + p->o.idle_timeout > now)
                        break;
                forward_conn_discard(c);
        }
        pool_expire_waiters(p, now);
        if (!p->dead)
                pool_rearm(p);
        forward_pool_leave(p);
        return 0;
}

int forward_pool_new(IoBatch *batch, const char *socket_path, const ForwardOptions *o, ForwardPool **ret) {
        _cleanup_free_ ForwardPool *p = NULL;
        sd_event *event;
        size_t len;
        int r;

        if (!batch || !socket_path || !o || !ret)
                return -EINVAL;
        event = io_batch_get_event(batch);
        len = strlen(socket_path);
        if (len == 0 || len >= sizeof(p->addr.sun_path))
                return -EINVAL;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->addr.sun_family = AF_UNIX;
        memcpy(p->addr.sun_path, socket_path, len);
        if (socket_path[0] == '@') { /* abstract namespace */
                p->addr.sun_path[0] = 0;
                p->addr_len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len);
        } else
                p->addr_len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len + 1);

        p->o = *o;
        p->o.cookie_name = NULL;
        if (p->o.max_connections == 0)
                p->o.max_connections = DEFAULT_MAX_CONNECTIONS;
        if (p->o.max_queued == 0)
                p->o.max_queued = DEFAULT_MAX_QUEUED;
        if (p->o.response_timeout == 0)
                p->o.response_timeout = DEFAULT_RESPONSE_TIMEOUT;
        if (p->o.idle_timeout == 0)
                p->o.idle_timeout = DEFAULT_IDLE_TIMEOUT;
        if (!(p->o.client_share > 0 && p->o.client_share <= 1))
                p->o.client_share = DEFAULT_CLIENT_SHARE;
        if (o->cookie_name && o->cookie_name[0]) {
                p->cookie_name = strdup(o->cookie_name);
                if (!p->cookie_name)
                        return -ENOMEM;
                p->o.cookie_name = p->cookie_name;
        }

        r = slot_share_init(&p->share, p->o.max_connections, p->o.max_queued, p->o.client_share);
        if (r < 0) {
                free(p->cookie_name);
                return r;
        }
        r = sd_event_add_time(event, &p->timer, CLOCK_MONOTONIC, 0, USEC_PER_MSEC, on_timer, p);
        if (r >= 0)
                r = sd_event_source_set_enabled(p->timer, SD_EVENT_OFF);
        if (r >= 0)
                r = io_batch_add_defer(batch, &p->defer, on_defer, p);
        if (r < 0) {
                p->timer = sd_event_source_disable_unref(p->timer);
                p->defer = io_source_free(p->defer);
                slot_share_done(&p->share);
                free(p->cookie_name);
                return r;
        }
        p->event = sd_event_ref(event);
        p->batch = io_batch_ref(batch);
        *ret = TAKE_PTR(p);
        return 0;
}

static void pool_destroy(ForwardPool *p) {
        while (p->conns.head)
                forward_conn_destroy(container_of(p->conns.head, Connection, all_link));
        while (p->queue.head) {
                Waiter *w = container_of(p->queue.head, Waiter, link);
                list_remove(&p->queue, &w->link);
                waiter_free(w);
        }
        p->timer = sd_event_source_disable_unref(p->timer);
        p->defer = io_source_free(p->defer);
        sd_event_unref(p->event);
        slot_share_done(&p->share);
        io_batch_unref(p->batch);
        free(p->cookie_name);
        free(p);
}

static Connection *pool_first_with_exchange(ForwardPool *p) {
        for (Link *k = p->conns.head; k; k = k->next) {
                Connection *c = container_of(k, Connection, all_link);
                if (c->up.x)
                        return c;
        }
        return NULL;
}

ForwardPool *forward_pool_free(ForwardPool *p) {
        char reason[REASON_MAX];

        if (!p || p->dead)
                return NULL;
        p->dead = p->draining = true;
        (void) sd_event_source_set_enabled(p->timer, SD_EVENT_OFF);
        (void) io_source_set_enabled(p->defer, false);
        p->depth++; /* the router may call back into us from exchange_fail() */

        while (p->queue.head) {
                Exchange *x = waiter_drop(container_of(p->queue.head, Waiter, link));

                p->counters.errors++;
                (void) snprintf(reason, sizeof(reason), "w%u request %s: worker gone", p->o.worker_id,
                                x->id[0] ? x->id : "-");
                exchange_fail(x, 502, reason);
        }
        for (Connection *c; (c = pool_first_with_exchange(p));) {
                unsigned status = c->state == CONN_FAILED ? c->fail_status : 502;
                Exchange *x;

                if (c->state == CONN_FAILED)
                        memcpy(reason, c->reason, sizeof(reason));
                else
                        (void) snprintf(reason, sizeof(reason), "w%u request %s: worker gone",
                                        p->o.worker_id, c->up.x->id[0] ? c->up.x->id : "-");
                forward_conn_unlink(c);
                forward_conn_close_fd(c);
                c->state = CONN_CLOSED;
                x = forward_conn_release(c);
                p->counters.errors++;
                exchange_fail(x, status, reason);
        }
        for (Link *k = p->conns.head; k; k = k->next) {
                Connection *c = container_of(k, Connection, all_link);
                forward_conn_unlink(c);
                forward_conn_close_fd(c);
                c->state = CONN_CLOSED;
        }

        if (--p->depth == 0)
                pool_destroy(p);
        return NULL;
}

void forward_pool_close_idle(ForwardPool *p) {
        if (!p)
                return;
        while (p->idle.head)
                forward_conn_discard(container_of(p->idle.head, Connection, idle_link));
}

void forward_pool_drain(ForwardPool *p) {
        if (!p || p->draining)
                return;
        p->draining = true;
        forward_pool_close_idle(p);
}

const ForwardCounters *forward_pool_counters(const ForwardPool *p) {
        return &p->counters;
}

unsigned forward_pool_queued(const ForwardPool *p) {
        return (unsigned) p->queue.n;
}

void forward_pool_buffer_stats(const ForwardPool *p, ForwardBufferStats *ret) {
        *ret = p->stats;
}

/* A free connection for x, its client's share counted. */
static int start_on_connection(ForwardPool *p, Exchange *x, ShareClient *client, usec_t now) {
        Connection *c;
        bool idle = p->idle.head;
        int r;

        if (idle)
                c = container_of(p->idle.head, Connection, idle_link);
        else {
                r = forward_conn_new(p, &c);
                if (r < 0)
                        return r;
        }
        r = forward_conn_attach(c, x, now);
        if (r < 0) {
                c->up.x = NULL;
                x->upstream = NULL;
                if (!idle)
                        forward_conn_destroy(c);
                return r;
        }
        if (idle) {
                list_remove(&p->idle, &c->idle_link);
                p->counters.idle--;
        }
        slot_share_hold(&p->share, client);
        c->client = client;
        p->counters.inflight++;
        forward_conn_start(c);
        return 0;
}

/* Nothing left to wait for but a connection: its body began (or there is none to wait for). */
static bool waiter_is_ready(const Waiter *w) {
        return !w->body.expected || w->body.tunnel || w->body.ended || w->len > 0;
}

static void waiter_set_ready(Waiter *w) {
        w->ready = true;
        slot_share_ready(&w->up.pool->share, w->client, &w->share_link);
}

static int start_queued(ForwardPool *p, Exchange *x, ShareClient *client, usec_t now) {
        Waiter *w;
        size_t len;
        int r;

        if (p->queue.n >= p->o.max_queued)
                return -EBUSY;
        if (!slot_share_may_queue(&p->share, client))
                return -EDQUOT;
        /* checked now so that a queued request cannot fail later on its own bytes */
        r = forward_request_serialize(x, p->cookie_name, NULL, 0, &len);
        if (r < 0)
                return r;
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->up = (Upstream) { .kind = UPSTREAM_WAITER, .pool = p, .x = x, .started = now };
        w->deadline = now + p->o.response_timeout;
        w->body = forward_body_of(&x->req);
        w->client = client;
        slot_share_queue(&p->share, client);
        if (waiter_is_ready(w))
                waiter_set_ready(w);
        list_insert_after(&p->queue, p->queue.tail, &w->link);
        x->upstream = &w->up;
        p->counters.inflight++;
        forward_pool_arm(p, w->deadline);
        return 0;
}

int forward_start(ForwardPool *p, Exchange *x) {
        ShareClient *client;
        ShareKey key;
        usec_t now;
        int r;

        if (!p || !x)
                return -EINVAL;
        if (p->dead || p->draining)
                return -ESHUTDOWN;
        if (x->upstream)
                return -EALREADY;
        now = forward_pool_now(p);

        /* a trusted proxy brings everybody from one address: each of its connections is a client */
        share_key_from_peer(&x->peer, x->peer_trusted, &key);
        r = slot_share_client(&p->share, &key, &client);
        if (r < 0)
                return r;
        if (slot_share_ready_count(&p->share) == 0 &&
            (p->idle.head || p->counters.connections - p->counters.tunnels < p->o.max_connections))
                r = start_on_connection(p, x, client, now);
        else
                r = start_queued(p, x, client, now);
        if (r < 0)
                slot_share_put(&p->share, client);
        return r;
}

/* The body of a waiting exchange began or ended: it may take a connection now. Last in the calls that
 * do it: w may be gone after. */
static void waiter_body_progress(Waiter *w) {
        if (w->ready || !waiter_is_ready(w))
                return;
        waiter_set_ready(w);
        forward_pool_dispatch_queue(w->up.pool);
}

static int waiter_body(Waiter *w, const void *data, size_t size) {
        int r;

        if (!w->body.expected || w->body.ended)
                return -EINVAL;
        if (size == 0)
                return 0;
        if (!w->body.chunked && !w->body.tunnel && size > w->body.remaining) {
                (void) waiter_drop(w);
                return -EBADMSG;
        }
        if (w->len + size > FORWARD_BODY_HARD_LIMIT)
                return -ENOBUFS;
        if (w->len + size > w->cap) {
                size_t cap = MAX(w->len + size, MAX(w->cap * 2, (size_t) OUT_INITIAL));
                char *n = realloc(w->data, cap);
                if (!n)
                        return -ENOMEM;
                w->data = n;
                w->cap = cap;
        }
        memcpy(w->data + w->len, data, size);
        w->len += size;
        if (!w->body.chunked && !w->body.tunnel && (w->body.remaining -= size) == 0)
                w->body.ended = true;
        if (w->len > FORWARD_BODY_HIGH_WATER)
                w->paused = true;
        r = w->paused;
        waiter_body_progress(w);
        return r;
}

int forward_request_body(Exchange *x, const void *data, size_t size) {
        Upstream *u = x ? x->upstream : NULL;
        Connection *c;
        int r;

        if (!u)
                return -ENOTCONN;
        if (u->kind == UPSTREAM_WAITER)
                return waiter_body(container_of(u, Waiter, up), data, size);

        c = container_of(u, Connection, up);
        if (c->state == CONN_FAILED)
                return -ENOTCONN;
        if (!c->body.expected || c->body.ended)
                return -EINVAL;
        if (size == 0)
                return 0;
        if (!c->body.chunked && !c->body.tunnel && size > c->body.remaining) {
                forward_conn_abandon(c);
                return -EBADMSG;
        }
        if (forward_conn_pending_out(c) + size > FORWARD_BODY_HARD_LIMIT)
                return -ENOBUFS;
        if (!c->body.chunked && !c->body.tunnel && (c->body.remaining -= size) == 0)
                c->body.ended = true;
        r = forward_conn_body_feed(c, data, size, false);
        if (r < 0) {
                forward_conn_abandon(c);
                return r;
        }
        if (c->hold && c->body.ended)
                c->hold = false;
        forward_conn_flush(c);
        if (forward_conn_pending_out(c) > FORWARD_BODY_HIGH_WATER && !(c->write_broken && !c->retain)) {
                c->body_paused = true;
                return 1;
        }
        return 0;
}

int forward_request_end(Exchange *x) {
        Upstream *u = x ? x->upstream : NULL;
        Connection *c;
        int r;

        if (!u)
                return -ENOTCONN;
        if (u->kind == UPSTREAM_WAITER) {
                Waiter *w = container_of(u, Waiter, up);
                if (w->body.expected && !w->body.chunked && !w->body.tunnel && !w->body.ended) {
                        (void) waiter_drop(w);
                        return -EBADMSG;
                }
                w->body.ended = true;
                waiter_body_progress(w);
                return 0;
        }

        c = container_of(u, Connection, up);
        if (c->state == CONN_FAILED)
                return -ENOTCONN;
        if (c->body.ended)
                return 0;
        if (c->body.tunnel) {
                c->body.ended = true;
                forward_conn_flush(c);
                return 0;
        }
        if (!c->body.chunked) {
                /* short of its Content-Length: what the worker got is a truncated request */
                forward_conn_abandon(c);
                return -EBADMSG;
        }
        c->body.ended = true;
        r = forward_conn_body_feed(c, NULL, 0, true);
        if (r < 0) {
                forward_conn_abandon(c);
                return r;
        }
        forward_conn_flush(c);
        return 0;
}

void forward_response_resume(Exchange *x) {
        Upstream *u = x ? x->upstream : NULL;
        Connection *c;

        if (!u || u->kind != UPSTREAM_CONNECTION)
                return;
        c = container_of(u, Connection, up);
        if (c->state != CONN_ACTIVE || !c->response_paused)
                return;
        c->response_paused = false;
        /* not from here: the client side called us from its own write path */
        forward_pool_pending_add(c->up.pool, c, PENDING_RESPONSE_RESUME);
}

void forward_detach(Exchange *x) {
        Upstream *u = x ? x->upstream : NULL;
        Connection *c;

        if (!u)
                return;
        if (u->kind == UPSTREAM_WAITER) {
                (void) waiter_drop(container_of(u, Waiter, up));
                return;
        }
        c = container_of(u, Connection, up);
        if (c->state == CONN_FAILED) {
                (void) forward_conn_release(c);
                c->state = CONN_CLOSED;
                forward_pool_pending_remove(c->up.pool, c);
                if (c->dispatching == 0 && !c->up.pool->dead)
                        forward_conn_destroy(c);
                return;
        }
        forward_conn_abandon(c);
}
