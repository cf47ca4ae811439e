/* SPDX-License-Identifier: MIT */
/* The response side of a worker connection: reads into the connection's buffer, parses with http-parser
 * in response mode, and hands head, body (by pointer) and end to the router. Every parser callback only
 * records what it saw and pauses the parser: the callouts to the router happen after http_parser_execute()
 * returned, so whatever the router does (detach, free, start another exchange on this very connection)
 * never runs under the parser. */
#include <errno.h>
#include <http_parser.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cleanup.h"
#include "forward-internal.h"
#include "log.h"
#include "macro.h"

static int on_header_field(http_parser *parser, const char *at, size_t len) {
        Connection *c = parser->data;
        uint32_t off = (uint32_t) (at - c->in);

        if (c->head_done)
                return 0; /* trailer fields of a chunked body: dropped */
        if (c->n_hf > 0 && !c->hf_value) {
                RawField *f = &c->hf[c->n_hf - 1];
                if (f->name_off + f->name_len == off) {
                        f->name_len += (uint32_t) len;
                        return 0;
                }
        }
        if (c->n_hf >= EXCHANGE_FIELDS_MAX) {
                c->parse_error = "more than 128 header fields";
                return -1;
        }
        /* an empty value points just past the name, inside the buffer */
        c->hf[c->n_hf++] = (RawField) { .name_off = off, .name_len = (uint32_t) len,
                                        .value_off = off + (uint32_t) len };
        c->hf_value = false;
        return 0;
}

static int on_header_value(http_parser *parser, const char *at, size_t len) {
        Connection *c = parser->data;
        uint32_t off = (uint32_t) (at - c->in);
        RawField *f;

        if (c->head_done)
                return 0;
        if (c->n_hf == 0) {
                c->parse_error = "header value without a name";
                return -1;
        }
        f = &c->hf[c->n_hf - 1];
        if (c->hf_value) {
                if (f->value_off + f->value_len == off) {
                        f->value_len += (uint32_t) len;
                        return 0;
                }
                c->parse_error = "folded header field (obs-fold)";
                return -1;
        }
        f->value_off = off;
        f->value_len = (uint32_t) len;
        c->hf_value = true;
        return 0;
}

static bool is_ows(char ch) {
        return ch == ' ' || ch == '\t';
}

/* The only transfer coding we can frame is chunked alone: http-parser reads a body whose last coding
 * is not chunked until the worker closes, and one with others before chunked would reach the client
 * without them (Transfer-Encoding is hop-by-hop, so it is not passed on). Every Transfer-Encoding field
 * together must name exactly one coding: chunked. */
static bool transfer_coding_is_chunked(const Connection *c) {
        unsigned codings = 0;

        for (size_t i = 0; i < c->n_hf; i++) {
                const char *v = c->in + c->hf[i].value_off;
                size_t n = c->hf[i].value_len;

                if (c->hf[i].name_len != 17 || strncasecmp(c->in + c->hf[i].name_off, "transfer-encoding", 17) != 0)
                        continue;
                for (size_t k = 0; k <= n;) {
                        size_t end = k, a, b;
                        while (end < n && v[end] != ',')
                                end++;
                        for (a = k; a < end && is_ows(v[a]); a++)
                                ;
                        for (b = end; b > a && is_ows(v[b - 1]); b--)
                                ;
                        if (b > a) { /* empty list elements do not count (RFC 9110 5.6.1) */
                                if (b - a != 7 || strncasecmp(v + a, "chunked", 7) != 0)
                                        return false;
                                codings++;
                        }
                        k = end + 1;
                }
        }
        return codings == 1;
}

