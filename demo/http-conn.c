/* SPDX-License-Identifier: MIT */
#include "http-conn.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "cleanup.h"
#include "macro.h"

int connection_new(int fd, Connection **ret) {
        Connection *c;

        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->req.url_cap = 256;
        c->req.url = malloc(c->req.url_cap);
        if (!c->req.url) {
                free(c);
                return -ENOMEM;
        }
        c->fd = fd;
        http_parser_init(&c->parser, HTTP_REQUEST);
        c->parser.data = c;
        *ret = c;
        return 0;
}

Connection *connection_free(Connection *c) {
        if (!c)
                return NULL;
        safe_close(c->fd);
        ws_conn_free(c->ws);
        free(c->req.url);
        free(c);
        return NULL;
}

/* ---- output: responses gather in the thread's out buffer and leave in as few syscalls as possible */

/* Writes all of iov, waiting for POLLOUT (bounded) when the peer is slow. 0 or -errno. */
static int write_all(int fd, struct iovec *iov, size_t n) {
        while (n > 0) {
                struct msghdr mh = { .msg_iov = iov, .msg_iovlen = n };
                ssize_t k = sendmsg(fd, &mh, MSG_NOSIGNAL);

                if (k < 0) {
                        struct pollfd pfd = { .fd = fd, .events = POLLOUT };
                        int r;

                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                return -errno;
                        r = poll(&pfd, 1, CONNECTION_WRITE_TIMEOUT_MSEC);
                        if (r < 0 && errno != EINTR)
                                return -errno;
                        if (r == 0)
                                return -ETIMEDOUT;
                        continue;
                }
                for (; n > 0 && (size_t) k >= iov->iov_len; iov++, n--)
                        k -= (ssize_t) iov->iov_len;
                if (n > 0) {
                        iov->iov_base = (char *) iov->iov_base + k;
                        iov->iov_len -= (size_t) k;
                }
        }
        return 0;
}

/* Sends what is buffered, followed by body (may be NULL), in one writev. */
static int flush_with(Connection *c, const void *body, size_t body_len) {
        ConnScratch *s = c->scratch;
        struct iovec iov[2];
        size_t n = 0;
        int r;

        if (s->out_len > 0)
                iov[n++] = (struct iovec) { s->out, s->out_len };
        if (body_len > 0)
                iov[n++] = (struct iovec) { (void *) body, body_len };
        if (n == 0)
                return 0;
        r = write_all(c->fd, iov, n);
        s->out_len = 0;
        return r;
}

static int flush_out(Connection *c) {
        return flush_with(c, NULL, 0);
}

static void out_append(ConnScratch *s, const char *p, size_t len) {
        memcpy(s->out + s->out_len, p, len);
        s->out_len += len;
}

static void out_append_str(ConnScratch *s, const char *p) {
        out_append(s, p, strlen(p));
}

static void out_append_u64(ConnScratch *s, uint64_t v) {
        char buf[24], *p = buf + sizeof buf;

        do
                *--p = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        out_append(s, p, (size_t) (buf + sizeof buf - p));
}

/* 64 KiB of printable text for GET /work?bytes=N, generated once. */
static char stream_pattern[64 * 1024];

__attribute__((constructor)) static void stream_pattern_init(void) {
        for (size_t i = 0; i < sizeof stream_pattern; i++)
                stream_pattern[i] = (i % 64 == 63) ? '\n' : (char) ('a' + i % 26);
}

