/* SPDX-License-Identifier: MIT */
/* The HTTP/1.1 client side of the front end: one accepted socket, one http-parser, one exchange at a time.
 *
 * Shape (after nghttp2's libevent-server and h2o): the socket's events and http-parser's callbacks only
 * record what happened; advance() then moves the connection on from the event loop. ClientOps calls from
 * the router and the forward side queue output and set flags, never free anything: exchange_free() and
 * the connection's own teardown run only from this file's event handlers, so no caller ever returns into
 * freed memory.
 *
 * The socket is edge-triggered (in the front end's batch, io-batch.h; level-triggered, every
 * busy connection would be reported again each time): c->readable and c->write_blocked say what the socket
 * can do, input is read until a read comes back short, output written until the socket refuses it, and a
 * connection that stopped reading (flow control, a pipelined request waiting its turn) reads on by itself
 * once it may, since no new edge will come for bytes already there.
 *
 * Requests are answered strictly in order because only one exchange exists per connection: the parser is
 * paused on message completion and pipelined bytes wait in the read buffer until the response is
 * complete. Every head passes the byte pre-scan of h1-head.c before the (non-strict) parser sees
 * it, and every check that can reject a request runs before exchange_begin(), so nothing malformed
 * reaches a worker. */
#include "h1-internal.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cleanup.h"
#include "fd-util.h"
#include "log.h"
#include "macro.h"

#define H1_READ_BUFFER    (16U * 1024U)
#define H1_TIMER_ACCURACY (10U * USEC_PER_MSEC)
/* advance() rounds before yielding to the loop: one busy client cannot starve the others. */
#define H1_ROUNDS 32U
/* Buffers grown past these by one big head or response are given back once idle. */
#define H1_WRITE_KEEP (64U * 1024U)
#define H1_ARENA_KEEP (16U * 1024U)

H1Tunables h1_tunables = {
        .shutdown_grace = 1 * USEC_PER_SEC,
        .linger = 2 * USEC_PER_SEC,
        .write_high = 256U * 1024U,
        .write_low = 64U * 1024U,
};

static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define H2_PREFACE_LEN (sizeof h2_preface - 1)

static const FrontendConnectionOps h1_connection_ops;

/* ---- time, logging ------------------------------------------------------------------------------ */

usec_t h1_now(H1Connection *c) {
        return io_batch_now(frontend_io_batch(c->fe));
}

/* min_body_rate is judged per window of header_timeout, from the body's start or the end of our pause. */
static void body_window_restart(H1Connection *c) {
        c->body_window = h1_now(c);
        c->body_window_bytes = 0;
}

static usec_t usec_add(usec_t a, usec_t b) {
        if (a == USEC_INFINITY || b == USEC_INFINITY || b == 0 || a > USEC_INFINITY - b)
                return USEC_INFINITY; /* a zero timeout is no timeout */
        return a + b;
}

static const char *format_peer(const struct sockaddr_storage *ss, char *buf, size_t size) {
        char a[INET6_ADDRSTRLEN];

        if (ss->ss_family == AF_INET) {
                const struct sockaddr_in *in = (const struct sockaddr_in *) ss;
                snprintf(buf, size, "%s:%u", inet_ntop(AF_INET, &in->sin_addr, a, sizeof a) ?: "?",
                         (unsigned) ntohs(in->sin_port));
        } else if (ss->ss_family == AF_INET6) {
                const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) ss;
                snprintf(buf, size, "[%s]:%u", inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof a) ?: "?",
                         (unsigned) ntohs(in6->sin6_port));
        } else if (ss->ss_family == AF_UNIX)
                snprintf(buf, size, "unix");
        else
                snprintf(buf, size, "unknown");
        return buf;
}

