/* SPDX-License-Identifier: MIT */
/* HTTP/2 cleartext client connections: an nghttp2 server session per connection, driven through our own
 * non-blocking socket IO on the front end's sd-event loop. This file is the connection: socket, write
 * buffer, timers, shutdown, accept. nghttp2's callbacks are in h2-session.c, streams in
 * h2-stream.c (request) and h2-response.c (response, ClientOps), flood accounting in
 * h2-guard.c. Routing and forwarding are the router's (router.c, forward.c): this side only
 * speaks the protocol.
 *
 * Input: recv() into a per-loop buffer, walked by the flood guard, fed to nghttp2_session_mem_recv()
 * (which consumes all of it); the socket is edge-triggered. Output: nghttp2_session_send() into a
 * bounded write buffer (send_callback says WOULDBLOCK when it is full), one send() per flush; reading
 * stops while the socket refuses our bytes. Flushes after the router's calls are batched by a defer
 * source: one per connection per loop iteration. */

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "cleanup.h"
#include "fd-util.h"
#include "h2-internal.h"
#include "log.h"
#include "macro.h"

#define H2_READ_SIZE       (64U * 1024U)
#define H2_WBUF_POOL_MAX   64U
#define H2_FLUSH_ROUNDS    4U /* 256 KiB per connection per flush, then others get a turn */
#define H2_READS_PER_EVENT 4U
#define H2_SHUTDOWN_GRACE  (1 * USEC_PER_SEC)
#define H2_LINGER          (2 * USEC_PER_SEC)

const uint8_t h2_shutdown_ping[8] = {'e', 'p', '-', 'd', 'r', 'a', 'i', 'n'};

static _Thread_local uint8_t read_buffer[H2_READ_SIZE];
static _Thread_local uint8_t *wbuf_pool[H2_WBUF_POOL_MAX];
static _Thread_local unsigned n_wbuf_pool;

static void conn_settle(H2Connection *c);

usec_t h2_now(H2Connection *c) {
        return io_batch_now(frontend_io_batch(c->frontend));
}

void h2_schedule_flush(H2Connection *c) {
        if (c->defer)
                (void) io_source_set_enabled(c->defer, true);
}

/* One timer per connection for its earliest deadline. Deadlines change many times per read (every
 * request's header block starts and ends one); the timer is looked at once, when the event is settled, and
 * moved only when a deadline comes sooner: a later one (the idle deadline, which comes and goes with every
 * burst of streams) leaves it armed, and on_timer(), which checks each deadline against the clock, then
 * finds nothing due and arms it for the real one. */
void h2_arm_timer(H2Connection *c) {
        usec_t t =
                MIN(MIN(MIN(c->idle_deadline, c->header_deadline), MIN(c->shutdown_deadline, c->close_deadline)),
                    MIN(MIN(c->settings_deadline, c->stall_deadline), c->body_deadline));

        if (!c->timer || t >= c->timer_at)
                return;
        c->timer_at = t;
        (void) sd_event_source_set_time(c->timer, t);
        (void) sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
}

void h2_idle_update(H2Connection *c) {
        usec_t d = c->n_streams == 0 ? h2_now(c) + c->idle_timeout : USEC_INFINITY;

        if ((d == USEC_INFINITY) == (c->idle_deadline == USEC_INFINITY))
                return;
        c->idle_deadline = d;
}

void h2_header_timer_start(H2Connection *c, Stream *s) {
        c->header_stream = s;
        c->header_deadline = h2_now(c) + c->header_timeout;
}

void h2_stall_arm(H2Connection *c, usec_t since) {
        c->stall_deadline = MIN(c->stall_deadline, since + c->idle_timeout);
}

/* A client that leaves a response unread (a window never opened, a socket not read) would hold the
 * worker connection behind it for as long as it likes: past idle_timeout without progress, the stream is
 * reset and its worker side released, as the HTTP/1.1 side closes a connection that stops reading. */
static void stalls_check(H2Connection *c, usec_t now) {
        char buf[32];

        c->stall_deadline = USEC_INFINITY;
        for (Stream *s = c->streams, *next; s; s = next) {
                next = s->next;
                if (!s->want_resume || !s->x)
                        continue;
                if (s->stalled_since + c->idle_timeout > now) {
                        h2_stall_arm(c, s->stalled_since);
                        continue;
                }
                frontend_log_client_error(c->frontend,
                                          "HTTP/2 client %s stream %" PRIi32 ": response not read for %s, "
                                          "resetting it (CANCEL) and closing its worker connection.",
                                          c->peer, s->id, format_timespan(buf, sizeof(buf), c->idle_timeout));
                h2_stream_abandon_response(s);
        }
}

