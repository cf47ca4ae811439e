/* SPDX-License-Identifier: MIT */
/* The response side of an HTTP/2 stream: the ClientOps through which the router and the forward side
 * answer, the HEADERS we submit (names lowercased, connection-specific fields dropped), and the body: a
 * bounded queue of pooled blocks per stream feeding nghttp2's data provider, whose DATA frames are copied
 * from the queue straight into the connection's write buffer. response_body() says 1 above the high-water
 * mark; exchange_response_resume() follows once the client's window drained it. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "h2-internal.h"
#include "list.h"
#include "log.h"
#include "macro.h"

/* Per-loop pools (thread-local, like the stream pool): response blocks and the scratch for heads. */
#define POOL_BLOCKS_MAX 256U /* 4 MiB */

static _Thread_local Block *pool_blocks;
static _Thread_local unsigned n_pool_blocks;
static _Thread_local nghttp2_nv *scratch_nv;
static _Thread_local size_t scratch_nv_allocated;
static _Thread_local uint8_t *scratch_names;
static _Thread_local size_t scratch_names_allocated;

/* ---- response bytes: a queue of pooled blocks ---- */

static Block *block_get(void) {
        Block *b = pool_blocks;

        if (b) {
                pool_blocks = b->next;
                n_pool_blocks--;
        } else {
                b = malloc(sizeof(Block));
                if (!b)
                        return NULL;
        }
        b->next = NULL;
        b->start = b->end = 0;
        return b;
}

static void block_put(Block *b) {
        if (n_pool_blocks < POOL_BLOCKS_MAX) {
                b->next = pool_blocks;
                pool_blocks = b;
                n_pool_blocks++;
        } else
                free(b);
}

void h2_response_pool_release(void) {
        while (pool_blocks) {
                Block *b = pool_blocks;
                pool_blocks = b->next;
                free(b);
        }
        n_pool_blocks = 0;
}

static int queue_append(ByteQueue *q, const uint8_t *p, size_t n) {
        while (n > 0) {
                Block *b = q->tail;
                if (!b || b->end == H2_BLOCK_SIZE) {
                        b = block_get();
                        if (!b)
                                return -ENOMEM;
                        if (q->tail)
                                q->tail->next = b;
                        else
                                q->head = b;
                        q->tail = b;
                }
                size_t k = MIN(n, (size_t) (H2_BLOCK_SIZE - b->end));
                memcpy(b->data + b->end, p, k);
                b->end += (uint32_t) k;
                q->size += k;
                p += k;
                n -= k;
        }
        return 0;
}

/* Copies the first n bytes (n <= q->size) to dst and drops them. */
static void queue_pop(ByteQueue *q, uint8_t *dst, size_t n) {
        while (n > 0) {
                Block *b = q->head;
                size_t k = MIN(n, (size_t) (b->end - b->start));
                memcpy(dst, b->data + b->start, k);
                b->start += (uint32_t) k;
                q->size -= k;
                dst += k;
                n -= k;
                if (b->start == b->end) {
                        q->head = b->next;
                        if (!q->head)
                                q->tail = NULL;
                        block_put(b);
                }
        }
}

void h2_queue_clear(ByteQueue *q) {
        while (q->head) {
                Block *b = q->head;
                q->head = b->next;
                block_put(b);
        }
        q->tail = NULL;
        q->size = 0;
}

/* Response bytes buffered for a stream also count against the connection's budget: per stream alone, a
 * client that opens 100 streams and reads none would pin 100 × the high-water mark. */
static int stream_queue_append(Stream *s, const uint8_t *p, size_t n) {
        int r = queue_append(&s->out, p, n);

        if (r >= 0)
                s->conn->resp_buffered += n;
        return r;
}

static void queue_resume(Stream *s) {
        H2Connection *c = s->conn;

        if (s->resume_queued)
                return;
        s->resume_queued = true;
        s->resume_next = c->resumes;
        c->resumes = s;
}

/* Streams told to wait (response_body() said 1) resume once their own queue and the connection's total
 * are low again. */