static int stream_body(Connection *c, uint64_t len) {
        int r;

        r = flush_out(c);
        if (r < 0)
                return r;
        while (len > 0) {
                struct iovec iov[16];
                size_t n = 0;

                for (; n < ELEMENTSOF(iov) && len > 0; n++) {
                        size_t k = (size_t) MIN(len, (uint64_t) sizeof stream_pattern);
                        iov[n] = (struct iovec) { stream_pattern, k };
                        len -= k;
                }
                r = write_all(c->fd, iov, n);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Longest head we produce: status line, four fixed headers, a user name. */
#define RESPONSE_HEAD_MAX 512

static int send_response(Connection *c, const HttpResponse *resp, bool head, bool close) {
        ConnScratch *s = c->scratch;
        uint64_t len = resp->stream_bytes > 0 ? resp->stream_bytes : resp->body_len;
        const char *reason = http_status_str((enum http_status) resp->status);
        int r;

        if (s->out_len + RESPONSE_HEAD_MAX > sizeof s->out) {
                r = flush_out(c);
                if (r < 0)
                        return r;
        }
        out_append_str(s, "HTTP/1.1 ");
        out_append_u64(s, (uint64_t) resp->status);
        out_append_str(s, " ");
        out_append_str(s, reason);
        out_append_str(s, "\r\nContent-Length: ");
        out_append_u64(s, len);
        if (resp->content_type) {
                out_append_str(s, "\r\nContent-Type: ");
                out_append_str(s, resp->content_type);
        }
        if (resp->user_header) {
                out_append_str(s, "\r\nElastic-Pool-User: ");
                out_append_str(s, resp->user_header);
        }
        if (resp->allow_header)
                out_append_str(s, "\r\nAllow: GET, HEAD, POST");
        if (close)
                out_append_str(s, "\r\nConnection: close");
        else if (c->parser.http_minor == 0 && c->parser.http_major == 1)
                out_append_str(s, "\r\nConnection: keep-alive");
        out_append_str(s, "\r\n\r\n");

        if (head || len == 0)
                return 0;
        if (resp->stream_bytes > 0)
                return stream_body(c, resp->stream_bytes);
        if (resp->body_len <= sizeof s->out - s->out_len) {
                out_append(s, resp->body, resp->body_len);
                return 0;
        }
        return flush_with(c, resp->body, resp->body_len);
}

/* ---- parser callbacks: collect what the handlers need, bounded, copying out of the read buffer */

static Connection *conn_of(http_parser *p) {
        return p->data;
}

/* Fails the parse on purpose with the answer to give; status 0: say nothing (writing already failed). */
static int fail(Connection *c, int status, const char *reason) {
        c->req.error_status = status;
        c->req.error_reason = reason;
        return -1;
}

static void request_reset(RequestState *r) {
        char *url = r->url;
        size_t cap = r->url_cap;

        /* Everything but the buffer, without touching the arrays (memset of ~400 bytes per request). */
        r->url_len = r->head_bytes = r->field_len = r->value_len = 0;
        r->n_headers = 0;
        r->header_state = HEADER_STATE_NONE;
        r->kind = HEADER_OTHER;
        r->user_present = r->user_invalid = r->expect_continue = r->keep_alive = false;
        r->upgrade_websocket = false;
        r->ws_key_len = 0;
        r->body_bytes = 0;
        r->error_status = 0;
        r->url = url;
        r->url_cap = cap;
}

static int count_head(Connection *c, size_t len) {
        c->req.head_bytes += len;
        return c->req.head_bytes > REQUEST_HEAD_MAX ? fail(c, 431, "request head over 16 KiB") : 0;
}

static int on_message_begin(http_parser *p) {
        Connection *c = conn_of(p);

        request_reset(&c->req);
        c->in_message = true;
        return 0;
}

static int on_url(http_parser *p, const char *at, size_t len) {
        RequestState *r = &conn_of(p)->req;

        if (r->url_len + len > REQUEST_URL_MAX)
                return fail(conn_of(p), 414, "request target over 8 KiB");
        if (r->url_len + len + 1 > r->url_cap) {
                size_t cap = MIN(MAX(r->url_cap * 2, r->url_len + len + 1), (size_t) REQUEST_URL_MAX + 1);
                char *u = realloc(r->url, cap);
                if (!u)
                        return fail(conn_of(p), 503, "out of memory");
                r->url = u;
                r->url_cap = cap;
        }
        memcpy(r->url + r->url_len, at, len);
        r->url_len += len;
        r->url[r->url_len] = 0;
        return count_head(conn_of(p), len);
}

static void header_trim_value(RequestState *r) {
        /* http-parser skips leading blanks but may pass trailing ones. */
        while (r->value_len > 0 && r->value_len <= sizeof r->value &&
               (r->value[r->value_len - 1] == ' ' || r->value[r->value_len - 1] == '\t'))
                r->value_len--;
}

static void header_done(RequestState *r) {
        header_trim_value(r);
        switch (r->kind) {
        case HEADER_USER:
                /* A second copy is an error even when equal: the front end sets exactly one. */
                if (r->user_present || r->value_len > USER_NAME_MAX ||
                    !user_name_is_valid(r->value, r->value_len))
                        r->user_invalid = true;
                else {
                        memcpy(r->user, r->value, r->value_len);
                        r->user[r->value_len] = 0;
                }
                r->user_present = true;
                break;
        case HEADER_EXPECT:
                r->expect_continue = r->value_len == 12 && strncasecmp(r->value, "100-continue", 12) == 0;
                break;
        case HEADER_UPGRADE:
                r->upgrade_websocket = r->value_len == 9 && strncasecmp(r->value, "websocket", 9) == 0;
                break;
        case HEADER_WS_KEY:
                if (r->value_len < sizeof r->ws_key) {
                        memcpy(r->ws_key, r->value, r->value_len);
                        r->ws_key_len = r->value_len;
                }
                break;
        case HEADER_OTHER:
                break;
        }
        r->header_state = HEADER_STATE_NONE;
}

static HeaderKind header_classify(const RequestState *r) {
        if (r->field_len == strlen("x-elastic-pool-user") &&
            strncasecmp(r->field, "x-elastic-pool-user", r->field_len) == 0)
                return HEADER_USER;
        if (r->field_len == strlen("expect") && strncasecmp(r->field, "expect", r->field_len) == 0)
                return HEADER_EXPECT;
        if (r->field_len == strlen("upgrade") && strncasecmp(r->field, "upgrade", r->field_len) == 0)
                return HEADER_UPGRADE;
        if (r->field_len == strlen("sec-websocket-key") &&
            strncasecmp(r->field, "sec-websocket-key", r->field_len) == 0)
                return HEADER_WS_KEY;
        return HEADER_OTHER;
}

/* RFC 9110 token characters. The distribution's http-parser is built lenient and lets e.g. a space
 * through in a field name; a request smuggled past a proxy that way must not be taken as valid. */
static bool is_token(const char *s, size_t len) {
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char) s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      strchr("!#$%&'*+-.^_`|~", c)) || c == 0)
                        return false;
        }
        return true;
}