void h1_log_client_error(H1Connection *c, unsigned status, const char *reason) {
        char peer[INET6_ADDRSTRLEN + 16];

        /* the front end's limiter: one budget of lines per second for all its protocols */
        format_peer(&c->fc.peer, peer, sizeof peer);
        if (status == 0)
                frontend_log_client_error(c->fe, "HTTP/1.1 client %s%s%s: %s", peer, c->x ? " request " : "",
                                          c->x ? c->x->id : "", reason);
        else
                frontend_log_client_error(c->fe, "HTTP/1.1 client %s%s%s: %u %s: %s", peer,
                                          c->x ? " request " : "", c->x ? c->x->id : "", status,
                                          h1_status_phrase(status), reason);
}

/* ---- connection lifetime ------------------------------------------------------------------------ */

void h1_schedule(H1Connection *c) {
        if (c->defer)
                (void) io_source_set_enabled(c->defer, true);
}

static void unschedule(H1Connection *c) {
        if (c->defer)
                (void) io_source_set_enabled(c->defer, false);
}

static void connection_ref(H1Connection *c) {
        c->n_ref++;
}

static void connection_unref(H1Connection *c) {
        assert(c->n_ref > 0);
        if (--c->n_ref > 0)
                return;
        c->io = io_source_free(c->io);
        c->timer = sd_event_source_disable_unref(c->timer);
        c->defer = io_source_free(c->defer);
        safe_close(c->fd);
        free(c->rbuf);
        free(c->arena);
        free(c->raw);
        free(c->fields);
        h1_wq_done(&c->wq);
        free(c->settings);
        free(c);
}

/* The part of teardown that touches the exchange and the front end: only from an event handler. */
static void connection_release(H1Connection *c) {
        if (c->released)
                return;
        c->released = true;
        c->x = exchange_free(c->x);
        if (c->registered) {
                c->registered = false;
                frontend_connection_unregister(c->fe, &c->fc);
        }
        c->defer = io_source_free(c->defer);
        connection_unref(c);
}

/* Ends the connection: no more I/O at once; the exchange and the registration go as soon as no caller
 * is inside us (at once from an event handler or the front end's close()). Idempotent until released. */
void h1_connection_close(H1Connection *c) {
        if (!c->closing) {
                c->closing = true;
                c->io = io_source_free(c->io);
                c->timer = sd_event_source_disable_unref(c->timer);
                c->fd = safe_close(c->fd);
        }
        if (c->nesting > 0)
                h1_schedule(c); /* on_defer releases once the caller is out */
        else
                connection_release(c);
}

int h1_mark_broken(H1Connection *c, int error) {
        log_debug_errno(error, "HTTP/1.1 connection broken: %m");
        c->broken = true;
        h1_schedule(c);
        return error;
}

static void request_start(H1Connection *c) {
        h1_request_reset(c);
        if (c->n_requests > 0)
                c->head_start = h1_now(c); /* the first request's header_timeout runs from accept */
        c->n_requests++;
        c->state = H1_HEAD;
}

/* A request we answer ourselves and then close: bad input, timeouts. Only from an event handler: it frees
 * the exchange when there is one. */
void h1_fail_request(H1Connection *c, unsigned status, const char *reason) {
        char id[sizeof c->x->id] = "";
        int r;

        h1_log_client_error(c, status, reason);
        c->close_after = true;
        if (c->x && c->resp != H1_RESPONSE_NONE) {
                /* part of a response is out: a cut connection is the only honest signal left */
                h1_connection_close(c);
                return;
        }
        if (c->x) {
                memcpy(id, c->x->id, sizeof id);
                id[sizeof id - 1] = 0;
                c->x = exchange_free(c->x);
        }
        c->resp = H1_RESPONSE_NONE;
        r = h1_queue_error_response(c, status, 0, reason, id, true);
        if (r < 0) {
                h1_connection_close(c);
                return;
        }
        c->state = H1_DRAIN;
        (void) h1_flush(c);
}

/* ---- hand-over to HTTP/2 ------------------------------------------------------------------------ */