static void budget_check(H2Connection *c, Stream *s) {
        if (s && s->want_resume && s->out.size <= H2_BODY_LOW_WATER) {
                if (c->resp_buffered <= H2_CONN_BODY_HIGH_WATER)
                        queue_resume(s);
                else
                        c->resp_paused = true;
        }
        if (c->resp_paused && c->resp_buffered <= H2_CONN_BODY_LOW_WATER) {
                c->resp_paused = false;
                for (Stream *t = c->streams; t; t = t->next)
                        if (t->want_resume && t->out.size <= H2_BODY_LOW_WATER)
                                queue_resume(t);
        }
}

void h2_stream_forget_response(Stream *s) {
        H2Connection *c = s->conn;

        c->resp_buffered -= s->out.size;
        h2_queue_clear(&s->out);
        s->want_resume = false;
        if (s->resume_queued) {
                for (Stream **p = &c->resumes; *p; p = &(*p)->resume_next)
                        if (*p == s) {
                                *p = s->resume_next;
                                break;
                        }
                s->resume_next = NULL;
                s->resume_queued = false;
        }
        budget_check(c, NULL);
}

/* ---- the response ---- */

static const char *status_phrase(unsigned status) {
        switch (status) {
        case 400:
                return "Bad Request";
        case 403:
                return "Forbidden";
        case 404:
                return "Not Found";
        case 405:
                return "Method Not Allowed";
        case 408:
                return "Request Timeout";
        case 413:
                return "Content Too Large";
        case 414:
                return "URI Too Long";
        case 429:
                return "Too Many Requests";
        case 431:
                return "Request Header Fields Too Large";
        case 500:
                return "Internal Server Error";
        case 501:
                return "Not Implemented";
        case 502:
                return "Bad Gateway";
        case 503:
                return "Service Unavailable";
        case 504:
                return "Gateway Timeout";
        default:
                return status < 500 ? "Client Error" : "Server Error";
        }
}

/* Connection-specific fields have no place in HTTP/2 (RFC 9113 8.2.2); content-length is ours to set
 * from the framing the forward side decided. */
static bool field_dropped(const HeaderField *f) {
        static const char *const names[] = {
                "connection", "keep-alive", "proxy-connection", "transfer-encoding",
                "upgrade",    "te",         "http2-settings",   "content-length",
                "sec-websocket-accept",
        };

        if (f->name_len == 0 || f->name[0] == ':')
                return true;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (f->name_len == strlen(names[i]) && strncasecmp(f->name, names[i], f->name_len) == 0)
                        return true;
        return false;
}

static int scratch_reserve(size_t n_nv, size_t name_bytes) {
        if (n_nv > scratch_nv_allocated) {
                nghttp2_nv *p = realloc(scratch_nv, n_nv * sizeof(nghttp2_nv));
                if (!p)
                        return -ENOMEM;
                scratch_nv = p;
                scratch_nv_allocated = n_nv;
        }
        if (name_bytes > scratch_names_allocated) {
                uint8_t *p = realloc(scratch_names, name_bytes);
                if (!p)
                        return -ENOMEM;
                scratch_names = p;
                scratch_names_allocated = name_bytes;
        }
        return 0;
}

static nghttp2_nv make_nv(const char *name, size_t namelen, const char *value, size_t valuelen) {
        return (nghttp2_nv){
                .name = (uint8_t *) name,
                .namelen = namelen,
                .value = (uint8_t *) value,
                .valuelen = valuelen,
                .flags = NGHTTP2_NV_FLAG_NONE,
        };
}

static ssize_t on_data_source_read(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                                   uint32_t *data_flags, nghttp2_data_source *source, void *userdata) {
        Stream *s = source->ptr;
        size_t n = MIN(length, s->out.size);

        if (n == 0 && !s->eof) {
                s->deferred = true;
                return NGHTTP2_ERR_DEFERRED;
        }
        /* The bytes go from the queue straight into the write buffer (stream_send_data). */
        *data_flags |= NGHTTP2_DATA_FLAG_NO_COPY;
        if (s->eof && n == s->out.size)
                *data_flags |= NGHTTP2_DATA_FLAG_EOF;
        return (ssize_t) n;
}

