/* SPDX-License-Identifier: MIT */
/* One connection to a worker: connect (with EAGAIN back-off on a full accept backlog), the request bytes
 * (head serialised into the connection's buffer, body written through or buffered up to the high-water
 * mark, re-chunked when its length is unknown), the one replay of a request on a fresh connection when a
 * kept-alive one turns out to be dead, deadlines, and failure. */
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

/* EPOLLOUT only while a write waits for room: a Unix socket wakes EPOLLOUT watchers each time its peer
 * reads, so watching it always would cost a dispatch per request (the worker reading our request) for
 * nothing. Changing the mask re-polls the socket, so an EPOLLOUT that is already true is not lost. */
static bool conn_wants_out(const Connection *c) {
        switch (c->state) {
        case CONN_CONNECTING:
                return c->retry_at == 0; /* EINPROGRESS */
        case CONN_ACTIVE:
                return c->write_blocked && forward_conn_pending_out(c) > 0 && c->connected && !c->hold &&
                       !c->write_broken;
        default:
                return false;
        }
}

void forward_conn_update_io(Connection *c) {
        uint32_t events = EPOLLIN | EPOLLRDHUP | EPOLLET;

        if (!c->io)
                return;
        if (conn_wants_out(c))
                events |= EPOLLOUT;
        if (events != c->io_events && io_source_set_io_events(c->io, events) >= 0)
                c->io_events = events;
}

/* Stopped reading with bytes left, for fairness: setting the edge-triggered mask again (the batch never
 * skips that) makes epoll look at the socket anew and report it with the next batch, in turn with every
 * other source, as a level-triggered source would be. */
void forward_conn_read_later(Connection *c) {
        int r = c->io ? io_source_set_io_events(c->io, c->io_events) : 0;

        if (r < 0)
                forward_conn_lost(c, r, "watching the connection failed");
}

/* The real deadline of what the connection waits for, USEC_INFINITY when it waits on the client. */
usec_t forward_conn_deadline(const Connection *c) {
        usec_t t = c->up.pool->o.response_timeout;

        switch (c->state) {
        case CONN_CONNECTING:
                return c->retry_at != 0 ? MIN(c->retry_at, c->connect_deadline) : c->connect_deadline;
        case CONN_ACTIVE:
                if (c->tunnel)
                        return USEC_INFINITY; /* the tunnel's own idle timeout (tunnel.c) */
                if (c->head_done)
                        return c->response_paused ? USEC_INFINITY : c->last_activity + t;
                if (c->request_done || c->write_broken)
                        return c->sent_at + t;
                if (forward_conn_pending_out(c) > 0 && c->connected && !c->hold)
                        return c->last_activity + t; /* the worker is not reading the request */
                return USEC_INFINITY;
        default:
                return USEC_INFINITY;
        }
}

void forward_conn_timed_remove(Connection *c) {
        if (!c->in_timed)
                return;
        list_remove(&c->up.pool->timed, &c->timed_link);
        c->in_timed = false;
}

void forward_conn_timed_insert(Connection *c, usec_t when) {
        ForwardPool *p = c->up.pool;
        Link *after = p->timed.tail;

        /* almost always appended: every deadline is "now + the same timeout" */
        while (after && container_of(after, Connection, timed_link)->check_at > when)
                after = after->prev;
        c->check_at = when;
        list_insert_after(&p->timed, after, &c->timed_link);
        c->in_timed = true;
        forward_pool_arm(p, when);
}

/* Deadlines only move later through activity, so an earlier check already scheduled suffices: the
 * timer re-reads the real deadline when it gets there. */
void forward_conn_timed_update(Connection *c) {
        usec_t d = forward_conn_deadline(c);

        if (d == USEC_INFINITY || (c->in_timed && c->check_at <= d))
                return;
        forward_conn_timed_remove(c);
        forward_conn_timed_insert(c, d);
}