void h2_body_window_start(Stream *s) {
        H2Connection *c = s->conn;

        if (c->min_body_rate == 0)
                return;
        s->body_window = h2_now(c);
        s->body_window_received = s->body_received;
        c->body_deadline = MIN(c->body_deadline, s->body_window + c->header_timeout);
}

/* A body trickling a byte every few seconds never stalls, yet holds the worker connection its head
 * went to: each window of header_timeout must bring min_body_rate on average. Windows during which we
 * paused the body (its worker reads slowly) start over when the pause ends. */
static void bodies_check(H2Connection *c, usec_t now) {
        c->body_deadline = USEC_INFINITY;
        for (Stream *s = c->streams, *next; s; s = next) {
                uint64_t got;

                next = s->next;
                if (!s->x || s->request_ended || !s->req.has_body || s->req.websocket || s->body_paused ||
                    s->body_dropped)
                        continue;
                if (s->body_window + c->header_timeout > now) {
                        c->body_deadline = MIN(c->body_deadline, s->body_window + c->header_timeout);
                        continue;
                }
                got = s->body_received - s->body_window_received;
                if (got * USEC_PER_SEC >= c->min_body_rate * (now - s->body_window)) {
                        h2_stream_body_window_restart(s, now);
                        c->body_deadline = MIN(c->body_deadline, s->body_window + c->header_timeout);
                        continue;
                }
                frontend_log_client_error(c->frontend,
                                          "HTTP/2 client %s stream %" PRIi32 ": request body slower than "
                                          "min_body_rate (%" PRIu64 " bytes in the last window), %s.",
                                          c->peer, s->id, got, s->head_submitted ? "resetting" : "answering 408");
                h2_stream_body_too_slow(s);
        }
}

void h2_settings_seen(H2Connection *c, bool ack) {
        if (ack)
                c->settings_acked = true;
        else
                c->settings_received = true;
        if (c->settings_received && c->settings_acked)
                c->settings_deadline = USEC_INFINITY; /* the timer moves when the event is settled */
}

void h2_header_timer_stop(H2Connection *c) {
        c->header_stream = NULL;
        c->header_deadline = USEC_INFINITY;
}

void h2_terminate(H2Connection *c, bool client_error, uint32_t error_code, const char *reason,
                  const char *format, ...) {
        char details[256];
        va_list ap;

        if (c->terminating)
                return;
        c->terminating = true;

        va_start(ap, format);
        (void) vsnprintf(details, sizeof(details), format, ap);
        va_end(ap);
        if (client_error)
                frontend_log_client_error(c->frontend,
                                          "HTTP/2 client %s: %s: %s; sending GOAWAY %s and closing.",
                                          c->peer, reason, details, nghttp2_http2_strerror(error_code));
        else
                log_debug("HTTP/2 client %s: %s: %s; sending GOAWAY %s and closing.", c->peer, reason,
                          details, nghttp2_http2_strerror(error_code));

        /* The reason travels as GOAWAY debug data: the client learns why, too. */
        (void) nghttp2_submit_goaway(c->session, NGHTTP2_FLAG_NONE,
                                     nghttp2_session_get_last_proc_stream_id(c->session), error_code,
                                     (const uint8_t *) reason, strlen(reason));
        c->close_deadline = h2_now(c) + H2_LINGER;
        h2_schedule_flush(c);
}

void h2_flooded(H2Connection *c) {
        char counts[256];

        h2_terminate(c, true, NGHTTP2_ENHANCE_YOUR_CALM,
                     c->guard.unanswered > H2_GUARD_UNANSWERED_MAX ? "flood of frames that demand an answer"
                                                                   : "flood of frames without payload",
                     "%s", h2_guard_format(&c->guard, counts, sizeof(counts)));
}

/* ---- write buffer ---- */

static int wbuf_get(H2Connection *c) {
        if (c->wbuf)
                return 0;
        c->wbuf = n_wbuf_pool > 0 ? wbuf_pool[--n_wbuf_pool] : malloc(H2_WBUF_SIZE);
        if (!c->wbuf)
                return -ENOMEM;
        c->wstart = c->wend = 0;
        return 0;
}