int h2_stream_send_data(H2Connection *c, Stream *s, const uint8_t *framehd, size_t length) {
        uint8_t *p;

        if (h2_wbuf_reserve(c, 9 + length, &p) < 0)
                return NGHTTP2_ERR_WOULDBLOCK;
        memcpy(p, framehd, 9);
        queue_pop(&s->out, p + 9, length);
        c->resp_buffered -= length;
        h2_wbuf_commit(c, 9 + length);
        h2_guard_credit(&c->guard, length);
        if (s->want_resume)
                s->stalled_since = h2_now(c); /* progress: the stall counts from here */
        budget_check(c, s);
        return 0;
}

/* Decimal digits of v ending just before end (not NUL-terminated); returns the first. On every response,
 * so not snprintf(). */
static const char *format_u64(char *end, uint64_t v) {
        char *p = end;

        do
                *--p = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        return p;
}

/* HEADERS for the stream: :status, then the fields of a and b (names lowercased, connection-specific
 * ones dropped), content-length and retry-after when given. With has_body, s->out feeds DATA. */
static int submit_head(Stream *s, unsigned status, const HeaderField *a, size_t na, const HeaderField *b,
                       size_t nb, const char *content_type, bool has_cl, uint64_t cl, unsigned retry_after,
                       bool has_body) {
        H2Connection *c = s->conn;
        char status_buf[4], cl_buf[20], ra_buf[10];
        size_t names = 0, n = 0;
        int r;

        for (size_t i = 0; i < na; i++)
                names += a[i].name_len;
        for (size_t i = 0; i < nb; i++)
                names += b[i].name_len;
        r = scratch_reserve(na + nb + 4, MAX(names, (size_t) 1));
        if (r < 0)
                return r;

        status_buf[0] = (char) ('0' + status / 100 % 10);
        status_buf[1] = (char) ('0' + status / 10 % 10);
        status_buf[2] = (char) ('0' + status % 10);
        status_buf[3] = 0;
        scratch_nv[n++] = make_nv(":status", 7, status_buf, 3);
        if (content_type)
                scratch_nv[n++] = make_nv("content-type", 12, content_type, strlen(content_type));

        uint8_t *lower = scratch_names;
        for (size_t i = 0; i < na + nb; i++) {
                const HeaderField *f = i < na ? &a[i] : &b[i - na];
                if (field_dropped(f))
                        continue;
                /* No check of the bytes here: a worker's fields passed forward_response_filter(), which
                 * refuses what nghttp2_check_header_name() (after this lower-casing) and
                 * nghttp2_check_header_value() would, and the others are the router's own. */
                for (size_t j = 0; j < f->name_len; j++)
                        lower[j] = (uint8_t) (f->name[j] >= 'A' && f->name[j] <= 'Z' ? f->name[j] + 32
                                                                                     : f->name[j]);
                scratch_nv[n++] = make_nv((const char *) lower, f->name_len, f->value, f->value_len);
                lower += f->name_len;
        }
        if (has_cl) {
                const char *v = format_u64(cl_buf + sizeof(cl_buf), cl);
                scratch_nv[n++] = make_nv("content-length", 14, v, (size_t) (cl_buf + sizeof(cl_buf) - v));
        }
        if (retry_after > 0) {
                const char *v = format_u64(ra_buf + sizeof(ra_buf), retry_after);
                scratch_nv[n++] = make_nv("retry-after", 11, v, (size_t) (ra_buf + sizeof(ra_buf) - v));
        }

        nghttp2_data_provider prd = {
                .source.ptr = s,
                .read_callback = on_data_source_read,
        };
        /* nghttp2 copies the name/value pairs: the scratch is free again on return. */
        r = nghttp2_submit_response(c->session, s->id, scratch_nv, n, has_body ? &prd : NULL);
        if (r < 0)
                return log_debug_errno(EIO,
                                       "HTTP/2 client %s stream %" PRIi32 ": cannot submit response: %s",
                                       c->peer, s->id, nghttp2_strerror(r));
        s->head_submitted = true;
        s->has_response_body = has_body;
        h2_schedule_flush(c);
        return 0;
}