void forward_conn_close_fd(Connection *c) {
        ForwardPool *p = c->up.pool;

        c->io = io_source_free(c->io);
        c->io_events = 0;
        c->readable = c->rdhup = c->write_blocked = false;
        c->read_error = 0;
        if (c->tunnel) {
                p->counters.tunnels--;
                c->tunnel = false;
        }
        if (c->fd >= 0) {
                c->fd = safe_close(c->fd);
                p->counters.connections--;
        }
        c->connected = false;
}

void forward_conn_unlink(Connection *c) {
        ForwardPool *p = c->up.pool;

        if (c->state == CONN_IDLE) {
                list_remove(&p->idle, &c->idle_link);
                p->counters.idle--;
        }
        forward_conn_timed_remove(c);
        forward_pool_pending_remove(p, c);
}

void forward_conn_destroy(Connection *c) {
        ForwardPool *p = c->up.pool;

        forward_conn_unlink(c);
        forward_conn_close_fd(c);
        list_remove(&p->conns, &c->all_link);
        free(c->out);
        free(c->in);
        free(c);
}

/* Closes the socket for good; the struct goes once no handler holds it. */
void forward_conn_discard(Connection *c) {
        forward_conn_unlink(c);
        forward_conn_close_fd(c);
        c->state = CONN_CLOSED;
        if (c->dispatching == 0 && !c->up.pool->dead)
                forward_conn_destroy(c);
}

void forward_conn_hold(Connection *c) {
        c->dispatching++;
}

void forward_conn_unhold(Connection *c) {
        if (--c->dispatching == 0 && c->state == CONN_CLOSED && !c->up.pool->dead)
                forward_conn_destroy(c);
}

int forward_conn_new(ForwardPool *p, Connection **ret) {
        _cleanup_free_ Connection *c = NULL;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->in = malloc(FORWARD_RESPONSE_HEAD_MAX);
        c->out = malloc(OUT_INITIAL);
        if (!c->in || !c->out) {
                free(c->in);
                free(c->out);
                return -ENOMEM;
        }
        c->out_cap = OUT_INITIAL;
        c->fd = -EBADF;
        c->up = (Upstream) { .kind = UPSTREAM_CONNECTION, .pool = p };
        c->state = CONN_CONNECTING;
        list_insert_after(&p->conns, p->conns.tail, &c->all_link);
        *ret = TAKE_PTR(c);
        return 0;
}

/* The exchange on c no longer counts against its client's share (it left, or became a tunnel). */
void forward_conn_share_release(Connection *c) {
        if (!c->client)
                return;
        slot_share_release(&c->up.pool->share, c->client);
        c->client = NULL;
}

/* The exchange leaves the connection (completed, failed, or gone): counters, no callout. */
Exchange *forward_conn_release(Connection *c) {
        ForwardPool *p = c->up.pool;
        Exchange *x = c->up.x;

        if (!x)
                return NULL;
        forward_conn_share_release(c);
        x->upstream = NULL;
        c->up.x = NULL;
        p->counters.inflight--;
        p->counters.busy_usec += forward_pool_now(p) - c->up.started;
        if (!(c->pending & PENDING_FAIL))
                forward_pool_pending_remove(p, c); /* resumes meant for x must not reach the next one */
        return x;
}

static void conn_format_reason(Connection *c, const char *format, va_list ap) _printf_(2, 0);
static void conn_format_reason(Connection *c, const char *format, va_list ap) {
        const Exchange *x = c->up.x;
        int n;

        n = snprintf(c->reason, sizeof(c->reason), "w%u request %s: ", c->up.pool->o.worker_id,
                     x && x->id[0] ? x->id : "-");
        if (n < 0 || (size_t) n >= sizeof(c->reason))
                return;
        (void) vsnprintf(c->reason + n, sizeof(c->reason) - (size_t) n, format, ap);
}

/* The exchange on c fails with status (before a head) or is aborted (after one). The socket closes now;
 * the router hears it from the pending list, so this is safe in any context. */
