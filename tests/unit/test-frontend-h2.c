/* SPDX-License-Identifier: MIT */
/* The HTTP/2 client side (frontend_h2*.c) over socketpairs on a real sd-event loop, against a fake router.
 * The client end is either an nghttp2 client session driven by the test, or raw frames written by hand
 * (floods, malformed requests) whose answers are read back frame by frame. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake-router-h2.h"
#include "h2-guard.h"
#include "log.h"
#include "macro.h"

#define CLIENTS_MAX  4
#define TSTREAMS_MAX 256
#define PUMP_TIMEOUT (10 * USEC_PER_SEC)

typedef struct TStream {
        int32_t id;
        unsigned status;
        unsigned informational; /* a 1xx seen */
        char headers[8192];     /* "name: value\n" as received */
        size_t headers_len;
        uint8_t *body;
        size_t body_len;
        bool closed;
        uint32_t error_code;
        const uint8_t *upload;
        size_t upload_len, upload_off;
} TStream;

typedef struct Client {
        int fd;
        nghttp2_session *session; /* NULL: raw frames */
        uint8_t *out;
        size_t out_len, out_allocated;
        TStream streams[TSTREAMS_MAX];
        size_t n_streams;
        unsigned n_goaway;
        uint32_t goaway_error;
        int32_t goaway_last;
        char goaway_debug[256];
        unsigned n_rst, rst_by_code[16];
        int32_t last_rst_stream;
        unsigned n_headers_frames;
        int32_t wire_goaway_last; /* the last GOAWAY on the wire, whether the session still reads or not */
        bool eof;
        bool no_read; /* a client that does not read what it is sent */
        /* raw: a partial frame */
        uint8_t in[1 << 17];
        size_t in_len;
} Client;

typedef struct Env {
        Frontend *fe;
        Client *clients[CLIENTS_MAX];
        size_t n_clients;
} Env;

/* ---- the client end ---- */

static void out_append(Client *c, const void *p, size_t n) {
        if (c->out_len + n > c->out_allocated) {
                c->out_allocated = MAX(c->out_allocated * 2, c->out_len + n + 4096);
                c->out = realloc(c->out, c->out_allocated);
                assert_non_null(c->out);
        }
        memcpy(c->out + c->out_len, p, n);
        c->out_len += n;
}

static TStream *tstream_new(Client *c) {
        assert_true(c->n_streams < TSTREAMS_MAX);
        return memset(&c->streams[c->n_streams++], 0, sizeof(TStream));
}

static ssize_t on_client_upload(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                                uint32_t *data_flags, nghttp2_data_source *source, void *userdata) {
        TStream *t = source->ptr;
        size_t n = MIN(length, t->upload_len - t->upload_off);

        memcpy(buf, t->upload + t->upload_off, n);
        t->upload_off += n;
        if (t->upload_off == t->upload_len)
                *data_flags |= NGHTTP2_DATA_FLAG_EOF;
        return (ssize_t) n;
}

static int on_client_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                            size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                            void *userdata) {
        TStream *t = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        int k;

        if (!t)
                return 0;
        if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
                unsigned s = 0;
                for (size_t i = 0; i < valuelen; i++)
                        s = s * 10 + (unsigned) (value[i] - '0');
                if (s >= 200)
                        t->status = s;
                else
                        t->informational = s;
                return 0;
        }
        k = snprintf(t->headers + t->headers_len, sizeof(t->headers) - t->headers_len, "%.*s: %.*s\n",
                     (int) namelen, name, (int) valuelen, value);
        if (k > 0)
                t->headers_len = MIN(t->headers_len + (size_t) k, sizeof(t->headers) - 1);
        return 0;
}

static int on_client_data(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data,
                          size_t len, void *userdata) {
        TStream *t = nghttp2_session_get_stream_user_data(session, stream_id);

        if (!t)
                return 0;
        t->body = realloc(t->body, t->body_len + len + 1);
        assert_non_null(t->body);
        memcpy(t->body + t->body_len, data, len);
        t->body_len += len;
        t->body[t->body_len] = 0;
        return 0;
}

static int on_client_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *userdata) {
        TStream *t = nghttp2_session_get_stream_user_data(session, stream_id);

        if (t) {
                t->closed = true;
                t->error_code = error_code;
        }
        return 0;
}

static void record_goaway(Client *c, int32_t last, uint32_t error, const uint8_t *debug, size_t len) {
        c->n_goaway++;
        c->goaway_last = last;
        c->goaway_error = error;
        (void) snprintf(c->goaway_debug, sizeof(c->goaway_debug), "%.*s", (int) len, debug);
}

static void record_rst(Client *c, int32_t id, uint32_t error) {
        c->n_rst++;
        c->last_rst_stream = id;
        if (error < ELEMENTSOF(c->rst_by_code))
                c->rst_by_code[error]++;
}

static int on_client_frame(nghttp2_session *session, const nghttp2_frame *frame, void *userdata) {
        Client *c = userdata;

        if (frame->hd.type == NGHTTP2_GOAWAY)
                record_goaway(c, frame->goaway.last_stream_id, frame->goaway.error_code,
                              frame->goaway.opaque_data, frame->goaway.opaque_data_len);
        else if (frame->hd.type == NGHTTP2_RST_STREAM)
                record_rst(c, frame->hd.stream_id, frame->rst_stream.error_code);
        return 0;
}

static Client *client_new(Env *env, bool raw) {
        Client *c = calloc(1, sizeof(Client));

        assert_non_null(c);
        c->fd = -1;
        if (!raw) {
                nghttp2_session_callbacks *cbs;
                nghttp2_option *opt;

                assert_int_equal(nghttp2_session_callbacks_new(&cbs), 0);
                nghttp2_session_callbacks_set_on_header_callback(cbs, on_client_header);
                nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_client_data);
                nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_client_close);
                nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_client_frame);
                assert_int_equal(nghttp2_option_new(&opt), 0);
                /* the 431 tests send more than nghttp2's default 64 KiB header block */
                nghttp2_option_set_max_send_header_block_length(opt, 1024 * 1024);
                assert_int_equal(nghttp2_session_client_new2(&c->session, cbs, c, opt), 0);
                nghttp2_option_del(opt);
                nghttp2_session_callbacks_del(cbs);
        }
        assert_true(env->n_clients < CLIENTS_MAX);
        env->clients[env->n_clients++] = c;
        return c;
}

static void client_free(Env *env, Client *c) {
        for (size_t i = 0; i < env->n_clients; i++)
                if (env->clients[i] == c) {
                        env->clients[i] = env->clients[--env->n_clients];
                        break;
                }
        for (size_t i = 0; i < c->n_streams; i++)
                free(c->streams[i].body);
        nghttp2_session_del(c->session);
        if (c->fd >= 0)
                close(c->fd);
        free(c->out);
        free(c);
}

/* What an nghttp2 client session has to say, into c->out. */
static void client_produce(Client *c) {
        if (!c->session)
                return;
        while (c->out_len < 1024 * 1024) {
                const uint8_t *d;
                ssize_t n = nghttp2_session_mem_send(c->session, &d);
                assert_true(n >= 0);
                if (n == 0)
                        break;
                out_append(c, d, (size_t) n);
        }
}

