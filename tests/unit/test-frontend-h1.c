/* SPDX-License-Identifier: MIT */
/* The HTTP/1.1 client side over a socketpair, with a real sd-event loop and a fake router: what reaches
 * exchange_begin (and what never does), what the client reads back, in which order, and when the
 * connection ends. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "fake-router.h"
#include "h1-internal.h"
#include "log.h"
#include "macro.h"

#define MSEC USEC_PER_MSEC
#define WAIT (2 * USEC_PER_SEC) /* upper bound for anything that should happen "now" */

static const H1Tunables tunables_default = {
        .shutdown_grace = 1 * USEC_PER_SEC,
        .linger = 2 * USEC_PER_SEC,
        .write_high = 256U * 1024U,
        .write_low = 64U * 1024U,
};

/* ---- harness ------------------------------------------------------------------------------------- */

typedef struct T {
        Frontend *fe;
        int client;
        char *in;
        size_t in_len, in_cap, consumed;
        bool eof;
} T;

/* sndbuf > 0 shrinks the socket buffers (to reach high-water quickly); configure, when given, edits the
 * configuration before the connection is accepted. */
static void t_init_full(T *t, int sndbuf, void (*configure)(Config *c)) {
        struct sockaddr_in peer = {
                .sin_family = AF_INET, .sin_port = htons(40000), .sin_addr.s_addr = htonl(0xc000020a)};
        struct sockaddr_storage ss = {};
        int sv[2];

        *t = (T) {};
        h1_tunables = tunables_default;
        assert_int_equal(fake_frontend_new(&t->fe), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
        if (sndbuf > 0) {
                assert_int_equal(setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf), 0);
                assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &sndbuf, sizeof sndbuf), 0);
        }
        t->client = sv[0];
        if (configure)
                configure(&t->fe->config);
        memcpy(&ss, &peer, sizeof peer);
        assert_int_equal(frontend_h1_accept(t->fe, sv[1], &ss), 0);
        assert_int_equal(t->fe->n_connections, 1);
}

static void t_init_with(T *t, int sndbuf) {
        t_init_full(t, sndbuf, NULL);
}

static void t_init(T *t) {
        t_init_full(t, 0, NULL);
}

static void t_done(T *t) {
        safe_close(t->client);
        t->fe = fake_frontend_free(t->fe);
        free(t->in);
        h1_tunables = tunables_default;
}

static void t_read(T *t) {
        for (;;) {
                ssize_t n;

                if (t->in_cap - t->in_len < 65536) {
                        t->in_cap = MAX(t->in_cap * 2, (size_t) 131072);
                        t->in = realloc(t->in, t->in_cap + 1);
                        assert_non_null(t->in);
                }
                n = recv(t->client, t->in + t->in_len, t->in_cap - t->in_len, MSG_DONTWAIT);
                if (n > 0) {
                        t->in_len += (size_t) n;
                        t->in[t->in_len] = 0;
                        continue;
                }
                if (n == 0 || (errno != EAGAIN && errno != EINTR))
                        t->eof = true;
                return;
        }
}

/* Runs the loop (reading the client end as it goes) until done() or the timeout. */
static bool t_until(T *t, bool (*done)(T *t, const void *arg), const void *arg, usec_t timeout) {
        usec_t end = now_usec(CLOCK_MONOTONIC) + timeout;

        for (;;) {
                usec_t n;

                t_read(t);
                if (done(t, arg))
                        return true;
                n = now_usec(CLOCK_MONOTONIC);
                if (n >= end)
                        return false;
                assert_true(sd_event_run(t->fe->event, MIN(end - n, 5 * MSEC)) >= 0);
        }
}

static bool never(T *t, const void *arg) {
        return false;
}

static void t_run(T *t, usec_t duration) {
        (void) t_until(t, never, NULL, duration);
}

static bool begun_at_least(T *t, const void *arg) {
        return t->fe->n_begun >= *(const unsigned *) arg;
}

static void t_wait_begun(T *t, unsigned n) {
        assert_true(t_until(t, begun_at_least, &n, WAIT));
}

static bool got_eof(T *t, const void *arg) {
        return t->eof;
}

static void t_wait_eof(T *t) {
        assert_true(t_until(t, got_eof, NULL, WAIT));
}

static void t_send_n(T *t, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = send(t->client, p, n, MSG_NOSIGNAL);
                if (k < 0 && errno == EAGAIN) {
                        t_run(t, 1 * MSEC);
                        continue;
                }
                assert_true(k > 0);
                p += k;
                n -= (size_t) k;
        }
}

static void t_send(T *t, const char *s) {
        t_send_n(t, s, strlen(s));
}

/* ---- responses as the client reads them ------------------------------------------------------------ */

#define RESP_FIELDS_MAX 32

typedef struct Resp {
        char version[9];
        unsigned status;
        size_t n_fields;
        char names[RESP_FIELDS_MAX][64], values[RESP_FIELDS_MAX][256];
        char *body;
        size_t body_len, body_cap;
        bool skip_body; /* only whether it is complete: nothing is copied */
} Resp;

static void resp_done(Resp *r) {
        free(r->body);
        *r = (Resp) {};
}

static const char *resp_field(const Resp *r, const char *name) {
        for (size_t i = 0; i < r->n_fields; i++)
                if (strcasecmp(r->names[i], name) == 0)
                        return r->values[i];
        return NULL;
}

#define assert_field_equal(args, want)            \
        do {                                      \
                const char *_v = resp_field args; \
                assert_non_null(_v);              \
                assert_string_equal(_v, want);    \
        } while (0)

/* want NULL: got must be NULL too. */
#define assert_string_or_null(got, want)              \
        do {                                          \
                const char *_g = (got), *_w = (want); \
                if (_w) {                             \
                        assert_non_null(_g);          \
                        assert_string_equal(_g, _w);  \
                } else                                \
                        assert_null(_g);              \
        } while (0)

/* Grows by doubling: response_ready() parses a response again on every loop turn while it arrives, and a
 * copy of the whole body per chunk made that quadratic (seconds for 2 MiB under AddressSanitizer). */
static void body_append(Resp *r, const char *p, size_t n) {
        if (r->skip_body)
                return;
        if (r->body_len + n + 1 > r->body_cap) {
                r->body_cap = MAX(2 * r->body_cap, r->body_len + n + 1);
                r->body = realloc(r->body, r->body_cap);
                assert_non_null(r->body);
        }
        memcpy(r->body + r->body_len, p, n);
        r->body_len += n;
        r->body[r->body_len] = 0;
}

/* Parses one response at p. The bytes it took, 0 when incomplete. */
static size_t resp_parse(const char *p, size_t len, bool eof, bool head_request, bool skip_body, Resp *r) {
        const char *end = memmem(p, len, "\r\n\r\n", 4), *line, *te, *cl;
        size_t pos;

        *r = (Resp) {.skip_body = skip_body};
        if (!end)
                return 0;
        assert_int_equal(sscanf(p, "%8s %u", r->version, &r->status), 2);
        line = strstr(p, "\r\n") + 2;
        while (line < end + 2) {
                const char *eol = strstr(line, "\r\n"), *colon = memchr(line, ':', (size_t) (eol - line));
                assert_non_null(colon);
                assert_true(r->n_fields < RESP_FIELDS_MAX);
                snprintf(r->names[r->n_fields], sizeof r->names[0], "%.*s", (int) (colon - line), line);
                snprintf(r->values[r->n_fields], sizeof r->values[0], "%.*s", (int) (eol - colon - 2),
                         colon + 2);
                r->n_fields++;
                line = eol + 2;
        }
        pos = (size_t) (end - p) + 4;
        body_append(r, "", 0);
        te = resp_field(r, "Transfer-Encoding");
        cl = resp_field(r, "Content-Length");
        if (head_request || r->status < 200 || r->status == 204 || r->status == 304)
                return pos;
        if (te) {
                assert_string_equal(te, "chunked");
                for (;;) {
                        const char *eol = memmem(p + pos, len - pos, "\r\n", 2);
                        unsigned long size;
                        if (!eol)
                                goto incomplete;
                        size = strtoul(p + pos, NULL, 16);
                        if ((size_t) (eol - p) + 2 + size + 2 > len)
                                goto incomplete;
                        body_append(r, eol + 2, size);
                        pos = (size_t) (eol - p) + 2 + size + 2;
                        if (size == 0)
                                return pos;
                }
        }
        if (cl) {
                size_t n = strtoul(cl, NULL, 10);
                if (len - pos < n)
                        goto incomplete;
                body_append(r, p + pos, n);
                return pos + n;
        }
        if (!eof)
                goto incomplete;
        body_append(r, p + pos, len - pos);
        return len;
incomplete:
        resp_done(r);
        return 0;
}

typedef struct RespWait {
        bool head_request;
} RespWait;

static bool response_ready(T *t, const void *arg) {
        const RespWait *w = arg;
        Resp r;
        size_t n = resp_parse(t->in + t->consumed, t->in_len - t->consumed, t->eof, w->head_request, true, &r);

        resp_done(&r);
        return n > 0 || (t->eof && t->in_len == t->consumed);
}

/* The next response the client reads. */
static void t_response_full(T *t, bool head_request, Resp *r) {
        RespWait w = {.head_request = head_request};
        size_t n;

        assert_true(t_until(t, response_ready, &w, WAIT));
        n = resp_parse(t->in + t->consumed, t->in_len - t->consumed, t->eof, head_request, false, r);
        assert_true(n > 0);
        t->consumed += n;
}

static void t_response(T *t, Resp *r) {
        t_response_full(t, false, r);
}