void forward_conn_fail(Connection *c, unsigned status, const char *format, ...) {
        ForwardPool *p = c->up.pool;
        va_list ap;

        if (!c->up.x) {
                forward_conn_discard(c);
                forward_pool_dispatch_queue(p);
                return;
        }
        va_start(ap, format);
        conn_format_reason(c, format, ap);
        va_end(ap);
        log_debug("Forward failed: %s", c->reason);

        forward_conn_unlink(c);
        forward_conn_close_fd(c);
        c->state = CONN_FAILED;
        c->fail_status = status;
        forward_pool_pending_add(p, c, PENDING_FAIL);
        forward_pool_dispatch_queue(p); /* a slot came free */
}

/* The exchange goes away without a callout (detach, a client-side error): never reuse the socket. */
void forward_conn_abandon(Connection *c) {
        ForwardPool *p = c->up.pool;

        (void) forward_conn_release(c);
        forward_conn_discard(c);
        forward_pool_dispatch_queue(p);
}

static int conn_out_reserve(Connection *c, size_t extra) {
        ForwardPool *p = c->up.pool;
        size_t need, cap;
        char *n;

        if (!c->retain && c->out_off > 0 && c->out_len + extra > c->out_cap) {
                memmove(c->out, c->out + c->out_off, forward_conn_pending_out(c));
                c->out_len -= c->out_off;
                c->out_off = 0;
        }
        need = c->out_len + extra;
        if (need > c->out_cap) {
                cap = MAX(need, c->out_cap * 2);
                n = realloc(c->out, cap);
                if (!n)
                        return -ENOMEM;
                c->out = n;
                c->out_cap = cap;
        }
        /* what is really queued for the worker (already sent bytes before out_off do not count) */
        p->stats.request_buffer_peak =
                MAX(p->stats.request_buffer_peak, forward_conn_pending_out(c) + extra);
        return 0;
}

void forward_conn_stop_retain(Connection *c) {
        if (!c->retain)
                return;
        c->retain = false;
        if (c->out_off == c->out_len)
                c->out_off = c->out_len = 0;
}

/* A send that takes less than offered leaves the socket full (a stream socket takes what fits): no more
 * tries until EPOLLOUT says there is room. One buffer (a request head, mostly) goes with send(): sendmsg()
 * costs the kernel a copy of the message header and of the vector on top. */
static int conn_send(Connection *c, struct iovec *iov, size_t n_iov, size_t *ret_sent) {
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = n_iov };
        size_t total = 0;

        for (size_t i = 0; i < n_iov; i++)
                total += iov[i].iov_len;
        for (;;) {
                ssize_t k = n_iov == 1 ? send(c->fd, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL | MSG_DONTWAIT)
                                       : sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k >= 0) {
                        *ret_sent = (size_t) k;
                        c->write_blocked = (size_t) k < total;
                        c->last_activity = forward_pool_now(c->up.pool);
                        return 0;
                }
                if (errno == EINTR)
                        continue;
                if (errno == EAGAIN) {
                        *ret_sent = 0;
                        c->write_blocked = true;
                        return 0;
                }
                return -errno;
        }
}

/* The worker stopped taking the request (EPIPE, reset). Its response or its EOF, which the read side
 * will see, decides what happens to the exchange. */
static void conn_write_failed(Connection *c, int error) {
        log_debug("w%u: worker stopped taking the request: %s", c->up.pool->o.worker_id,
                  forward_errstr(error));
        c->write_broken = true;
        if (!c->request_done)
                c->sent_at = forward_pool_now(c->up.pool);
}

static void conn_check_done(Connection *c) {
        if (c->body.tunnel) {
                /* the handshake is all of the request: the response timeout runs once it is out */
                if (!c->request_done && !c->head_done && c->connected && forward_conn_pending_out(c) == 0) {
                        c->request_done = true;
                        c->sent_at = forward_pool_now(c->up.pool);
                }
                return;
        }
        if (c->request_done || !c->body.ended || c->hold || !c->connected || forward_conn_pending_out(c) > 0)
                return;
        c->request_done = true;
        c->sent_at = forward_pool_now(c->up.pool);
}