static int on_header_field(http_parser *p, const char *at, size_t len) {
        Connection *c = conn_of(p);
        RequestState *r = &c->req;

        if (!is_token(at, len))
                return fail(c, 400, "invalid character in a header field name");

        if (r->header_state == HEADER_STATE_VALUE)
                header_done(r);
        if (r->header_state == HEADER_STATE_NONE) {
                if (++r->n_headers > REQUEST_HEADERS_MAX)
                        return fail(c, 431, "more than 100 header fields");
                r->field_len = 0;
                r->header_state = HEADER_STATE_FIELD;
        }
        /* A field may arrive in pieces (split reads): gather what fits, count the rest. */
        if (r->field_len < sizeof r->field)
                memcpy(r->field + r->field_len, at, MIN(len, sizeof r->field - r->field_len));
        r->field_len += len;
        return count_head(c, len + 4); /* ": " and CRLF */
}

static int on_header_value(http_parser *p, const char *at, size_t len) {
        Connection *c = conn_of(p);
        RequestState *r = &c->req;

        if (r->header_state == HEADER_STATE_FIELD) {
                r->kind = header_classify(r);
                r->value_len = 0;
                r->header_state = HEADER_STATE_VALUE;
        }
        if (r->kind != HEADER_OTHER) {
                if (r->value_len < sizeof r->value)
                        memcpy(r->value + r->value_len, at, MIN(len, sizeof r->value - r->value_len));
                r->value_len += len;
        }
        return count_head(c, len);
}

static bool has_body(const http_parser *p) {
        return (p->flags & F_CHUNKED) || (p->content_length > 0 && p->content_length != UINT64_MAX);
}

static int on_headers_complete(http_parser *p) {
        Connection *c = conn_of(p);
        RequestState *r = &c->req;

        if (r->header_state == HEADER_STATE_VALUE)
                header_done(r);
        r->method = (enum http_method) p->method;
        r->keep_alive = http_should_keep_alive(p) && !p->upgrade; /* we speak nothing to upgrade to */
        if (!(p->flags & F_CHUNKED) && p->content_length != UINT64_MAX &&
            p->content_length > c->app->max_body)
                return fail(c, 413, "request body over the limit (--max-body-size)");
        /* The client waits for this before it sends the body; it leaves with the next flush, which comes
         * at the latest when the bytes read so far are parsed. */
        if (r->expect_continue && has_body(p) && p->http_major == 1 && p->http_minor >= 1) {
                if (c->scratch->out_len + 32 > sizeof c->scratch->out && flush_out(c) < 0)
                        return fail(c, 0, NULL);
                out_append_str(c->scratch, "HTTP/1.1 100 Continue\r\n\r\n");
        }
        return 0;
}