static void h2_stream_reset(Stream *s, uint32_t error_code) {
        (void) nghttp2_submit_rst_stream(s->conn->session, NGHTTP2_FLAG_NONE, s->id, error_code);
        s->response_done = true;
        h2_schedule_flush(s->conn);
}

void h2_stream_abandon_response(Stream *s) {
        h2_stream_reset(s, NGHTTP2_CANCEL);
        h2_stream_forget_response(s);
        h2_stream_drop_exchange(s);
}

int h2_stream_respond_error(Stream *s, unsigned status, unsigned retry_after) {
        char body[64];
        bool has_body = !s->req.head_method;
        int k, r;

        if (s->head_submitted) {
                h2_stream_reset(s, NGHTTP2_INTERNAL_ERROR);
                return 0;
        }
        k = snprintf(body, sizeof(body), "%u %s\n", status, status_phrase(status));
        if (has_body) {
                r = stream_queue_append(s, (const uint8_t *) body, (size_t) k);
                if (r < 0) {
                        h2_stream_reset(s, NGHTTP2_INTERNAL_ERROR);
                        return r;
                }
                s->eof = true;
        }
        s->response_done = true;
        r = submit_head(s, status, NULL, 0, NULL, 0, "text/plain; charset=utf-8", true, (uint64_t) k,
                        retry_after, has_body);
        if (r < 0)
                h2_stream_reset(s, NGHTTP2_INTERNAL_ERROR);
        return r;
}

/* ---- ClientOps: what the router and the forward side call ---- */

static Stream *exchange_stream(Exchange *x) {
        Stream *s = x ? x->client_data : NULL;

        return s && s->x == x ? s : NULL;
}

/* The worker is done with an orphan: free it from the connection's flush, never from inside a call of
 * the forward side (which still holds x). */
static void orphan_finish(Stream *s) {
        H2Connection *c = s->conn;

        s->response_done = true;
        if (s->release_queued)
                return;
        s->release_queued = true;
        s->resume_next = c->releases;
        c->releases = s;
        h2_schedule_flush(c);
}

void h2_run_releases(H2Connection *c) {
        Stream *s;

        while ((s = c->releases)) {
                c->releases = s->resume_next;
                LIST_REMOVE(c->orphans, s, prev, next);
                c->n_orphans--;
                c->refused_in_a_row = 0;
                h2_stream_drop_exchange(s);
                h2_stream_release(s);
        }
}

void h2_run_resumes(H2Connection *c) {
        Stream *s;

        while ((s = c->resumes)) {
                c->resumes = s->resume_next;
                s->resume_next = NULL;
                s->resume_queued = false;
                s->want_resume = false;
                if (s->x) {
                        c->busy++;
                        exchange_response_resume(s->x);
                        c->busy--;
                }
        }
}

static int on_response_head(Exchange *x, const ResponseHead *h) {
        Stream *s = exchange_stream(x);
        int r;

        if (!s)
                return -ECONNRESET;
        if (s->orphan)
                return 0;
        if (s->head_submitted)
                return -EBUSY;
        if (h->status == 101 && s->req.websocket) {
                /* RFC 8441 5: the stream's 2xx is what the worker's 101 was; its Sec-WebSocket-Accept
                 * proves nothing to a client that sent no key, and goes */
                r = submit_head(s, 200, h->fields, h->n_fields, h->extra, h->n_extra, NULL, false, 0, 0, true);
                if (r < 0) {
                        h2_stream_reset(s, NGHTTP2_INTERNAL_ERROR);
                        return r;
                }
                return 0;
        }
        if (h->status < 200 || h->status > 999) {
                log_info("HTTP/2 client %s stream %" PRIi32
                         ": worker answered with status %u, answering 502.",
                         s->conn->peer, s->id, h->status);
                (void) h2_stream_respond_error(s, 502, 0);
                return -EPROTO;
        }
        r = submit_head(s, h->status, h->fields, h->n_fields, h->extra, h->n_extra, NULL,
                        h->has_content_length, h->content_length, 0, h->has_body && !s->req.head_method);
        if (r < 0) {
                h2_stream_reset(s, NGHTTP2_INTERNAL_ERROR);
                return r;
        }
        return 0;
}