/* An idle connection holds no write buffer. */
static void wbuf_put(H2Connection *c) {
        if (!c->wbuf || c->wend != c->wstart)
                return;
        if (n_wbuf_pool < H2_WBUF_POOL_MAX)
                wbuf_pool[n_wbuf_pool++] = c->wbuf;
        else
                free(c->wbuf);
        c->wbuf = NULL;
        c->wstart = c->wend = 0;
}

void frontend_h2_release_pools(void) {
        while (n_wbuf_pool > 0)
                free(wbuf_pool[--n_wbuf_pool]);
        h2_stream_pool_release();
        h2_response_pool_release();
        h2_mem_pool_release();
}

int h2_wbuf_reserve(H2Connection *c, size_t need, uint8_t **ret) {
        if (wbuf_get(c) < 0)
                return -ENOMEM;
        if (H2_WBUF_SIZE - c->wend < need && c->wstart > 0) {
                memmove(c->wbuf, c->wbuf + c->wstart, c->wend - c->wstart);
                c->wend -= c->wstart;
                c->wstart = 0;
        }
        if (H2_WBUF_SIZE - c->wend < need)
                return -EAGAIN;
        *ret = c->wbuf + c->wend;
        return 0;
}

void h2_wbuf_commit(H2Connection *c, size_t n) {
        c->wend += n;
}

/* ---- socket IO ---- */

static int conn_feed(H2Connection *c, const uint8_t *data, size_t size) {
        ssize_t n;

        if (h2_guard_scan(&c->guard, data, size, h2_now(c)) < 0 && !c->terminating)
                h2_flooded(c);
        if (c->terminating)
                return 0; /* nothing more of it is processed */

        c->busy++;
        n = nghttp2_session_mem_recv(c->session, data, size);
        c->busy--;
        if (n < 0) {
                if (n == NGHTTP2_ERR_BAD_CLIENT_MAGIC)
                        frontend_log_client_error(
                                c->frontend, "HTTP/2 client %s: not an HTTP/2 connection preface, closing.",
                                c->peer);
                else if (n == NGHTTP2_ERR_FLOODED)
                        frontend_log_client_error(
                                c->frontend,
                                "HTTP/2 client %s: flood: it does not read the acknowledgements "
                                "it asks for (over %u queued), closing.",
                                c->peer, H2_MAX_OUTBOUND_ACK);
                else
                        frontend_log_client_error(c->frontend, "HTTP/2 client %s: %s, closing.", c->peer,
                                                  nghttp2_strerror((int) n));
                return -EPROTO;
        }
        h2_run_pending(c);
        return 0;
}

/* Edge-triggered: c->readable stays set until a read says EAGAIN. */
static void conn_read(H2Connection *c) {
        ssize_t n;

        n = recv(c->fd, read_buffer, sizeof(read_buffer), MSG_DONTWAIT);
        if (n < 0) {
                if (errno == EINTR)
                        return;
                c->readable = false;
                if (errno == EAGAIN)
                        return;
                log_debug_errno(errno, "HTTP/2 client %s: read failed, closing: %m", c->peer);
                c->read_eof = true;
                return;
        }
        if (n == 0) {
                if (c->n_streams > 0 && !c->lingering)
                        log_debug("HTTP/2 client %s closed the connection with %u streams open.", c->peer,
                                  c->n_streams);
                c->readable = false;
                c->read_eof = true;
                return;
        }
        /* A short read emptied the socket; bytes arriving later raise a new edge. A FIN that came with
         * the edge we are serving raises none: then read on until recv() says 0. */
        if ((size_t) n < sizeof(read_buffer) && !c->rdhup)
                c->readable = false;
        if (c->lingering)
                return; /* after our GOAWAY: read and discard until the client closes */
        if (conn_feed(c, read_buffer, (size_t) n) < 0)
                c->read_eof = true;
}

/* The write buffer goes out with the batch's flush (io-batch.h), with every other socket's writes of the
 * same wake-up: one io_uring_enter() for all of them where the kernel has io_uring. 1 when the buffer was
 * written out at once (without a batch to flush it), 0 when it waits for the flush or the socket is full
 * (write_blocked), -errno on failure. */