static void raw_parse(Client *c) {
        size_t off = 0;

        while (c->in_len - off >= 9) {
                const uint8_t *h = c->in + off;
                size_t len = (size_t) h[0] << 16 | (size_t) h[1] << 8 | h[2];
                int32_t id = (int32_t) ((uint32_t) (h[5] & 0x7f) << 24 | (uint32_t) h[6] << 16 |
                                        (uint32_t) h[7] << 8 | h[8]);
                const uint8_t *p = h + 9;

                if (c->in_len - off < 9 + len)
                        break;
                if (h[3] == NGHTTP2_GOAWAY && len >= 8)
                        record_goaway(c,
                                      (int32_t) ((uint32_t) (p[0] & 0x7f) << 24 | (uint32_t) p[1] << 16 |
                                                 (uint32_t) p[2] << 8 | p[3]),
                                      (uint32_t) p[4] << 24 | (uint32_t) p[5] << 16 | (uint32_t) p[6] << 8 |
                                              p[7],
                                      p + 8, len - 8);
                else if (h[3] == NGHTTP2_RST_STREAM && len == 4)
                        record_rst(c, id,
                                   (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 |
                                           p[3]);
                else if (h[3] == NGHTTP2_HEADERS)
                        c->n_headers_frames++;
                off += 9 + len;
        }
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
}

/* The frames a session client is sent, seen on the wire: an nghttp2 client stops looking at frames once
 * it has a GOAWAY and no open stream, so a later GOAWAY reaches no callback. Only GOAWAYs are kept. */
static void wire_scan(Client *c, const uint8_t *p, size_t n) {
        size_t off = 0;

        assert_true(c->in_len + n <= sizeof(c->in));
        memcpy(c->in + c->in_len, p, n);
        c->in_len += n;
        while (c->in_len - off >= 9) {
                const uint8_t *h = c->in + off;
                size_t len = (size_t) h[0] << 16 | (size_t) h[1] << 8 | h[2];

                if (c->in_len - off < 9 + len)
                        break;
                if (h[3] == NGHTTP2_GOAWAY && len >= 8)
                        c->wire_goaway_last = (int32_t) ((uint32_t) (h[9] & 0x7f) << 24 | (uint32_t) h[10] << 16 |
                                                         (uint32_t) h[11] << 8 | h[12]);
                off += 9 + len;
        }
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
}

static void client_io(Client *c) {
        uint8_t buf[65536];

        if (c->fd < 0)
                return;
        client_produce(c);
        while (c->out_len > 0) {
                ssize_t n = send(c->fd, c->out, c->out_len, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EAGAIN)
                                break;
                        c->out_len = 0; /* the server is gone */
                        break;
                }
                memmove(c->out, c->out + n, c->out_len - (size_t) n);
                c->out_len -= (size_t) n;
        }
        while (!c->eof && !c->no_read) {
                ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (n < 0) {
                        if (errno != EAGAIN)
                                c->eof = true;
                        break;
                }
                if (n == 0) {
                        c->eof = true;
                        break;
                }
                if (c->session) {
                        wire_scan(c, buf, (size_t) n);
                        (void) nghttp2_session_mem_recv(c->session, buf, (size_t) n);
                        continue;
                }
                assert_true(c->in_len + (size_t) n <= sizeof(c->in));
                memcpy(c->in + c->in_len, buf, (size_t) n);
                c->in_len += (size_t) n;
                raw_parse(c);
        }
}

static void pump_once(Env *env) {
        for (size_t i = 0; i < env->n_clients; i++)
                client_io(env->clients[i]);
        assert_true(sd_event_run(env->fe->event, 2 * USEC_PER_MSEC) >= 0);
}

#define PUMP_UNTIL(env, cond)                                                 \
        do {                                                                  \
                usec_t _deadline = now_usec(CLOCK_MONOTONIC) + PUMP_TIMEOUT;  \
                while (!(cond)) {                                             \
                        if (now_usec(CLOCK_MONOTONIC) > _deadline)            \
                                fail_msg("timed out waiting for: %s", #cond); \
                        pump_once(env);                                       \
                }                                                             \
        } while (0)

static void pump_for(Env *env, usec_t span) {
        usec_t end = now_usec(CLOCK_MONOTONIC) + span;

        while (now_usec(CLOCK_MONOTONIC) < end)
                pump_once(env);
}

/* A socketpair, the server end handed to frontend_h2_accept() with `initial` as the bytes h1 had read. */
static void client_connect(Env *env, Client *c, const uint8_t *initial, size_t initial_len,
                           const uint8_t *settings, size_t settings_len, const RequestHead *upgrade) {
        struct sockaddr_storage peer;
        struct sockaddr_in *in = (struct sockaddr_in *) &peer;
        int fds[2];

        memset(&peer, 0, sizeof(peer));
        in->sin_family = AF_INET;
        in->sin_port = htons(40000);
        in->sin_addr.s_addr = htonl(0xc0000201); /* 192.0.2.1 */

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds), 0);
        c->fd = fds[1];
        assert_int_equal(frontend_h2_accept(env->fe, fds[0], &peer, initial, initial_len, settings,
                                            settings_len, upgrade),
                         0);
}

/* Prior knowledge, the way h1-connection.c hands over: it has read the preface (and maybe more). */
static Client *connect_prior_knowledge(Env *env) {
        Client *c = client_new(env, false);

        assert_int_equal(nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, NULL, 0), 0);
        client_produce(c);
        client_connect(env, c, c->out, c->out_len, NULL, 0, NULL);
        c->out_len = 0;
        return c;
}

static TStream *submit(Client *c, const char *method, const char *path, const nghttp2_nv *extra,
                       size_t n_extra, const uint8_t *upload, size_t upload_len) {
        nghttp2_nv nva[256];
        size_t n = 0;
        TStream *t = tstream_new(c);
        nghttp2_data_provider prd = {.source.ptr = t, .read_callback = on_client_upload};

#define NV(a, b) ((nghttp2_nv){(uint8_t *) (a), (uint8_t *) (b), strlen(a), strlen(b), NGHTTP2_NV_FLAG_NONE})
        nva[n++] = NV(":method", method);
        if (strcmp(method, "CONNECT") != 0) {
                nva[n++] = NV(":scheme", "http");
                nva[n++] = NV(":path", path);
        }
        nva[n++] = NV(":authority", "example.test");
        assert_true(n + n_extra <= ELEMENTSOF(nva));
        if (n_extra > 0)
                memcpy(nva + n, extra, n_extra * sizeof(nghttp2_nv));
        n += n_extra;
        t->upload = upload;
        t->upload_len = upload_len;
        t->id = nghttp2_submit_request(c->session, NULL, nva, n, upload ? &prd : NULL, t);
        assert_true(t->id > 0);
        return t;
}

static TStream *get(Client *c, const char *path) {
        return submit(c, "GET", path, NULL, 0, NULL, 0);
}