static int on_headers_complete(http_parser *parser) {
        Connection *c = parser->data;
        unsigned status = parser->status_code;

        if (status < 100 || status > 599) {
                c->parse_error = "invalid status code";
                return -1;
        }
        if (status == 101 && c->up.x->req.websocket && parser->upgrade) {
                /* the WebSocket handshake succeeded: what follows the head is the tunnel's */
                c->status = status;
                c->ev = EV_HEAD;
                http_parser_pause(parser, 1);
                return 0;
        }
        if (status == 101) {
                c->parse_error = "101 Switching Protocols to a request that asked for no WebSocket";
                return -1;
        }
        if (status < 200) {
                /* 100 Continue (we answered the client's Expect ourselves), 102, 103: swallowed */
                c->interim = true;
                return 1;
        }
        /* uses_transfer_encoding: set by http-parser (2.9.3 and later) when the head had the field, so
         * the plain path (Content-Length) walks no field for it */
        if (parser->uses_transfer_encoding && !transfer_coding_is_chunked(c)) {
                c->parse_error = "a transfer coding other than chunked alone";
                return -1;
        }
        c->status = status;
        c->skip_body = c->up.x->req.head_method || status == 204 || status == 304;
        c->ev = EV_HEAD;
        http_parser_pause(parser, 1);
        /* 1: no body. http-parser would otherwise read a 304's Content-Length worth of body. */
        return c->skip_body ? 1 : 0;
}

static int on_body(http_parser *parser, const char *at, size_t len) {
        Connection *c = parser->data;

        c->ev = EV_BODY;
        c->ev_data = at;
        c->ev_len = len;
        http_parser_pause(parser, 1);
        return 0;
}

static int on_message_complete(http_parser *parser) {
        Connection *c = parser->data;

        c->ev = c->interim ? EV_INTERIM : EV_COMPLETE;
        c->interim = false;
        http_parser_pause(parser, 1);
        return 0;
}

static const http_parser_settings parser_settings = {
        .on_header_field = on_header_field,
        .on_header_value = on_header_value,
        .on_headers_complete = on_headers_complete,
        .on_body = on_body,
        .on_message_complete = on_message_complete,
};

/* After a callout on c for x: is x still on c, and c still live? */
bool forward_conn_still(const Connection *c, const Exchange *x) {
        return !c->up.pool->dead && c->state == CONN_ACTIVE && c->up.x == x;
}

/* What the router's sinks returned: -errno the client is gone (no callout: it knows), 1 pause. */
static void conn_after_sink(Connection *c, int r) {
        if (r < 0)
                forward_conn_abandon(c);
        else if (r > 0)
                c->response_paused = true; /* reading stops; the resume reads on (forward_response_resume) */
}

static void conn_deliver_head(Connection *c) {
        Exchange *x = c->up.x;
        HeaderField raw[EXCHANGE_FIELDS_MAX], fields[EXCHANGE_FIELDS_MAX];
        const char *user;
        size_t n, user_len;
        ResponseHead h;
        int r;

        for (size_t i = 0; i < c->n_hf; i++)
                raw[i] = (HeaderField) {
                        .name = c->in + c->hf[i].name_off,
                        .name_len = c->hf[i].name_len,
                        .value = c->in + c->hf[i].value_off,
                        .value_len = c->hf[i].value_len,
                };
        r = forward_response_filter(raw, c->n_hf, fields, &n, &user, &user_len);
        if (r < 0) {
                forward_conn_fail(c, 502, "malformed response head: invalid bytes in a header field");
                return;
        }
        h = (ResponseHead) {
                .status = c->status,
                .fields = fields,
                .n_fields = n,
                .has_body = !c->skip_body,
        };
        if (c->status == 101) {
                /* http-parser paused on the head's last LF: the tunnel begins after it */
                if (c->in_parsed < c->in_len && c->in[c->in_parsed] == '\n')
                        c->in_parsed++;
                c->tunnel = true;
                c->up.pool->counters.tunnels++;
                forward_conn_share_release(c); /* like its connection, no longer counted */
        }
        if ((c->parser.flags & F_CONTENTLENGTH) && !(c->parser.flags & F_CHUNKED) && c->status != 204) {
                h.has_content_length = true;
                h.content_length = c->parser.content_length;
        }
        c->head_done = true;
        c->last_activity = forward_pool_now(c->up.pool);
        forward_pool_answered(c->up.pool);

        r = exchange_response_head(x, &h, user, user_len);
        if (forward_conn_still(c, x))
                conn_after_sink(c, r);
        if (forward_conn_still(c, x))
                forward_conn_timed_update(c);
}