static int conn_write(H2Connection *c) {
        ssize_t n;

        if (io_source_want_send(c->io) >= 0) {
                c->sending = true;
                return 0;
        }
        n = send(c->fd, c->wbuf + c->wstart, c->wend - c->wstart, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
                if (errno == EINTR)
                        return 1;
                if (errno == EAGAIN) {
                        c->write_blocked = true;
                        return 0;
                }
                return log_debug_errno(errno, "HTTP/2 client %s: write failed, closing: %m", c->peer);
        }
        c->wstart += (size_t) n;
        if (c->wstart < c->wend) {
                c->write_blocked = true; /* the kernel took what it had room for */
                return 0;
        }
        c->wstart = c->wend = 0;
        return 1;
}

static bool send_prepare(IoSource *source, struct iovec *ret, void *userdata) {
        H2Connection *c = userdata;

        c->sending = false;
        if (c->write_blocked || c->wend == c->wstart)
                return false;
        *ret = (struct iovec) { .iov_base = c->wbuf + c->wstart, .iov_len = c->wend - c->wstart };
        return true;
}

/* What the flush wrote; the connection's event settles after it (what nghttp2 has more, the close). */
static void send_done(IoSource *source, ssize_t result, void *userdata) {
        H2Connection *c = userdata;

        if (result < 0 && result != -EAGAIN) {
                log_debug_errno((int) result, "HTTP/2 client %s: write failed, closing: %m", c->peer);
                c->write_failed = true;
        } else if (result == -EAGAIN)
                c->write_blocked = true;
        else {
                c->wstart += (size_t) result;
                if (c->wstart < c->wend)
                        c->write_blocked = true; /* the kernel took what it had room for */
                else
                        c->wstart = c->wend = 0;
        }
        h2_schedule_flush(c);
}

static int conn_flush(H2Connection *c) {
        int r;

        h2_run_releases(c);
        for (unsigned round = 0; round < H2_FLUSH_ROUNDS; round++) {
                if (!c->write_blocked && !c->lingering) {
                        c->busy++;
                        r = nghttp2_session_send(c->session);
                        c->busy--;
                        if (r < 0) {
                                log_info("HTTP/2 client %s: %s, closing.", c->peer, nghttp2_strerror(r));
                                return -EIO;
                        }
                        h2_run_resumes(c);
                }
                if (c->wend == c->wstart) {
                        wbuf_put(c);
                        if (!nghttp2_session_want_write(c->session))
                                c->guard.unanswered = 0; /* every ack is out */
                        if (c->write_blocked || c->lingering || !nghttp2_session_want_write(c->session))
                                return 0;
                        continue; /* resumed streams queued more */
                }
                if (c->write_blocked || c->sending)
                        return 0;
                r = conn_write(c);
                if (r <= 0)
                        return r;
        }
        h2_schedule_flush(c);
        return 0;
}

static bool conn_finished(H2Connection *c) {
        if (c->terminating)
                return c->goaway_flushed;
        /* Two-step shutdown: nghttp2 is done once the notice is out and no stream is open, but the final
         * GOAWAY, which names the last stream processed, is still to come (the PING's ack, or the grace). */
        if (c->shutdown_notice_sent && !c->final_goaway_sent)
                return false;
        return !nghttp2_session_want_read(c->session) && !nghttp2_session_want_write(c->session);
}

/* While the client does not take our bytes, we do not take its: its input would only queue more output
 * (acks, resets) in nghttp2. */
static bool conn_may_read(H2Connection *c) {
        if (c->read_eof || (c->terminating && !c->lingering))
                return false;
        return !c->write_blocked || c->wend - c->wstart < H2_WBUF_SIZE / 2;
}

static void conn_free(H2Connection *c) {
        if (!c)
                return;
        if (c->registered)
                frontend_connection_unregister(c->frontend, &c->base);
        c->busy++; /* nothing the router does while we free its exchanges may free us again */
        while (c->streams) {
                Stream *s = c->streams;
                c->streams = s->next;
                h2_stream_drop_exchange(s);
                h2_stream_release(s);
        }
        while (c->orphans) {
                Stream *s = c->orphans;
                c->orphans = s->next;
                h2_stream_drop_exchange(s);
                h2_stream_release(s);
        }
        nghttp2_session_del(c->session);
        c->io = io_source_free(c->io);
        c->defer = io_source_free(c->defer);
        c->timer = sd_event_source_disable_unref(c->timer);
        c->fd = safe_close(c->fd);
        c->wend = c->wstart;
        wbuf_put(c);
        free(c);
}