static void handover(H1Connection *c, const char *initial, size_t initial_len, bool upgrade) {
        int fd = TAKE_FD(c->fd), r;

        c->io = io_source_free(c->io);
        c->timer = sd_event_source_disable_unref(c->timer);
        c->closing = true;
        /* h2 registers its connection before we unregister ours: the front end never sees zero open
         * connections in between (which would end a shutdown early). */
        r = frontend_h2_accept(c->fe, fd, &c->fc.peer, (const uint8_t *) initial, initial_len,
                               upgrade ? c->settings : NULL, upgrade ? c->settings_len : 0,
                               upgrade ? &c->head : NULL);
        if (r < 0)
                log_debug_errno(r, "HTTP/1.1: hand-over to HTTP/2 failed: %m");
        connection_release(c);
}

/* 1: the buffered bytes are the HTTP/2 preface; 0: they cannot be; -EAGAIN: too few to tell. */
static int preface_check(H1Connection *c) {
        size_t n = MIN(c->rend - c->rpos, H2_PREFACE_LEN);

        if (memcmp(c->rbuf + c->rpos, h2_preface, n) != 0)
                return 0;
        if (n < H2_PREFACE_LEN)
                return c->read_eof ? 0 : -EAGAIN;
        return 1;
}

static void upgrade_start(H1Connection *c) {
        int r;

        r = h1_wq_reserve(&c->wq, 128);
        if (r < 0) {
                h1_connection_close(c);
                return;
        }
        h1_wq_put_str(&c->wq,
                      "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n");
        c->state = H1_UPGRADE;
        (void) h1_flush(c);
}

/* ---- dispatch ----------------------------------------------------------------------------------- */

static void dispatch(H1Connection *c) {
        const char *reason = NULL;
        unsigned status = 0;
        Exchange *x;
        int r;

        r = h1_head_build(c, &status, &reason);
        if (r < 0) {
                h1_fail_request(c, status, reason);
                return;
        }
        if (r > 0) {
                upgrade_start(c);
                return;
        }
        if (c->chunked && h1_probe_chunked(c, &status, &reason) < 0) {
                h1_fail_request(c, status, reason);
                return;
        }

        x = exchange_new(c->fe, &h1_client_ops, c);
        if (!x) {
                log_oom();
                h1_fail_request(c, 503, "out of memory");
                return;
        }
        x->req = c->head;
        x->peer = c->fc.peer;
        x->started = h1_now(c);
        c->x = x;
        c->resp = H1_RESPONSE_NONE;
        c->framing = H1_FRAMING_NONE;
        c->resp_paused = c->resp_short = false;
        c->state = H1_BODY;
        body_window_restart(c);

        c->nesting++;
        exchange_begin(x);
        c->nesting--;
}

/* A tunnel: what the client sent goes on as it is (always taken; 1 pauses reading until the forward
 * side resumes us), and its EOF, once everything before it went, ends the client's side of the tunnel. */
static void tunnel_input(H1Connection *c) {
        int r;

        if (!c->x || c->resp != H1_RESPONSE_BODY)
                return;
        if (c->rpos < c->rend && !c->body_paused) {
                c->nesting++;
                r = exchange_request_body(c->x, c->rbuf + c->rpos, c->rend - c->rpos);
                c->nesting--;
                c->rpos = c->rend;
                if (r > 0)
                        c->body_paused = true;
        }
        if (c->read_eof && c->rpos == c->rend && !c->tunnel_end_sent && !c->closing) {
                c->tunnel_end_sent = true;
                c->nesting++;
                (void) exchange_request_end(c->x);
                c->nesting--;
        }
}

/* The request side, as far as buffered input takes it. True when it stopped for fairness with more to
 * do. */