static void conn_complete(Connection *c) {
        ForwardPool *p = c->up.pool;
        Exchange *x;
        bool reuse;

        /* Reusable only when both messages ended cleanly and nothing else came: bytes after the
         * response would be read as the next exchange's answer. So the socket must be known empty, too
         * (a last read that filled the buffer, or the worker's close seen, leave it readable). */
        reuse = http_should_keep_alive(&c->parser) && c->request_done && !c->write_broken &&
                c->in_parsed == c->in_len && !c->readable && !p->dead;
        p->counters.requests++;
        latency_histogram_add(&p->counters.latency, forward_pool_now(p) - c->up.started);
        x = forward_conn_release(c);
        c->served++;
        if (reuse)
                forward_conn_recycle(c);
        else {
                forward_conn_discard(c);
                forward_pool_dispatch_queue(p);
        }
        (void) exchange_response_end(x); /* last: the router may do anything from here */
}

static void conn_parse_event(Connection *c, ParseEvent ev) {
        Exchange *x = c->up.x;
        int r;

        switch (ev) {
        case EV_INTERIM:
                c->head_start = c->in_parsed;
                if (c->in_parsed == c->in_len)
                        c->in_len = c->in_parsed = c->head_start = 0;
                c->n_hf = 0;
                c->hf_value = false;
                break;
        case EV_HEAD:
                conn_deliver_head(c);
                break;
        case EV_BODY:
                c->body_bytes += c->ev_len;
                r = exchange_response_body(x, c->ev_data, c->ev_len);
                if (forward_conn_still(c, x))
                        conn_after_sink(c, r);
                break;
        case EV_COMPLETE:
                conn_complete(c);
                break;
        default:
                break;
        }
}

static void conn_malformed(Connection *c, enum http_errno e) {
        const char *why = c->parse_error ? c->parse_error : http_errno_description(e);

        if (c->head_done)
                forward_conn_fail(c, 502, "malformed response body after %" PRIu64 " bytes: %s",
                                  c->body_bytes, why);
        else
                forward_conn_fail(c, 502, "malformed response head: %s", why);
}

/* Parses what the read buffer holds; true while the same exchange may read on. Calls out: the caller
 * holds c (forward_conn_on_io, pending_resume), so c outlives whatever the router does. */
/* A tunnel's bytes go on as they come, unparsed. */
static void conn_tunnel_bytes(Connection *c) {
        Exchange *x = c->up.x;
        size_t n = c->in_len - c->in_parsed;
        int r;

        c->body_bytes += n;
        c->in_parsed = c->in_len;
        r = exchange_response_body(x, c->in + c->in_len - n, n);
        if (forward_conn_still(c, x))
                conn_after_sink(c, r);
}

bool forward_conn_parse(Connection *c) {
        Exchange *x = c->up.x;

        while (forward_conn_still(c, x) && !c->response_paused && c->in_parsed < c->in_len) {
                if (c->tunnel) {
                        conn_tunnel_bytes(c);
                        continue;
                }
                size_t n = http_parser_execute(&c->parser, &parser_settings, c->in + c->in_parsed,
                                               c->in_len - c->in_parsed);
                enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
                ParseEvent ev;

                c->in_parsed += n;
                if (e != HPE_PAUSED) {
                        if (e != HPE_OK)
                                conn_malformed(c, e);
                        break;
                }
                http_parser_pause(&c->parser, 0);
                ev = c->ev;
                c->ev = EV_NONE;
                conn_parse_event(c, ev);
        }
        if (!forward_conn_still(c, x))
                return false;
        if (c->head_done && c->in_parsed == c->in_len)
                c->in_len = c->in_parsed = c->head_start = 0;
        return !c->response_paused;
}