/* The end of every event: read what came (a few buffers' worth, then the others get a turn), write what
 * is due, close when done. c may be gone afterwards. */
static void conn_settle(H2Connection *c) {
        if (c->busy > 0)
                return;
        for (unsigned i = 0; c->readable && conn_may_read(c); i++) {
                if (i == H2_READS_PER_EVENT) {
                        h2_schedule_flush(c);
                        break;
                }
                conn_read(c);
        }
        if (c->read_eof || c->close_requested || c->write_failed || conn_flush(c) < 0) {
                conn_free(c);
                return;
        }
        if (c->wend == c->wstart && !c->lingering && conn_finished(c)) {
                /* Everything said: half-close, then read until the client closes too, so that our last
                 * frames are not lost to a reset caused by its unread bytes. */
                (void) shutdown(c->fd, SHUT_WR);
                c->lingering = true;
                if (c->close_deadline == USEC_INFINITY)
                        c->close_deadline = h2_now(c) + H2_LINGER;
        }
        /* Reading was held back (or writing just freed it): no new edge will come for bytes already
         * there, so look again on the next iteration. */
        if (c->readable && conn_may_read(c))
                h2_schedule_flush(c);
        h2_arm_timer(c);
}

static void on_io(IoSource *source, int fd, uint32_t revents, void *userdata) {
        H2Connection *c = userdata;

        if (revents & EPOLLOUT)
                c->write_blocked = false;
        if (revents & (EPOLLRDHUP | EPOLLHUP))
                c->rdhup = true;
        if (revents & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                c->readable = true;
        conn_settle(c);
}

static void on_defer(IoSource *source, void *userdata) {
        conn_settle(userdata);
}

static const IoSourceOps io_ops = {
        .send_prepare = send_prepare,
        .send_done = send_done,
};

static int on_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        H2Connection *c = userdata;
        usec_t now = h2_now(c);
        char buf[32];

        c->timer_at = USEC_INFINITY; /* a oneshot: it is off now */
        if (now >= c->close_deadline) {
                log_debug("HTTP/2 client %s: closing after GOAWAY.", c->peer);
                conn_free(c);
                return 0;
        }
        if (now >= c->header_deadline && c->header_stream) {
                Stream *s = c->header_stream;
                h2_header_timer_stop(c);
                /* No other frame may come before the header block ends (CONTINUATION), so the connection
                 * cannot go on either. */
                (void) nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_CANCEL);
                h2_terminate(c, true, NGHTTP2_NO_ERROR, "request header timeout",
                             "stream %" PRIi32 " incomplete after %s", s->id,
                             format_timespan(buf, sizeof(buf), c->header_timeout));
        }
        if (now >= c->settings_deadline) {
                /* RFC 9113 6.5.3 names this error; a peer that cannot finish the handshake in the time a
                 * request head gets holds a connection for nothing */
                c->settings_deadline = USEC_INFINITY;
                h2_terminate(c, true, NGHTTP2_SETTINGS_TIMEOUT, "settings timeout", "%s within %s",
                             !c->settings_received ? "no SETTINGS from the client" :
                                                     "our SETTINGS not acknowledged",
                             format_timespan(buf, sizeof(buf), c->header_timeout));
        }
        if (now >= c->stall_deadline)
                stalls_check(c, now);
        if (now >= c->body_deadline)
                bodies_check(c, now);
        if (now >= c->shutdown_deadline)
                h2_shutdown_final(c);
        if (now >= c->idle_deadline && c->n_streams == 0)
                h2_terminate(c, false, NGHTTP2_NO_ERROR, "idle timeout", "no stream for %s",
                             format_timespan(buf, sizeof(buf), c->idle_timeout));
        conn_settle(c);
        return 0;
}

void h2_shutdown_final(H2Connection *c) {
        c->shutdown_deadline = USEC_INFINITY;
        if (c->final_goaway_sent || c->terminating)
                return;
        /* Every stream the client opened before it saw the notice is processed; nothing accepted is
         * dropped. Streams above this id were not, and the client may retry them elsewhere. */
        c->final_goaway_sent = true;
        (void) nghttp2_submit_goaway(c->session, NGHTTP2_FLAG_NONE,
                                     nghttp2_session_get_last_proc_stream_id(c->session), NGHTTP2_NO_ERROR,
                                     (const uint8_t *) "shutting down", strlen("shutting down"));
        h2_schedule_flush(c);
}

