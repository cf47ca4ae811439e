/* SPDX-License-Identifier: MIT */
/* One HTTP/2 stream of a client connection: the request head built from the decoded header block (copied
 * into the stream's arena: nghttp2's pointers live only for the callback), and the request body handed to
 * the exchange with the stream window given back only when the forward side took it. The response side
 * is h2-response.c; the connection (h2-connection.c) owns the socket and the nghttp2 session. */

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "h2-internal.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "request-check.h"

/* A per-loop pool (thread-local: one front-end loop per thread later) of stream objects, so a request in
 * steady state costs no malloc beyond the router's Exchange and nghttp2's own stream. */
#define POOL_STREAMS_MAX 256U

static _Thread_local Stream *pool_streams;
static _Thread_local unsigned n_pool_streams;

/* ---- streams and their arenas ---- */

int h2_stream_new(H2Connection *c, int32_t id, Stream **ret) {
        Stream *s;

        if (pool_streams) {
                s = pool_streams;
                pool_streams = s->next;
                n_pool_streams--;
        } else {
                s = malloc(sizeof(Stream));
                if (!s)
                        return -ENOMEM;
        }
        /* Everything before the inline buffers; their contents are dead bytes. */
        memset(s, 0, offsetof(Stream, fields_inline));
        s->conn = c;
        s->id = id;
        s->fields = s->fields_inline;
        s->fields_allocated = H2_FIELDS_INLINE;
        *ret = s;
        return 0;
}

void h2_stream_release(Stream *s) {
        if (!s)
                return;
        h2_queue_clear(&s->out);
        while (s->chunks) {
                ArenaChunk *k = s->chunks;
                s->chunks = k->next;
                free(k);
        }
        if (n_pool_streams < POOL_STREAMS_MAX) {
                s->next = pool_streams;
                pool_streams = s;
                n_pool_streams++;
        } else
                free(s);
}

void h2_stream_pool_release(void) {
        while (pool_streams) {
                Stream *s = pool_streams;
                pool_streams = s->next;
                free(s);
        }
        n_pool_streams = 0;
}

static void *h2_stream_alloc(Stream *s, size_t size) {
        ArenaChunk *k;
        size_t need = (size + 7) & ~(size_t) 7;

        if (H2_ARENA_INLINE - s->arena_used >= need) {
                void *p = s->arena_inline + s->arena_used;
                s->arena_used += need;
                return p;
        }
        k = s->chunks;
        if (k && k->size - k->used >= need) {
                void *p = k->data + k->used;
                k->used += need;
                return p;
        }
        k = malloc(offsetof(ArenaChunk, data) + MAX(need, (size_t) 4096));
        if (!k)
                return NULL;
        k->size = MAX(need, (size_t) 4096);
        k->used = need;
        k->next = s->chunks;
        s->chunks = k;
        return k->data;
}

char *h2_stream_strndup(Stream *s, const void *p, size_t n) {
        char *d = h2_stream_alloc(s, n + 1);

        if (!d)
                return NULL;
        memcpy(d, p, n);
        d[n] = 0;
        return d;
}

static int h2_stream_push_field(Stream *s, const char *name, size_t namelen, const char *value,
                                size_t valuelen) {
        if (s->req.n_fields == s->fields_allocated) {
                HeaderField *f = h2_stream_alloc(s, 2 * s->fields_allocated * sizeof(HeaderField));
                if (!f)
                        return -ENOMEM;
                memcpy(f, s->fields, s->req.n_fields * sizeof(HeaderField));
                s->fields = f;
                s->fields_allocated *= 2;
        }
        s->fields[s->req.n_fields++] = (HeaderField){
                .name = name,
                .name_len = namelen,
                .value = value,
                .value_len = valuelen,
        };
        return 0;
}

static bool bytes_eq(const uint8_t *p, size_t n, const char *lit) {
        return n == strlen(lit) && memcmp(p, lit, n) == 0;
}

static bool bytes_caseeq(const uint8_t *p, size_t n, const char *lit) {
        return n == strlen(lit) && strncasecmp((const char *) p, lit, n) == 0;
}