static void conn_compact_head(Connection *c) {
        size_t s = c->head_start;

        memmove(c->in, c->in + s, c->in_len - s);
        c->in_len -= s;
        c->in_parsed -= s;
        for (size_t i = 0; i < c->n_hf; i++) { /* all fields belong to the head at head_start */
                c->hf[i].name_off -= (uint32_t) s;
                c->hf[i].value_off -= (uint32_t) s;
        }
        c->head_start = 0;
}

/* The worker closed its side of a tunnel: the exchange ends, the connection is never reused. */
static void conn_tunnel_eof(Connection *c) {
        ForwardPool *p = c->up.pool;
        Exchange *x;

        p->counters.requests++;
        x = forward_conn_release(c);
        forward_conn_discard(c);
        forward_pool_dispatch_queue(p);
        (void) exchange_response_end(x); /* last: the router may do anything from here */
}

static void conn_eof(Connection *c) {
        enum http_errno e;

        if (c->tunnel) {
                conn_tunnel_eof(c);
                return;
        }
        if (!c->response_started) {
                forward_conn_lost(c, 0, "worker closed the connection before responding");
                return;
        }
        (void) http_parser_execute(&c->parser, &parser_settings, NULL, 0);
        e = HTTP_PARSER_ERRNO(&c->parser);
        if (e == HPE_PAUSED) { /* a body delimited by the end of the connection */
                http_parser_pause(&c->parser, 0);
                c->ev = EV_NONE;
                conn_complete(c);
        } else if (!c->head_done)
                forward_conn_fail(c, 502, "worker closed the connection in the middle of the response head");
        else
                forward_conn_fail(c, 502, "worker closed the connection after %" PRIu64
                                  " bytes of the response body", c->body_bytes);
}

/* Bytes are in the read buffer beyond what was parsed: the batch's read (below) brought them. */
static bool conn_took_bytes(Connection *c) {
        if (!c->response_started) {
                c->response_started = true;
                forward_conn_stop_retain(c);
        }
        return forward_conn_parse(c);
}

/* What a read into the buffer's free space brought. Edge-triggered: c->readable is cleared only when the
 * socket is known to be empty (EAGAIN, EOF, a read shorter than asked for unless the worker's close was
 * already seen). Returns the bytes, 0 at EOF, -1 when the read failed (handled here). */
static ssize_t conn_read_result(Connection *c, ssize_t n, size_t space) {
        ForwardPool *p = c->up.pool;

        if (n < 0) {
                c->readable = false;
                if (n != -EAGAIN)
                        forward_conn_lost(c, (int) n, "reading the response failed");
                return -1;
        }
        if (n == 0) {
                c->readable = false;
                conn_eof(c);
                return 0;
        }
        if ((size_t) n < space && !c->rdhup)
                c->readable = false;
        c->in_len += (size_t) n;
        p->stats.response_buffer_peak = MAX(p->stats.response_buffer_peak, c->in_len);
        c->last_activity = forward_pool_now(p);
        return n;
}

/* Reads and parses while the socket has bytes and the client side takes them; after READS_PER_WAKEUP
 * reads the socket waits for its next turn (forward_conn_read_later()), so that one fast response does
 * not hold the loop. */
void forward_conn_read(Connection *c) {
        for (unsigned i = 0; c->readable; i++) {
                size_t space;
                ssize_t n;

                if (i == READS_PER_WAKEUP) {
                        forward_conn_read_later(c);
                        return;
                }
                if (c->in_len == FORWARD_RESPONSE_HEAD_MAX) {
                        /* only a head in progress keeps bytes across reads (forward_conn_parse) */
                        if (c->head_done)
                                return;
                        if (c->head_start == 0) {
                                forward_conn_fail(c, 502, "response head larger than %u bytes",
                                                  FORWARD_RESPONSE_HEAD_MAX);
                                return;
                        }
                        conn_compact_head(c);
                }
                space = FORWARD_RESPONSE_HEAD_MAX - c->in_len;
                if (c->read_error < 0) {
                        n = c->read_error;
                        c->read_error = 0;
                } else {
                        n = read(c->fd, c->in + c->in_len, space);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0)
                                n = -errno;
                }
                if (conn_read_result(c, n, space) <= 0 || !conn_took_bytes(c))
                        return;
        }
}