static bool process(H1Connection *c) {
        for (unsigned round = 0; round < H1_ROUNDS; round++) {
                int r;

                if (c->closing || c->broken)
                        return false;
                /* A client that closed while its request waits for a worker is taken as gone (it may only
                 * have shut its sending side, but a request not begun on a worker is not worth one): the
                 * request is dropped, never forwarded, and what it pipelined after it with it. */
                if (c->read_eof && c->x && exchange_waiting(c->x)) {
                        log_debug("HTTP/1.1: client closed the connection while its request waited for a "
                                  "worker, dropping it");
                        h1_connection_close(c);
                        return false;
                }
                switch (c->state) {
                case H1_PREFACE:
                        if (c->rpos == c->rend) {
                                if (c->read_eof)
                                        h1_connection_close(c);
                                return false;
                        }
                        r = preface_check(c);
                        if (r == -EAGAIN)
                                return false;
                        if (r > 0) {
                                handover(c, c->rbuf + c->rpos, c->rend - c->rpos, false);
                                return false;
                        }
                        c->state = H1_IDLE;
                        break;
                case H1_IDLE:
                        if (c->rpos == c->rend) {
                                if (c->read_eof && h1_wq_size(&c->wq) == 0) /* else once the last response is out */
                                        h1_connection_close(c);
                                return false;
                        }
                        /* a client pipelining without reading its responses waits here */
                        if (c->x || h1_wq_size(&c->wq) > h1_tunables.write_high)
                                return false;
                        request_start(c);
                        break;
                case H1_HEAD:
                        r = h1_feed_head(c);
                        if (r == 0 && c->read_eof) {
                                log_debug("HTTP/1.1: client closed the connection inside a request head");
                                h1_connection_close(c);
                        }
                        if (r <= 0)
                                return false;
                        dispatch(c);
                        break;
                case H1_BODY:
                        r = h1_feed_body(c);
                        if (r == 0 && c->read_eof && !c->body_paused && c->rpos == c->rend) {
                                log_debug("HTTP/1.1: client closed the connection inside a request body");
                                h1_connection_close(c);
                        }
                        if (r <= 0)
                                return false;
                        break;
                case H1_TUNNEL:
                        tunnel_input(c);
                        return false;
                default:
                        return false;
                }
        }
        return true; /* more to do, after the other connections had their turn */
}

/* The exchange's response is complete (or failed): free it, then the next request or the end. */
static void exchange_finish(H1Connection *c) {
        bool complete = c->state == H1_WAIT, quiet = c->resp_quiet;

        c->resp_quiet = false;
        c->x = exchange_free(c->x);
        c->resp = H1_RESPONSE_NONE;
        c->resp_paused = false;
        if (!complete || c->resp_short)
                c->close_after = true; /* body not read to its end, or a response cut short */
        /* An exchange finished quietly was idle since its response went out: a shutdown since then gives
         * it the idle connection's grace, not the end a response in flight gets. */
        if (!quiet && (c->shutting_down || c->read_eof) && c->rpos == c->rend)
                c->close_after = true;
        if (c->close_after) {
                c->state = H1_DRAIN;
                return;
        }
        c->state = H1_IDLE;
        if (!quiet)
                c->idle_start = h1_now(c);
        /* Keep-alive memory stays small: what one big response or head grew is given back. */
        if (h1_wq_size(&c->wq) == 0 && c->wq.cap > H1_WRITE_KEEP)
                h1_wq_done(&c->wq);
        if (c->arena_cap > H1_ARENA_KEEP) {
                free(c->arena);
                c->arena = NULL;
                c->arena_cap = c->arena_len = 0;
        }
}

/* ---- timers and events -------------------------------------------------------------------------- */

/* A window of header_timeout is over: did the body average min_body_rate in it? Bytes buffered by a
 * read before the head completed are not counted, which errs on the client's side by one read. */
static bool body_too_slow(const H1Connection *c, usec_t now) {
        uint64_t rate = c->config->min_body_rate;
        usec_t span = now - c->body_window;

        if (rate == 0 || span < c->config->header_timeout)
                return false;
        return c->body_window_bytes * USEC_PER_SEC < rate * span;
}