/* ---- FrontendConnectionOps ---- */

static void on_shutdown(FrontendConnection *fc) {
        H2Connection *c = (H2Connection *) fc;

        if (c->shutdown_notice_sent || c->terminating)
                return;
        /* Two-step GOAWAY (RFC 9113 6.8): the notice stops new streams from being opened, the PING's ack
         * proves the client has seen it, and then the final GOAWAY names the last stream we process. */
        c->shutdown_notice_sent = true;
        (void) nghttp2_submit_shutdown_notice(c->session);
        (void) nghttp2_submit_ping(c->session, NGHTTP2_FLAG_NONE, h2_shutdown_ping);
        c->shutdown_deadline = h2_now(c) + H2_SHUTDOWN_GRACE;
        h2_schedule_flush(c);
}

static void on_close(FrontendConnection *fc) {
        H2Connection *c = (H2Connection *) fc;

        if (c->busy > 0) {
                c->close_requested = true;
                h2_schedule_flush(c);
                return;
        }
        conn_free(c);
}

static const FrontendConnectionOps h2_connection_ops = {
        .protocol = "h2c",
        .shutdown = on_shutdown,
        .close = on_close,
};

/* ---- accept ---- */

static void format_peer(const struct sockaddr_storage *ss, char *buf, size_t size) {
        char a[INET6_ADDRSTRLEN] = "";

        if (ss && ss->ss_family == AF_INET) {
                const struct sockaddr_in *in = (const struct sockaddr_in *) ss;
                (void) inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
                (void) snprintf(buf, size, "%s:%u", a, (unsigned) ntohs(in->sin_port));
        } else if (ss && ss->ss_family == AF_INET6) {
                const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) ss;
                (void) inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
                (void) snprintf(buf, size, "[%s]:%u", a, (unsigned) ntohs(in6->sin6_port));
        } else
                (void) snprintf(buf, size, "%s", ss && ss->ss_family == AF_UNIX ? "unix" : "unknown");
}

static int conn_new(Frontend *fe, int fd, const struct sockaddr_storage *peer, H2Connection **ret) {
        const Config *cfg = frontend_config(fe);
        nghttp2_session_callbacks *cbs = h2_session_callbacks();
        nghttp2_option *opt = h2_session_options();
        H2Connection *c;
        int r;

        c = calloc(1, sizeof(H2Connection));
        if (!c) {
                safe_close(fd);
                return -ENOMEM;
        }
        c->fd = fd;
        c->frontend = fe;
        c->event = frontend_event(fe);
        c->pending_tail = &c->pending;
        format_peer(peer, c->peer, sizeof(c->peer));
        c->max_concurrent_streams =
                cfg && cfg->h2_max_concurrent_streams > 0 ? cfg->h2_max_concurrent_streams : 100;
        c->live_cap = 2 * c->max_concurrent_streams;
        c->max_header_size = cfg && cfg->max_header_size > 0 ? cfg->max_header_size : 64 * 1024;
        c->max_header_fields = cfg && cfg->max_header_fields > 0 ? cfg->max_header_fields : 100;
        c->max_body_size = cfg ? cfg->max_body_size : 0;
        c->header_timeout = cfg && cfg->header_timeout > 0 ? cfg->header_timeout : 10 * USEC_PER_SEC;
        c->idle_timeout = cfg && cfg->idle_timeout > 0 ? cfg->idle_timeout : 60 * USEC_PER_SEC;
        c->websocket = cfg && cfg->websocket;
        c->header_deadline = c->shutdown_deadline = c->close_deadline = c->stall_deadline = USEC_INFINITY;
        c->body_deadline = USEC_INFINITY;
        c->min_body_rate = cfg ? cfg->min_body_rate : 0;
        c->idle_deadline = h2_now(c) + c->idle_timeout;
        c->settings_deadline = h2_now(c) + c->header_timeout;
        h2_guard_init(&c->guard, h2_now(c));

        r = -ENOMEM;
        if (!cbs || !opt || nghttp2_session_server_new3(&c->session, cbs, c, opt, h2_mem()) != 0)
                goto fail;

        nghttp2_settings_entry iv[] = {
                {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, c->max_concurrent_streams},
                {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_STREAM_WINDOW},
                {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
                /* RFC 8441: WebSocket over a stream, tunnelled to the worker as an HTTP/1.1 upgrade; last,
                 * so that without it the array is simply one shorter */
                {NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1},
        };
        if (nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, iv,
                                    ELEMENTSOF(iv) - (c->websocket ? 0 : 1)) != 0 ||
            nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0, H2_CONNECTION_WINDOW) !=
                    0)
                goto fail;

        r = fd_set_nonblock(fd, true);
        if (r < 0)
                goto fail;
        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int)); /* EOPNOTSUPP on AF_UNIX */

        /* Edge-triggered: the batch polls its set on every wake-up, and with level-triggered sources every
         * busy connection would be reported again each time. */
        r = io_batch_add_io(frontend_io_batch(fe), &c->io, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, on_io,
                            c);
        if (r < 0)
                goto fail;
        io_source_set_ops(c->io, &io_ops);
        r = io_batch_add_defer(frontend_io_batch(fe), &c->defer, on_defer, c);
        if (r < 0)
                goto fail;
        c->timer_at = MIN(c->idle_deadline, c->settings_deadline);
        r = sd_event_add_time(c->event, &c->timer, CLOCK_MONOTONIC, c->timer_at, 0, on_timer, c);
        if (r < 0)
                goto fail;
        (void) sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);

        *ret = c;
        return 0;