static void conn_check_resume(Connection *c) {
        if (c->body_paused && (c->write_broken || forward_conn_pending_out(c) < FORWARD_BODY_LOW_WATER))
                forward_pool_pending_add(c->up.pool, c, PENDING_REQUEST_RESUME);
}

static bool conn_may_send(const Connection *c) {
        return c->state == CONN_ACTIVE && c->connected && !c->hold && !c->write_broken && !c->write_blocked &&
               forward_conn_pending_out(c) > 0;
}

static void conn_sent(Connection *c, ssize_t result, size_t offered) {
        if (result >= 0) {
                c->out_off += (size_t) result;
                c->write_blocked = (size_t) result < offered;
                c->last_activity = forward_pool_now(c->up.pool);
        } else if (result == -EAGAIN)
                c->write_blocked = true;
        else
                conn_write_failed(c, (int) result);
        if (c->out_off == c->out_len && !c->retain)
                c->out_off = c->out_len = 0;
}

/* What follows a write, or a flush that had nothing to write yet. */
static void conn_after_flush(Connection *c) {
        if (c->state != CONN_ACTIVE)
                return;
        if (c->tunnel && c->body.ended && !c->shut_wr && forward_conn_pending_out(c) == 0) {
                /* the client's side ended: the worker reads EOF, and closes its side in turn */
                c->shut_wr = true;
                (void) shutdown(c->fd, SHUT_WR);
        }
        conn_check_done(c);
        conn_check_resume(c);
        forward_conn_update_io(c);
        forward_conn_timed_update(c);
}

/* The request bytes go out with the batch's flush (io-batch.h), together with every other socket's
 * writes of the same wake-up: one io_uring_enter() for all of them where the kernel has io_uring. */
static bool conn_send_prepare(IoSource *s, struct iovec *ret, void *userdata) {
        Connection *c = userdata;

        if (!conn_may_send(c))
                return false;
        *ret = (struct iovec) { .iov_base = c->out + c->out_off, .iov_len = forward_conn_pending_out(c) };
        c->offered = ret->iov_len;
        return true;
}

static void conn_send_done(IoSource *s, ssize_t result, void *userdata) {
        Connection *c = userdata;
        ForwardPool *p = c->up.pool;

        forward_pool_enter(p);
        forward_conn_hold(c);
        conn_sent(c, result, c->offered);
        conn_after_flush(c);
        forward_conn_unhold(c);
        forward_pool_leave(p);
}

void forward_conn_flush(Connection *c) {
        if (conn_may_send(c) && io_source_want_send(c->io) < 0) {
                /* not watched (cannot be once connected): the one write at once */
                struct iovec iov = { .iov_base = c->out + c->out_off, .iov_len = forward_conn_pending_out(c) };
                size_t sent;
                int r = conn_send(c, &iov, 1, &sent);

                conn_sent(c, r < 0 ? r : (ssize_t) sent, iov.iov_len);
        }
        conn_after_flush(c);
}