static usec_t deadline(const H1Connection *c) {
        const Config *cfg = c->config;
        usec_t d = USEC_INFINITY, idle;

        if (c->write_blocked && h1_wq_size(&c->wq) > 0)
                d = usec_add(c->write_progress, cfg->idle_timeout);
        switch (c->state) {
        case H1_PREFACE:
        case H1_HEAD:
                d = MIN(d, usec_add(c->head_start, cfg->header_timeout));
                if (c->state == H1_PREFACE && c->shutting_down && c->rpos == c->rend)
                        d = MIN(d, usec_add(c->shutdown_at, h1_tunables.shutdown_grace));
                break;
        case H1_WAIT:
                if (!c->x || c->resp != H1_RESPONSE_DONE)
                        break;
                /* answered, finished on the next event (h1_response_done()): idle meanwhile */
                __attribute__((fallthrough));
        case H1_IDLE:
                if (h1_wq_size(&c->wq) > 0)
                        break; /* the last response is still going out: the write timeout applies */
                idle = usec_add(c->idle_start, cfg->idle_timeout);
                if (c->shutting_down)
                        idle = MIN(idle, usec_add(c->shutdown_at, h1_tunables.shutdown_grace));
                d = MIN(d, idle);
                break;
        case H1_BODY:
                if (!c->body_paused && !c->read_eof) {
                        d = MIN(d, usec_add(c->read_progress, cfg->idle_timeout));
                        if (cfg->min_body_rate > 0)
                                d = MIN(d, usec_add(c->body_window, cfg->header_timeout));
                }
                break;
        case H1_LINGER:
                d = MIN(d, c->linger_until);
                break;
        default:
                break;
        }
        return d;
}

/* Lazy re-arming: a later deadline leaves the armed (earlier) one in place; it fires, finds nothing due
 * and re-arms. So the common request cycle costs one sd_event_source_set_time() at most. */
static void update_timer(H1Connection *c) {
        usec_t d = deadline(c);
        int r;

        if (!c->timer || d >= c->timer_armed)
                return;
        r = sd_event_source_set_time(c->timer, d);
        if (r >= 0)
                r = sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
        if (r < 0) {
                log_warning_errno(r, "HTTP/1.1: cannot arm the connection timer, closing: %m");
                h1_connection_close(c);
                return;
        }
        c->timer_armed = d;
}

static bool want_read(const H1Connection *c) {
        if (c->read_eof)
                return false;
        switch (c->state) {
        case H1_LINGER:
                return true;
        case H1_BODY:
        case H1_TUNNEL:
                if (c->body_paused)
                        return false;
                __attribute__((fallthrough));
        case H1_PREFACE:
        case H1_IDLE:
        case H1_HEAD:
        case H1_WAIT:
                return c->rend - c->rpos < c->rcap; /* pipelined bytes fill the buffer, then wait */
        default:
                return false;
        }
}

static void linger_start(H1Connection *c) {
        /* Closing with unread input makes TCP send RST, which can destroy our last response in the
         * client's receive buffer: shut the write side, then read and drop until EOF or the deadline. */
        if (c->read_eof || shutdown(c->fd, SHUT_WR) < 0) {
                h1_connection_close(c);
                return;
        }
        c->state = H1_LINGER;
        c->linger_until = usec_add(h1_now(c), h1_tunables.linger);
        c->rpos = c->spos = c->rend = 0;
}

static void read_input(H1Connection *c);

/* Moves the connection on after anything happened; only from an event handler. Reading is one of its
 * steps: while the socket is readable and the connection wants input, it reads on (bytes already in the
 * socket bring no new edge), up to H1_ROUNDS steps, then yields to the others and runs again from the
 * defer source. */