/* ---- raw frames ---- */

static void raw_frame(Client *c, uint8_t type, uint8_t flags, int32_t id, const void *payload, size_t len) {
        uint8_t h[9] = {
                (uint8_t) (len >> 16),
                (uint8_t) (len >> 8),
                (uint8_t) len,
                type,
                flags,
                (uint8_t) ((uint32_t) id >> 24),
                (uint8_t) ((uint32_t) id >> 16),
                (uint8_t) ((uint32_t) id >> 8),
                (uint8_t) id,
        };

        out_append(c, h, sizeof(h));
        if (len > 0)
                out_append(c, payload, len);
}

/* HPACK "literal header field without indexing, new name", no Huffman: names and values < 127 bytes. */
static size_t hpack_literal(uint8_t *p, const char *name, const char *value) {
        size_t nl = strlen(name), vl = strlen(value);

        p[0] = 0x00;
        p[1] = (uint8_t) nl;
        memcpy(p + 2, name, nl);
        p[2 + nl] = (uint8_t) vl;
        memcpy(p + 3 + nl, value, vl);
        return 3 + nl + vl;
}

static size_t hpack_request(uint8_t *p, const char *method, const char *path, const char *extra_name,
                            const char *extra_value) {
        size_t n = 0;

        n += hpack_literal(p + n, ":method", method);
        n += hpack_literal(p + n, ":scheme", "http");
        n += hpack_literal(p + n, ":path", path);
        n += hpack_literal(p + n, ":authority", "example.test");
        if (extra_name)
                n += hpack_literal(p + n, extra_name, extra_value);
        return n;
}

static Client *connect_raw(Env *env) {
        Client *c = client_new(env, true);

        out_append(c, NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN);
        raw_frame(c, NGHTTP2_SETTINGS, 0, 0, NULL, 0);
        client_connect(env, c, NULL, 0, NULL, 0, NULL);
        return c;
}

static void raw_request(Client *c, int32_t id, const char *method, const char *path, bool end_stream) {
        uint8_t block[512];
        size_t n = hpack_request(block, method, path, NULL, NULL);

        raw_frame(c, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | (end_stream ? NGHTTP2_FLAG_END_STREAM : 0),
                  id, block, n);
}

/* ---- fixtures ---- */

static int setup(void **state) {
        Env *env = calloc(1, sizeof(Env));

        assert_non_null(env);
        assert_int_equal(fake_frontend_new(&env->fe), 0);
        *state = env;
        return 0;
}

static int teardown(void **state) {
        Env *env = *state;

        while (env->n_clients > 0)
                client_free(env, env->clients[0]);
        /* the server ends see EOF and close */
        for (unsigned i = 0; i < 100 && env->fe->n_connections > 0; i++)
                (void) sd_event_run(env->fe->event, 1000);
        env->fe = fake_frontend_free(env->fe);
        free(env);
        return 0;
}

/* Answers "/auto..." at once, like a quick worker. */
static void on_begin_auto(Exchange *x, void *userdata) {
        if (x->req.target_len >= 5 && memcmp(x->req.target, "/auto", 5) == 0)
                assert_int_equal(fake_respond(x, 200, "hello"), 0);
        else if (x->req.target_len == 5 && memcmp(x->req.target, "/busy", 5) == 0)
                x->client->response_error(x, 503, 7, "no routable worker");
}

static bool field_is(const HeaderField *f, const char *name, const char *value) {
        return f->name_len == strlen(name) && memcmp(f->name, name, f->name_len) == 0 &&
               f->value_len == strlen(value) && memcmp(f->value, value, f->value_len) == 0;
}

static bool bytes_are(const char *p, size_t n, const char *s) {
        return p && n == strlen(s) && memcmp(p, s, n) == 0;
}

/* ---- requests and responses ---- */

static void test_frontend_h2_accept_prior_knowledge_get(void **state) {
        Env *env = *state;
        Client *c = connect_prior_knowledge(env);
        const nghttp2_nv extra[] = {
                NV("user-agent", "test/1"),
                NV("cookie", "a=1"),
                NV("cookie", "b=2"),
                NV("content-type", "text/plain"),
        };
        TStream *t = submit(c, "GET", "/path?q=1", extra, ELEMENTSOF(extra), NULL, 0);
        FakeExchange *fx;
        const HeaderField resp_fields[] = {
                {"Content-Type", 12, "text/x", 6},  {"Connection", 10, "close", 5},
                {"Keep-Alive", 10, "timeout=5", 9}, {"Transfer-Encoding", 17, "chunked", 7},
                {"X-Mixed-Case", 12, "Yes", 3},
        };
        const HeaderField extra_fields[] = {{"Set-Cookie", 10, "ep=u1", 5}};

        PUMP_UNTIL(env, (fx = fake_exchange_find(env->fe, "/path?q=1")));
        assert_true(bytes_are(fx->x.req.method, fx->x.req.method_len, "GET"));
        assert_true(bytes_are(fx->x.req.authority, fx->x.req.authority_len, "example.test"));
        assert_int_equal(fx->x.req.http_major, 2);
        assert_int_equal(fx->x.req.http_minor, 0);
        assert_false(fx->x.req.has_body);
        assert_false(fx->x.req.head_method);
        assert_int_equal(fx->x.req.n_fields, 4);
        assert_true(field_is(&fx->x.req.fields[0], "user-agent", "test/1"));
        assert_true(field_is(&fx->x.req.fields[1], "cookie", "a=1"));
        assert_true(field_is(&fx->x.req.fields[2], "cookie", "b=2"));
        assert_true(field_is(&fx->x.req.fields[3], "content-type", "text/plain"));
        assert_int_equal(fx->x.peer.ss_family, AF_INET);
        assert_false(fx->x.via_tls_proxy);

        ResponseHead h = {
                .status = 200,
                .fields = resp_fields,
                .n_fields = ELEMENTSOF(resp_fields),
                .extra = extra_fields,
                .n_extra = 1,
                .has_body = true,
                .has_content_length = true,
                .content_length = 5,
        };
        fx->x.state = EXCHANGE_RESPONDING;
        assert_int_equal(fx->x.client->response_head(&fx->x, &h), 0);
        assert_int_equal(fake_respond_body(&fx->x, "hello", 5), 0);
        assert_int_equal(fake_respond_end(&fx->x), 0);

        PUMP_UNTIL(env, t->closed);
        assert_int_equal(t->error_code, NGHTTP2_NO_ERROR);
        assert_int_equal(t->status, 200);
        assert_string_equal((const char *) t->body, "hello");
        assert_non_null(strstr(t->headers, "content-type: text/x\n"));
        assert_non_null(strstr(t->headers, "x-mixed-case: Yes\n"));
        assert_non_null(strstr(t->headers, "set-cookie: ep=u1\n"));
        assert_non_null(strstr(t->headers, "content-length: 5\n"));
        assert_null(strstr(t->headers, "connection"));
        assert_null(strstr(t->headers, "keep-alive"));
        assert_null(strstr(t->headers, "transfer-encoding"));
        PUMP_UNTIL(env, env->fe->n_live == 0);
        assert_int_equal(env->fe->n_freed, 1);
}

