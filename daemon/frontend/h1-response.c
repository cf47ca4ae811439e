/* SPDX-License-Identifier: MIT */
/* The response side of an HTTP/1.1 connection: a bounded ring of bytes the socket has not taken yet,
 * response heads and bodies serialised into it (or written straight from the caller's memory when the
 * socket takes them), and the ClientOps the router and the forward side call. Flow control: a body piece
 * that leaves more than write_high queued is still taken, and response_body returns 1; the connection
 * calls exchange_response_resume() once the queue is under write_low. */
#include "h1-internal.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "log.h"
#include "macro.h"

#define H1_WRITE_INITIAL 4096U
/* A queue past this is a forward side ignoring response_body's 1: the client is cut off. */
#define H1_WRITE_LIMIT (64U * 1024U * 1024U)
/* Body pieces that leave less than this queued are copied and go out with what follows (one writev per
 * small response); bigger ones are written straight from the caller's memory. */
#define H1_COALESCE (16U * 1024U)

/* ---- the write queue ---------------------------------------------------------------------------- */

void h1_wq_done(H1WriteQueue *q) {
        free(q->buf);
        *q = (H1WriteQueue) {};
}

int h1_wq_reserve(H1WriteQueue *q, size_t n) {
        size_t used = h1_wq_size(q), cap;
        char *b;

        if (used + n <= q->cap)
                return 0;
        if (used + n > H1_WRITE_LIMIT)
                return -ENOBUFS;
        for (cap = MAX(q->cap, (size_t) H1_WRITE_INITIAL); cap < used + n; cap *= 2)
                ;
        b = malloc(cap);
        if (!b)
                return -ENOMEM;
        if (used > 0) { /* linearise; only on growth, at most log2(limit) times per connection */
                size_t off = q->head & (q->cap - 1), first = MIN(used, q->cap - off);
                memcpy(b, q->buf + off, first);
                memcpy(b + first, q->buf, used - first);
        }
        free(q->buf);
        *q = (H1WriteQueue) { .buf = b, .cap = cap, .head = 0, .tail = used };
        return 0;
}

void h1_wq_put(H1WriteQueue *q, const void *p, size_t n) {
        size_t off, first;

        if (n == 0)
                return;
        assert(h1_wq_size(q) + n <= q->cap);
        off = q->tail & (q->cap - 1);
        first = MIN(n, q->cap - off);
        memcpy(q->buf + off, p, first);
        memcpy(q->buf, (const char *) p + first, n - first);
        q->tail += n;
}

void h1_wq_put_str(H1WriteQueue *q, const char *s) {
        h1_wq_put(q, s, strlen(s));
}

static size_t wq_iov(const H1WriteQueue *q, struct iovec iov[static 2]) {
        size_t used = h1_wq_size(q), off, first;

        if (used == 0)
                return 0;
        off = q->head & (q->cap - 1);
        first = MIN(used, q->cap - off);
        iov[0] = (struct iovec) { .iov_base = q->buf + off, .iov_len = first };
        if (first == used)
                return 1;
        iov[1] = (struct iovec) { .iov_base = q->buf, .iov_len = used - first };
        return 2;
}

static void wq_consume(H1WriteQueue *q, size_t n) {
        q->head += n;
        if (q->head == q->tail)
                q->head = q->tail = 0; /* empty: start at the front again, fewer wrapped writes */
}

/* ---- output ------------------------------------------------------------------------------------- */

/* Sends the queue and then pieces with one sendmsg(); what the socket does not take is queued, each
 * byte copied at most once. 0, or -errno once the connection is broken. */