static void advance(H1Connection *c) {
        bool more = true;

        for (unsigned round = 0; round < H1_ROUNDS && !c->closing; round++) {
                if (c->broken || c->aborted) {
                        h1_connection_close(c);
                        return;
                }
                if (c->body_resume) {
                        c->body_resume = false;
                        c->body_paused = false;
                        body_window_restart(c); /* the pause was ours, not the client's */
                }
                if (c->flush_pending)
                        (void) h1_flush(c);
                if (process(c)) /* may complete the current request, so before the exchange is finished */
                        break;
                if (c->closing || c->broken)
                        continue;
                if (c->x && c->resp == H1_RESPONSE_DONE) {
                        exchange_finish(c);
                        continue;
                }
                if (c->x && c->resp_paused && h1_wq_size(&c->wq) <= h1_tunables.write_low) {
                        c->resp_paused = false;
                        c->nesting++;
                        exchange_response_resume(c->x);
                        c->nesting--;
                        continue;
                }
                if (c->state == H1_UPGRADE && h1_wq_size(&c->wq) == 0) {
                        handover(c, c->rbuf + c->spos, c->rend - c->spos, true);
                        return;
                }
                if (c->state == H1_DRAIN && h1_wq_size(&c->wq) == 0) {
                        linger_start(c);
                        continue;
                }
                if (c->readable && want_read(c)) {
                        read_input(c);
                        continue;
                }
                if (!c->body_resume && !c->flush_pending && !c->aborted) {
                        more = false;
                        break;
                }
        }
        if (c->closing)
                return;
        /* What ClientOps calls made us schedule during this run is done: no wake-up just to find that
         * out (one loop iteration less per request when the router answers at once). */
        if (more)
                h1_schedule(c);
        else
                unschedule(c);
        update_timer(c);
}

/* The keep-alive case: the response is out and only the next request can move the connection on. Its edge
 * comes to on_io(), whose advance() finishes this exchange first; a loop turn now just to free it would cost
 * one more epoll_wait and dispatch per request. Meanwhile the connection counts as idle (deadline()).
 * Anything else (pipelined bytes already read, a close, a shutdown, a resume) needs advance() without a new
 * edge. */
void h1_response_done(H1Connection *c) {
        bool quiet = c->state == H1_WAIT && !c->closing && !c->broken && !c->aborted && !c->body_resume &&
                     !c->close_after && !c->resp_short && !c->shutting_down && !c->read_eof &&
                     !c->readable && c->rpos == c->rend && h1_wq_leaving(c);

        if (!quiet) {
                h1_schedule(c);
                return;
        }
        unschedule(c); /* what the head and body pieces scheduled: their flush is done */
        c->resp_quiet = true;
        c->idle_start = h1_now(c);
        update_timer(c);
}

/* Room at the end of the read buffer, made by moving what is unread to the front once the end is reached. */
static size_t input_room(H1Connection *c) {
        if (c->rpos == c->rend)
                c->rpos = c->spos = c->rend = 0;
        else if (c->rend == c->rcap && c->rpos > 0) {
                memmove(c->rbuf, c->rbuf + c->rpos, c->rend - c->rpos);
                c->spos = c->spos > c->rpos ? c->spos - c->rpos : 0;
                c->rend -= c->rpos;
                c->rpos = 0;
        }
        return c->rcap - c->rend;
}

/* What a read of `want` bytes into the buffer's end brought: bytes, 0 (EOF) or -errno. Edge-triggered:
 * c->readable is cleared only when the socket is known to be empty: EAGAIN, EOF, or a read shorter than
 * asked for (stream sockets fill what they can), unless the client's FIN was already seen, which no
 * later edge would announce again. */
static void input_result(H1Connection *c, ssize_t n, size_t want) {
        if (n > 0) {
                c->rend += (size_t) n;
                c->read_progress = h1_now(c);
                if (c->state == H1_BODY)
                        c->body_window_bytes += (uint64_t) n;
                if ((size_t) n < want && !c->rdhup)
                        c->readable = false;
        } else if (n == 0) {
                c->read_eof = true;
                c->readable = false;
        } else if (n == -EAGAIN)
                c->readable = false;
        else if (n != -EINTR)
                (void) h1_mark_broken(c, (int) n); /* ECONNRESET: nobody left to answer */
}