/* Frames and queues or writes body bytes. Takes all of them (copying what the socket did not take). */
int forward_conn_body_feed(Connection *c, const void *data, size_t size, bool last_chunk) {
        char hdr[24];
        struct iovec iov[3];
        size_t n = 0, total = 0;
        int r;

        if (c->body.chunked) {
                if (last_chunk) {
                        iov[n++] = (struct iovec) { .iov_base = (char *) "0\r\n\r\n", .iov_len = 5 };
                } else {
                        int k = snprintf(hdr, sizeof(hdr), "%zx\r\n", size);
                        iov[n++] = (struct iovec) { .iov_base = hdr, .iov_len = (size_t) k };
                }
        }
        if (size > 0)
                iov[n++] = (struct iovec) { .iov_base = (void *) data, .iov_len = size };
        if (c->body.chunked && !last_chunk)
                iov[n++] = (struct iovec) { .iov_base = (char *) "\r\n", .iov_len = 2 };
        for (size_t i = 0; i < n; i++)
                total += iov[i].iov_len;

        if (c->retain && c->out_len + total > FORWARD_REPLAY_MAX)
                forward_conn_stop_retain(c);
        if (c->write_broken && !c->retain)
                return 0; /* nobody reads it any more */

        if (!c->retain && c->state == CONN_ACTIVE && c->connected && !c->hold && !c->write_broken &&
            !c->write_blocked && forward_conn_pending_out(c) == 0) {
                size_t sent;

                r = conn_send(c, iov, n, &sent);
                if (r < 0) {
                        conn_write_failed(c, r);
                        return 0;
                }
                for (size_t i = 0; i < n && sent > 0; i++) {
                        size_t k = MIN(sent, iov[i].iov_len);
                        iov[i].iov_base = (char *) iov[i].iov_base + k;
                        iov[i].iov_len -= k;
                        sent -= k;
                        total -= k;
                }
        }
        if (total == 0)
                return 0;

        r = conn_out_reserve(c, total);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                memcpy(c->out + c->out_len, iov[i].iov_base, iov[i].iov_len);
                c->out_len += iov[i].iov_len;
        }
        return 0;
}

Body forward_body_of(const RequestHead *h) {
        if (h->websocket)
                return (Body) { .expected = true, .tunnel = true };

        Body b = {
                .expected = h->has_body && !(h->has_content_length && h->content_length == 0),
                .chunked = h->has_body && !h->has_content_length,
                .remaining = h->has_content_length ? h->content_length : 0,
        };
        b.ended = !b.expected;
        return b;
}

/* Puts x on c: per-exchange state reset, head serialised into c's buffer (nothing sent yet). */
int forward_conn_attach(Connection *c, Exchange *x, usec_t started) {
        ForwardPool *p = c->up.pool;
        size_t len;
        int r;

        r = forward_request_serialize(x, p->cookie_name, c->out, c->out_cap, &len);
        if (r < 0)
                return r;
        if (len > c->out_cap) {
                char *n = realloc(c->out, len);
                if (!n)
                        return -ENOMEM;
                c->out = n;
                c->out_cap = len;
                r = forward_request_serialize(x, p->cookie_name, c->out, c->out_cap, &len);
                if (r < 0)
                        return r;
        }
        p->stats.request_buffer_peak = MAX(p->stats.request_buffer_peak, len);
        c->out_len = len;
        c->out_off = 0;

        c->up.x = x;
        c->up.started = started;
        x->upstream = &c->up;
        x->on_worker = true;
        c->body = forward_body_of(&x->req);
        c->reused = c->served > 0;
        c->retried = false;
        c->retain = c->reused; /* only a reused connection may be retried: no copies on fresh ones */
        c->hold = c->body.expected && !c->body.chunked && !c->body.tunnel &&
                  c->body.remaining <= FORWARD_COALESCE_MAX;
        c->body_paused = c->write_broken = c->request_done = false;
        c->response_started = c->head_done = c->response_paused = c->skip_body = c->interim = false;
        c->shut_wr = false;
        c->status = 0;
        c->body_bytes = 0;
        c->last_activity = started;

        http_parser_init(&c->parser, HTTP_RESPONSE);
        c->parser.data = c;
        c->in_len = c->in_parsed = c->head_start = 0;
        c->n_hf = 0;
        c->hf_value = false;
        c->ev = EV_NONE;
        c->parse_error = NULL;
        return 0;
}

void forward_conn_connected(Connection *c) {
        c->connected = true;
        c->retry_at = 0;
        c->state = CONN_ACTIVE;
        forward_conn_flush(c);
}