static int on_body(http_parser *p, const char *at, size_t len) {
        Connection *c = conn_of(p);

        c->req.body_bytes += len;
        return c->req.body_bytes > c->app->max_body
                       ? fail(c, 413, "request body over the limit (--max-body-size)")
                       : 0;
}

static int on_message_complete(http_parser *p) {
        Connection *c = conn_of(p);

        c->in_message = false;
        /* Stop the parser here: the request is answered before the next one in the buffer is read, which
         * keeps pipelined answers in order and lets the handler see this request's state. */
        http_parser_pause(p, 1);
        return 0;
}

static const http_parser_settings parser_settings = {
        .on_message_begin = on_message_begin,
        .on_url = on_url,
        .on_header_field = on_header_field,
        .on_header_value = on_header_value,
        .on_headers_complete = on_headers_complete,
        .on_body = on_body,
        .on_message_complete = on_message_complete,
};

/* ---- requests */

#define FEED_LINGER 2

static void flush_before_slow(void *conn) {
        (void) flush_out(conn); /* a failure shows again, and is handled, at the answer's own write */
}

/* Replies of the WebSocket echo: into the out buffer, or written at once when they do not fit. */
static int ws_emit(void *ctx, const void *data, size_t size) {
        Connection *c = ctx;
        ConnScratch *s = c->scratch;

        if (s->out_len + size <= sizeof s->out) {
                out_append(s, data, size);
                return 0;
        }
        return flush_with(c, data, size);
}

/* Bytes of an upgraded connection. 1 go on, 0 close. */
static int ws_input(Connection *c, const char *data, size_t len) {
        int r = ws_conn_feed(c->ws, c->app->users, (const uint8_t *) data, len, ws_emit, c);

        return r > 0 ? 1 : 0;
}

static bool is_ws_path(const RequestState *r) {
        return r->url_len >= 3 && memcmp(r->url, "/ws", 3) == 0 && (r->url_len == 3 || r->url[3] == '?');
}

/* GET /ws: the WebSocket handshake (RFC 6455 4.2.2); the connection is the echo's from here on. 1 (go
 * on, as a WebSocket), 0 (refused and closed), -errno. */
static int ws_handshake(Connection *c) {
        RequestState *r = &c->req;
        HttpResponse *resp = &c->scratch->resp;
        char accept[WS_ACCEPT_SIZE];
        int k;

        if (r->method != HTTP_GET || !r->upgrade_websocket || !c->parser.upgrade ||
            ws_accept_key(r->ws_key, r->ws_key_len, accept) < 0) {
                *resp = (HttpResponse) { .status = 400 };
                http_response_text(resp, 400, "not a WebSocket handshake (GET, Upgrade: websocket, "
                                              "Connection: Upgrade, Sec-WebSocket-Key)\n");
                k = send_response(c, resp, false, true);
                return k < 0 ? k : 0;
        }
        k = ws_conn_new(r->user_present && !r->user_invalid ? r->user : NULL, c->app->worker, &c->ws);
        if (k < 0)
                return k;
        out_append_str(c->scratch, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                   "Connection: Upgrade\r\nSec-WebSocket-Accept: ");
        out_append_str(c->scratch, accept);
        out_append_str(c->scratch, "\r\n\r\n");
        return 1;
}

/* Answers a complete request. Returns 1 to go on reading, 0 to close, or -errno (write failed). */
static int answer(Connection *c) {
        RequestState *r = &c->req;
        HttpResponse *resp = &c->scratch->resp;
        HttpRequest req = {
                .method = r->method,
                .url = r->url,
                .url_len = r->url_len,
                .user = r->user_present && !r->user_invalid ? r->user : NULL,
                .user_invalid = r->user_invalid,
                .body_bytes = r->body_bytes,
                .before_slow = flush_before_slow,
                .conn = c,
        };
        bool close;
        int k;

        if (is_ws_path(r))
                return ws_handshake(c);
        resp->status = 200;
        resp->content_type = resp->user_header = resp->body = NULL;
        resp->body_len = resp->stream_bytes = resp->hold_len = 0;
        resp->heap = resp->hold = NULL;
        resp->allow_header = resp->close = false;

        handlers_dispatch(c->app, &req, resp);
        close = !r->keep_alive || c->stopping || resp->close;
        k = send_response(c, resp, r->method == HTTP_HEAD, close);
        if (k >= 0 && resp->hold)
                k = flush_out(c); /* "held until the response is written": then, not sooner */
        http_response_done(resp);
        if (k < 0)
                return k;
        /* Pipelined answers leave together, bounded (a slow handler flushes them before it starts). */
        if (c->scratch->out_len > sizeof c->scratch->out / 2) {
                k = flush_out(c);
                if (k < 0)
                        return k;
        }
        return !close;
}