fail:
        conn_free(c);
        return r;
}

/* Stream 1 is the request that asked for the upgrade; it was read in full over HTTP/1.1. */
static int conn_upgrade(H2Connection *c, const uint8_t *settings, size_t settings_len,
                        const RequestHead *h) {
        Stream *s;
        int r;

        /* RFC 7540 3.2: the body would have had to come over HTTP/1.1 first; h1-connection.c serves such
         * requests as HTTP/1.1 instead. Nothing half-read is forwarded. */
        if (h->has_body && !(h->has_content_length && h->content_length == 0))
                return log_warning_errno(
                        EINVAL, "HTTP/2 client %s: h2c upgrade of a request with a body, closing.", c->peer);
        r = nghttp2_session_upgrade2(c->session, settings, settings_len, h->head_method, NULL);
        if (r != 0)
                return log_info_errno(EINVAL, "HTTP/2 client %s: h2c upgrade refused: %s", c->peer,
                                      nghttp2_strerror(r));
        r = h2_stream_new(c, 1, &s);
        if (r < 0)
                return r;
        s->next = c->streams;
        c->streams = s;
        c->n_streams++;
        h2_idle_update(c);
        (void) nghttp2_session_set_stream_user_data(c->session, 1, s);
        r = h2_stream_copy_head(s, h);
        if (r < 0)
                return r;
        s->request_ended = true;
        h2_stream_headers_complete(s);
        return 0;
}

int frontend_h2_accept(Frontend *fe, int fd, const struct sockaddr_storage *peer, const uint8_t *initial,
                       size_t initial_len, const uint8_t *settings, size_t settings_len,
                       const RequestHead *upgrade_req) {
        H2Connection *c;
        int r;

        if (!fe || fd < 0) {
                safe_close(fd);
                return -EINVAL;
        }
        r = conn_new(fe, fd, peer, &c);
        if (r < 0)
                return log_error_errno(r, "Failed to set up HTTP/2 connection: %m");

        if (upgrade_req) {
                r = conn_upgrade(c, settings, settings_len, upgrade_req);
                if (r < 0) {
                        conn_free(c);
                        return r;
                }
        }

        frontend_connection_register(fe, &c->base, &h2_connection_ops, peer);
        c->registered = true;
        if (frontend_shutting_down(fe))
                on_shutdown(&c->base);

        /* Bytes may already wait behind the ones h1 read: an edge-triggered source would not say so. */
        c->readable = true;

        /* From here on failures are the connection's own: logged, and it closes. Our SETTINGS go out
         * before this returns, not with the loop's next iteration: a client that waits for them before
         * its first request (or its PING ack) is not kept waiting. */
        io_batch_enter(frontend_io_batch(fe));
        if (initial_len > 0 && conn_feed(c, initial, initial_len) < 0)
                c->read_eof = true;
        else
                h2_run_pending(c);
        conn_settle(c);
        io_batch_leave(frontend_io_batch(fe));
        return 0;
}