/* ---- helpers for the fake router ------------------------------------------------------------------- */

static FrontendConnection *t_connection(T *t) {
        assert_non_null(t->fe->connections);
        return t->fe->connections;
}

static void respond_now(Frontend *fe, Exchange *x, void *userdata) {
        assert_int_equal(fake_respond(x, 200, userdata ? userdata : "ok", true), 0);
}

/* ---- requests ------------------------------------------------------------------------------------- */

static void test_frontend_h1_accept_simple_get(void **state) {
        FakeExchange *f;
        Resp r;
        T t;

        t_init(&t);
        t_send(&t,
               "GET /path?q=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: test/1  \r\nAccept: */*\r\n\r\n");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        assert_string_equal(f->head.method, "GET");
        assert_string_equal(f->head.target, "/path?q=1");
        assert_string_equal(f->head.authority, "example.com");
        assert_int_equal(f->head.http_major, 1);
        assert_int_equal(f->head.http_minor, 1);
        assert_int_equal(f->head.n_fields, 2); /* Host is the authority, not a field */
        assert_string_equal(f->head.names[0], "User-Agent");
        assert_string_equal(f->head.values[0], "test/1"); /* trailing whitespace is not the value */
        assert_string_equal(fake_head_field(&f->head, "accept"), "*/*");
        assert_false(f->head.has_body);
        assert_false(f->head.head_method);

        assert_int_equal(fake_respond(f->x, 200, "hello", true), 0);
        t_response(&t, &r);
        assert_string_equal(r.version, "HTTP/1.1");
        assert_int_equal(r.status, 200);
        assert_field_equal((&r, "Content-Length"), "5");
        assert_null(resp_field(&r, "Connection"));
        assert_string_equal(r.body, "hello");
        resp_done(&r);
        t_run(&t, 20 * MSEC);
        assert_true(f->freed);
        assert_false(t.eof);
        assert_int_equal(t.fe->n_connections, 1);
        t_done(&t);
}

/* Whether the connection outlives a response given at once, by HTTP version and Connection field. A
 * response with "Connection: close" is the last one: nothing is read after it, the client sees the end. */
typedef struct KeepAliveCase {
        const char *name;
        const char *request;    /* sent `times` times, each once the response before it came */
        unsigned times;         /* also the requests that reach the router */
        unsigned http_minor;    /* of the request as the router saw it; the responses carry the same */
        const char *authority;  /* NULL: none */
        const char *connection; /* each response's Connection field, NULL: none */
} KeepAliveCase;

static const KeepAliveCase keep_alive_cases[] = {
        {.name = "http11_by_default", .times = 2, .http_minor = 1, .authority = "a",
         .request = "GET / HTTP/1.1\r\nHost: a\r\n\r\n"},
        {.name = "http10_asked", .times = 2, .connection = "keep-alive",
         .request = "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"},
        {.name = "http10_closes_by_default", .times = 1, .connection = "close",
         .request = "GET / HTTP/1.0\r\n\r\n"},
        /* the second request comes after "close": it is never read */
        {.name = "connection_close_honoured", .times = 1, .http_minor = 1, .authority = "a",
         .connection = "close",
         .request = "GET /1 HTTP/1.1\r\nHost: a\r\nConnection: Close\r\n\r\n"
                    "GET /2 HTTP/1.1\r\nHost: a\r\n\r\n"},
};

static void test_frontend_h1_accept_keep_alive(void **state) {
        const KeepAliveCase *c = *state;
        char version[9];
        FakeExchange *f;
        Resp r;
        T t;

        snprintf(version, sizeof version, "HTTP/1.%u", c->http_minor);
        t_init(&t);
        t.fe->on_begin = respond_now;
        for (unsigned i = 0; i < c->times; i++) {
                t_send(&t, c->request);
                t_response(&t, &r);
                assert_string_equal(r.version, version);
                assert_int_equal(r.status, 200);
                assert_string_equal(r.body, "ok");
                assert_string_or_null(resp_field(&r, "Connection"), c->connection);
                resp_done(&r);
        }
        f = fake_begun(t.fe, 0);
        assert_int_equal(f->head.http_minor, c->http_minor);
        assert_string_or_null(f->head.authority, c->authority);
        if (streq_ptr(c->connection, "close")) {
                t_wait_eof(&t);
                assert_int_equal(t.in_len, t.consumed);
        } else {
                t_run(&t, 20 * MSEC);
                assert_false(t.eof);
        }
        assert_int_equal(t.fe->n_begun, c->times);
        assert_int_equal(t.fe->n_registrations, 1);
        t_done(&t);
}

/* The router answers each pipelined request after a delay, the first one slowest: the answers still come
 * back in request order, and a request reaches the router only once the one before it is answered. */
typedef struct Delayed {
        Exchange *x;
        char body[8];
        sd_event_source *s;
        unsigned live_at_begin;
} Delayed;

static Delayed delayed[3];

static int on_delayed(sd_event_source *s, uint64_t usec, void *userdata) {
        Delayed *d = userdata;
        assert_int_equal(fake_respond(d->x, 200, d->body, true), 0);
        d->s = sd_event_source_unref(d->s);
        return 0;
}

static void respond_delayed(Frontend *fe, Exchange *x, void *userdata) {
        unsigned i = fe->n_begun - 1;
        Delayed *d = &delayed[i];

        d->x = x;
        d->live_at_begin = fe->n_live;
        snprintf(d->body, sizeof d->body, "r%u", i + 1);
        assert_int_equal(sd_event_add_time_relative(fe->event, &d->s, CLOCK_MONOTONIC, (3 - i) * 20 * MSEC,
                                                    0, on_delayed, d),
                         0);
}

static void test_frontend_h1_accept_pipelined_answered_in_order(void **state) {
        Resp r;
        T t;

        t_init(&t);
        memset(delayed, 0, sizeof delayed);
        t.fe->on_begin = respond_delayed;
        t_send(&t, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n"
                   "POST /3 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nxyz");
        for (unsigned i = 0; i < 3; i++) {
                char want[8];
                t_response(&t, &r);
                snprintf(want, sizeof want, "r%u", i + 1);
                assert_int_equal(r.status, 200);
                assert_string_equal(r.body, want);
                resp_done(&r);
                assert_int_equal(delayed[i].live_at_begin, 1); /* only itself: one exchange at a time */
        }
        assert_string_equal(fake_begun(t.fe, 0)->head.target, "/1");
        assert_string_equal(fake_begun(t.fe, 1)->head.target, "/2");
        assert_string_equal(fake_begun(t.fe, 2)->head.target, "/3");
        assert_string_equal(fake_begun(t.fe, 2)->body, "xyz");
        t_done(&t);
}