static void test_response_body_deferred_then_resumed(void **state) {
        Env *env = *state;
        Client *c = connect_prior_knowledge(env);
        TStream *t = get(c, "/stream");
        size_t big = 200 * 1024;
        uint8_t *payload = malloc(big);
        FakeExchange *fx;

        assert_non_null(payload);
        for (size_t i = 0; i < big; i++)
                payload[i] = (uint8_t) ('a' + i % 26);

        PUMP_UNTIL(env, (fx = fake_exchange_find(env->fe, "/stream")));
        assert_int_equal(fake_respond_head(&fx->x, 200, NULL, 0, true, false, 0), 0);
        /* the head goes out alone: the data provider defers, the stream stays open */
        PUMP_UNTIL(env, t->status == 200);
        pump_for(env, 20 * USEC_PER_MSEC);
        assert_int_equal(t->body_len, 0);
        assert_false(t->closed);

        assert_int_equal(fake_respond_body(&fx->x, "part1", 5), 0);
        PUMP_UNTIL(env, t->body_len == 5);
        assert_memory_equal(t->body, "part1", 5);

        /* over the high-water mark: 1, and a resume once the client's window drained it */
        assert_int_equal(fake_respond_body(&fx->x, payload, big), 1);
        PUMP_UNTIL(env, fx->resumes > 0);
        assert_int_equal(fake_respond_end(&fx->x), 0);
        PUMP_UNTIL(env, t->closed);
        assert_int_equal(t->error_code, NGHTTP2_NO_ERROR);
        assert_int_equal(t->body_len, 5 + big);
        assert_memory_equal(t->body + 5, payload, big);
        free(payload);
}

static void test_response_body_connection_budget(void **state) {
        Env *env = *state;
        Client *c = connect_prior_knowledge(env);
        static uint8_t chunk[48 * 1024];
        TStream *t[24];
        FakeExchange *fx[24];
        char path[16];

        memset(chunk, 'z', sizeof(chunk));
        for (unsigned i = 0; i < ELEMENTSOF(t); i++) {
                (void) snprintf(path, sizeof(path), "/b%u", i);
                t[i] = get(c, path);
        }
        PUMP_UNTIL(env, env->fe->n_begun == ELEMENTSOF(t));
        for (unsigned i = 0; i < ELEMENTSOF(t); i++) {
                (void) snprintf(path, sizeof(path), "/b%u", i);
                fx[i] = fake_exchange_find(env->fe, path);
                assert_int_equal(fake_respond_head(&fx[i]->x, 200, NULL, 0, true, false, 0), 0);
        }
        /* each stream is under its own high-water mark; past 1 MiB for the connection, the rest wait */
        for (unsigned i = 0; i < ELEMENTSOF(t); i++)
                assert_int_equal(fake_respond_body(&fx[i]->x, chunk, sizeof(chunk)), i < 21 ? 0 : 1);

        c->no_read = true;
        pump_for(env, 20 * USEC_PER_MSEC);
        for (unsigned i = 21; i < ELEMENTSOF(t); i++)
                assert_int_equal(fx[i]->resumes, 0);

        /* once the client reads, the waiting streams are resumed */
        c->no_read = false;
        PUMP_UNTIL(env, fx[21]->resumes > 0 && fx[22]->resumes > 0 && fx[23]->resumes > 0);
        for (unsigned i = 0; i < ELEMENTSOF(t); i++)
                assert_int_equal(fake_respond_end(&fx[i]->x), 0);
        for (unsigned i = 0; i < ELEMENTSOF(t); i++) {
                PUMP_UNTIL(env, t[i]->closed);
                assert_int_equal(t[i]->body_len, sizeof(chunk));
        }
}

static void test_response_error_retry_after(void **state) {
        Env *env = *state;
        Client *c;
        TStream *t;

        env->fe->on_begin = on_begin_auto;
        c = connect_prior_knowledge(env);
        t = get(c, "/busy");
        PUMP_UNTIL(env, t->closed);
        assert_int_equal(t->status, 503);
        assert_non_null(strstr(t->headers, "retry-after: 7\n"));
        assert_non_null(strstr(t->headers, "content-type: text/plain"));
        assert_string_equal((const char *) t->body, "503 Service Unavailable\n");
        PUMP_UNTIL(env, env->fe->n_live == 0);
}

static void test_frontend_h2_accept_upgrade(void **state) {
        Env *env = *state;
        Client *c = client_new(env, false);
        nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 10}};
        uint8_t settings[64];
        ssize_t settings_len = nghttp2_pack_settings_payload(settings, sizeof(settings), iv, ELEMENTSOF(iv));
        TStream *t = tstream_new(c);
        const HeaderField fields[] = {
                {"User-Agent", 10, "curl/7.88", 9},
                {"Cookie", 6, "ep=abc", 6},
        };
        RequestHead head = {
                .method = "GET",
                .method_len = 3,
                .target = "/up",
                .target_len = 3,
                .authority = "example.test",
                .authority_len = 12,
                .http_major = 1,
                .http_minor = 1,
                .fields = fields,
                .n_fields = ELEMENTSOF(fields),
        };
        FakeExchange *fx;

        assert_true(settings_len > 0);
        t->id = 1;
        assert_int_equal(nghttp2_session_upgrade2(c->session, settings, (size_t) settings_len, 0, t), 0);
        client_produce(c);
        /* h1 read the request and, past it, the first bytes of the preface */
        client_connect(env, c, c->out, 10, settings, (size_t) settings_len, &head);
        memmove(c->out, c->out + 10, c->out_len - 10);
        c->out_len -= 10;

        PUMP_UNTIL(env, (fx = fake_exchange_find(env->fe, "/up")));
        assert_true(bytes_are(fx->x.req.method, fx->x.req.method_len, "GET"));
        assert_true(bytes_are(fx->x.req.authority, fx->x.req.authority_len, "example.test"));
        assert_int_equal(fx->x.req.http_major, 2);
        assert_false(fx->x.req.has_body);
        assert_int_equal(fx->x.req.n_fields, 2);
        assert_true(field_is(&fx->x.req.fields[0], "user-agent", "curl/7.88"));
        assert_true(field_is(&fx->x.req.fields[1], "cookie", "ep=abc"));
        assert_ptr_not_equal(fx->x.req.fields[0].value, fields[0].value); /* copied */

        assert_int_equal(fake_respond(&fx->x, 200, "upgraded"), 0);
        PUMP_UNTIL(env, t->closed);
        assert_int_equal(t->status, 200);
        assert_string_equal((const char *) t->body, "upgraded");

        /* and the connection goes on as HTTP/2 */
        env->fe->on_begin = on_begin_auto;
        t = get(c, "/auto2");
        PUMP_UNTIL(env, t->closed);
        assert_int_equal(t->status, 200);
        assert_int_equal(t->id, 3);
}

/* ---- request bodies and flow control ---- */