/* One read. */
static void read_input(H1Connection *c) {
        size_t want;
        ssize_t n;

        if (c->state == H1_LINGER) {
                n = recv(c->fd, c->rbuf, c->rcap, MSG_DONTWAIT);
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                        h1_connection_close(c);
                else if (n < 0)
                        c->readable = errno != EAGAIN;
                else if ((size_t) n < c->rcap && !c->rdhup)
                        c->readable = false;
                return;
        }
        want = input_room(c);
        if (want == 0)
                return;
        if (c->read_error < 0) {
                n = c->read_error;
                c->read_error = 0;
        } else {
                n = recv(c->fd, c->rbuf + c->rend, want, MSG_DONTWAIT);
                if (n < 0)
                        n = -errno;
        }
        input_result(c, n, want);
}

/* The batch's first read of the ready socket (io-batch.h), done with every other socket's of the same
 * poll, where advance() would read: into the end of the read buffer. advance() parses what it brought;
 * an EOF or an error is left for read_input() to meet, as its own. */
static bool read_prepare(IoSource *s, uint32_t revents, struct iovec *ret, void *userdata) {
        H1Connection *c = userdata;
        size_t want;

        if (c->closing || c->broken || c->state == H1_LINGER || c->read_error < 0 || !want_read(c))
                return false;
        want = input_room(c);
        if (want == 0)
                return false;
        if (revents & (EPOLLRDHUP | EPOLLHUP))
                c->rdhup = true;
        *ret = (struct iovec) { .iov_base = c->rbuf + c->rend, .iov_len = want };
        return true;
}

static bool read_done(IoSource *s, ssize_t result, void *userdata) {
        H1Connection *c = userdata;

        if (result == 0)
                return false;
        if (result < 0 && result != -EAGAIN) {
                c->read_error = (int) result;
                return false;
        }
        c->readable = true; /* what the event said; the result clears it when the read emptied the socket */
        input_result(c, result, c->rcap - c->rend);
        return true;
}

static void on_io(IoSource *s, int fd, uint32_t revents, void *userdata) {
        H1Connection *c = userdata;

        if (revents & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                c->readable = true; /* an error or a hang-up is what the next read reports */
        if (revents & (EPOLLRDHUP | EPOLLHUP))
                c->rdhup = true;
        connection_ref(c);
        if ((revents & (EPOLLOUT | EPOLLERR | EPOLLHUP)) && c->write_blocked) {
                c->write_blocked = false;
                (void) h1_flush(c);
        }
        if (!c->closing)
                advance(c);
        connection_unref(c);
}

/* What waited for the queue to drain (a resume, a close, a hand-over) moves on; a quiet keep-alive
 * connection (h1_response_done()) only starts its idle deadline, now that the response is out. */
static void send_done(IoSource *s, ssize_t result, void *userdata) {
        H1Connection *c = userdata;

        if (h1_sent(c, result) && c->resp_quiet)
                update_timer(c);
        else
                h1_schedule(c);
}

static const IoSourceOps io_ops = {
        .read_prepare = read_prepare,
        .read_done = read_done,
        .send_prepare = h1_send_prepare,
        .send_done = send_done,
};

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        H1Connection *c = userdata;
        const Config *cfg = c->config;
        usec_t now = h1_now(c);

        c->timer_armed = USEC_INFINITY;
        if (deadline(c) > now) {
                update_timer(c);
                return 0;
        }
        connection_ref(c);
        if (c->write_blocked && h1_wq_size(&c->wq) > 0 &&
            usec_add(c->write_progress, cfg->idle_timeout) <= now) {
                h1_log_client_error(c, 0, "client stopped reading its response for idle_timeout");
                h1_connection_close(c);
        } else
                switch (c->state) {
                case H1_PREFACE:
                case H1_HEAD:
                        if (c->state == H1_HEAD || c->rend > c->rpos)
                                h1_fail_request(c, 408, "request head not complete within header_timeout");
                        else
                                h1_connection_close(c); /* nothing sent at all: an idle connection */
                        break;
                case H1_BODY:
                        if (usec_add(c->read_progress, cfg->idle_timeout) <= now)
                                h1_fail_request(c, 408, "request body stalled for idle_timeout");
                        else if (body_too_slow(c, now))
                                h1_fail_request(c, 408, "request body slower than min_body_rate");
                        else {
                                body_window_restart(c);
                                update_timer(c);
                        }
                        break;
                default: /* idle keep-alive, shutdown grace, linger */
                        h1_connection_close(c);
                }
        if (!c->closing)
                advance(c);
        connection_unref(c);
        return 0;
}