static int send_pieces(H1Connection *c, const struct iovec *pieces, size_t n_pieces) {
        struct iovec iov[2 + 3];
        size_t n, queued = h1_wq_size(&c->wq), total = queued, sent = 0, from_queue;
        int r;

        assert(n_pieces <= 3);
        if (c->broken || c->closing)
                return -EPIPE;
        n = wq_iov(&c->wq, iov);
        for (size_t i = 0; i < n_pieces; i++)
                if (pieces[i].iov_len > 0) {
                        iov[n++] = pieces[i];
                        total += pieces[i].iov_len;
                }
        if (total == 0)
                return 0;

        if (!c->write_blocked) {
                struct msghdr mh = {.msg_iov = iov, .msg_iovlen = n};
                ssize_t k;

                do /* one buffer: send(), which spares the kernel the vector's copy */
                        k = n == 1 ? send(c->fd, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL | MSG_DONTWAIT)
                                   : sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
                while (k < 0 && errno == EINTR);
                if (k < 0 && errno != EAGAIN)
                        return h1_mark_broken(c, -errno);
                if (k > 0) {
                        sent = (size_t) k;
                        c->write_progress = h1_now(c);
                }
                if (sent < total)
                        c->write_blocked = true; /* the socket buffer is full: wait for EPOLLOUT */
        }

        from_queue = MIN(sent, queued);
        wq_consume(&c->wq, from_queue);
        if (from_queue > 0 && h1_wq_size(&c->wq) == 0 && c->state == H1_IDLE)
                c->idle_start = h1_now(c); /* keep-alive idleness starts once the last response is out */
        sent -= from_queue;
        for (size_t i = 0; i < n_pieces; i++) {
                size_t len = pieces[i].iov_len;

                if (sent >= len) {
                        sent -= len;
                        continue;
                }
                r = h1_wq_reserve(&c->wq, len - sent);
                if (r < 0)
                        return h1_mark_broken(c, r);
                h1_wq_put(&c->wq, (const char *) pieces[i].iov_base + sent, len - sent);
                sent = 0;
        }
        if (c->write_blocked && queued == 0 && h1_wq_size(&c->wq) > 0)
                c->write_progress = h1_now(c); /* the write timeout counts from the first stall */
        return 0;
}

/* The queue goes out with the batch's flush (io-batch.h), with every other socket's writes of the same
 * wake-up: one io_uring_enter() for all of them where the kernel has io_uring. */
int h1_flush(H1Connection *c) {
        c->flush_pending = false;
        if (c->broken || c->closing)
                return -EPIPE;
        if (c->write_blocked || h1_wq_size(&c->wq) == 0)
                return 0;
        if (io_source_want_send(c->io) < 0)
                return send_pieces(c, NULL, 0);
        return 0;
}

int h1_flush_now(H1Connection *c) {
        c->flush_pending = false;
        return send_pieces(c, NULL, 0);
}

bool h1_send_prepare(IoSource *s, struct iovec *ret, void *userdata) {
        H1Connection *c = userdata;
        struct iovec iov[2];

        if (c->broken || c->closing || c->write_blocked || wq_iov(&c->wq, iov) == 0)
                return false;
        *ret = iov[0]; /* a queue that wraps goes in two flushes */
        c->offered = iov[0].iov_len;
        return true;
}

bool h1_sent(H1Connection *c, ssize_t result) {
        size_t sent = result > 0 ? (size_t) result : 0;

        if (result < 0 && result != -EAGAIN) {
                (void) h1_mark_broken(c, (int) result);
                return false;
        }
        if (sent > 0)
                c->write_progress = h1_now(c);
        wq_consume(&c->wq, sent);
        if (sent < c->offered) {
                c->write_blocked = true;       /* the socket buffer is full: wait for EPOLLOUT */
                c->write_progress = h1_now(c); /* the write timeout counts from the stall */
                return false;
        }
        if (h1_wq_size(&c->wq) > 0) {
                (void) io_source_want_send(c->io); /* the wrapped rest */
                return false;
        }
        if (c->state == H1_IDLE)
                c->idle_start = h1_now(c); /* keep-alive idleness starts once the last response is out */
        return true;
}

static size_t format_u64(char buf[static 21], uint64_t v) {
        char tmp[21];
        size_t n = 0, i = 0;

        do
                tmp[n++] = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        while (n > 0)
                buf[i++] = tmp[--n];
        buf[i] = 0;
        return i;
}

/* Appends s at buf + at; returns the new end. The callers' buffers are sized for their longest lines. */
static size_t put_str(char *buf, size_t at, const char *s) {
        size_t n = strlen(s);

        memcpy(buf + at, s, n + 1);
        return at + n;
}

/* A chunk-size line ("%zx\r\n" without a vfprintf per body piece). */
static size_t format_chunk_line(char buf[static 24], size_t size) {
        static const char digits[] = "0123456789abcdef";
        char tmp[16];
        size_t n = 0, i = 0;

        do
                tmp[n++] = digits[size & 15];
        while ((size >>= 4) > 0);
        while (n > 0)
                buf[i++] = tmp[--n];
        buf[i++] = '\r';
        buf[i++] = '\n';
        return i;
}

static const char *status_line_version(const H1Connection *c) {
        return c->head.http_major == 1 && c->head.http_minor == 0 ? "HTTP/1.0 " : "HTTP/1.1 ";
}

/* The bytes of a head; counted first so that the queue grows at most once. */
typedef struct HeadParts {
        unsigned status;
        const char *phrase;
        const HeaderField *fields, *extra;
        size_t n_fields, n_extra;
        const char *fixed; /* our own lines, each ending in CRLF */
} HeadParts;