static void on_begin_slow_fast(Exchange *x, void *userdata) {
        if (bytes_are(x->req.target, x->req.target_len, "/slow"))
                fake_exchange_of(x)->verdict = 1;
}

static void test_stream_request_body_flow_control_per_stream(void **state) {
        Env *env = *state;
        size_t size = 1024 * 1024;
        uint8_t *body = malloc(size);
        Client *c;
        TStream *slow, *fast;
        FakeExchange *fs, *ff;

        assert_non_null(body);
        for (size_t i = 0; i < size; i++)
                body[i] = (uint8_t) i;
        env->fe->on_begin = on_begin_slow_fast;
        c = connect_prior_knowledge(env);
        slow = submit(c, "POST", "/slow", NULL, 0, body, size);
        fast = submit(c, "POST", "/fast", NULL, 0, body, size);

        /* the fast stream's whole megabyte gets through while the slow one sits on its window */
        PUMP_UNTIL(env, (ff = fake_exchange_find(env->fe, "/fast")) && ff->ended);
        assert_int_equal(ff->body_len, size);
        assert_memory_equal(ff->body, body, size);
        assert_true(ff->x.req.has_body);
        assert_false(ff->x.req.has_content_length);
        assert_int_equal(fake_respond(&ff->x, 200, "fast"), 0);
        PUMP_UNTIL(env, fast->closed);
        assert_int_equal(fast->status, 200);

        fs = fake_exchange_find(env->fe, "/slow");
        assert_non_null(fs);
        assert_false(fs->ended);
        assert_int_equal(fs->body_len, 256 * 1024); /* exactly the stream window, never given back */
        assert_int_equal(nghttp2_session_get_stream_remote_window_size(c->session, slow->id), 0);
        assert_false(slow->closed);

        /* the worker side catches up */
        fs->verdict = 0;
        fs->x.client->request_body_resume(&fs->x);
        PUMP_UNTIL(env, fs->ended);
        assert_int_equal(fs->body_len, size);
        assert_memory_equal(fs->body, body, size);
        assert_int_equal(fake_respond(&fs->x, 200, "slow"), 0);
        PUMP_UNTIL(env, slow->closed);
        assert_int_equal(slow->status, 200);
        free(body);
}

static void test_stream_request_body_shorter_than_content_length(void **state) {
        Env *env = *state;
        Client *c = connect_raw(env);
        uint8_t block[512];
        uint8_t data[50] = {0};
        size_t n = hpack_request(block, "POST", "/short", "content-length", "100");

        raw_frame(c, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1, block, n);
        raw_frame(c, NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1, data, sizeof(data));
        PUMP_UNTIL(env, c->rst_by_code[NGHTTP2_PROTOCOL_ERROR] == 1);
        assert_int_equal(c->last_rst_stream, 1);
        /* the router saw the head and part of the body, never its end, and learnt the stream died */
        PUMP_UNTIL(env, env->fe->n_freed == 1);
        assert_int_equal(env->fe->n_begun, 1);
        assert_int_equal(env->fe->n_live, 0);
}

/* ---- header limits and refused methods ---- */

static void test_on_header_too_many_fields_431(void **state) {
        Env *env = *state;
        Client *c = connect_prior_knowledge(env);
        nghttp2_nv extra[101];
        char names[101][16];
        TStream *t, *ok;

        for (size_t i = 0; i < ELEMENTSOF(extra); i++) {
                (void) snprintf(names[i], sizeof(names[i]), "x-f-%zu", i);
                extra[i] = NV(names[i], "v");
        }
        t = submit(c, "GET", "/many", extra, ELEMENTSOF(extra), NULL, 0);
        ok = submit(c, "GET", "/hundred", extra, 100, NULL, 0);
        PUMP_UNTIL(env, t->closed && env->fe->n_begun == 1);
        assert_int_equal(t->status, 431);
        assert_null(fake_exchange_find(env->fe, "/many"));
        assert_non_null(fake_exchange_find(env->fe, "/hundred"));
        assert_int_equal(fake_exchange_find(env->fe, "/hundred")->x.req.n_fields, 100);
        assert_false(ok->closed);
}

static void test_on_header_too_large_431(void **state) {
        Env *env = *state;
        Client *c = connect_prior_knowledge(env);
        static char value[4097];
        nghttp2_nv extra[17];
        char names[17][16];
        TStream *t;

        memset(value, 'v', sizeof(value) - 1);
        for (size_t i = 0; i < ELEMENTSOF(extra); i++) {
                (void) snprintf(names[i], sizeof(names[i]), "x-big-%zu", i);
                extra[i] = NV(names[i], value);
        }
        /* 17 × 4 KiB > 64 KiB decoded, in a header block spanning several CONTINUATIONs */
        t = submit(c, "GET", "/big", extra, ELEMENTSOF(extra), NULL, 0);
        PUMP_UNTIL(env, t->closed);
        assert_int_equal(t->status, 431);
        assert_int_equal(env->fe->n_new, 0);

        /* the connection stays usable */
        env->fe->on_begin = on_begin_auto;
        t = get(c, "/auto");
        PUMP_UNTIL(env, t->closed);
        assert_int_equal(t->status, 200);
}

static void test_stream_headers_complete_connect_405(void **state) {
        Env *env = *state;
        Client *c = connect_prior_knowledge(env);
        TStream *t = submit(c, "CONNECT", NULL, NULL, 0, NULL, 0);

        PUMP_UNTIL(env, t->closed);
        assert_int_equal(t->status, 405);
        assert_int_equal(env->fe->n_new, 0);
}

/* ---- the cap on requests left running by reset streams ---- */

static void rst(Client *c, TStream *t) {
        assert_int_equal(nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, t->id, NGHTTP2_CANCEL), 0);
}

static void test_stream_closed_queued_request_dropped(void **state) {
        Env *env = *state;
        Client *c = connect_prior_knowledge(env);
        TStream *t;

        /* reset while it waits for a worker connection: nothing reached a worker, nothing is kept */
        env->fe->queue_begun = true;
        t = get(c, "/queued");
        PUMP_UNTIL(env, env->fe->n_begun == 1);
        rst(c, t);
        PUMP_UNTIL(env, env->fe->n_freed == 1);
        assert_int_equal(env->fe->n_live, 0);
}