int h2_stream_add_header(Stream *s, const uint8_t *name, size_t namelen, const uint8_t *value,
                         size_t valuelen) {
        char *v = h2_stream_strndup(s, value, valuelen);

        if (!v)
                return -ENOMEM;

        /* nghttp2's HTTP messaging already checked that pseudo-headers come first, once each, and that
         * names are lowercase, so plain comparisons do. */
        if (namelen > 0 && name[0] == ':') {
                if (bytes_eq(name, namelen, ":method")) {
                        s->req.method = v;
                        s->req.method_len = valuelen;
                        s->req.head_method = bytes_eq(value, valuelen, "HEAD");
                } else if (bytes_eq(name, namelen, ":path")) {
                        s->req.target = v;
                        s->req.target_len = valuelen;
                } else if (bytes_eq(name, namelen, ":authority")) {
                        s->req.authority = v;
                        s->req.authority_len = valuelen;
                        s->authority_given = true;
                } else if (bytes_eq(name, namelen, ":scheme")) {
                        /* checked once the head is complete, like the rest; cleartext or not, what
                         * is not http(s) is not for a worker behind us */
                        s->scheme_other = !request_scheme_valid(v, valuelen);
                } else if (bytes_eq(name, namelen, ":protocol")) {
                        /* nghttp2 lets it through only on a CONNECT, and only once we announced
                         * SETTINGS_ENABLE_CONNECT_PROTOCOL */
                        if (bytes_eq(value, valuelen, "websocket"))
                                s->protocol_websocket = true;
                        else
                                s->protocol_other = true;
                }
                return 0;
        }

        if (bytes_eq(name, namelen, "host")) {
                /* RFC 9113 8.3.1: :authority wins; Host stands in for it when absent. Never a field. */
                if (!s->req.authority) {
                        s->req.authority = v;
                        s->req.authority_len = valuelen;
                }
                return 0;
        }
        if (bytes_eq(name, namelen, "content-length")) {
                /* nghttp2 rejected anything but digits and a second, different value. */
                uint64_t l = 0;
                for (size_t i = 0; i < valuelen; i++)
                        l = l * 10 + (uint64_t) (value[i] - '0');
                s->req.has_content_length = true;
                s->req.content_length = l;
        } else if (bytes_eq(name, namelen, "expect")) {
                /* Like h1-connection.c: the front end owns the 100-continue handshake, not the worker. */
                s->req.expect_continue =
                        s->req.expect_continue || bytes_caseeq(value, valuelen, "100-continue");
                return 0;
        } else if (bytes_eq(name, namelen, "te"))
                return 0; /* hop-by-hop; nghttp2 let only "trailers" through */

        /* Cookie crumbs stay separate fields (RFC 9113 8.2.3); the forward side joins them. */
        char *n = h2_stream_strndup(s, name, namelen);
        if (!n)
                return -ENOMEM;
        return h2_stream_push_field(s, n, namelen, v, valuelen);
}

int h2_stream_copy_head(Stream *s, const RequestHead *h) {
        const struct {
                const char **dst;
                size_t *dst_len;
                const char *src;
                size_t len;
        } parts[] = {
                {&s->req.method, &s->req.method_len, h->method, h->method_len},
                {&s->req.target, &s->req.target_len, h->target, h->target_len},
                {&s->req.authority, &s->req.authority_len, h->authority, h->authority_len},
        };

        s->req = *h;
        s->req.fields = NULL;
        s->req.n_fields = 0;
        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                *parts[i].dst = NULL;
                if (!parts[i].src)
                        continue;
                *parts[i].dst = h2_stream_strndup(s, parts[i].src, parts[i].len);
                if (!*parts[i].dst)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < h->n_fields; i++) {
                const HeaderField *f = &h->fields[i];
                char *n = h2_stream_strndup(s, f->name, f->name_len),
                     *v = h2_stream_strndup(s, f->value, f->value_len);
                if (!n || !v)
                        return -ENOMEM;
                /* HTTP/1.1 names come in any case; on this side they are lowercase. */
                for (size_t j = 0; j < f->name_len; j++)
                        n[j] = (char) (n[j] >= 'A' && n[j] <= 'Z' ? n[j] + 32 : n[j]);
                if (h2_stream_push_field(s, n, f->name_len, v, f->value_len) < 0)
                        return -ENOMEM;
        }
        s->req.http_major = 2;
        s->req.http_minor = 0;
        return 0;
}

/* ---- the request ---- */

static void pending_remove(Stream *s) {
        H2Connection *c = s->conn;

        for (Stream **p = &c->pending; *p; p = &(*p)->pending_next)
                if (*p == s) {
                        *p = s->pending_next;
                        if (c->pending_tail == &s->pending_next)
                                c->pending_tail = p;
                        break;
                }
        s->pending_next = NULL;
        s->pending = false;
}

static void consume_stream(Stream *s, size_t n) {
        if (n > 0)
                (void) nghttp2_session_consume_stream(s->conn->session, s->id, n);
}