static int on_response_body(Exchange *x, const void *data, size_t size) {
        Stream *s = exchange_stream(x);
        int r;

        if (!s)
                return -ECONNRESET;
        if (s->orphan || !s->has_response_body || s->eof || size == 0)
                return 0;
        r = stream_queue_append(s, data, size);
        if (r < 0) {
                log_oom();
                h2_stream_reset(s, NGHTTP2_INTERNAL_ERROR);
                return r;
        }
        if (s->deferred) {
                s->deferred = false;
                (void) nghttp2_session_resume_data(s->conn->session, s->id);
        }
        h2_schedule_flush(s->conn);
        if (s->out.size > H2_BODY_HIGH_WATER || s->conn->resp_buffered > H2_CONN_BODY_HIGH_WATER) {
                if (!s->want_resume) {
                        s->stalled_since = h2_now(s->conn);
                        h2_stall_arm(s->conn, s->stalled_since);
                }
                s->want_resume = true;
                if (s->conn->resp_buffered > H2_CONN_BODY_HIGH_WATER)
                        s->conn->resp_paused = true;
                return 1;
        }
        return 0;
}

static int on_response_end(Exchange *x) {
        Stream *s = exchange_stream(x);

        if (!s)
                return -ECONNRESET;
        if (s->orphan) {
                orphan_finish(s);
                return 0;
        }
        s->response_done = true;
        s->eof = true;
        if (s->has_response_body && s->deferred) {
                s->deferred = false;
                (void) nghttp2_session_resume_data(s->conn->session, s->id);
        }
        h2_schedule_flush(s->conn);
        return 0;
}

static void on_response_error(Exchange *x, unsigned status, unsigned retry_after, const char *reason) {
        Stream *s = exchange_stream(x);

        if (!s)
                return;
        if (s->orphan) {
                orphan_finish(s);
                return;
        }
        log_debug("HTTP/2 client %s stream %" PRIi32 ": answering %u: %s", s->conn->peer, s->id, status,
                  strna(reason));
        (void) h2_stream_respond_error(s, status, retry_after);
}

static void on_response_abort(Exchange *x, const char *reason) {
        Stream *s = exchange_stream(x);

        if (!s)
                return;
        if (s->orphan) {
                orphan_finish(s);
                return;
        }
        log_debug("HTTP/2 client %s stream %" PRIi32 ": response aborted, resetting: %s", s->conn->peer,
                  s->id, strna(reason));
        h2_stream_reset(s, NGHTTP2_INTERNAL_ERROR);
}

static void on_request_body_resume(Exchange *x) {
        Stream *s = exchange_stream(x);

        if (s && !s->orphan)
                h2_stream_request_resume(s);
}

static void on_request_continue(Exchange *x) {
        Stream *s = exchange_stream(x);
        nghttp2_nv nv = make_nv(":status", 7, "100", 3);

        if (!s || s->orphan || !s->req.expect_continue || s->head_submitted || s->request_ended)
                return;
        (void) nghttp2_submit_headers(s->conn->session, NGHTTP2_FLAG_NONE, s->id, NULL, &nv, 1, NULL);
        h2_schedule_flush(s->conn);
}

const ClientOps h2_client_ops = {
        .response_head = on_response_head,
        .response_body = on_response_body,
        .response_end = on_response_end,
        .response_error = on_response_error,
        .response_abort = on_response_abort,
        .request_body_resume = on_request_body_resume,
        .request_continue = on_request_continue,
};