static void test_stream_closed_orphans_count_against_cap(void **state) {
        Env *env = *state;
        Client *c;
        TStream *t[8], *refused, *later;
        FakeExchange *fx;

        env->fe->config.h2_max_concurrent_streams = 4; /* cap: 8 requests running per connection */
        c = connect_prior_knowledge(env);
        PUMP_UNTIL(env, nghttp2_session_get_remote_settings(c->session,
                                                            NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS) == 4);

        for (unsigned round = 0; round < 2; round++) {
                char path[16];
                for (unsigned i = 0; i < 4; i++) {
                        (void) snprintf(path, sizeof(path), "/o%u", round * 4 + i);
                        t[round * 4 + i] = get(c, path);
                }
                PUMP_UNTIL(env, env->fe->n_begun == (round + 1) * 4);
                for (unsigned i = 0; i < 4; i++)
                        rst(c, t[round * 4 + i]);
                PUMP_UNTIL(env, t[round * 4 + 3]->closed);
        }
        pump_for(env, 20 * USEC_PER_MSEC);
        /* reset by the client, still running on the worker: kept, not freed */
        assert_int_equal(env->fe->n_live, 8);
        assert_int_equal(env->fe->n_freed, 0);

        refused = get(c, "/refused");
        PUMP_UNTIL(env, refused->closed);
        assert_int_equal(refused->error_code, NGHTTP2_REFUSED_STREAM);
        assert_int_equal(env->fe->n_begun, 8);

        /* their responses are discarded; when the worker ends one, its place is free again */
        fx = fake_exchange_find(env->fe, "/o0");
        assert_non_null(fx);
        assert_int_equal(fake_respond_head(&fx->x, 200, NULL, 0, true, false, 0), 0);
        assert_int_equal(fake_respond_body(&fx->x, "discarded", 9), 0);
        assert_int_equal(fake_respond_end(&fx->x), 0);
        PUMP_UNTIL(env, env->fe->n_freed == 1);

        env->fe->on_begin = on_begin_auto;
        later = get(c, "/auto-later");
        PUMP_UNTIL(env, later->closed);
        assert_int_equal(later->status, 200);
        assert_int_equal(env->fe->n_live, 7);

        /* a failed or aborted worker request ends an orphan too */
        fx = fake_exchange_find(env->fe, "/o1");
        fx->x.client->response_error(&fx->x, 502, 0, "worker died");
        fx = fake_exchange_find(env->fe, "/o2");
        assert_int_equal(fake_respond_head(&fx->x, 200, NULL, 0, true, false, 0), 0);
        fx->x.client->response_abort(&fx->x, "worker reset");
        PUMP_UNTIL(env, env->fe->n_live == 5);
}

static void test_on_request_continue_sends_100(void **state) {
        Env *env = *state;
        Client *c = connect_raw(env);
        uint8_t block[512];
        size_t n = hpack_request(block, "POST", "/continue", "expect", "100-continue");
        FakeExchange *fx;

        n += hpack_literal(block + n, "te", "trailers");
        n += hpack_literal(block + n, "x-a", "1");
        raw_frame(c, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1, block, n);
        PUMP_UNTIL(env, (fx = fake_exchange_find(env->fe, "/continue")));
        assert_true(fx->x.req.expect_continue);
        /* the handshake is the front end's: neither expect nor te reaches the worker */
        assert_int_equal(fx->x.req.n_fields, 1);
        assert_true(field_is(&fx->x.req.fields[0], "x-a", "1"));

        fx->x.client->request_continue(&fx->x);
        PUMP_UNTIL(env, c->n_headers_frames == 1); /* :status 100, not the end of the stream */
        raw_frame(c, NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1, "body", 4);
        PUMP_UNTIL(env, fx->ended);
        assert_int_equal(fx->body_len, 4);
        assert_int_equal(fake_respond(&fx->x, 201, NULL), 0);
        PUMP_UNTIL(env, c->n_headers_frames == 2 && env->fe->n_live == 0);
        assert_int_equal(c->n_rst, 0);
}

static void test_response_abort_resets_stream(void **state) {
        Env *env = *state;
        Client *c = connect_prior_knowledge(env);
        TStream *t = get(c, "/abort");
        FakeExchange *fx;

        PUMP_UNTIL(env, (fx = fake_exchange_find(env->fe, "/abort")));
        assert_int_equal(fake_respond_head(&fx->x, 200, NULL, 0, true, true, 100), 0);
        assert_int_equal(fake_respond_body(&fx->x, "part", 4), 0);
        fx->x.client->response_abort(&fx->x, "worker connection reset");
        PUMP_UNTIL(env, t->closed);
        assert_int_equal(t->error_code, NGHTTP2_INTERNAL_ERROR);
        PUMP_UNTIL(env, env->fe->n_live == 0);
}

static void test_response_head_for_head_request_has_no_body(void **state) {
        Env *env = *state;
        Client *c = connect_prior_knowledge(env);
        TStream *t = submit(c, "HEAD", "/head", NULL, 0, NULL, 0);
        FakeExchange *fx;

        PUMP_UNTIL(env, (fx = fake_exchange_find(env->fe, "/head")));
        assert_true(fx->x.req.head_method);
        /* the router says no body for HEAD; the length is the GET's */
        assert_int_equal(fake_respond_head(&fx->x, 200, NULL, 0, false, true, 1234), 0);
        assert_int_equal(fake_respond_end(&fx->x), 0);
        PUMP_UNTIL(env, t->closed);
        assert_int_equal(t->error_code, NGHTTP2_NO_ERROR);
        assert_int_equal(t->status, 200);
        assert_int_equal(t->body_len, 0);
        assert_non_null(strstr(t->headers, "content-length: 1234\n"));
}

static void test_stream_request_body_over_max_body_size_413(void **state) {
        Env *env = *state;
        static uint8_t body[4000];
        const nghttp2_nv cl[] = {NV("content-length", "4000")};
        Client *c;
        TStream *declared, *streamed;

        env->fe->config.max_body_size = 1000;
        c = connect_prior_knowledge(env);
        /* declared too large: answered at once, never forwarded */
        declared = submit(c, "POST", "/declared", cl, 1, body, sizeof(body));
        PUMP_UNTIL(env, declared->closed);
        assert_int_equal(declared->status, 413);
        assert_int_equal(env->fe->n_new, 0);

        /* found too large on the way: the exchange is dropped (its worker connection closed), 413 */
        streamed = submit(c, "POST", "/streamed", NULL, 0, body, sizeof(body));
        PUMP_UNTIL(env, streamed->closed);
        assert_int_equal(streamed->status, 413);
        assert_int_equal(env->fe->n_begun, 1);
        assert_int_equal(env->fe->n_live, 0);
}

static void test_on_begin_headers_refusing_at_cap_goaway(void **state) {
        Env *env = *state;
        Client *c;
        TStream *t[4];

        env->fe->config.h2_max_concurrent_streams = 2; /* cap 4 */
        c = connect_prior_knowledge(env);
        PUMP_UNTIL(env, nghttp2_session_get_remote_settings(c->session,
                                                            NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS) == 2);
        for (unsigned i = 0; i < 4; i += 2) {
                t[i] = get(c, "/x");
                t[i + 1] = get(c, "/y");
                PUMP_UNTIL(env, env->fe->n_begun == i + 2);
                rst(c, t[i]);
                rst(c, t[i + 1]);
                PUMP_UNTIL(env, t[i + 1]->closed);
        }
        /* a client that keeps opening streams the cap refuses is told to stop */
        for (unsigned i = 0; i < 120; i++)
                (void) get(c, "/again");
        PUMP_UNTIL(env, c->n_goaway > 0 && c->eof);
        assert_int_equal(c->goaway_error, NGHTTP2_ENHANCE_YOUR_CALM);
        assert_non_null(strstr(c->goaway_debug, "refused"));
        assert_int_equal(env->fe->n_begun, 4);
        client_free(env, c);
        PUMP_UNTIL(env, env->fe->n_connections == 0);
        assert_int_equal(env->fe->n_live, 0); /* closing the connection freed the orphans */
}