/* The batch's first read of a ready socket (io-batch.h), done with every other socket's of the same poll:
 * for an exchange waiting on its response, into the free end of the read buffer. Its bytes are parsed
 * when the socket's event is dispatched (conn_io()); its EOF is left for forward_conn_read() to find. */
bool forward_conn_read_prepare(IoSource *s, uint32_t revents, struct iovec *ret, void *userdata) {
        Connection *c = userdata;

        if (c->state != CONN_ACTIVE || c->response_paused || c->in_parsed < c->in_len ||
            c->in_len == FORWARD_RESPONSE_HEAD_MAX || c->read_error < 0)
                return false;
        if (revents & (EPOLLRDHUP | EPOLLHUP))
                c->rdhup = true;
        *ret = (struct iovec) { .iov_base = c->in + c->in_len, .iov_len = FORWARD_RESPONSE_HEAD_MAX - c->in_len };
        return true;
}

bool forward_conn_read_done(IoSource *s, ssize_t result, void *userdata) {
        Connection *c = userdata;

        if (result == 0)
                return false; /* on_io reads the EOF again and handles it as its own */
        if (result < 0 && result != -EAGAIN) {
                c->read_error = (int) result;
                return false;
        }
        c->readable = true; /* what the event said; the read's result clears it when it emptied the socket */
        (void) conn_read_result(c, result, FORWARD_RESPONSE_HEAD_MAX - c->in_len);
        return true;
}

/* An idle socket became readable: the worker closed it, or sent bytes nobody asked for. */
static void conn_idle_event(Connection *c) {
        char b;
        ssize_t n = recv(c->fd, &b, 1, MSG_DONTWAIT);

        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                c->readable = errno == EINTR;
                return;
        }
        log_debug("w%u: idle connection %s", c->up.pool->o.worker_id,
                  n > 0 ? "received unsolicited bytes, closing" : "closed by the worker");
        forward_conn_discard(c);
}

static void conn_io(Connection *c, uint32_t revents) {
        if (revents & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                c->readable = true; /* an error or a hang-up is what the next read reports */
        if (revents & (EPOLLRDHUP | EPOLLHUP))
                c->rdhup = true;
        if (revents & (EPOLLOUT | EPOLLERR | EPOLLHUP))
                c->write_blocked = false;
        if (c->state == CONN_IDLE) {
                if (c->readable)
                        conn_idle_event(c);
                return;
        }
        if (c->state == CONN_CONNECTING) {
                int error = 0;
                socklen_t len = sizeof(error);

                if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &error, &len) < 0)
                        error = errno;
                if (error != 0) {
                        forward_conn_connect_failed(c, -error);
                        forward_conn_lost(c, -error, "connect failed");
                } else
                        forward_conn_connected(c);
                return;
        }
        if (c->state != CONN_ACTIVE)
                return;
        if (revents & (EPOLLOUT | EPOLLERR | EPOLLHUP))
                forward_conn_flush(c);
        if (c->state != CONN_ACTIVE || c->response_paused)
                return;
        if (c->in_parsed < c->in_len && !conn_took_bytes(c))
                return; /* what the batch's read brought */
        if (c->state == CONN_ACTIVE && c->readable)
                forward_conn_read(c);
}

void forward_conn_on_io(IoSource *s, int fd, uint32_t revents, void *userdata) {
        Connection *c = userdata;
        ForwardPool *p = c->up.pool;

        forward_pool_enter(p);
        forward_conn_hold(c);
        conn_io(c, revents);
        forward_conn_unhold(c);
        forward_pool_leave(p);
}