static int queue_head(H1Connection *c, const HeadParts *p) {
        char status[21];
        size_t total, status_len = format_u64(status, p->status);
        int r;

        total = 9 + status_len + 1 + strlen(p->phrase) + 2 + strlen(p->fixed) + 2;
        for (size_t i = 0; i < p->n_fields; i++)
                total += p->fields[i].name_len + 2 + p->fields[i].value_len + 2;
        for (size_t i = 0; i < p->n_extra; i++)
                total += p->extra[i].name_len + 2 + p->extra[i].value_len + 2;
        r = h1_wq_reserve(&c->wq, total);
        if (r < 0)
                return r;

        h1_wq_put_str(&c->wq, status_line_version(c));
        h1_wq_put(&c->wq, status, status_len);
        h1_wq_put(&c->wq, " ", 1);
        h1_wq_put_str(&c->wq, p->phrase);
        h1_wq_put(&c->wq, "\r\n", 2);
        for (size_t pass = 0; pass < 2; pass++) {
                const HeaderField *f = pass == 0 ? p->fields : p->extra;
                size_t n = pass == 0 ? p->n_fields : p->n_extra;

                for (size_t i = 0; i < n; i++) {
                        h1_wq_put(&c->wq, f[i].name, f[i].name_len);
                        h1_wq_put(&c->wq, ": ", 2);
                        h1_wq_put(&c->wq, f[i].value, f[i].value_len);
                        h1_wq_put(&c->wq, "\r\n", 2);
                }
        }
        h1_wq_put_str(&c->wq, p->fixed);
        h1_wq_put(&c->wq, "\r\n", 2);
        return 0;
}

/* A complete small text/plain response of our own (errors, 408 ...). The request id is the exchange's
 * when there is one. */
int h1_queue_error_response(H1Connection *c, unsigned status, unsigned retry_after, const char *reason,
                            const char *id, bool close) {
        char fixed[256], body[512], num[21];
        const char *phrase = h1_status_phrase(status);
        int body_len, k;
        int r;

        body_len = snprintf(body, sizeof body, "%u %s\n%s\n", status, phrase, strempty(reason));
        if (body_len < 0)
                return -EINVAL;
        if ((size_t) body_len >= sizeof body)
                body_len = sizeof body - 1;
        format_u64(num, (uint64_t) body_len);
        k = snprintf(fixed, sizeof fixed,
                     "Content-Type: text/plain; charset=utf-8\r\nContent-Length: %s\r\n", num);
        if (retry_after > 0)
                k += snprintf(fixed + k, sizeof fixed - (size_t) k, "Retry-After: %u\r\n", retry_after);
        if (id && id[0])
                k += snprintf(fixed + k, sizeof fixed - (size_t) k, "X-Request-Id: %.32s\r\n", id);
        if (close)
                snprintf(fixed + k, sizeof fixed - (size_t) k, "Connection: close\r\n");
        else if (c->head.http_minor == 0)
                snprintf(fixed + k, sizeof fixed - (size_t) k, "Connection: keep-alive\r\n");

        r = queue_head(c, &(HeadParts) { .status = status, .phrase = phrase, .fixed = fixed });
        if (r < 0)
                return r;
        if (c->head.head_method)
                return 0;
        r = h1_wq_reserve(&c->wq, (size_t) body_len);
        if (r < 0)
                return r;
        h1_wq_put(&c->wq, body, (size_t) body_len);
        return 0;
}

/* ---- ClientOps ---------------------------------------------------------------------------------- */

static H1Connection *client_of(Exchange *x) {
        H1Connection *c = x->client_data;

        if (!c || c->x != x || c->closing || c->broken)
                return NULL;
        return c;
}

static bool pipelined_pending(const H1Connection *c) {
        return c->msg_complete && c->state != H1_BODY && c->rpos < c->rend;
}

static int queue_result(H1Connection *c) {
        h1_schedule(c);
        if (c->broken)
                return -EPIPE;
        if (h1_wq_size(&c->wq) > h1_tunables.write_high) {
                c->resp_paused = true;
                return 1;
        }
        return 0;
}

/* The worker took the WebSocket handshake: its 101 goes out with our own Connection and Upgrade, and the
 * connection becomes the tunnel (H1_TUNNEL: the bytes after the request head are the client's first
 * frames). */