static void test_on_begin_headers_rapid_reset(void **state) {
        Env *env = *state;
        Client *c = connect_raw(env);
        static const uint8_t cancel[4] = {0, 0, 0, NGHTTP2_CANCEL};

        /* HEADERS + RST_STREAM, 2000 times, as fast as the socket takes them */
        for (int32_t id = 1; id < 4000; id += 2) {
                raw_request(c, id, "GET", "/rr", true);
                raw_frame(c, NGHTTP2_RST_STREAM, 0, id, cancel, sizeof(cancel));
        }
        PUMP_UNTIL(env, c->n_goaway > 0 && c->eof);
        /* nghttp2's reset rate limit (INTERNAL_ERROR) or our cap (ENHANCE_YOUR_CALM) */
        assert_true(c->goaway_error == NGHTTP2_INTERNAL_ERROR ||
                    c->goaway_error == NGHTTP2_ENHANCE_YOUR_CALM);
        /* a stream reset in the read that opened it never reaches a worker; never more than the cap */
        assert_true(env->fe->n_begun <= 200);
        client_free(env, c);
        PUMP_UNTIL(env, env->fe->n_connections == 0);
        assert_int_equal(env->fe->n_live, 0);
}

/* ---- floods ---- */

static void flood_and_check(Env *env, uint8_t type, uint8_t flags, int32_t id, const void *payload,
                            size_t len, unsigned count, bool expect_goaway) {
        Client *c = connect_raw(env), *normal;
        TStream *t;

        env->fe->on_begin = on_begin_auto;
        raw_request(c, 1, "POST", "/upload", false);
        PUMP_UNTIL(env, env->fe->n_begun == 1);
        for (unsigned i = 0; i < count; i++)
                raw_frame(c, type, flags, id, payload, len);

        /* another connection on the same loop is served meanwhile */
        normal = connect_prior_knowledge(env);
        t = get(normal, "/auto-normal");
        PUMP_UNTIL(env, c->eof && t->closed);
        if (expect_goaway) {
                assert_int_equal(c->n_goaway, 1);
                assert_int_equal(c->goaway_error, NGHTTP2_ENHANCE_YOUR_CALM);
                assert_non_null(strstr(c->goaway_debug, "flood"));
        }
        assert_int_equal(t->status, 200);
        assert_false(normal->eof);
        assert_true(env->fe->n_client_errors > 0); /* through the front end's rate limit */

        client_free(env, c);
        PUMP_UNTIL(env, env->fe->n_connections == 1);
        /* the flooder's request was incomplete: freed with its connection */
        assert_int_equal(env->fe->n_live, 0);
        t = get(normal, "/auto-again");
        PUMP_UNTIL(env, t->closed);
        assert_int_equal(t->status, 200);
}

static void test_h2_guard_empty_data_flood_goaway(void **state) {
        flood_and_check(*state, NGHTTP2_DATA, 0, 1, NULL, 0, 12000, true);
}

static void test_h2_guard_priority_flood_goaway(void **state) {
        static const uint8_t pri[5] = {0, 0, 0, 0, 15};

        flood_and_check(*state, NGHTTP2_PRIORITY, 0, 1, pri, sizeof(pri), 12000, true);
}

static void test_h2_guard_window_update_flood_goaway(void **state) {
        static const uint8_t one[4] = {0, 0, 0, 1};

        flood_and_check(*state, NGHTTP2_WINDOW_UPDATE, 0, 0, one, sizeof(one), 12000, true);
}

static void test_h2_guard_unknown_frame_flood_goaway(void **state) {
        flood_and_check(*state, 0x42, 0, 0, "x", 1, 12000, true);
}

static void test_h2_guard_ping_flood_goaway(void **state) {
        static const uint8_t opaque[8] = {1, 2, 3, 4, 5, 6, 7, 8};

        /* each asks for an ack: named a flood before nghttp2's max_outbound_ack would drop it silently */
        flood_and_check(*state, NGHTTP2_PING, 0, 0, opaque, sizeof(opaque), 12000, true);
}

static void test_h2_guard_settings_flood_goaway(void **state) {
        flood_and_check(*state, NGHTTP2_SETTINGS, 0, 0, NULL, 0, 12000, true);
}

static void test_h2_guard_charge_burst_then_refill(void **state) {
        H2Guard g;

        h2_guard_init(&g, 0);
        for (unsigned i = 0; i < H2_GUARD_BURST; i++)
                assert_int_equal(h2_guard_charge(&g, H2_OVERHEAD_PING, 0), 0);
        assert_int_equal(h2_guard_charge(&g, H2_OVERHEAD_PING, 0), -EBUSY);
        assert_true(g.flooded);

        /* payload earns frames back, and so does time */
        h2_guard_init(&g, 0);
        for (unsigned i = 0; i < H2_GUARD_BURST; i++)
                assert_int_equal(h2_guard_charge(&g, H2_OVERHEAD_WINDOW_UPDATE, 0), 0);
        h2_guard_credit(&g, 1024);
        for (unsigned i = 0; i < 1024; i++)
                assert_int_equal(h2_guard_charge(&g, H2_OVERHEAD_WINDOW_UPDATE, 0), 0);
        for (unsigned i = 0; i < H2_GUARD_REFILL_PER_SEC; i++)
                assert_int_equal(h2_guard_charge(&g, H2_OVERHEAD_WINDOW_UPDATE, USEC_PER_SEC), 0);
        assert_int_equal(h2_guard_charge(&g, H2_OVERHEAD_WINDOW_UPDATE, USEC_PER_SEC), -EBUSY);
        assert_int_equal(g.count[H2_OVERHEAD_WINDOW_UPDATE],
                         H2_GUARD_BURST + 1024 + H2_GUARD_REFILL_PER_SEC + 1);
}

static void test_h2_guard_scan_frames_split_across_reads(void **state) {
        uint8_t wire[24 + 9 * 4 + 8 + 4 + 20];
        size_t n = 0;
        H2Guard g;
        char buf[256];

        memcpy(wire, NGHTTP2_CLIENT_MAGIC, 24);
        n = 24;
        /* SETTINGS(0), PING(8), empty DATA, DATA(4) with END_STREAM, HEADERS(20) */
        const uint8_t frames[][5] = {{0, 0, 0, 4, 0}, {0, 0, 8, 6, 0}, {0, 0, 0, 0, 0}, {0, 0, 4, 0, 1}};
        for (size_t i = 0; i < ELEMENTSOF(frames); i++) {
                memcpy(wire + n, frames[i], 5);
                memset(wire + n + 5, 0, 4);
                n += 9;
                n += frames[i][2];
        }
        memcpy(wire + n, (const uint8_t[]){0, 0, 11, 1, 4, 0, 0, 0, 1}, 9);
        n += 9 + 11;
        assert_int_equal(n, sizeof(wire));

        h2_guard_init(&g, 0);
        for (size_t i = 0; i < n; i += 7) /* reads that cut headers and payloads anywhere */
                assert_int_equal(h2_guard_scan(&g, wire + i, MIN((size_t) 7, n - i), 0), 0);
        assert_int_equal(g.overhead, 3);
        assert_int_equal(g.count[H2_OVERHEAD_SETTINGS], 1);
        assert_int_equal(g.count[H2_OVERHEAD_PING], 1);
        assert_int_equal(g.count[H2_OVERHEAD_EMPTY_DATA], 1);
        assert_int_equal(g.wire, n);
        assert_non_null(
                strstr(h2_guard_format(&g, buf, sizeof(buf)), "3 overhead frames (1 empty DATA, 1 PING"));
}