const IoSourceOps forward_conn_io_ops = {
        .read_prepare = forward_conn_read_prepare,
        .read_done = forward_conn_read_done,
        .send_prepare = conn_send_prepare,
        .send_done = conn_send_done,
};

/* Adds the socket to the loop, once: after connect() succeeded or is in progress, never before (an
 * unconnected stream socket polls as EPOLLHUP, which an edge-triggered watch would report at once). */
static int conn_watch(Connection *c, uint32_t events) {
        int r;

        if (c->io)
                return 0;
        r = io_batch_add_io(c->up.pool->batch, &c->io, c->fd, events, forward_conn_on_io, c);
        if (r < 0)
                return r;
        io_source_set_ops(c->io, &forward_conn_io_ops);
        c->io_events = events;
        /* Worker sockets before client sockets and the client sides' deferred flushes: the responses the
         * workers have ready are all handed over first, and an h2 connection sends the ones that completed
         * together in one write. */
        io_source_set_first(c->io, true);
        return 0;
}

static int conn_try_connect(Connection *c) {
        ForwardPool *p = c->up.pool;
        int r;

        for (;;) {
                p->stats.connects++;
                if (connect(c->fd, (const struct sockaddr *) &p->addr, p->addr_len) == 0) {
                        r = conn_watch(c, EPOLLIN | EPOLLRDHUP | EPOLLET);
                        if (r < 0)
                                return r;
                        forward_conn_connected(c);
                        return 0;
                }
                if (errno == EINTR)
                        continue;
                break;
        }
        if (errno == EINPROGRESS) {
                c->retry_at = 0;
                r = conn_watch(c, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
                if (r < 0)
                        return r;
                forward_conn_update_io(c);
                forward_conn_timed_update(c);
                return 0;
        }
        if (errno == EAGAIN) {
                usec_t now = forward_pool_now(p);

                if (now >= c->connect_deadline)
                        return -EAGAIN;
                c->backoff = c->backoff == 0 ? CONNECT_RETRY_MIN : MIN(c->backoff * 2, CONNECT_RETRY_MAX);
                c->retry_at = now + c->backoff;
                forward_conn_update_io(c);
                forward_conn_timed_remove(c);
                forward_conn_timed_insert(c, MIN(c->retry_at, c->connect_deadline));
                return 0;
        }
        return -errno;
}

static int conn_connect(Connection *c) {
        ForwardPool *p = c->up.pool;
        int fd;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        c->fd = fd;
        c->state = CONN_CONNECTING;
        c->connected = false;
        c->served = 0;
        c->retry_at = c->backoff = 0;
        c->connect_deadline = forward_pool_now(p) + p->o.response_timeout;
        p->counters.connections++;
        return conn_try_connect(c);
}

/* A fresh or idle connection with an exchange attached: connect or send. */
void forward_conn_start(Connection *c) {
        int r;

        if (c->connected) {
                c->state = CONN_ACTIVE;
                forward_conn_flush(c);
                return;
        }
        r = conn_connect(c);
        if (r < 0)
                forward_conn_connect_failed(c, r);
        if (r == -EAGAIN)
                forward_conn_fail(c, 504, "worker socket backlog full");
        else if (r < 0)
                forward_conn_fail(c, 502, "connect failed: %s", forward_errstr(r));
}

/* A reused keep-alive connection died before any response byte and the request is still whole in our
 * buffer: the worker closed it while idle, or as we wrote. Replay once on a fresh connection (when
 * conn_replay_safe() says so). */
static void conn_retry(Connection *c) {
        ForwardPool *p = c->up.pool;
        int r;

        log_debug("w%u request %s: kept-alive connection was closed by the worker, retrying on a new one",
                  p->o.worker_id, c->up.x->id);
        p->stats.retries++;
        forward_conn_timed_remove(c);
        forward_conn_close_fd(c);
        c->retried = true;
        c->reused = false;
        c->out_off = 0;
        c->write_broken = c->request_done = false;
        c->response_started = false;
        http_parser_init(&c->parser, HTTP_RESPONSE);
        c->parser.data = c;
        c->in_len = c->in_parsed = c->head_start = 0;
        c->n_hf = 0;
        c->hf_value = false;
        r = conn_connect(c);
        if (r < 0) {
                forward_conn_connect_failed(c, r);
                forward_conn_fail(c, 502, "reconnect after a closed keep-alive connection failed: %s",
                                  forward_errstr(r));
        }
}

/* Sending the request again cannot repeat an effect (RFC 9110 9.2.2): the worker got none of it, or its
 * method is idempotent. A worker that read a POST whole and then closed may have acted on it, so that
 * one is answered 502, never replayed (nginx's and Go's rule). */
static bool conn_replay_safe(const Connection *c) {
        static const char *const idempotent[] = { "GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE" };
        const RequestHead *h = &c->up.x->req;

        if (c->out_off == 0) /* a retained request's out_off is what the socket took of it */
                return true;
        for (size_t i = 0; i < ELEMENTSOF(idempotent); i++)
                if (h->method_len == strlen(idempotent[i]) &&
                    memcmp(h->method, idempotent[i], h->method_len) == 0)
                        return true;
        return false;
}

/* The socket died (error or EOF) with the exchange on it. */
void forward_conn_lost(Connection *c, int error, const char *what) {
        if (!c->up.x) {
                forward_conn_discard(c);
                return;
        }
        if (!c->response_started && c->reused && c->retain && !c->retried && conn_replay_safe(c)) {
                conn_retry(c);
                return;
        }
        if (error != 0)
                forward_conn_fail(c, 502, "%s: %s", what, forward_errstr(error));
        else
                forward_conn_fail(c, 502, "%s", what);
}

void forward_conn_go_idle(Connection *c) {
        ForwardPool *p = c->up.pool;

        c->state = CONN_IDLE;
        c->idle_since = forward_pool_now(p);
        c->out_len = c->out_off = 0;
        c->body_paused = c->response_paused = false;
        if (c->out_cap > 4 * OUT_INITIAL) {
                char *n = realloc(c->out, OUT_INITIAL);
                if (n) {
                        c->out = n;
                        c->out_cap = OUT_INITIAL;
                }
        }
        forward_conn_timed_remove(c);
        list_insert_after(&p->idle, NULL, &c->idle_link); /* LIFO: the warmest first */
        p->counters.idle++;
        forward_conn_update_io(c);
        forward_pool_arm(p, c->idle_since + p->o.idle_timeout);
}

void forward_conn_timeout(Connection *c, usec_t now) {
        ForwardPool *p = c->up.pool;
        char span[32];
        int r;

        (void) format_timespan(span, sizeof(span), p->o.response_timeout);
        if (c->state == CONN_CONNECTING) {
                if (c->retry_at != 0 && now < c->connect_deadline) {
                        c->retry_at = 0;
                        r = conn_try_connect(c);
                        if (r < 0)
                                forward_conn_connect_failed(c, r);
                        if (r == -EAGAIN)
                                forward_conn_fail(c, 504, "worker socket backlog full for %s", span);
                        else if (r < 0)
                                forward_conn_fail(c, 502, "connect failed: %s", forward_errstr(r));
                        return;
                }
                forward_conn_unanswered(c);
                if (c->retry_at != 0)
                        forward_conn_fail(c, 504, "worker socket backlog full for %s", span);
                else
                        forward_conn_fail(c, 504, "connect timed out after %s", span);
                return;
        }
        forward_conn_unanswered(c);
        if (c->head_done)
                forward_conn_fail(c, 504, "response body stalled for %s after %" PRIu64 " bytes", span,
                                  c->body_bytes);
        else if (!c->request_done && !c->write_broken)
                forward_conn_fail(c, 504, "worker did not read the request for %s", span);
        else
                forward_conn_fail(c, 504, "no response head within %s", span);
}