/* The HTTP/1.1 side's rules for the request line and Host (request-check.h): what one protocol refuses
 * is not forwarded over the other. */
static void check_names(Stream *s) {
        bool options = bytes_eq((const uint8_t *) s->req.method, s->req.method_len, "OPTIONS");

        if (!request_target_valid(s->req.target, s->req.target_len, options)) {
                s->reject_status = 400;
                s->reject_reason = "invalid :path";
        } else if (s->req.authority && !request_authority_valid(s->req.authority, s->req.authority_len)) {
                s->reject_status = 400;
                s->reject_reason = s->authority_given ? "invalid :authority" : "invalid host field";
        } else if (s->scheme_other) {
                s->reject_status = 400;
                s->reject_reason = ":scheme other than http or https";
        }
}

void h2_stream_headers_complete(Stream *s) {
        H2Connection *c = s->conn;

        s->headers_done = true;
        s->req.has_body = !s->request_ended;
        if (s->req.has_body)
                h2_body_window_start(s);
        s->req.http_major = 2;
        s->req.http_minor = 0;

        if (!s->reject_status && s->req.method &&
            bytes_eq((const uint8_t *) s->req.method, s->req.method_len, "CONNECT")) {
                if (s->protocol_websocket && c->websocket && s->req.target) {
                        /* RFC 8441: the stream is the WebSocket; the worker gets an HTTP/1.1 upgrade, and
                         * the DATA of the stream are the tunnel's bytes, not a body */
                        s->req.websocket = true;
                        s->req.has_body = false;
                } else if (s->protocol_other) {
                        s->reject_status = 501;
                        s->reject_reason = "extended CONNECT for a protocol other than websocket";
                } else {
                        /* Workers are origin servers reached over HTTP/1.1; a tunnel through them to
                         * elsewhere is not a thing. */
                        s->reject_status = 405;
                        s->reject_reason = "CONNECT is not supported";
                }
        }
        if (!s->reject_status && (!s->req.method || !s->req.target)) {
                /* nghttp2's HTTP messaging resets such a stream before we get here; be sure anyway. */
                frontend_log_client_error(c->frontend,
                                          "HTTP/2 client %s stream %" PRIi32
                                          ": request without :method or :path, resetting.",
                                          c->peer, s->id);
                (void) nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, s->id,
                                                 NGHTTP2_PROTOCOL_ERROR);
                return;
        }
        if (!s->reject_status)
                check_names(s);
        if (!s->reject_status && c->max_body_size > 0 && s->req.has_content_length &&
            s->req.content_length > c->max_body_size) {
                s->reject_status = 413;
                s->reject_reason = "request body over max_body_size";
        }
        if (s->reject_status) {
                frontend_log_client_error(c->frontend,
                                          "HTTP/2 client %s stream %" PRIi32 ": %s (%" PRIu64
                                          " header bytes, %" PRIu32 " fields), answering %u.",
                                          c->peer, s->id, s->reject_reason, s->header_bytes,
                                          s->header_fields, s->reject_status);
                if (h2_guard_charge(&c->guard, H2_OVERHEAD_REFUSED, h2_now(c)) < 0)
                        h2_flooded(c);
                (void) h2_stream_respond_error(s, s->reject_status, 0);
                return;
        }

        /* Begun after mem_recv() returns, so that a HEADERS reset in the same read never reaches a worker
         * (Rapid Reset costs the client, not the pool). Body bytes for it begin it earlier. */
        s->pending = true;
        *c->pending_tail = s;
        c->pending_tail = &s->pending_next;
}

void h2_run_pending(H2Connection *c) {
        Stream *s;

        while ((s = c->pending)) {
                c->pending = s->pending_next;
                if (!c->pending)
                        c->pending_tail = &c->pending;
                s->pending_next = NULL;
                s->pending = false;
                if (c->terminating)
                        (void) nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, s->id,
                                                         NGHTTP2_REFUSED_STREAM);
                else
                        h2_stream_begin(s);
        }
}

void h2_stream_begin(Stream *s) {
        H2Connection *c = s->conn;
        Exchange *x;

        x = exchange_new(c->frontend, &h2_client_ops, s);
        if (!x) {
                log_oom();
                (void) h2_stream_respond_error(s, 503, 0);
                return;
        }
        s->req.fields = s->fields;
        x->req = s->req;
        x->peer = c->base.peer;
        s->x = x;
        h2_guard_credit(&c->guard, s->header_bytes);

        c->busy++;
        exchange_begin(x);
        c->busy--;
}