/* ---- timeouts and shutdown ---- */

static void test_on_timer_idle_timeout_goaway(void **state) {
        Env *env = *state;
        Client *c;
        TStream *t;
        usec_t done;

        env->fe->config.idle_timeout = 300 * USEC_PER_MSEC;
        env->fe->on_begin = on_begin_auto;
        c = connect_prior_knowledge(env);
        t = get(c, "/auto");
        PUMP_UNTIL(env, t->closed);
        done = now_usec(CLOCK_MONOTONIC);
        PUMP_UNTIL(env, c->n_goaway > 0 && c->eof);
        assert_true(now_usec(CLOCK_MONOTONIC) - done >= 250 * USEC_PER_MSEC);
        assert_int_equal(c->goaway_error, NGHTTP2_NO_ERROR);
        assert_int_equal(c->goaway_last, 1);
        assert_non_null(strstr(c->goaway_debug, "idle"));
}

static void test_on_timer_header_timeout_reset(void **state) {
        Env *env = *state;
        Client *c;
        uint8_t block[512];
        size_t n;

        env->fe->config.header_timeout = 300 * USEC_PER_MSEC;
        c = connect_raw(env);
        /* our SETTINGS acknowledged: the handshake's own timeout (the same header_timeout) is not what
         * this test is about, and would race the stream's */
        raw_frame(c, NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, NULL, 0);
        n = hpack_request(block, "GET", "/slow-headers", NULL, NULL);
        /* HEADERS without END_HEADERS, and the CONTINUATION never comes */
        raw_frame(c, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, 1, block, n / 2);
        PUMP_UNTIL(env, c->eof);
        assert_int_equal(c->rst_by_code[NGHTTP2_CANCEL], 1);
        assert_int_equal(c->last_rst_stream, 1);
        assert_int_equal(c->n_goaway, 1);
        assert_non_null(strstr(c->goaway_debug, "header timeout"));
        assert_int_equal(env->fe->n_new, 0);
}

static void test_on_shutdown_goaway_last_stream_id(void **state) {
        Env *env = *state;
        Client *c = connect_prior_knowledge(env);
        TStream *t = get(c, "/held"), *t2;
        FakeExchange *fx;

        PUMP_UNTIL(env, (fx = fake_exchange_find(env->fe, "/held")));
        t2 = get(c, "/held2");
        PUMP_UNTIL(env, fake_exchange_find(env->fe, "/held2"));

        env->fe->shutting_down = true;
        env->fe->connections->ops->shutdown(env->fe->connections);
        /* the notice, then after the PING round trip the GOAWAY naming the last stream taken */
        PUMP_UNTIL(env, c->n_goaway == 2);
        assert_int_equal(c->goaway_error, NGHTTP2_NO_ERROR);
        assert_int_equal(c->goaway_last, t2->id);
        assert_false(c->eof);

        /* the open streams finish, then the connection closes */
        assert_int_equal(fake_respond(&fx->x, 200, "one"), 0);
        PUMP_UNTIL(env, t->closed);
        assert_int_equal(t->status, 200);
        assert_false(c->eof);
        fx = fake_exchange_find(env->fe, "/held2");
        assert_int_equal(fake_respond(&fx->x, 200, "two"), 0);
        PUMP_UNTIL(env, t2->closed && c->eof);
        assert_int_equal(t2->status, 200);
        assert_string_equal((const char *) t2->body, "two");
}

static void test_frontend_h2_accept_while_shutting_down(void **state) {
        Env *env = *state;
        Client *c;
        TStream *t;

        env->fe->shutting_down = true;
        env->fe->on_begin = on_begin_auto;
        c = connect_prior_knowledge(env);
        t = get(c, "/auto");
        PUMP_UNTIL(env, t->closed && c->eof);
        assert_int_equal(t->status, 200);
        /* the final GOAWAY names the stream served, whether it came before the response or after it */
        assert_int_equal(c->wire_goaway_last, 1);
}

static void test_on_close_frees_live_exchanges(void **state) {
        Env *env = *state;
        Client *c = connect_prior_knowledge(env);

        (void) get(c, "/a");
        (void) get(c, "/b");
        PUMP_UNTIL(env, env->fe->n_begun == 2);
        env->fe->connections->ops->close(env->fe->connections);
        assert_int_equal(env->fe->n_connections, 0);
        assert_int_equal(env->fe->n_live, 0);
        PUMP_UNTIL(env, c->eof);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_frontend_h2_accept_prior_knowledge_get),
                T(test_response_body_deferred_then_resumed),
                T(test_response_body_connection_budget),
                T(test_response_error_retry_after),
                T(test_frontend_h2_accept_upgrade),
                T(test_stream_request_body_flow_control_per_stream),
                T(test_stream_request_body_shorter_than_content_length),
                T(test_on_header_too_many_fields_431),
                T(test_on_header_too_large_431),
                T(test_stream_headers_complete_connect_405),
                T(test_stream_closed_orphans_count_against_cap),
                T(test_stream_closed_queued_request_dropped),
                T(test_on_begin_headers_refusing_at_cap_goaway),
                T(test_on_request_continue_sends_100),
                T(test_response_abort_resets_stream),
                T(test_response_head_for_head_request_has_no_body),
                T(test_stream_request_body_over_max_body_size_413),
                T(test_on_begin_headers_rapid_reset),
                T(test_h2_guard_empty_data_flood_goaway),
                T(test_h2_guard_priority_flood_goaway),
                T(test_h2_guard_window_update_flood_goaway),
                T(test_h2_guard_unknown_frame_flood_goaway),
                T(test_h2_guard_ping_flood_goaway),
                T(test_h2_guard_settings_flood_goaway),
                cmocka_unit_test(test_h2_guard_charge_burst_then_refill),
                cmocka_unit_test(test_h2_guard_scan_frames_split_across_reads),
                T(test_on_timer_idle_timeout_goaway),
                T(test_on_timer_header_timeout_reset),
                T(test_on_shutdown_goaway_last_stream_id),
                T(test_frontend_h2_accept_while_shutting_down),
                T(test_on_close_frees_live_exchanges),
        };

        log_set_max_level(getenv("EP_TEST_VERBOSE") ? LOG_DEBUG : LOG_WARNING);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