static int tunnel_head(H1Connection *c, Exchange *x, const ResponseHead *h) {
        int r;

        if (!c->head.websocket || c->state != H1_WAIT)
                return -EPROTO;
        c->framing = H1_FRAMING_TUNNEL;
        c->close_after = true;
        r = queue_head(c, &(HeadParts) {
                                  .status = 101,
                                  .phrase = "Switching Protocols",
                                  .fields = h->fields,
                                  .n_fields = h->n_fields,
                                  .extra = h->extra,
                                  .n_extra = h->n_extra,
                                  .fixed = "Connection: Upgrade\r\nUpgrade: websocket\r\n",
                          });
        if (r < 0)
                (void) h1_mark_broken(c, r);
        c->resp = H1_RESPONSE_BODY;
        c->state = H1_TUNNEL;
        c->body_paused = c->body_resume = false;
        x->status = 101;
        c->flush_pending = true;
        return queue_result(c);
}

static int on_response_head(Exchange *x, const ResponseHead *h) {
        H1Connection *c = client_of(x);
        char fixed[96], num[21]; /* the longest: Content-Length (38 bytes), then Connection (24) */
        bool no_body, informative_length;
        size_t k = 0;
        int r;

        if (!c)
                return -ECONNRESET;
        if (c->resp != H1_RESPONSE_NONE)
                return -EALREADY;
        c->nesting++;

        if (h->status == 101) {
                r = tunnel_head(c, x, h);
                c->nesting--;
                return r;
        }
        no_body = !h->has_body || c->head.head_method || h->status < 200 || h->status == 204 ||
                  h->status == 304;
        informative_length = h->has_content_length && h->status >= 200 && h->status != 204;
        if (no_body)
                c->framing = H1_FRAMING_NONE;
        else if (h->has_content_length)
                c->framing = H1_FRAMING_LENGTH;
        else if (c->head.http_minor >= 1)
                c->framing = H1_FRAMING_CHUNKED;
        else
                c->framing = H1_FRAMING_CLOSE;
        c->resp_remaining = c->framing == H1_FRAMING_LENGTH ? h->content_length : 0;

        if (h->close || !c->keep_alive || c->framing == H1_FRAMING_CLOSE ||
            ((c->shutting_down || c->read_eof) && !pipelined_pending(c)))
                c->close_after = true;

        fixed[0] = 0;
        if (c->framing == H1_FRAMING_LENGTH || (no_body && informative_length)) {
                format_u64(num, h->content_length);
                k = put_str(fixed, put_str(fixed, 0, "Content-Length: "), num);
                k = put_str(fixed, k, "\r\n");
        } else if (c->framing == H1_FRAMING_CHUNKED)
                k = put_str(fixed, 0, "Transfer-Encoding: chunked\r\n");
        else if (no_body && !c->head.head_method && h->status >= 200 && h->status != 204 && h->status != 304)
                k = put_str(fixed, 0, "Content-Length: 0\r\n");
        if (c->close_after)
                (void) put_str(fixed, k, "Connection: close\r\n");
        else if (c->head.http_minor == 0)
                (void) put_str(fixed, k, "Connection: keep-alive\r\n");

        r = queue_head(c, &(HeadParts) {
                                  .status = h->status,
                                  .phrase = h1_status_phrase(h->status),
                                  .fields = h->fields,
                                  .n_fields = h->n_fields,
                                  .extra = h->extra,
                                  .n_extra = h->n_extra,
                                  .fixed = fixed,
                          });
        if (r < 0)
                (void) h1_mark_broken(c, r);
        c->resp = H1_RESPONSE_BODY;
        x->status = h->status;
        c->flush_pending = true;
        r = queue_result(c);
        c->nesting--;
        return r;
}

static int on_response_body(Exchange *x, const void *data, size_t size) {
        H1Connection *c = client_of(x);
        char chunk[24];
        struct iovec pieces[3];
        size_t n = 0, total;
        int r = 0;

        if (!c)
                return -ECONNRESET;
        if (c->resp != H1_RESPONSE_BODY)
                return -EINVAL;
        if (size == 0 || c->framing == H1_FRAMING_NONE)
                return queue_result(c); /* nothing to send (a body for HEAD/204/304 is dropped) */
        if (c->framing == H1_FRAMING_LENGTH) {
                if (size > c->resp_remaining) {
                        log_debug("HTTP/1.1: response body longer than its Content-Length, cutting the "
                                  "connection");
                        size = (size_t) c->resp_remaining;
                        c->resp_short = true;
                }
                c->resp_remaining -= size;
        }
        c->nesting++;
        if (c->framing == H1_FRAMING_CHUNKED) {
                size_t k = format_chunk_line(chunk, size);
                pieces[n++] = (struct iovec) { .iov_base = chunk, .iov_len = k };
        }
        pieces[n++] = (struct iovec) { .iov_base = (void *) data, .iov_len = size };
        if (c->framing == H1_FRAMING_CHUNKED)
                pieces[n++] = (struct iovec) { .iov_base = (void *) "\r\n", .iov_len = 2 };
        total = 0;
        for (size_t i = 0; i < n; i++)
                total += pieces[i].iov_len;

        if (c->write_blocked || h1_wq_size(&c->wq) + total < H1_COALESCE) {
                r = h1_wq_reserve(&c->wq, total);
                if (r < 0)
                        (void) h1_mark_broken(c, r);
                else {
                        for (size_t i = 0; i < n; i++)
                                h1_wq_put(&c->wq, pieces[i].iov_base, pieces[i].iov_len);
                        c->flush_pending = true;
                }
        } else
                (void) send_pieces(c, pieces, n);
        r = queue_result(c);
        c->nesting--;
        return r;
}