void h2_stream_body_window_restart(Stream *s, usec_t now) {
        s->body_window = now;
        s->body_window_received = s->body_received;
}

/* Like a body over max_body_size: the exchange goes (its worker connection with it), and the client
 * gets 408, or a reset once a response began. */
void h2_stream_body_too_slow(Stream *s) {
        h2_stream_drop_exchange(s);
        s->body_dropped = true;
        consume_stream(s, s->unconsumed);
        s->unconsumed = 0;
        (void) h2_stream_respond_error(s, 408, 0);
}

void h2_stream_request_body(Stream *s, const uint8_t *data, size_t size) {
        H2Connection *c = s->conn;
        int r;

        if (s->pending) {
                pending_remove(s);
                h2_stream_begin(s);
        }
        if (!s->x || s->body_dropped) {
                consume_stream(s, size);
                return;
        }

        s->body_received += size;
        if (c->max_body_size > 0 && s->body_received > c->max_body_size && !s->req.websocket) {
                frontend_log_client_error(c->frontend,
                                          "HTTP/2 client %s stream %" PRIi32
                                          ": request body over max_body_size (%" PRIu64 " bytes), %s.",
                                          c->peer, s->id, c->max_body_size,
                                          s->head_submitted ? "resetting" : "answering 413");
                h2_stream_drop_exchange(s);
                s->body_dropped = true;
                consume_stream(s, size + s->unconsumed);
                s->unconsumed = 0;
                (void) h2_stream_respond_error(s, 413, 0);
                return;
        }

        c->busy++;
        r = exchange_request_body(s->x, data, size);
        c->busy--;
        if (r > 0) {
                /* Taken, but over high-water: the window stays closed until request_body_resume. */
                s->body_paused = true;
                s->unconsumed += size;
                return;
        }
        if (r < 0)
                s->body_dropped = true;
        /* 0: below high-water, whatever was held back goes too. */
        consume_stream(s, size + s->unconsumed);
        s->unconsumed = 0;
        s->body_paused = false;
}

void h2_stream_request_resume(Stream *s) {
        consume_stream(s, s->unconsumed);
        s->unconsumed = 0;
        s->body_paused = false;
        h2_body_window_start(s); /* the pause was ours, not the client's */
        h2_schedule_flush(s->conn);
}

void h2_stream_request_end(Stream *s) {
        H2Connection *c = s->conn;

        if (s->request_ended)
                return;
        s->request_ended = true;
        if (s->pending) {
                pending_remove(s);
                h2_stream_begin(s);
        }
        if (s->x && !s->body_dropped) {
                c->busy++;
                (void) exchange_request_end(s->x);
                c->busy--;
        }
}

void h2_stream_drop_exchange(Stream *s) {
        Exchange *x = s->x;

        if (!x)
                return;
        s->x = NULL; /* first: anything the router calls back from here on finds no stream */
        x->client_data = NULL;
        s->conn->busy++;
        exchange_free(x);
        s->conn->busy--;
}

void h2_stream_closed(Stream *s, uint32_t error_code) {
        H2Connection *c = s->conn;

        if (s->pending)
                pending_remove(s);
        h2_stream_forget_response(s);

        LIST_REMOVE(c->streams, s, prev, next);
        c->n_streams--;

        /* A client reset does not end the worker's request. The exchange stays, its response discarded,
         * and counts against the connection's cap until the worker is done: otherwise a client could keep
         * any number of requests running on the pool by opening and resetting streams. A request whose
         * body is incomplete cannot finish on the worker: free it (the worker connection is closed). */
        /* A tunnel (a WebSocket stream) is not kept: without its client it has no one to carry bytes to.
         * Nor is a request still queued for a worker connection: nothing of it reached a worker, and
         * forwarding it now would only spend a worker on an answer nobody reads. */
        if (s->x && !s->response_done && s->request_ended && !s->req.websocket && s->x->on_worker &&
            (s->x->state == EXCHANGE_FORWARDING || s->x->state == EXCHANGE_RESPONDING)) {
                log_debug("HTTP/2 client %s stream %" PRIi32 " closed (%s) while its request runs on w%u, "
                          "keeping it until the worker is done.",
                          c->peer, s->id, nghttp2_http2_strerror(error_code), s->x->worker);
                s->orphan = true;
                LIST_PREPEND(c->orphans, s, prev, next);
                c->n_orphans++;
        } else {
                h2_stream_drop_exchange(s);
                h2_stream_release(s);
        }
        h2_idle_update(c);
}