static void test_frontend_h1_accept_content_length_body_in_pieces(void **state) {
        FakeExchange *f;
        Resp r;
        T t;

        t_init(&t);
        t_send(&t, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        assert_true(f->head.has_body);
        assert_true(f->head.has_content_length);
        assert_int_equal(f->head.content_length, 10);
        t_run(&t, 10 * MSEC);
        t_send(&t, "defg");
        t_run(&t, 10 * MSEC);
        assert_false(f->request_ended);
        t_send(&t, "hij");
        t_run(&t, 10 * MSEC);
        assert_true(f->request_ended);
        assert_string_equal(f->body, "abcdefghij");
        assert_true(f->body_calls >= 3);
        assert_int_equal(fake_respond(f->x, 201, "done", true), 0);
        t_response(&t, &r);
        assert_int_equal(r.status, 201);
        resp_done(&r);
        t_done(&t);
}

static void test_frontend_h1_accept_chunked_body_dechunked(void **state) {
        FakeExchange *f;
        T t;

        t_init(&t);
        t_send(&t, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n"
                   "5\r\nhello\r\n6;ext=1\r\n world\r\n");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        assert_true(f->head.has_body);
        assert_false(f->head.has_content_length);
        assert_null(fake_head_field(&f->head, "Transfer-Encoding"));
        assert_string_equal(fake_head_field(&f->head, "X-A"), "1");
        t_send(&t, "0\r\nX-Trailer: dropped\r\n\r\n");
        t_run(&t, 20 * MSEC);
        assert_true(f->request_ended);
        assert_string_equal(f->body, "hello world");
        assert_int_equal(f->head.n_fields, 1); /* the trailer did not become a field */
        t_done(&t);
}

static void test_frontend_h1_accept_request_body_high_water(void **state) {
        FakeExchange *f;
        T t;

        t_init(&t);
        t.fe->request_body_result = 1;
        t_send(&t, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 8\r\n\r\nabcd");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        t_run(&t, 10 * MSEC);
        assert_string_equal(f->body, "abcd");
        t_send(&t, "efgh");
        t_run(&t, 30 * MSEC);
        assert_string_equal(f->body, "abcd"); /* paused: not read on */
        assert_false(f->request_ended);

        t.fe->request_body_result = 0;
        f->x->client->request_body_resume(f->x);
        t_run(&t, 20 * MSEC);
        assert_string_equal(f->body, "abcdefgh");
        assert_true(f->request_ended);
        t_done(&t);
}

static void test_frontend_h1_accept_response_high_water(void **state) {
        static char piece[8192];
        ResponseHead h = {.status = 200, .has_body = true};
        size_t sent = 0, total = 2U * 1024U * 1024U;
        FakeExchange *f;
        Resp r;
        int rv = 0;
        T t;

        t_init_with(&t, 16384);
        h1_tunables.write_high = 64U * 1024U;
        h1_tunables.write_low = 16U * 1024U;
        for (size_t i = 0; i < sizeof piece; i++)
                piece[i] = (char) ('a' + i % 26);
        t_send(&t, "GET /big HTTP/1.1\r\nHost: a\r\n\r\n");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        assert_int_equal(f->x->client->response_head(f->x, &h), 0);

        /* the client reads nothing: the queue fills until the client side says stop */
        while (sent < total) {
                rv = f->x->client->response_body(f->x, piece, sizeof piece);
                assert_true(rv >= 0);
                sent += sizeof piece;
                if (rv == 1)
                        break;
        }
        assert_int_equal(rv, 1);
        assert_true(sent < 1024U * 1024U);
        assert_int_equal(f->response_resumes, 0);

        /* the client reads: resume follows, and the forward side goes on until the end */
        while (sent < total) {
                unsigned resumes = f->response_resumes;
                t_run(&t, 2 * MSEC);
                if (f->response_resumes == resumes)
                        continue;
                do {
                        rv = f->x->client->response_body(f->x, piece, sizeof piece);
                        sent += sizeof piece;
                } while (rv == 0 && sent < total);
        }
        assert_true(f->response_resumes >= 1);
        assert_true(f->x->client->response_end(f->x) >= 0);
        t_response(&t, &r);
        assert_int_equal(r.status, 200);
        assert_int_equal(r.body_len, total);
        for (size_t i = 0; i < r.body_len; i++)
                if (r.body[i] != 'a' + (char) ((i % sizeof piece) % 26))
                        fail_msg("body byte %zu is '%c'", i, r.body[i]);
        resp_done(&r);
        t_done(&t);
}

static void test_frontend_h1_accept_expect_continue(void **state) {
        FakeExchange *f;
        Resp r;
        T t;

        t_init(&t);
        t_send(&t, "PUT /f HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        assert_true(f->head.expect_continue);
        assert_null(fake_head_field(&f->head, "Expect"));
        f->x->client->request_continue(f->x);
        t_response(&t, &r);
        assert_int_equal(r.status, 100);
        resp_done(&r);
        f->x->client->request_continue(f->x); /* once only */
        t_send(&t, "data");
        t_run(&t, 20 * MSEC);
        assert_string_equal(f->body, "data");
        assert_int_equal(fake_respond(f->x, 200, "ok", true), 0);
        t_response(&t, &r);
        assert_int_equal(r.status, 200);
        resp_done(&r);
        t_done(&t);
}

static void test_frontend_h1_accept_expect_continue_after_body(void **state) {
        FakeExchange *f;
        Resp r;
        T t;

        t_init(&t);
        t_send(&t, "PUT /f HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nda");
        t_wait_begun(&t, 1);
        t_run(&t, 10 * MSEC);
        f = fake_begun(t.fe, 0);
        f->x->client->request_continue(f->x); /* a body byte came already: no 100 */
        t_send(&t, "ta");
        t_run(&t, 10 * MSEC);
        assert_int_equal(fake_respond(f->x, 200, "ok", true), 0);
        t_response(&t, &r);
        assert_int_equal(r.status, 200);
        resp_done(&r);
        t_done(&t);
}

/* The target as the router sees it (origin form) and the authority, from an absolute target or else Host. */
typedef struct TargetCase {
        const char *name;
        const char *request, *target, *authority; /* authority NULL: none */
} TargetCase;

static const TargetCase target_cases[] = {
        {"absolute_over_host", "GET http://Example.org:8080/a/b?c=d HTTP/1.1\r\nHost: other\r\n\r\n",
         "/a/b?c=d", "Example.org:8080"},
        {"asterisk", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", "*", "a"},
        {"absolute_without_path", "GET http://b HTTP/1.1\r\nHost: a\r\n\r\n", "/", "b"},
        {"absolute_query_without_path", "GET http://b?x=1 HTTP/1.1\r\nHost: a\r\n\r\n", "/?x=1", "b"},
        {"absolute_https_ipv6_port", "GET HTTPS://[::1]:8443/p HTTP/1.1\r\nHost: a\r\n\r\n", "/p",
         "[::1]:8443"},
        {"empty_host", "GET /e HTTP/1.1\r\nHost:\r\n\r\n", "/e", NULL},
        {"host_padded_with_port", "GET /t HTTP/1.1\r\nHost:  a:81 \t\r\n\r\n", "/t", "a:81"},
        /* empty lines before the request line are ignored, RFC 9112 2.2 */
        {"leading_empty_lines", "\r\n\r\nGET /lead HTTP/1.1\r\nHost: a\r\n\r\n", "/lead", "a"},
};

static void test_frontend_h1_accept_target(void **state) {
        const TargetCase *c = *state;
        FakeExchange *f;
        T t;

        t_init(&t);
        t_send(&t, c->request);
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        assert_string_equal(f->head.target, c->target);
        assert_string_or_null(f->head.authority, c->authority);
        t_done(&t);
}

static void test_frontend_h1_accept_hop_by_hop_removed(void **state) {
        FakeExchange *f;
        T t;

        t_init(&t);
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, X-Secret\r\nKeep-Alive: 5\r\n"
                   "X-Secret: s\r\nTE: trailers\r\nProxy-Connection: x\r\nX-Kept: k\r\n\r\n");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        assert_int_equal(f->head.n_fields, 1);
        assert_string_equal(fake_head_field(&f->head, "X-Kept"), "k");
        t_done(&t);
}

static void test_frontend_h1_accept_half_close_still_answered(void **state) {
        Resp r;
        T t;

        t_init(&t);
        t.fe->on_begin = respond_now;
        t_send(&t, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_int_equal(shutdown(t.client, SHUT_WR), 0);
        t_response(&t, &r);
        assert_int_equal(r.status, 200);
        resp_done(&r);
        t_response(&t, &r); /* with Connection: close if the EOF was read before it, else without */
        assert_int_equal(r.status, 200);
        resp_done(&r);
        t_wait_eof(&t);
        assert_int_equal(t.fe->n_begun, 2);
        t_done(&t);
}

static void test_frontend_h1_accept_client_gone_mid_body(void **state) {
        FakeExchange *f;
        T t;

        t_init(&t);
        t_send(&t, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nabc");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        t.client = safe_close(t.client);
        t_run(&t, 20 * MSEC);
        assert_true(f->freed); /* the worker side is detached */
        assert_int_equal(t.fe->n_connections, 0);
        t_done(&t);
}

/* ---- bad input ------------------------------------------------------------------------------------- */

/* Requests refused before anything of them reaches the router (or the HTTP/2 side). */
typedef struct BadInput {
        const char *name;
        unsigned status;
        const char *request;
        size_t len;
        uint64_t max_body_size; /* 0: no limit, as the fake configuration has it */
} BadInput;

/* Request starts, Host included: the rows add the rest of the head and the body. */
#define H       "Host: a\r\n"
#define GET_H   "GET / HTTP/1.1\r\n" H
#define POST_H  "POST / HTTP/1.1\r\n" H
#define CHUNKED POST_H "Transfer-Encoding: chunked\r\n\r\n"
/* The request and its length from the literal, which may hold NUL bytes. */
#define REQ(s) (s), sizeof(s) - 1

static const BadInput bad_inputs[] = {
        {"cl_and_te", 400, REQ(POST_H "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")},
        {"te_and_cl", 400, REQ(POST_H "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n")},
        {"duplicate_cl_differing", 400, REQ(POST_H "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!")},
        {"duplicate_cl_identical", 400, REQ(POST_H "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello")},
        {"cl_list", 400, REQ(POST_H "Content-Length: 5, 5\r\n\r\nhello")},
        {"cl_not_a_number", 400, REQ(POST_H "Content-Length: 5x\r\n\r\nhello")},
        {"te_gzip", 400, REQ(POST_H "Transfer-Encoding: gzip\r\n\r\nxx")},
        {"te_gzip_chunked", 501, REQ(POST_H "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n")},
        {"te_chunked_gzip", 400, REQ(POST_H "Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n")},
        {"te_chunked_twice", 400,
         REQ(POST_H "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")},
        {"te_in_http10", 400, REQ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")},
        {"invalid_chunk_size", 400, REQ(CHUNKED "zz\r\nhello\r\n0\r\n\r\n")},
        {"chunk_size_overflow", 400, REQ(CHUNKED "fffffffffffffffff\r\n")},
        {"chunk_data_without_crlf", 400, REQ(CHUNKED "5\r\nhelloXY0\r\n\r\n")},
        {"chunk_line_bare_cr", 400, REQ(CHUNKED "5\rXhello\r\n0\r\n\r\n")},
        {"chunk_line_junk_after_size", 400, REQ(CHUNKED "5 x\r\nhello\r\n0\r\n\r\n")},
        {"chunk_ext_bare_lf", 400, REQ(CHUNKED "5;a\nb\r\nhello\r\n0\r\n\r\n")},
        {"chunk_ext_nul", 400, REQ(CHUNKED "5;\0\r\nhello\r\n0\r\n\r\n")},
        {"trailer_obs_fold", 400, REQ(CHUNKED "0\r\nX-T: a\r\n b\r\n\r\n")},
        {"obs_fold", 400, REQ(GET_H "X-A: a\r\n b\r\n\r\n")},
        {"obs_fold_tab", 400, REQ(GET_H "X-A: a\r\n\tb\r\n\r\n")},
        {"whitespace_before_first_field", 400, REQ("GET / HTTP/1.1\r\n " H "\r\n")},
        {"bare_cr_in_value", 400, REQ(GET_H "X-A: a\rb\r\n\r\n")},
        {"bare_cr_at_end", 400, REQ(GET_H "\rX")},
        {"bare_lf_in_head", 400, REQ(GET_H "X-A: a\nX-B: b\r\n\r\n")},
        {"bare_lf_request_line", 400, REQ("GET / HTTP/1.1\n" H "\r\n")},
        {"lf_only_head", 400, REQ("GET / HTTP/1.1\nHost: a\n\n")},
        {"nul_in_value", 400, REQ(GET_H "X-A: a\0b\r\n\r\n")},
        {"nul_in_name", 400, REQ(GET_H "X-\0A: a\r\n\r\n")},
        {"nul_in_request_line", 400, REQ("GET /\0 HTTP/1.1\r\n" H "\r\n")},
        {"control_in_value", 400, REQ(GET_H "X-A: a\x01 b\r\n\r\n")},
        {"del_in_value", 400, REQ(GET_H "X-A: a\x7f\r\n\r\n")},
        {"space_before_colon", 400, REQ("GET / HTTP/1.1\r\nHost : a\r\n\r\n")},
        {"empty_field_name", 400, REQ(GET_H ": a\r\n\r\n")},
        {"field_without_colon", 400, REQ(GET_H "X-A\r\n\r\n")},
        {"invalid_name_char", 400, REQ(GET_H "X(A): a\r\n\r\n")},
        {"invalid_method_char", 400, REQ("G@T / HTTP/1.1\r\n" H "\r\n")},
        {"unknown_method", 400, REQ("FOO / HTTP/1.1\r\n" H "\r\n")},
        {"lowercase_method", 400, REQ("get / HTTP/1.1\r\n" H "\r\n")},
        {"tab_in_target", 400, REQ("GET /a\tb HTTP/1.1\r\n" H "\r\n")},
        {"obs_text_in_target", 400, REQ("GET /\xc3\xa9 HTTP/1.1\r\n" H "\r\n")},
        {"space_in_target", 400, REQ("GET /a b HTTP/1.1\r\n" H "\r\n")},
        {"fragment_in_target", 400, REQ("GET /a#b HTTP/1.1\r\n" H "\r\n")},
        {"relative_target", 400, REQ("GET a/b HTTP/1.1\r\n" H "\r\n")},
        {"asterisk_with_get", 400, REQ("GET * HTTP/1.1\r\n" H "\r\n")},
        {"absolute_with_userinfo", 400, REQ("GET http://u@a/ HTTP/1.1\r\n" H "\r\n")},
        {"absolute_other_scheme", 400, REQ("GET ftp://a/ HTTP/1.1\r\n" H "\r\n")},
        {"absolute_empty_host", 400, REQ("GET http:///x HTTP/1.1\r\n" H "\r\n")},
        {"absolute_empty_host_port", 400, REQ("GET http://:80/x HTTP/1.1\r\n" H "\r\n")},
        {"missing_host", 400, REQ("GET / HTTP/1.1\r\nX-A: a\r\n\r\n")},
        {"two_hosts", 400, REQ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")},
        {"invalid_host", 400, REQ("GET / HTTP/1.1\r\nHost: a b\r\n\r\n")},
        {"host_with_userinfo", 400, REQ("GET / HTTP/1.1\r\nHost: u@a\r\n\r\n")},
        {"host_bad_port", 400, REQ("GET / HTTP/1.1\r\nHost: a:8x\r\n\r\n")},
        {"connect", 405, REQ("CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n")},
        {"http2_request_line", 505, REQ("GET / HTTP/2.0\r\n" H "\r\n")},
        {"http09", 400, REQ("GET /\r\n\r\n")},
        {"bad_version", 400, REQ("GET / HTTX/1.1\r\n" H "\r\n")},
        {"expect_unknown", 417, REQ(POST_H "Expect: tea\r\nContent-Length: 1\r\n\r\nx")},
        {"body_over_max", 413, REQ(POST_H "Content-Length: 101\r\n\r\n"), .max_body_size = 100},
        {"chunked_over_max", 413, REQ(CHUNKED "c8\r\n"), .max_body_size = 100},
        /* "PRI *" with an HTTP/1.1 version is no HTTP/2 preface: a request, and a bad one */
        {"h2_preface_lookalike", 400, REQ("PRI * HTTP/1.1\r\n" H "\r\n")},
};

static void expect_rejected(T *t, unsigned status) {
        Resp r;

        t_response(t, &r);
        assert_int_equal(r.status, status);
        assert_field_equal((&r, "Connection"), "close");
        assert_field_equal((&r, "Content-Type"), "text/plain; charset=utf-8");
        assert_true(r.body_len > 0);
        resp_done(&r);
        t_wait_eof(t);
        assert_int_equal(t->fe->n_begun, 0); /* nothing of it reached the router */
        assert_int_equal(t->fe->n_live, 0);
}

static void test_frontend_h1_accept_bad_input(void **state) {
        const BadInput *b = *state;
        T t;

        t_init(&t);
        t.fe->config.max_body_size = b->max_body_size;
        t_send_n(&t, b->request, b->len);
        expect_rejected(&t, b->status);
        assert_int_equal(t.fe->h2_accepts, 0);
        t_done(&t);
}

static void test_frontend_h1_accept_request_line_too_long(void **state) {
        char *line = malloc(10000);
        T t;

        t_init(&t);
        memcpy(line, "GET /", 5);
        memset(line + 5, 'a', 9000);
        strcpy(line + 9005, " HTTP/1.1\r\nHost: a\r\n\r\n");
        t_send(&t, line);
        expect_rejected(&t, 414);
        free(line);
        t_done(&t);
}

static void test_frontend_h1_accept_head_too_large(void **state) {
        char field[1100];
        T t;

        t_init(&t);
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\n");
        memset(field, 'v', sizeof field);
        memcpy(field, "X-Big: ", 7);
        memcpy(field + sizeof field - 2, "\r\n", 2);
        for (unsigned i = 0; i < 70 && !t.eof; i++) { /* 77 KB of fields, in 70 pieces */
                t_send_n(&t, field, sizeof field);
                t_run(&t, 1 * MSEC);
        }
        expect_rejected(&t, 431);
        t_done(&t);
}

static void test_frontend_h1_accept_too_many_fields(void **state) {
        char buf[64];
        T t;

        t_init(&t);
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\n");
        for (unsigned i = 0; i < 100; i++) {
                snprintf(buf, sizeof buf, "X-F%u: v\r\n", i);
                t_send(&t, buf);
        }
        t_send(&t, "\r\n");
        expect_rejected(&t, 431);
        t_done(&t);
}

static void test_frontend_h1_accept_fields_at_limit(void **state) {
        char buf[64];
        T t;

        t_init(&t);
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\n");
        for (unsigned i = 0; i < 99; i++) {
                snprintf(buf, sizeof buf, "X-F%u: v\r\n", i);
                t_send(&t, buf);
        }
        t_send(&t, "\r\n");
        t_wait_begun(&t, 1);
        assert_int_equal(fake_begun(t.fe, 0)->head.n_fields, 99);
        t_done(&t);
}

/* A chunked body that turns bad after the head went to the router: 413/400, the exchange freed (so the
 * worker side is detached and its connection discarded), the client connection closed. */
static void test_frontend_h1_accept_chunked_over_max_while_streaming(void **state) {
        FakeExchange *f;
        T t;

        t_init(&t);
        t.fe->config.max_body_size = 10;
        t_send(&t, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
        t_wait_begun(&t, 1);
        t_run(&t, 10 * MSEC);
        f = fake_begun(t.fe, 0);
        t_send(&t, "8\r\n");
        t_run(&t, 20 * MSEC);
        assert_true(f->freed);
        {
                Resp r;
                t_response(&t, &r);
                assert_int_equal(r.status, 413);
                assert_field_equal((&r, "X-Request-Id"), "req0001");
                resp_done(&r);
        }
        t_wait_eof(&t);
        t_done(&t);
}

/* ---- timeouts ------------------------------------------------------------------------------------- */

static void test_frontend_h1_accept_slowloris_408(void **state) {
        T t;

        t_init(&t);
        t.fe->config.header_timeout = 100 * MSEC;
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\n");
        t_run(&t, 40 * MSEC);
        t_send(&t, "X-A: 1\r\n"); /* trickling does not extend it */
        expect_rejected(&t, 408);
        t_done(&t);
}

static void short_header_timeout(Config *c) {
        c->header_timeout = 50 * MSEC;
}

static void test_frontend_h1_accept_silent_connection_closed(void **state) {
        T t;

        t_init_full(&t, 0, short_header_timeout);
        t_wait_eof(&t);
        assert_int_equal(t.in_len, 0); /* nothing asked, nothing answered */
        assert_int_equal(t.fe->n_connections, 0);
        t_done(&t);
}

static void test_frontend_h1_accept_idle_timeout(void **state) {
        Resp r;
        T t;

        t_init(&t);
        t.fe->config.idle_timeout = 80 * MSEC;
        t.fe->on_begin = respond_now;
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        t_response(&t, &r);
        resp_done(&r);
        t_wait_eof(&t);
        assert_int_equal(t.in_len, t.consumed);
        assert_int_equal(t.fe->n_connections, 0);
        t_done(&t);
}

static void test_frontend_h1_accept_write_timeout(void **state) {
        static char piece[16384];
        ResponseHead h = {.status = 200, .has_body = true};
        FakeExchange *f;
        T t;

        t_init_with(&t, 8192);
        t.fe->config.idle_timeout = 100 * MSEC;
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        assert_true(f->x->client->response_head(f->x, &h) >= 0);
        for (unsigned i = 0; i < 20; i++)
                (void) f->x->client->response_body(f->x, piece, sizeof piece);
        /* the client never reads */
        for (unsigned i = 0; i < 100 && !f->freed; i++)
                assert_true(sd_event_run(t.fe->event, 10 * MSEC) >= 0);
        assert_true(f->freed);
        assert_int_equal(t.fe->n_connections, 0);
        t_done(&t);
}

/* ---- edge-triggered readiness over TCP ------------------------------------------------------------
 * Over the socketpair above, every read by the client raises EPOLLOUT on our end, an edge that would hide a
 * connection waiting for one that never comes. TCP signals room only after a write found none, as in
 * production, so these tests see whether the connection moves on by itself. */

static void t_init_tcp(T *t) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        struct sockaddr_storage ss = {};
        socklen_t len = sizeof sa;
        _cleanup_close_ int l = -EBADF;
        int fd;

        *t = (T) {};
        h1_tunables = tunables_default;
        assert_int_equal(fake_frontend_new(&t->fe), 0);
        l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(l >= 0);
        assert_int_equal(bind(l, (struct sockaddr *) &sa, sizeof sa), 0);
        assert_int_equal(listen(l, 1), 0);
        assert_int_equal(getsockname(l, (struct sockaddr *) &sa, &len), 0);
        t->client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(t->client >= 0);
        assert_int_equal(connect(t->client, (struct sockaddr *) &sa, sizeof sa), 0);
        assert_int_equal(fcntl(t->client, F_SETFL, O_NONBLOCK), 0);
        len = sizeof ss;
        fd = accept4(l, (struct sockaddr *) &ss, &len, SOCK_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(frontend_h1_accept(t->fe, fd, &ss), 0);
}

/* Wake-ups of the connections (the batch's socket dispatches and deferred calls) over n waits of the loop.
 * Not sd_event_run()'s answer: it counts an interrupted wait as an iteration, and the io_uring of the
 * test before, torn down, interrupts one wait of ours (its exit work notifies every task that used it). */
static unsigned t_dispatches(T *t, unsigned n) {
        IoBatchStats before = io_batch_get_stats(frontend_io_batch(t->fe)), after;

        for (unsigned i = 0; i < n; i++)
                assert_true(sd_event_run(t->fe->event, 5 * MSEC) >= 0);
        after = io_batch_get_stats(frontend_io_batch(t->fe));
        return (unsigned) (after.wakeups - before.wakeups + after.deferred - before.deferred);
}

/* Answered from outside the loop, as the forward side does: the keep-alive connection then makes no loop
 * iteration of its own; the exchange is finished when the next request comes. */
static void test_frontend_h1_edge_keep_alive_response_is_quiet(void **state) {
        FakeExchange *f;
        Resp r;
        T t;

        t_init_tcp(&t);
        t_send(&t, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        (void) t_dispatches(&t, 2);
        assert_int_equal(fake_respond(f->x, 200, "one", true), 0);
        t_response(&t, &r);
        assert_string_equal(r.body, "one");
        resp_done(&r);
        assert_int_equal(t_dispatches(&t, 6), 0);
        assert_false(f->freed);

        t_send(&t, "GET /2 HTTP/1.1\r\nHost: a\r\n\r\n");
        t_wait_begun(&t, 2);
        assert_true(f->freed);
        assert_int_equal(t.fe->n_live, 1);
        assert_int_equal(fake_respond(fake_begun(t.fe, 1)->x, 200, "two", true), 0);
        t_response(&t, &r);
        assert_string_equal(r.body, "two");
        resp_done(&r);
        t_done(&t);
}

/* A pipelined request already read waits for the response before it; then it starts without a new edge. */
static void test_frontend_h1_edge_pipelined_request_starts_by_itself(void **state) {
        Resp r;
        T t;

        t_init_tcp(&t);
        t_send(&t, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n");
        t_wait_begun(&t, 1);
        assert_int_equal(t_dispatches(&t, 4), 0);
        assert_int_equal(t.fe->n_begun, 1);
        assert_int_equal(fake_respond(fake_begun(t.fe, 0)->x, 200, "one", true), 0);
        t_wait_begun(&t, 2);
        assert_int_equal(fake_respond(fake_begun(t.fe, 1)->x, 200, "two", true), 0);
        t_response(&t, &r);
        assert_string_equal(r.body, "one");
        resp_done(&r);
        t_response(&t, &r);
        assert_string_equal(r.body, "two");
        resp_done(&r);
        t_done(&t);
}

/* More pipelined requests than the read buffer holds, all sent at once: the connection stops reading
 * while the buffer is full and reads the rest from the socket itself as requests are answered. */
static void test_frontend_h1_edge_pipelined_beyond_the_read_buffer(void **state) {
        const unsigned n = 1500; /* about 45 KiB of requests */
        size_t len = 0;
        _cleanup_free_ char *all = malloc(n * 40);
        Resp r;
        T t;

        assert_non_null(all);
        for (unsigned i = 0; i < n; i++)
                len += (size_t) sprintf(all + len, "GET /%u HTTP/1.1\r\nHost: a\r\n\r\n", i);
        t_init_tcp(&t);
        t.fe->on_begin = respond_now;
        t_send_n(&t, all, len);
        for (unsigned i = 0; i < n; i++) {
                t_response(&t, &r);
                assert_int_equal(r.status, 200);
                resp_done(&r);
        }
        assert_int_equal(t.fe->n_begun, n);
        assert_string_equal(fake_begun(t.fe, n - 1)->head.target, "/1499");
        t_done(&t);
}

static bool request_ended(T *t, const void *arg) {
        const FakeExchange *f = arg;

        return f->request_ended;
}

/* A body paused by flow control while all of it waits in the socket: the resume reads it by itself. */
static void test_frontend_h1_edge_body_resume_reads_the_socket(void **state) {
        const size_t size = 256 * 1024;
        _cleanup_free_ char *body = malloc(size);
        FakeExchange *f;
        char head[128];
        T t;

        assert_non_null(body);
        memset(body, 'b', size);
        t_init_tcp(&t);
        t.fe->request_body_result = 1;
        (void) snprintf(head, sizeof head, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: %zu\r\n\r\n",
                        size);
        t_send(&t, head);
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        t_send_n(&t, body, size);
        (void) t_dispatches(&t, 4);
        assert_true(f->body_len < size);
        assert_int_equal(t_dispatches(&t, 4), 0); /* paused: no wake-ups for the bytes waiting */

        t.fe->request_body_result = 0;
        f->x->client->request_body_resume(f->x);
        assert_true(t_until(&t, request_ended, f, WAIT));
        assert_int_equal(f->body_len, size);
        t_done(&t);
}

/* A shutdown after a quiet keep-alive response finds an idle connection: it gets the idle grace (a next
 * request is answered, with Connection: close), not the end of a response in flight. */
static void test_frontend_h1_edge_shutdown_after_quiet_response_keeps_grace(void **state) {
        Resp r;
        T t;

        t_init_tcp(&t);
        h1_tunables.shutdown_grace = 500 * MSEC;
        t_send(&t, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n");
        t_wait_begun(&t, 1);
        assert_int_equal(fake_respond(fake_begun(t.fe, 0)->x, 200, "one", true), 0);
        t_response(&t, &r);
        assert_null(resp_field(&r, "Connection"));
        resp_done(&r);
        t_connection(&t)->ops->shutdown(t_connection(&t));
        t_run(&t, 50 * MSEC);
        assert_false(t.eof);
        t.fe->on_begin = respond_now;
        t_send(&t, "GET /2 HTTP/1.1\r\nHost: a\r\n\r\n");
        t_response(&t, &r);
        assert_int_equal(r.status, 200);
        assert_field_equal((&r, "Connection"), "close");
        resp_done(&r);
        t_wait_eof(&t);
        t_done(&t);
}

/* ---- HTTP/2 hand-over ------------------------------------------------------------------------------ */

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
static const char settings_frame[] = "\x00\x00\x00\x04\x00\x00\x00\x00\x00";

static bool h2_accepted(T *t, const void *arg) {
        return t->fe->h2_accepts > 0;
}

static void test_frontend_h1_accept_prior_knowledge_preface(void **state) {
        char bytes[64];
        T t;

        t_init(&t);
        memcpy(bytes, preface, 24);
        memcpy(bytes + 24, settings_frame, 9);
        t_send_n(&t, bytes, 33);
        assert_true(t_until(&t, h2_accepted, NULL, WAIT));
        assert_int_equal(t.fe->h2_initial_len, 33);
        assert_memory_equal(t.fe->h2_initial, bytes, 33);
        assert_false(t.fe->h2_upgrade);
        assert_int_equal(t.fe->h2_settings_len, 0);
        assert_true(t.fe->h2_fd >= 0);
        assert_int_equal(t.fe->n_connections, 0); /* ours is gone; h2 has the socket */
        assert_int_equal(t.fe->n_begun, 0);
        t_done(&t);
}

static void test_frontend_h1_accept_preface_byte_by_byte(void **state) {
        T t;

        t_init(&t);
        for (size_t i = 0; i < 24; i++) {
                assert_int_equal(t.fe->h2_accepts, 0);
                t_send_n(&t, preface + i, 1);
                t_run(&t, 2 * MSEC);
        }
        assert_true(t_until(&t, h2_accepted, NULL, WAIT));
        assert_int_equal(t.fe->h2_initial_len, 24);
        assert_memory_equal(t.fe->h2_initial, preface, 24);
        t_done(&t);
}

static void test_frontend_h1_accept_upgrade_h2c(void **state) {
        static const uint8_t want[] = {0, 3, 0, 0, 0, 100, 0, 4, 0, 0, 0xff, 0xff};
        char req[512];
        Resp r;
        T t;
        int n;

        t_init(&t);
        n = snprintf(req, sizeof req,
                     "GET /up HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                     "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\nX-A: 1\r\n\r\n%s",
                     preface);
        t_send_n(&t, req, (size_t) n);
        assert_true(t_until(&t, h2_accepted, NULL, WAIT));
        t_response(&t, &r);
        assert_int_equal(r.status, 101);
        assert_field_equal((&r, "Upgrade"), "h2c");
        assert_field_equal((&r, "Connection"), "Upgrade");
        resp_done(&r);
        assert_true(t.fe->h2_upgrade);
        assert_int_equal(t.fe->h2_settings_len, sizeof want);
        assert_memory_equal(t.fe->h2_settings, want, sizeof want);
        assert_int_equal(t.fe->h2_initial_len, 24);
        assert_memory_equal(t.fe->h2_initial, preface, 24);
        assert_string_equal(t.fe->h2_req.method, "GET");
        assert_string_equal(t.fe->h2_req.target, "/up");
        assert_string_equal(t.fe->h2_req.authority, "a");
        assert_int_equal(t.fe->h2_req.n_fields, 1); /* Upgrade, HTTP2-Settings, Connection are ours */
        assert_string_equal(fake_head_field(&t.fe->h2_req, "X-A"), "1");
        assert_int_equal(t.fe->n_begun, 0);
        assert_int_equal(t.fe->n_connections, 0);
        t_done(&t);
}

/* Upgrades we do not take: the request is served as HTTP/1.1, and the router sees no Upgrade fields. */
typedef struct UpgradeCase {
        const char *name;
        const char *request;
} UpgradeCase;

static const UpgradeCase upgrade_ignored_cases[] = {
        {"h2c_with_body",
         "POST / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
         "HTTP2-Settings: AAMAAABkAAQAAP__\r\nContent-Length: 2\r\n\r\nhi"},
        {"h2c_bad_settings",
         "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
         "HTTP2-Settings: AAMAAAB*\r\n\r\n"},
        {"websocket", "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                      "Sec-WebSocket-Version: 13\r\n\r\n"},
};

static void test_frontend_h1_accept_upgrade_ignored(void **state) {
        const UpgradeCase *c = *state;
        FakeExchange *f;
        Resp r;
        T t;

        t_init(&t);
        t.fe->on_begin = respond_now;
        t_send(&t, c->request);
        t_response(&t, &r);
        assert_int_equal(r.status, 200);
        resp_done(&r);
        assert_int_equal(t.fe->h2_accepts, 0);
        f = fake_begun(t.fe, 0);
        assert_non_null(f);
        assert_null(fake_head_field(&f->head, "Upgrade"));
        assert_null(fake_head_field(&f->head, "HTTP2-Settings"));
        t_done(&t);
}

/* ---- response framing ------------------------------------------------------------------------------ */

static void test_frontend_h1_response_head_chunked_when_length_unknown(void **state) {
        static const HeaderField fields[] = { { "Content-Type", 12, "text/plain", 10 } };
        static const HeaderField extra[] = { { "Set-Cookie", 10, "s=1", 3 } };
        ResponseHead h = {
                .status = 200,
                .has_body = true,
                .fields = fields,
                .n_fields = ELEMENTSOF(fields),
                .extra = extra,
                .n_extra = ELEMENTSOF(extra),
        };
        FakeExchange *f;
        Resp r;
        T t;

        t_init(&t);
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        assert_int_equal(f->x->client->response_head(f->x, &h), 0);
        assert_int_equal(f->x->client->response_body(f->x, "hello ", 6), 0);
        assert_int_equal(f->x->client->response_body(f->x, "", 0), 0); /* never the last chunk */
        assert_int_equal(f->x->client->response_body(f->x, "world", 5), 0);
        assert_int_equal(f->x->client->response_end(f->x), 0);
        t_response(&t, &r);
        assert_field_equal((&r, "Transfer-Encoding"), "chunked");
        assert_field_equal((&r, "Content-Type"), "text/plain");
        assert_field_equal((&r, "Set-Cookie"), "s=1");
        assert_string_equal(r.body, "hello world");
        resp_done(&r);
        t_run(&t, 10 * MSEC);
        assert_false(t.eof);
        t_done(&t);
}

static void test_frontend_h1_response_head_close_delimited_for_http10(void **state) {
        FakeExchange *f;
        Resp r;
        T t;

        t_init(&t);
        t_send(&t, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        assert_int_equal(fake_respond(f->x, 200, "till the end", false), 0);
        t_wait_eof(&t);
        t_response(&t, &r);
        assert_string_equal(r.version, "HTTP/1.0");
        assert_null(resp_field(&r, "Content-Length"));
        assert_null(resp_field(&r, "Transfer-Encoding"));
        assert_field_equal((&r, "Connection"), "close");
        assert_string_equal(r.body, "till the end");
        resp_done(&r);
        t_done(&t);
}

static void test_frontend_h1_response_head_head_request(void **state) {
        ResponseHead h = {
                .status = 200,
                .has_body = false,
                .has_content_length = true,
                .content_length = 1234,
        };
        FakeExchange *f;
        Resp r;
        T t;

        t_init(&t);
        t_send(&t, "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        assert_true(f->head.head_method);
        assert_int_equal(f->x->client->response_head(f->x, &h), 0);
        assert_int_equal(f->x->client->response_end(f->x), 0);
        t_response_full(&t, true, &r);
        assert_field_equal((&r, "Content-Length"), "1234");
        resp_done(&r);
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        t_wait_begun(&t, 2);
        assert_int_equal(t.in_len, t.consumed); /* no body bytes after the HEAD response */
        t_done(&t);
}

static void test_frontend_h1_response_error_retry_after(void **state) {
        FakeExchange *f;
        Resp r;
        T t;

        t_init(&t);
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        f->x->client->response_error(f->x, 503, 7, "no routable worker");
        t_response(&t, &r);
        assert_int_equal(r.status, 503);
        assert_field_equal((&r, "Retry-After"), "7");
        assert_field_equal((&r, "X-Request-Id"), "req0001");
        assert_null(resp_field(&r, "Connection")); /* not the client's fault: keep-alive stays */
        assert_non_null(strstr(r.body, "no routable worker"));
        resp_done(&r);
        t.fe->on_begin = respond_now;
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        t_response(&t, &r);
        assert_int_equal(r.status, 200);
        resp_done(&r);
        t_done(&t);
}

/* The router answers with an error before the request body came: the rest of the body is not read, so the
 * connection cannot carry on. */
typedef struct EarlyErrorCase {
        const char *name;
        const char *request;
        unsigned status, retry_after;
        const char *reason;
} EarlyErrorCase;

static const EarlyErrorCase early_error_cases[] = {
        {.name = "before_body", .request = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\nab",
         .status = 503, .retry_after = 1, .reason = "no worker"},
        /* the first response the client reads is the error: no 100 Continue before it */
        {.name = "before_continue",
         .request = "PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 100000\r\n\r\n",
         .status = 413, .reason = "too big for this worker"},
};

static void respond_error_now(Frontend *fe, Exchange *x, void *userdata) {
        const EarlyErrorCase *c = userdata;

        x->client->response_error(x, c->status, c->retry_after, c->reason);
}

static void test_frontend_h1_response_error_early_closes(void **state) {
        const EarlyErrorCase *c = *state;
        Resp r;
        T t;

        t_init(&t);
        t.fe->on_begin = respond_error_now;
        t.fe->userdata = (void *) c;
        t_send(&t, c->request);
        t_response(&t, &r);
        assert_int_equal(r.status, c->status);
        assert_field_equal((&r, "Connection"), "close");
        resp_done(&r);
        t_wait_eof(&t);
        t_done(&t);
}

static void test_frontend_h1_response_abort_closes(void **state) {
        ResponseHead h = {
                .status = 200, .has_body = true, .has_content_length = true, .content_length = 100};
        FakeExchange *f;
        T t;

        t_init(&t);
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        assert_int_equal(f->x->client->response_head(f->x, &h), 0);
        assert_int_equal(f->x->client->response_body(f->x, "partial", 7), 0);
        f->x->client->response_abort(f->x, "worker died");
        t_wait_eof(&t);
        assert_non_null(strstr(t.in, "partial"));
        assert_true(f->freed);
        assert_int_equal(t.fe->n_connections, 0);
        t_done(&t);
}

static void test_frontend_h1_response_end_short_body_closes(void **state) {
        ResponseHead h = {.status = 200, .has_body = true, .has_content_length = true, .content_length = 10};
        FakeExchange *f;
        T t;

        t_init(&t);
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        assert_int_equal(f->x->client->response_head(f->x, &h), 0);
        assert_int_equal(f->x->client->response_body(f->x, "short", 5), 0);
        assert_int_equal(f->x->client->response_end(f->x), 0);
        t_wait_eof(&t); /* the client sees 5 of 10 bytes and the end: truncated, honestly */
        t_done(&t);
}

/* ---- shutdown and close ---------------------------------------------------------------------------- */

static void test_frontend_h1_shutdown_response_in_progress_gets_close(void **state) {
        FakeExchange *f;
        Resp r;
        T t;

        t_init(&t);
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        t_connection(&t)->ops->shutdown(t_connection(&t));
        t_run(&t, 10 * MSEC);
        assert_int_equal(fake_respond(f->x, 200, "bye", true), 0);
        t_response(&t, &r);
        assert_field_equal((&r, "Connection"), "close");
        assert_string_equal(r.body, "bye");
        resp_done(&r);
        t_wait_eof(&t);
        t_done(&t);
}

static void test_frontend_h1_shutdown_idle_closed_after_grace(void **state) {
        usec_t start;
        Resp r;
        T t;

        t_init(&t);
        h1_tunables.shutdown_grace = 100 * MSEC;
        t.fe->on_begin = respond_now;
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        t_response(&t, &r);
        resp_done(&r);
        start = now_usec(CLOCK_MONOTONIC);
        t_connection(&t)->ops->shutdown(t_connection(&t));
        t_wait_eof(&t);
        assert_true(now_usec(CLOCK_MONOTONIC) - start >= 90 * MSEC); /* a chance for a next request */
        assert_int_equal(t.in_len, t.consumed);
        t_done(&t);
}

static void test_frontend_h1_shutdown_idle_next_request_answered(void **state) {
        Resp r;
        T t;

        t_init(&t);
        h1_tunables.shutdown_grace = 500 * MSEC;
        t.fe->on_begin = respond_now;
        t_connection(&t)->ops->shutdown(t_connection(&t));
        t_run(&t, 20 * MSEC);
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        t_response(&t, &r);
        assert_int_equal(r.status, 200);
        assert_field_equal((&r, "Connection"), "close");
        resp_done(&r);
        t_wait_eof(&t);
        t_done(&t);
}

static void test_frontend_h1_shutdown_pipelined_still_answered(void **state) {
        Resp r;
        T t;

        t_init(&t);
        t_send(&t, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n");
        t_wait_begun(&t, 1);
        t_connection(&t)->ops->shutdown(t_connection(&t));
        t_run(&t, 10 * MSEC);
        assert_int_equal(fake_respond(fake_begun(t.fe, 0)->x, 200, "one", true), 0);
        t_response(&t, &r);
        assert_null(resp_field(&r, "Connection")); /* another request was accepted: it follows */
        resp_done(&r);
        t_wait_begun(&t, 2);
        assert_int_equal(fake_respond(fake_begun(t.fe, 1)->x, 200, "two", true), 0);
        t_response(&t, &r);
        assert_field_equal((&r, "Connection"), "close");
        assert_string_equal(r.body, "two");
        resp_done(&r);
        t_wait_eof(&t);
        t_done(&t);
}

static void test_frontend_h1_close_frees_exchange(void **state) {
        FakeExchange *f;
        T t;

        t_init(&t);
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        t_connection(&t)->ops->close(t_connection(&t));
        assert_true(f->freed);
        assert_int_equal(t.fe->n_connections, 0);
        t_wait_eof(&t);
        t_done(&t);
}

static void test_frontend_h1_accept_chunked_body_paused_midway(void **state) {
        FakeExchange *f;
        T t;

        t_init(&t);
        t.fe->request_body_result = 1;
        t_send(&t, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: "
                   "chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n");
        t_wait_begun(&t, 1);
        t_run(&t, 20 * MSEC);
        f = fake_begun(t.fe, 0);
        assert_string_equal(f->body, "abc"); /* the parser stopped after the piece that went over */
        assert_false(f->request_ended);
        t.fe->request_body_result = 0;
        f->x->client->request_body_resume(f->x);
        t_run(&t, 20 * MSEC);
        assert_string_equal(f->body, "abcdef");
        assert_true(f->request_ended);
        t_done(&t);
}

static void test_frontend_h1_accept_body_stall_408(void **state) {
        FakeExchange *f;
        T t;

        t_init(&t);
        t.fe->config.idle_timeout = 80 * MSEC;
        t_send(&t, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        {
                Resp r;
                t_response(&t, &r);
                assert_int_equal(r.status, 408);
                assert_field_equal((&r, "Connection"), "close");
                assert_field_equal((&r, "X-Request-Id"), "req0001");
                resp_done(&r);
        }
        assert_true(f->freed);
        t_wait_eof(&t);
        t_done(&t);
}

static void test_frontend_h1_accept_error_logged_with_peer_and_reason(void **state) {
        T t;

        t_init(&t);
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\nX-A: a\r\n b\r\n\r\n");
        expect_rejected(&t, 400);
        assert_int_equal(t.fe->n_logs, 1);
        assert_non_null(strstr(t.fe->last_log, "192.0.2.10:40000"));
        assert_non_null(strstr(t.fe->last_log, "400 Bad Request"));
        assert_non_null(strstr(t.fe->last_log, "obs-fold"));
        t_done(&t);
}

static bool no_connections(T *t, const void *arg) {
        return t->fe->n_connections == 0;
}

/* After our last response the write side is shut at once (the client reads its EOF), but unread input is
 * drained for a while before the close, so that TCP does not reset the response away. */
static void test_frontend_h1_accept_linger_after_error(void **state) {
        usec_t start;
        T t;

        t_init(&t);
        h1_tunables.linger = 100 * MSEC;
        start = now_usec(CLOCK_MONOTONIC);
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n");
        expect_rejected(&t, 400);
        assert_int_equal(t.fe->n_connections, 1); /* lingering */
        t_send(&t, "more bytes the server drops");
        assert_true(t_until(&t, no_connections, NULL, WAIT));
        assert_true(now_usec(CLOCK_MONOTONIC) - start >= 90 * MSEC);
        t_done(&t);
}

static void test_frontend_h1_accept_linger_ends_on_client_close(void **state) {
        T t;

        t_init(&t);
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n");
        expect_rejected(&t, 400);
        assert_int_equal(shutdown(t.client, SHUT_WR), 0);
        assert_true(t_until(&t, no_connections, NULL, 500 * MSEC)); /* long before the 2 s linger */
        t_done(&t);
}

/* A client that pipelines and does not read: the next request waits until the queued responses are
 * under the high-water mark, so its responses cannot pile up without bound. */
static void test_frontend_h1_accept_pipelining_bounded_by_unread_responses(void **state) {
        static char big[32768];
        T t;

        t_init_with(&t, 4096);
        h1_tunables.write_high = 8192;
        h1_tunables.write_low = 2048;
        memset(big, 'x', sizeof big - 1);
        t_send(&t, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n");
        t_wait_begun(&t, 1);
        assert_true(fake_respond(fake_begun(t.fe, 0)->x, 200, big, true) >= 0);
        for (unsigned i = 0; i < 10; i++)
                assert_true(sd_event_run(t.fe->event, 5 * MSEC) >= 0); /* no reading by the client */
        assert_int_equal(t.fe->n_begun, 1);
        t_wait_begun(&t, 2); /* t_until reads: the queue drains, the next request starts */
        t_done(&t);
}

static void test_frontend_h1_shutdown_fresh_connection_closed_after_grace(void **state) {
        T t;

        t_init(&t);
        h1_tunables.shutdown_grace = 50 * MSEC;
        t_connection(&t)->ops->shutdown(t_connection(&t));
        t_wait_eof(&t);
        assert_int_equal(t.in_len, 0);
        t_done(&t);
}

static void test_frontend_h1_accept_many_keep_alive_requests(void **state) {
        char req[128];
        Resp r;
        T t;

        t_init(&t);
        t.fe->on_begin = respond_now;
        for (unsigned i = 0; i < 2000; i++) {
                int n = snprintf(req, sizeof req, "GET /%u HTTP/1.1\r\nHost: a\r\nX-N: %u\r\n\r\n", i, i);
                t_send_n(&t, req, (size_t) n);
                t_response(&t, &r);
                assert_int_equal(r.status, 200);
                resp_done(&r);
        }
        assert_int_equal(t.fe->n_begun, 2000);
        assert_int_equal(t.fe->n_live, 0);
        assert_string_equal(fake_begun(t.fe, 1999)->head.target, "/1999");
        t_done(&t);
}

static void test_frontend_h1_response_body_large_piece_written_directly(void **state) {
        static char body[200000];
        FakeExchange *f;
        Resp r;
        T t;

        t_init(&t);
        for (size_t i = 0; i < sizeof body - 1; i++)
                body[i] = (char) ('A' + i % 23);
        t_send(&t, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        t_wait_begun(&t, 1);
        f = fake_begun(t.fe, 0);
        assert_true(fake_respond(f->x, 200, body, true) >= 0);
        t_response(&t, &r);
        assert_int_equal(r.body_len, sizeof body - 1);
        assert_memory_equal(r.body, body, sizeof body - 1);
        resp_done(&r);
        t_done(&t);
}

/* ---- pure helpers ---------------------------------------------------------------------------------- */

static void test_h1_scan_split_anywhere(void **state) {
        static const char head[] = "\r\nGET /x HTTP/1.1\r\nHost: a\r\nX-A: b c\r\n\r\nBODY";
        size_t len = sizeof head - 1 - 4;

        /* the result does not depend on where reads split the head */
        for (size_t split = 0; split <= len; split++) {
                H1Scan s;
                size_t used;
                unsigned status;
                const char *reason;

                h1_scan_init(&s, 65536, H1_REQUEST_LINE_MAX, 100);
                assert_int_equal(h1_scan(&s, head, split, &used, &status, &reason), split == len ? 1 : 0);
                assert_int_equal(used, split);
                if (split < len) {
                        assert_int_equal(
                                h1_scan(&s, head + split, sizeof head - 1 - split, &used, &status, &reason),
                                1);
                        assert_int_equal(used, len - split);
                }
                assert_int_equal(s.fields, 2);
        }
}

static void test_h1_chunk_scan_split_anywhere(void **state) {
        static const char body[] = "5;name=\"v a\"\r\nhello\r\n0A \r\n0123456789\r\n0\r\nX-T: 1\r\n\r\nNEXT";
        size_t len = sizeof body - 1 - 4;

        /* framing is judged the same wherever reads split the body; the scan stops at its end */
        for (size_t split = 0; split <= len; split++) {
                H1ChunkScan s;
                size_t used;
                const char *reason;

                h1_chunk_scan_init(&s, 65536);
                assert_int_equal(h1_chunk_scan(&s, body, split, &used, &reason), split == len ? 1 : 0);
                assert_int_equal(used, split);
                if (split < len) {
                        assert_int_equal(
                                h1_chunk_scan(&s, body + split, sizeof body - 1 - split, &used, &reason), 1);
                        assert_int_equal(used, len - split);
                }
        }
}

static void test_h1_chunk_scan_accepts_lengths_and_extensions(void **state) {
        static const char body[] = "A ;x\r\n0123456789\r\n0;last\r\n\r\n";
        H1ChunkScan s;
        size_t used;
        const char *reason;

        h1_chunk_scan_init(&s, 65536);
        assert_int_equal(h1_chunk_scan(&s, body, sizeof body - 1, &used, &reason), 1);
        assert_int_equal(used, sizeof body - 1);
}

static void test_h1_http2_settings_decode_forms(void **state) {
        uint8_t out[32];

        assert_int_equal(h1_http2_settings_decode("", 0, out, sizeof out), 0);
        assert_int_equal(h1_http2_settings_decode("AAMAAABk", 8, out, sizeof out), 6);
        assert_int_equal(out[5], 100);
        assert_int_equal(h1_http2_settings_decode("AAMAAABk==", 10, out, sizeof out), 6);
        assert_int_equal(h1_http2_settings_decode("AAMAAAB", 7, out, sizeof out), -EINVAL); /* 5 bytes */
        assert_int_equal(h1_http2_settings_decode("AAMA+ABk", 8, out, sizeof out),
                         -EINVAL); /* base64, not url */
        assert_int_equal(h1_http2_settings_decode("AAMAAABk", 8, out, 4), -ENOBUFS);
}

static void test_h1_list_has_tokens(void **state) {
        assert_true(h1_list_has("Upgrade, HTTP2-Settings", 23, "http2-settings"));
        assert_true(h1_list_has(" ,close ,", 9, "close"));
        assert_false(h1_list_has("closed", 6, "close"));
        assert_true(h1_list_has("h2c;q=1", 7, "h2c"));
        assert_false(h1_list_has("", 0, "close"));
}

static void test_h1_authority_valid_forms(void **state) {
        assert_true(h1_authority_valid("", 0));
        assert_true(h1_authority_valid("example.com:8080", 16));
        assert_true(h1_authority_valid("[::1]:80", 8));
        assert_true(h1_authority_valid("10.0.0.1", 8));
        assert_false(h1_authority_valid("a b", 3));
        assert_false(h1_authority_valid("u@h", 3));
        assert_false(h1_authority_valid("h/p", 3));
        assert_false(h1_authority_valid("[::1", 4));
        assert_false(h1_authority_valid("h:1:2", 5));
        assert_false(h1_authority_valid("h:123456", 8));
}

/* Registers a test per row of a case table, named "<runner>/<row>", with the row as its state. */
#define ADD_ROWS(tests, n, runner, rows)                  \
        for (size_t _i = 0; _i < ELEMENTSOF(rows); _i++) \
                add_row(tests, ELEMENTSOF(tests), &(n), #runner "/", (rows)[_i].name, runner, &(rows)[_i])

static void add_row(struct CMUnitTest *tests, size_t max, size_t *n, const char *prefix, const char *row,
                    CMUnitTestFunction runner, const void *c) {
        char *name;

        if (*n >= max || asprintf(&name, "%s%s", prefix, row) < 0)
                abort();
        tests[(*n)++] = (struct CMUnitTest) {.name = name, .test_func = runner, .initial_state = (void *) c};
}

int main(void) {
        static const struct CMUnitTest single[] = {
                cmocka_unit_test(test_frontend_h1_accept_simple_get),
                cmocka_unit_test(test_frontend_h1_accept_pipelined_answered_in_order),
                cmocka_unit_test(test_frontend_h1_accept_content_length_body_in_pieces),
                cmocka_unit_test(test_frontend_h1_accept_chunked_body_dechunked),
                cmocka_unit_test(test_frontend_h1_accept_request_body_high_water),
                cmocka_unit_test(test_frontend_h1_accept_response_high_water),
                cmocka_unit_test(test_frontend_h1_accept_expect_continue),
                cmocka_unit_test(test_frontend_h1_accept_expect_continue_after_body),
                cmocka_unit_test(test_frontend_h1_accept_hop_by_hop_removed),
                cmocka_unit_test(test_frontend_h1_accept_half_close_still_answered),
                cmocka_unit_test(test_frontend_h1_accept_client_gone_mid_body),
                cmocka_unit_test(test_frontend_h1_accept_request_line_too_long),
                cmocka_unit_test(test_frontend_h1_accept_head_too_large),
                cmocka_unit_test(test_frontend_h1_accept_too_many_fields),
                cmocka_unit_test(test_frontend_h1_accept_fields_at_limit),
                cmocka_unit_test(test_frontend_h1_accept_chunked_over_max_while_streaming),
                cmocka_unit_test(test_frontend_h1_accept_slowloris_408),
                cmocka_unit_test(test_frontend_h1_accept_silent_connection_closed),
                cmocka_unit_test(test_frontend_h1_accept_idle_timeout),
                cmocka_unit_test(test_frontend_h1_accept_write_timeout),
                cmocka_unit_test(test_frontend_h1_accept_prior_knowledge_preface),
                cmocka_unit_test(test_frontend_h1_accept_preface_byte_by_byte),
                cmocka_unit_test(test_frontend_h1_edge_keep_alive_response_is_quiet),
                cmocka_unit_test(test_frontend_h1_edge_pipelined_request_starts_by_itself),
                cmocka_unit_test(test_frontend_h1_edge_pipelined_beyond_the_read_buffer),
                cmocka_unit_test(test_frontend_h1_edge_body_resume_reads_the_socket),
                cmocka_unit_test(test_frontend_h1_edge_shutdown_after_quiet_response_keeps_grace),
                cmocka_unit_test(test_frontend_h1_accept_upgrade_h2c),
                cmocka_unit_test(test_frontend_h1_response_head_chunked_when_length_unknown),
                cmocka_unit_test(test_frontend_h1_response_head_close_delimited_for_http10),
                cmocka_unit_test(test_frontend_h1_response_head_head_request),
                cmocka_unit_test(test_frontend_h1_response_error_retry_after),
                cmocka_unit_test(test_frontend_h1_response_abort_closes),
                cmocka_unit_test(test_frontend_h1_response_end_short_body_closes),
                cmocka_unit_test(test_frontend_h1_shutdown_response_in_progress_gets_close),
                cmocka_unit_test(test_frontend_h1_shutdown_idle_closed_after_grace),
                cmocka_unit_test(test_frontend_h1_shutdown_idle_next_request_answered),
                cmocka_unit_test(test_frontend_h1_shutdown_pipelined_still_answered),
                cmocka_unit_test(test_frontend_h1_close_frees_exchange),
                cmocka_unit_test(test_frontend_h1_accept_chunked_body_paused_midway),
                cmocka_unit_test(test_frontend_h1_accept_body_stall_408),
                cmocka_unit_test(test_frontend_h1_accept_error_logged_with_peer_and_reason),
                cmocka_unit_test(test_frontend_h1_accept_linger_after_error),
                cmocka_unit_test(test_frontend_h1_accept_linger_ends_on_client_close),
                cmocka_unit_test(test_frontend_h1_accept_pipelining_bounded_by_unread_responses),
                cmocka_unit_test(test_frontend_h1_shutdown_fresh_connection_closed_after_grace),
                cmocka_unit_test(test_frontend_h1_accept_many_keep_alive_requests),
                cmocka_unit_test(test_frontend_h1_response_body_large_piece_written_directly),
                cmocka_unit_test(test_h1_scan_split_anywhere),
                cmocka_unit_test(test_h1_chunk_scan_split_anywhere),
                cmocka_unit_test(test_h1_chunk_scan_accepts_lengths_and_extensions),
                cmocka_unit_test(test_h1_http2_settings_decode_forms),
                cmocka_unit_test(test_h1_list_has_tokens),
                cmocka_unit_test(test_h1_authority_valid_forms),
        };
        struct CMUnitTest tests[ELEMENTSOF(single) + ELEMENTSOF(keep_alive_cases) +
                                ELEMENTSOF(target_cases) + ELEMENTSOF(bad_inputs) +
                                ELEMENTSOF(upgrade_ignored_cases) + ELEMENTSOF(early_error_cases)];
        size_t n = 0;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(single); i++)
                tests[n++] = single[i];
        ADD_ROWS(tests, n, test_frontend_h1_accept_keep_alive, keep_alive_cases);
        ADD_ROWS(tests, n, test_frontend_h1_accept_target, target_cases);
        ADD_ROWS(tests, n, test_frontend_h1_accept_bad_input, bad_inputs);
        ADD_ROWS(tests, n, test_frontend_h1_accept_upgrade_ignored, upgrade_ignored_cases);
        ADD_ROWS(tests, n, test_frontend_h1_response_error_early_closes, early_error_cases);
        if (n != ELEMENTSOF(tests)) /* a table counted above and not added, or the other way round */
                abort();

        log_set_max_level(LOG_WARNING);
        r = cmocka_run_group_tests(tests, NULL, NULL);
        for (size_t i = ELEMENTSOF(single); i < n; i++)
                free((char *) tests[i].name);
        return r;
}