static int on_response_end(Exchange *x) {
        H1Connection *c = client_of(x);
        int r = 0;

        if (!c)
                return -ECONNRESET;
        if (c->resp != H1_RESPONSE_BODY)
                return -EINVAL;
        c->nesting++;
        if (c->framing == H1_FRAMING_LENGTH && c->resp_remaining > 0) {
                log_debug("HTTP/1.1: response body shorter than its Content-Length, cutting the connection");
                c->resp_short = true;
        }
        if (c->framing == H1_FRAMING_CHUNKED) {
                r = h1_wq_reserve(&c->wq, 5);
                if (r < 0)
                        (void) h1_mark_broken(c, r);
                else
                        h1_wq_put(&c->wq, "0\r\n\r\n", 5);
        }
        if (c->framing == H1_FRAMING_CLOSE || c->framing == H1_FRAMING_TUNNEL)
                c->close_after = true;
        c->resp = H1_RESPONSE_DONE;
        if (!c->broken)
                (void) h1_flush(c);
        h1_response_done(c);
        c->nesting--;
        return c->broken ? -EPIPE : 0;
}

static bool status_is_bad_input(unsigned status) {
        return status == 400 || status == 408 || status == 413 || status == 414 || status == 431;
}

static void on_response_error(Exchange *x, unsigned status, unsigned retry_after, const char *reason) {
        H1Connection *c = client_of(x);
        int r;

        if (!c)
                return;
        if (c->resp != H1_RESPONSE_NONE) {
                c->aborted = true; /* a head is out: only the cut connection can tell */
                h1_schedule(c);
                return;
        }
        c->nesting++;
        if (status < 400 || status > 599)
                status = 502;
        if (status_is_bad_input(status) || !c->keep_alive || (c->state == H1_BODY && c->head.has_body) ||
            ((c->shutting_down || c->read_eof) && !pipelined_pending(c)))
                c->close_after = true;
        r = h1_queue_error_response(c, status, retry_after, reason, x->id, c->close_after);
        if (r < 0)
                (void) h1_mark_broken(c, r);
        x->status = status;
        c->resp = H1_RESPONSE_DONE;
        if (!c->broken)
                (void) h1_flush(c);
        h1_response_done(c);
        c->nesting--;
}

static void on_response_abort(Exchange *x, const char *reason) {
        H1Connection *c = client_of(x);

        if (!c)
                return;
        log_debug("HTTP/1.1: response aborted (%s), closing the connection", strna(reason));
        c->nesting++;
        (void) h1_flush_now(c); /* what is queued goes out, then the connection ends mid-response */
        c->aborted = true;
        h1_schedule(c);
        c->nesting--;
}

static void on_request_body_resume(Exchange *x) {
        H1Connection *c = client_of(x);

        if (!c || !c->body_paused)
                return;
        c->body_resume = true;
        h1_schedule(c);
}

static void on_request_continue(Exchange *x) {
        static const char line[] = "HTTP/1.1 100 Continue\r\n\r\n";
        H1Connection *c = client_of(x);

        if (!c || !c->head.expect_continue || c->continue_sent || c->body_seen > 0 ||
            c->resp != H1_RESPONSE_NONE || c->msg_complete)
                return;
        c->nesting++;
        c->continue_sent = true;
        if (h1_wq_reserve(&c->wq, sizeof line - 1) < 0)
                (void) h1_mark_broken(c, -ENOMEM);
        else {
                h1_wq_put(&c->wq, line, sizeof line - 1);
                (void) h1_flush(c);
        }
        h1_schedule(c);
        c->nesting--;
}

const ClientOps h1_client_ops = {
        .response_head = on_response_head,
        .response_body = on_response_body,
        .response_end = on_response_end,
        .response_error = on_response_error,
        .response_abort = on_response_abort,
        .request_body_resume = on_request_body_resume,
        .request_continue = on_request_continue,
};