static int answer_error(Connection *c, enum http_errno e) {
        HttpResponse *resp = &c->scratch->resp;
        int status = c->req.error_status > 0 ? c->req.error_status : e == HPE_HEADER_OVERFLOW ? 431 : 400;

        if (c->req.error_status == 0 && e >= HPE_CB_message_begin && e <= HPE_CB_chunk_complete)
                return 0; /* a callback failed writing (error_status 0): nothing more to say */
        *resp = (HttpResponse) { .status = status };
        http_response_text(resp, status, "%s: %s\n", http_status_str((enum http_status) status),
                           c->req.error_status > 0 ? c->req.error_reason : http_errno_description(e));
        (void) send_response(c, resp, false, true);
        return FEED_LINGER;
}

/* Parses len bytes, answering each request as it completes. 1: go on, 0: close, FEED_LINGER: an error
 * was answered, -errno. */
static int feed(Connection *c, const char *data, size_t len) {
        while (len > 0) {
                size_t n = http_parser_execute(&c->parser, &parser_settings, data, len);
                enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
                int r;

                data += n;
                len -= n;
                if (e == HPE_PAUSED) {
                        http_parser_pause(&c->parser, 0);
                        r = answer(c);
                        if (r != 1)
                                return r;
                        if (c->ws) /* what follows the handshake is the WebSocket's */
                                return len > 0 ? ws_input(c, data, len) : 1;
                        continue;
                }
                if (e != HPE_OK)
                        return answer_error(c, e);
                if (n == 0)
                        return 0; /* cannot happen without an error; never spin on it */
        }
        return 1;
}

/* Rounds of reading per hand-over: enough to swallow a burst, few enough to let others run. */
#define READ_ROUNDS 8

/* After an error answer: discard what the peer still sends until it closes. */
static bool linger(Connection *c, ConnScratch *scratch) {
        for (unsigned round = 0; round < READ_ROUNDS; round++) {
                ssize_t n = recv(c->fd, scratch->in, sizeof scratch->in, 0);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return true;
                if (n <= 0)
                        return false;
        }
        return true;
}

/* The error answer is out, but the peer may still be sending the request that caused it: closing with
 * unread bytes makes the kernel send a reset, which can destroy the answer before the client read it.
 * So half-close, and discard until the peer closes (or the idle timeout ends it). */
static void linger_begin(Connection *c) {
        (void) shutdown(c->fd, SHUT_WR);
        c->lingering = true;
        c->in_message = false; /* nothing of it is wanted: a stop may end it at once */
}

bool connection_process(Connection *c, App *app, ConnScratch *scratch, bool stopping) {
        int r = 1;

        if (c->lingering)
                return linger(c, scratch);
        c->app = app;
        c->scratch = scratch;
        c->stopping = stopping;
        scratch->out_len = 0;

        for (unsigned round = 0; round < READ_ROUNDS && r > 0; round++) {
                ssize_t n = recv(c->fd, scratch->in, sizeof scratch->in, 0);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n <= 0) {
                        /* EOF or reset. Complete requests were answered; a cut one gets no answer. */
                        r = 0;
                        break;
                }
                r = c->ws ? ws_input(c, scratch->in, (size_t) n) : feed(c, scratch->in, (size_t) n);
                if (r == FEED_LINGER)
                        break;
                if ((size_t) n < sizeof scratch->in)
                        break; /* a short read: the socket is most likely empty, save a recv */
        }
        if (flush_out(c) < 0)
                r = 0;
        if (r == FEED_LINGER)
                linger_begin(c);
        c->app = NULL;
        c->scratch = NULL;
        return r > 0;
}