static void on_defer(IoSource *s, void *userdata) {
        H1Connection *c = userdata;

        connection_ref(c);
        if (c->closing)
                connection_release(c);
        else
                advance(c);
        connection_unref(c);
}

/* ---- FrontendConnectionOps and accept ----------------------------------------------------------- */

static void on_shutdown(FrontendConnection *fc) {
        H1Connection *c = (H1Connection *) fc;

        if (c->closing || c->shutting_down)
                return;
        c->shutting_down = true;
        c->shutdown_at = h1_now(c);
        h1_schedule(c); /* the idle deadline moves in; a response not yet begun will say Connection: close */
}

static void on_close(FrontendConnection *fc) {
        H1Connection *c = (H1Connection *) fc;

        if (c->nesting == 0) {
                h1_connection_close(c); /* released at once: unregistered and gone */
                return;
        }
        /* Inside one of our own calls: the exchange goes when that returns, the registration now, so that
         * the front end's loop over its connections (the hard deadline) always moves on. */
        h1_connection_close(c);
        if (c->registered) {
                c->registered = false;
                frontend_connection_unregister(c->fe, &c->fc);
        }
}

static const FrontendConnectionOps h1_connection_ops = {
        .protocol = "http/1.1",
        .shutdown = on_shutdown,
        .close = on_close,
};

int frontend_h1_accept(Frontend *fe, int fd, const struct sockaddr_storage *peer) {
        sd_event *e = frontend_event(fe);
        H1Connection *c;
        int r;

        c = calloc(1, sizeof *c);
        if (!c) {
                safe_close(fd);
                return -ENOMEM;
        }
        c->n_ref = 1;
        c->fd = fd;
        c->fe = fe;
        c->config = frontend_config(fe);
        c->timer_armed = USEC_INFINITY;
        c->state = H1_PREFACE;
        if (peer)
                c->fc.peer = *peer;
        c->rcap = H1_READ_BUFFER;
        c->rbuf = malloc(c->rcap);
        if (!c->rbuf) {
                r = -ENOMEM;
                goto fail;
        }
        /* http-parser's own head limit is a process-wide figure (80 KiB built in); ours must stay the
         * one that applies. */
        if (c->config->max_header_size > HTTP_MAX_HEADER_SIZE)
                http_parser_set_max_header_size(
                        (uint32_t) MIN(c->config->max_header_size + 1024, (uint64_t) UINT32_MAX));

        r = fd_set_nonblock(fd, true);
        if (r < 0)
                goto fail;
        if (c->fc.peer.ss_family == AF_INET || c->fc.peer.ss_family == AF_INET6)
                (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int) { 1 }, sizeof(int));

        /* Once for the connection's life: bytes already there when it is added are reported at once. */
        r = io_batch_add_io(frontend_io_batch(fe), &c->io, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, on_io,
                            c);
        if (r < 0)
                goto fail;
        io_source_set_ops(c->io, &io_ops);
        r = sd_event_add_time(e, &c->timer, CLOCK_MONOTONIC, 0, H1_TIMER_ACCURACY, on_timer, c);
        if (r < 0)
                goto fail;
        r = sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
        if (r < 0)
                goto fail;
        r = io_batch_add_defer(frontend_io_batch(fe), &c->defer, on_defer, c);
        if (r < 0)
                goto fail;

        c->head_start = c->idle_start = c->read_progress = c->write_progress = h1_now(c);
        h1_request_reset(c);
        frontend_connection_register(fe, &c->fc, &h1_connection_ops,
                                     peer ? peer : &(struct sockaddr_storage) {});
        c->registered = true;
        if (frontend_shutting_down(fe))
                on_shutdown(&c->fc);
        update_timer(c);
        return 0;

fail:
        connection_unref(c); /* closes fd */
        return r;
}
