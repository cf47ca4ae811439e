/* SPDX-License-Identifier: MIT */
/* The forward side: what a worker gets on the wire (a table of heads, byte for byte), what the client may
 * see of a worker's response, and the pool's behaviour against a fake worker on a real Unix socket driven
 * by a real sd-event loop: keep-alive reuse, the connection limit and the queue, the one retry on a
 * stale kept-alive connection, 502/504 causes, discarded connections, bounded buffers under back-pressure
 * both ways, drain and free. The router is fake-exchange.c.
 *
 * Tests of one shape are case tables (a static array of rows and one runner): each row is its own cmocka
 * test, "<runner>/<row name>", so a failure names its row. Tests whose steps differ stay functions. */
#include <arpa/inet.h>
#include <errno.h>
#include <http_parser.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>

#include "io-uring-mode.h"
#include "cleanup.h"
#include "fake-exchange.h"
#include "fake-worker.h"
#include "forward-internal.h"
#include "forward.h"
#include "log.h"
#include "macro.h"
#include "time-util.h"

#define OK_RESPONSE "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
#define COOKIE "ep_session"
#define WORKER_ID 7

static sd_event *event;
static IoBatch *batch; /* the front end's socket set, in which the pool's connections sit */

#define RUN_UNTIL(cond)                                                                        \
        do {                                                                                   \
                usec_t _end = now_usec(CLOCK_MONOTONIC) + 10 * USEC_PER_SEC;                   \
                while (!(cond)) {                                                              \
                        assert_true(now_usec(CLOCK_MONOTONIC) < _end);                         \
                        assert_true(sd_event_run(event, 10 * USEC_PER_MSEC) >= 0);             \
                }                                                                              \
        } while (0)

static void run_for(usec_t span) {
        usec_t end = now_usec(CLOCK_MONOTONIC) + span;

        while (now_usec(CLOCK_MONOTONIC) < end)
                assert_true(sd_event_run(event, 5 * USEC_PER_MSEC) >= 0);
}

static ForwardPool *pool_new(const char *path, unsigned max_connections, unsigned max_queued,
                             usec_t response_timeout) {
        ForwardOptions o = {
                .max_connections = max_connections,
                .max_queued = max_queued,
                .response_timeout = response_timeout,
                .idle_timeout = 10 * USEC_PER_SEC,
                .cookie_name = COOKIE,
                .worker_id = WORKER_ID,
        };
        ForwardPool *p = NULL;

        assert_int_equal(forward_pool_new(batch, path, &o, &p), 0);
        assert_non_null(p);
        return p;
}

static void get_init(FakeExchange *f, const char *target, const char *id) {
        struct sockaddr_in *sin = (struct sockaddr_in *) &f->x.peer;

        fake_exchange_init(f, "GET", target, "app.test");
        sin->sin_family = AF_INET;
        sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        (void) snprintf(f->x.id, sizeof(f->x.id), "%s", id);
}

static int setup(void **state) {
        fake_exchanges_finished = 0;
        assert_int_equal(sd_event_new(&event), 0);
        assert_int_equal(io_batch_new(event, &batch), 0);
        io_uring_mode_apply(batch);
        return 0;
}

static int teardown(void **state) {
        batch = io_batch_unref(batch);
        event = sd_event_unref(event);
        return 0;
}

/* ---- serialisation: a table of client heads and the exact bytes a worker gets ---- */

typedef struct SerializeCase {
        const char *name;
        const char *method, *target, *authority;
        const char *fields[24][2];
        const char *peer;
        bool tls;
        bool trusted; /* the peer is in trusted_proxies */
        const char *id, *user;
        int body; /* 0 none, 1 content-length, 2 unknown length */
        uint64_t content_length;
        const char *expected;
} SerializeCase;

static const SerializeCase serialize_cases[] = {
        {
                .name = "plain GET",
                .method = "GET", .target = "/a?b=1", .authority = "app.test",
                .fields = { { "User-Agent", "curl/8.1" }, { "Accept", "*/*" } },
                .peer = "192.0.2.7", .id = "r1",
                .expected = "GET /a?b=1 HTTP/1.1\r\nHost: app.test\r\n"
                            "User-Agent: curl/8.1\r\nAccept: */*\r\n"
                            "X-Forwarded-For: 192.0.2.7\r\n"
                            "X-Forwarded-Proto: http\r\nX-Request-Id: r1\r\n\r\n",
        },
        {
                .name = "hop-by-hop and Connection-named fields",
                .method = "GET", .target = "/", .authority = "app.test",
                .fields = { { "Connection", "keep-alive, X-Trace" }, { "Keep-Alive", "timeout=5" },
                            { "x-trace", "1" }, { "TE", "trailers" }, { "Upgrade", "h2c" },
                            { "HTTP2-Settings", "AAMAAABkAAQAAP__" },
                            { "Proxy-Authorization", "Basic eA==" },
                            { "Proxy-Authenticate", "Basic" }, { "Proxy-Connection", "keep-alive" },
                            { "Trailer", "X-Sum" }, { "Transfer-Encoding", "chunked" },
                            { "Expect", "100-continue" }, { "Host", "evil.test" }, { "Content-Length", "5" },
                            { "X-Keep", "yes" }, { "connection", "Foo" }, { "Foo", "dropped" } },
                .peer = "192.0.2.7", .id = "r2",
                .expected = "GET / HTTP/1.1\r\nHost: app.test\r\nX-Keep: yes\r\n"
                            "X-Forwarded-For: 192.0.2.7\r\n"
                            "X-Forwarded-Proto: http\r\nX-Request-Id: r2\r\n\r\n",
        },
        {
                .name = "cookies joined, ours removed, at the first Cookie's place",
                .method = "GET", .target = "/", .authority = "app.test",
                .fields = { { "cookie", "a=1" }, { "accept", "*/*" }, { "cookie", COOKIE "=alice.c2lnbmVk" },
                            { "cookie", "b=2;c=3;  ep_session2=x ; Ep_session=y;;" } },
                .peer = "192.0.2.7", .id = "r3",
                .expected = "GET / HTTP/1.1\r\nHost: app.test\r\n"
                            "Cookie: a=1; b=2; c=3; ep_session2=x; Ep_session=y\r\n"
                            "accept: */*\r\n"
                            "X-Forwarded-For: 192.0.2.7\r\n"
                            "X-Forwarded-Proto: http\r\nX-Request-Id: r3\r\n\r\n",
        },
        {
                .name = "only our cookie: no Cookie field at all",
                .method = "GET", .target = "/", .authority = "app.test",
                .fields = { { "Cookie", " " COOKIE "=alice.sig " } },
                .peer = "192.0.2.7", .id = "r4",
                .expected = "GET / HTTP/1.1\r\nHost: app.test\r\n"
                            "X-Forwarded-For: 192.0.2.7\r\n"
                            "X-Forwarded-Proto: http\r\nX-Request-Id: r4\r\n\r\n",
        },
        {
                .name = "X-Forwarded-For appended; our -Proto, -Request-Id and user replace the client's",
                .method = "GET", .target = "/me", .authority = "app.test",
                .fields = { { "X-Forwarded-For", "203.0.113.9" }, { "x-forwarded-for", " 198.51.100.1 " },
                            { "X-Forwarded-Proto", "http" }, { "X-Request-Id", "client-chosen" },
                            { "X-Elastic-Pool-User", "mallory" }, { "x-elastic-pool-user", "root" } },
                .peer = "2001:db8::5", .tls = true, .id = "r5", .user = "alice",
                .expected = "GET /me HTTP/1.1\r\nHost: app.test\r\n"
                            "X-Forwarded-For: 203.0.113.9, 198.51.100.1, 2001:db8::5\r\n"
                            "X-Forwarded-Proto: https\r\nX-Request-Id: r5\r\n"
                            "X-Elastic-Pool-User: alice\r\n\r\n",
        },
        {
                /* issue 16: CGI/WSGI/PHP map '-' and '_' to the same variable */
                .name = "reserved names spelled with '_' are dropped like the real ones",
                .method = "GET", .target = "/", .authority = "app.test",
                .fields = { { "X_Elastic_Pool_User", "admin" }, { "x-elastic_pool-user", "root" },
                            { "Elastic_Pool_User", "eve" }, { "Elastic-Pool-User", "eve" },
                            { "X_Forwarded_Proto", "https" }, { "X_Forwarded_For", "10.0.0.1" },
                            { "x_request_id", "mine" }, { "Content_Length", "5" }, { "Transfer_Encoding", "chunked" },
                            { "X_Keep_Me", "yes" }, { "Forwarded", "for=10.0.0.1;proto=https" } },
                .peer = "192.0.2.7", .id = "r5b", .user = "alice",
                .expected = "GET / HTTP/1.1\r\nHost: app.test\r\nX_Keep_Me: yes\r\n"
                            "X-Forwarded-For: 192.0.2.7\r\n"
                            "X-Forwarded-Proto: http\r\nX-Request-Id: r5b\r\n"
                            "X-Elastic-Pool-User: alice\r\n\r\n",
        },
        {
                .name = "Forwarded from a trusted proxy goes on",
                .method = "GET", .target = "/", .authority = "app.test",
                .fields = { { "Forwarded", "for=10.0.0.1;proto=https" } },
                .peer = "192.0.2.7", .trusted = true, .id = "r5c",
                .expected = "GET / HTTP/1.1\r\nHost: app.test\r\nForwarded: for=10.0.0.1;proto=https\r\n"
                            "X-Forwarded-For: 192.0.2.7\r\n"
                            "X-Forwarded-Proto: http\r\nX-Request-Id: r5c\r\n\r\n",
        },
        {
                .name = "IPv4-mapped peer written as IPv4",
                .method = "GET", .target = "/", .authority = "app.test",
                .peer = "::ffff:192.0.2.1", .id = "r6",
                .expected = "GET / HTTP/1.1\r\nHost: app.test\r\n"
                            "X-Forwarded-For: 192.0.2.1\r\n"
                            "X-Forwarded-Proto: http\r\nX-Request-Id: r6\r\n\r\n",
        },
        {
                .name = "IPv4 octets of every width, zeros included",
                .method = "GET", .target = "/", .authority = "app.test",
                .peer = "10.200.0.255", .id = "r6b",
                .expected = "GET / HTTP/1.1\r\nHost: app.test\r\n"
                            "X-Forwarded-For: 10.200.0.255\r\n"
                            "X-Forwarded-Proto: http\r\nX-Request-Id: r6b\r\n\r\n",
        },
        {
                .name = "body of unknown length re-chunked",
                .method = "POST", .target = "/up", .authority = "app.test",
                .fields = { { "content-type", "application/octet-stream" } },
                .peer = "192.0.2.7", .id = "r7", .body = 2,
                .expected = "POST /up HTTP/1.1\r\nHost: app.test\r\n"
                            "content-type: application/octet-stream\r\n"
                            "X-Forwarded-For: 192.0.2.7\r\nX-Forwarded-Proto: http\r\nX-Request-Id: r7\r\n"
                            "Transfer-Encoding: chunked\r\n\r\n",
        },
        {
                .name = "body of known length keeps its Content-Length (ours)",
                .method = "PUT", .target = "/x", .authority = "app.test",
                .fields = { { "Content-Length", "999" } },
                .peer = "192.0.2.7", .id = "r8", .body = 1, .content_length = 12345678901,
                .expected = "PUT /x HTTP/1.1\r\nHost: app.test\r\n"
                            "X-Forwarded-For: 192.0.2.7\r\nX-Forwarded-Proto: http\r\nX-Request-Id: r8\r\n"
                            "Content-Length: 12345678901\r\n\r\n",
        },
        {
                /* RFC 9112 3.2: an HTTP/1.1 request always has a Host, empty without an authority (an
                 * HTTP/1.0 client without Host, h2 without :authority) */
                .name = "no authority, no peer address, no id: an empty Host, no X-Forwarded-For",
                .method = "OPTIONS", .target = "*",
                .expected = "OPTIONS * HTTP/1.1\r\nHost: \r\nX-Forwarded-Proto: http\r\n\r\n",
        },
        {
                .name = "an empty authority (absolute-form http:///x): an empty Host",
                .method = "GET", .target = "/x", .authority = "",
                .peer = "192.0.2.7", .id = "r9b",
                .expected = "GET /x HTTP/1.1\r\nHost: \r\n"
                            "X-Forwarded-For: 192.0.2.7\r\nX-Forwarded-Proto: http\r\n"
                            "X-Request-Id: r9b\r\n\r\n",
        },
        {
                .name = "empty body with a length",
                .method = "POST", .target = "/", .authority = "a",
                .id = "r10", .body = 1, .content_length = 0,
                .expected = "POST / HTTP/1.1\r\nHost: a\r\nX-Forwarded-Proto: http\r\nX-Request-Id: r10\r\n"
                            "Content-Length: 0\r\n\r\n",
        },
};

static void case_exchange(FakeExchange *f, const SerializeCase *c) {
        fake_exchange_init(f, c->method, c->target, c->authority);
        for (size_t i = 0; i < ELEMENTSOF(c->fields) && c->fields[i][0]; i++)
                fake_exchange_add_field(f, c->fields[i][0], c->fields[i][1]);
        if (c->peer && strchr(c->peer, ':')) {
                struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *) &f->x.peer;
                sin6->sin6_family = AF_INET6;
                assert_int_equal(inet_pton(AF_INET6, c->peer, &sin6->sin6_addr), 1);
        } else if (c->peer) {
                struct sockaddr_in *sin = (struct sockaddr_in *) &f->x.peer;
                sin->sin_family = AF_INET;
                assert_int_equal(inet_pton(AF_INET, c->peer, &sin->sin_addr), 1);
        }
        f->x.via_tls_proxy = c->tls;
        f->x.peer_trusted = c->trusted;
        (void) snprintf(f->x.id, sizeof(f->x.id), "%s", strempty(c->id));
        f->x.user = (char *) c->user;
        if (c->body) {
                f->x.req.has_body = true;
                f->x.req.has_content_length = c->body == 1;
                f->x.req.content_length = c->content_length;
        }
}

static void test_forward_request_serialize(void **state) {
        const SerializeCase *c = *state;
        FakeExchange f;
        char buf[4096];
        size_t len = 0;

        case_exchange(&f, c);
        assert_int_equal(forward_request_serialize(&f.x, COOKIE, buf, sizeof(buf), &len), 0);
        if (len != strlen(c->expected) || memcmp(buf, c->expected, len) != 0)
                print_message("got:\n%.*s\nexpected:\n%s\n", (int) len, buf, c->expected);
        assert_int_equal(len, strlen(c->expected));
        assert_memory_equal(buf, c->expected, len);
}

static void test_forward_request_serialize_small_buffer(void **state) {
        const SerializeCase *c = serialize_cases;
        FakeExchange f;
        char buf[16];
        size_t len = 0;

        case_exchange(&f, c);
        assert_int_equal(forward_request_serialize(&f.x, COOKIE, buf, sizeof(buf), &len), 0);
        assert_int_equal(len, strlen(c->expected)); /* the whole length, like snprintf */
        assert_memory_equal(buf, c->expected, sizeof(buf));
        assert_int_equal(forward_request_serialize(&f.x, COOKIE, NULL, 0, &len), 0);
        assert_int_equal(len, strlen(c->expected));
}

/* Heads that must never reach a worker: "GET / " to authority "a" (unless the row says otherwise) with one
 * field, maybe a user. */
typedef struct RefuseCase {
        const char *name;
        const char *method, *target, *authority;
        const char *field, *value;
        size_t value_len; /* 0: strlen(value); more: the value holds a NUL (lengths, not C strings) */
        const char *user;
        int expected;
} RefuseCase;

static const RefuseCase refuse_cases[] = {
        { .name = "CRLF in a value", .field = "X-Evil", .value = "a\r\nInjected: 1", .expected = -EBADMSG },
        { .name = "LF in a value", .field = "X-Evil", .value = "a\nb", .expected = -EBADMSG },
        { .name = "control byte in a value", .field = "X-Evil", .value = "a\x01z", .expected = -EBADMSG },
        { .name = "NUL in a value", .field = "X", .value = "a\0b", .value_len = 3, .expected = -EBADMSG },
        { .name = "space in a name", .field = "Bad Name", .value = "v", .expected = -EBADMSG },
        { .name = "colon in a name", .field = "Bad:Name", .value = "v", .expected = -EBADMSG },
        { .name = "empty name", .field = "", .value = "v", .expected = -EBADMSG },
        { .name = "CRLF in a Cookie", .field = "Cookie", .value = "a=1\r\nX: y", .expected = -EBADMSG },
        { .name = "CRLF in X-Forwarded-For", .field = "X-Forwarded-For", .value = "1.2.3.4\r\n",
          .expected = -EBADMSG },
        { .name = "space in method", .method = "GE T", .field = "X", .value = "v", .expected = -EBADMSG },
        { .name = "space in target", .target = "/a b", .field = "X", .value = "v", .expected = -EBADMSG },
        { .name = "CRLF in target", .target = "/\r\n", .field = "X", .value = "v", .expected = -EBADMSG },
        { .name = "CRLF in authority", .authority = "a\r\nX: y", .field = "X", .value = "v",
          .expected = -EBADMSG },
        { .name = "LF in user", .field = "X", .value = "v", .user = "al\nice", .expected = -EBADMSG },
        { .name = "empty target", .target = "", .field = "X", .value = "v", .expected = -EINVAL },
};

static void test_forward_request_serialize_refuses(void **state) {
        const RefuseCase *c = *state;
        FakeExchange f;
        size_t len;

        fake_exchange_init(&f, c->method ?: "GET", c->target ?: "/", c->authority ?: "a");
        fake_exchange_add_field(&f, c->field, c->value);
        if (c->value_len > 0)
                f.req_fields[0].value_len = c->value_len;
        f.x.user = (char *) c->user;
        assert_int_equal(forward_request_serialize(&f.x, COOKIE, NULL, 0, &len), c->expected);
}

/* ---- response head filtering ---- */

static HeaderField hf(const char *name, const char *value) {
        return (HeaderField) {
                .name = name,
                .name_len = strlen(name),
                .value = value,
                .value_len = strlen(value),
        };
}

/* Rows give header fields as { name, value } pairs, up to the first empty slot. */
static size_t n_pairs(const char *const (*pairs)[2], size_t max) {
        size_t n = 0;

        while (n < max && pairs[n][0])
                n++;
        return n;
}
#define N_PAIRS(pairs) n_pairs((pairs), ELEMENTSOF(pairs))

/* A worker's response fields in, what the client may see of them out (in order), and the user named. */
typedef struct FilterCase {
        const char *name;
        const char *in[16][2];
        int expected;
        const char *out[4][2];
        const char *user; /* NULL: no Elastic-Pool-User field */
} FilterCase;

static const FilterCase filter_cases[] = {
        {
                .name = "extracts the user, drops hop-by-hop and Connection-named fields",
                .in = { { "Content-Type", "text/plain" }, { "Elastic-Pool-User", "  alice " },
                        { "Connection", "close, X-Hop" }, { "x-hop", "1" }, { "Keep-Alive", "timeout=5" },
                        { "Transfer-Encoding", "chunked" }, { "Content-Length", "3" },
                        { "Set-Cookie", "a=b; Path=/" }, { "elastic-pool-user", "bob" },
                        { "Upgrade", "h2c" }, { "Proxy-Authenticate", "Basic" }, { "Trailer", "X" },
                        { "X-Trailing-Space", "v \t" } },
                .out = { { "content-type", "text/plain" }, { "set-cookie", "a=b; Path=/" },
                         { "x-trailing-space", "v" } },
                .user = "alice",
        },
        { .name = "without a user", .in = { { "Date", "today" } }, .out = { { "date", "today" } } },
        { .name = "CRLF in a value", .in = { { "X", "a\r\n b" } }, .expected = -EBADMSG },
        { .name = "space in a name", .in = { { "X Y", "v" } }, .expected = -EBADMSG },
        { .name = "DEL in a value", .in = { { "X", "a\x7f" } }, .expected = -EBADMSG },
        { .name = "empty name", .in = { { "", "v" } }, .expected = -EBADMSG },
};

/* h2-response.c hands the filtered fields to nghttp2 without checking them again: the filter must let
 * through in a name (lower-cased, as h2 sends it) or a value exactly the bytes nghttp2's checks accept. */
static void test_forward_response_filter_as_strict_as_nghttp2(void **state) {
        for (unsigned c = 0; c < 256; c++) {
                char name[] = { 'x', (char) c, 'y', 0 }, value[] = { 'v', (char) c, 'w', 0 };
                uint8_t lower[3];
                HeaderField in[2] = {
                        { .name = name, .name_len = 3, .value = "v", .value_len = 1 },
                        { .name = "x", .name_len = 1, .value = value, .value_len = 3 },
                }, out[2];
                const char *user;
                size_t n, user_len;

                for (size_t j = 0; j < 3; j++)
                        lower[j] = (uint8_t) (name[j] >= 'A' && name[j] <= 'Z' ? name[j] + 32 : name[j]);
                /* the same bytes, neither more (unchecked bytes would reach nghttp2) nor fewer (RFC 9110's
                 * tchar and field-content are both sides' rule) */
                assert_int_equal(forward_response_filter(in, 1, out, &n, &user, &user_len) == 0,
                                 nghttp2_check_header_name(lower, 3) != 0);
                assert_int_equal(forward_response_filter(in + 1, 1, out, &n, &user, &user_len) == 0,
                                 nghttp2_check_header_value((const uint8_t *) value, 3) != 0);
        }
}

static void test_forward_response_filter(void **state) {
        const FilterCase *c = *state;
        size_t n_in = N_PAIRS(c->in), n_out = N_PAIRS(c->out), n, user_len = 9;
        HeaderField in[ELEMENTSOF(c->in)];
        /* exactly as many slots as fields in: a filter that wrote more would overflow on the heap */
        _cleanup_free_ HeaderField *out = malloc(n_in * sizeof(HeaderField));
        const char *user = "x"; /* poisoned: the filter sets both, user or not */

        assert_non_null(out);
        for (size_t i = 0; i < n_in; i++)
                in[i] = hf(c->in[i][0], c->in[i][1]);
        assert_int_equal(forward_response_filter(in, n_in, out, &n, &user, &user_len), c->expected);
        if (c->expected < 0)
                return;
        assert_int_equal(n, n_out);
        for (size_t i = 0; i < n_out; i++) {
                assert_true(header_name_is(out + i, c->out[i][0]));
                assert_int_equal(out[i].value_len, strlen(c->out[i][1]));
                assert_memory_equal(out[i].value, c->out[i][1], out[i].value_len);
        }
        assert_int_equal(user_len, c->user ? strlen(c->user) : 0);
        if (c->user) {
                assert_non_null(user);
                assert_memory_equal(user, c->user, user_len);
        } else
                assert_null(user);
}

/* ---- the pool against a fake worker ---- */

static void run_one(const char *response, FakeAction (*decide)(FakeConn *c), FakeExchange *f,
                    const char *method, FakeWorker *w, ForwardPool **ret_pool) {
        fake_worker_init(w, event, true);
        w->response = response;
        w->decide = decide;
        *ret_pool = pool_new(w->path, 4, 4, 5 * USEC_PER_SEC);
        get_init(f, "/", "one");
        if (method) {
                f->x.req.method = method;
                f->x.req.method_len = strlen(method);
                f->x.req.head_method = strcmp(method, "HEAD") == 0;
        }
        assert_int_equal(forward_start(*ret_pool, &f->x), 0);
        RUN_UNTIL(fake_exchange_finished(f));
}

/* A second GET on the same pool: reused (accepts stays 1) when the first left the connection clean. */
static void second_get(ForwardPool *p, FakeWorker *w, unsigned expected_accepts) {
        FakeExchange g;

        w->response = OK_RESPONSE;
        w->decide = NULL;
        get_init(&g, "/again", "two");
        assert_int_equal(forward_start(p, &g.x), 0);
        RUN_UNTIL(fake_exchange_finished(&g));
        assert_int_equal(g.ends, 1);
        assert_int_equal(g.body_len, 2);
        assert_int_equal(w->accepts, expected_accepts);
        fake_exchange_done(&g);
}

static void test_forward_start_sends_serialized_head(void **state) {
        FakeWorker w;
        FakeExchange f;
        ForwardPool *p;
        char expected[4096];
        size_t len;

        fake_worker_init(&w, event, true);
        p = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        get_init(&f, "/hello", "id-1");
        fake_exchange_add_field(&f, "Cookie", COOKIE "=signed; theme=dark");
        fake_exchange_add_field(&f, "Connection", "keep-alive");
        f.x.user = (char *) "alice";

        assert_int_equal(forward_start(p, &f.x), 0);
        assert_int_equal(forward_pool_counters(p)->inflight, 1);
        RUN_UNTIL(fake_exchange_finished(&f));

        assert_int_equal(f.ends, 1);
        assert_int_equal(f.status, 200);
        assert_int_equal(f.body_len, 2);
        assert_memory_equal(f.body, "ok", 2);
        assert_int_equal(forward_request_serialize(&f.x, COOKIE, expected, sizeof(expected), &len), 0);
        assert_int_equal(fake_conn(&w, 0)->raw_len, len);
        assert_memory_equal(fake_conn(&w, 0)->raw, expected, len);
        assert_non_null(strstr(expected, "\r\nCookie: theme=dark\r\n"));
        assert_non_null(strstr(expected, "\r\nX-Elastic-Pool-User: alice\r\n"));
        assert_null(strstr(expected, "Connection"));
        assert_int_equal(w.parse_errors, 0);

        fake_exchange_done(&f);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_start_reuses_keepalive_connection(void **state) {
        FakeWorker w;
        FakeExchange a, b;
        ForwardPool *p;
        const ForwardCounters *k;

        fake_worker_init(&w, event, true);
        p = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        k = forward_pool_counters(p);
        get_init(&a, "/1", "a");
        get_init(&b, "/2", "b");

        assert_int_equal(forward_start(p, &a.x), 0);
        RUN_UNTIL(fake_exchange_finished(&a));
        assert_int_equal(k->idle, 1);
        assert_int_equal(k->connections, 1);
        assert_int_equal(forward_start(p, &b.x), 0);
        assert_int_equal(k->idle, 0);
        RUN_UNTIL(fake_exchange_finished(&b));

        assert_int_equal(a.ends + b.ends, 2);
        assert_int_equal(w.accepts, 1); /* one connection carried both */
        assert_int_equal(fake_conn(&w, 0)->requests, 2);
        assert_int_equal(k->requests, 2);
        assert_int_equal(k->errors, 0);
        assert_int_equal(k->inflight, 0);
        assert_int_equal(k->idle, 1);
        assert_int_equal(k->answers, 2); /* what health reads */
        assert_int_equal(k->unanswered, 0);

        fake_exchange_done(&a);
        fake_exchange_done(&b);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_start_queues_beyond_max_connections(void **state) {
        FakeWorker w;
        FakeExchange f[5];
        ForwardPool *p;
        const ForwardCounters *k;
        unsigned max_conns = 0;

        fake_worker_init(&w, event, true);
        w.delay = 20 * USEC_PER_MSEC;
        p = pool_new(w.path, 2, 8, 5 * USEC_PER_SEC);
        k = forward_pool_counters(p);
        for (unsigned i = 0; i < ELEMENTSOF(f); i++) {
                char id[8];
                (void) snprintf(id, sizeof(id), "q%u", i);
                get_init(f + i, "/q", id);
                assert_int_equal(forward_start(p, &f[i].x), 0);
        }
        assert_int_equal(k->inflight, 5);
        assert_true(k->connections <= 2);

        while (fake_exchanges_finished < ELEMENTSOF(f)) {
                assert_true(sd_event_run(event, 10 * USEC_PER_MSEC) >= 0);
                max_conns = MAX(max_conns, k->connections);
        }
        for (unsigned i = 0; i < ELEMENTSOF(f); i++) {
                assert_int_equal(f[i].ends, 1);
                assert_int_equal(f[i].status, 200);
        }
        assert_true(max_conns <= 2);
        assert_true(w.max_open <= 2);
        assert_int_equal(w.accepts, 2);
        /* one client: the queue hands out connections in its arrival order */
        assert_true(f[2].finished_seq < f[4].finished_seq);
        assert_int_equal(k->inflight, 0);
        assert_int_equal(k->requests, 5);

        for (unsigned i = 0; i < ELEMENTSOF(f); i++)
                fake_exchange_done(f + i);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_start_refuses_when_queue_full(void **state) {
        FakeWorker w;
        FakeExchange a, b, c;
        ForwardPool *p;

        fake_worker_init(&w, event, true);
        w.decide = NULL;
        w.response = ""; /* never a byte back */
        p = pool_new(w.path, 1, 1, 5 * USEC_PER_SEC);
        get_init(&a, "/", "a");
        get_init(&b, "/", "b");
        get_init(&c, "/", "c");
        assert_int_equal(forward_start(p, &a.x), 0);
        assert_int_equal(forward_start(p, &b.x), 0);
        assert_int_equal(forward_start(p, &c.x), -EBUSY);
        assert_null(c.x.upstream);
        assert_int_equal(forward_pool_counters(p)->inflight, 2);

        forward_pool_free(p);
        assert_int_equal(a.fails + b.fails, 2);
        assert_int_equal(a.fail_status, 502);
        assert_int_equal(b.fail_status, 502);
        fake_exchange_done(&a);
        fake_exchange_done(&b);
        fake_exchange_done(&c);
        fake_worker_done(&w);
}

static FakeAction close_second_on_first(FakeConn *c) {
        return c->index == 0 && c->requests == 2 ? FAKE_CLOSE : FAKE_ANSWER;
}

static FakeAction close_after_first(FakeConn *c) {
        return c->index == 0 && c->requests == 1 ? FAKE_ANSWER : FAKE_CLOSE;
}

/* The keep-alive race: a GET leaves a connection idle, then the worker closes it instead of answering the
 * next request, b. Replayed once on a fresh connection when that cannot repeat an effect. */
typedef struct RetryCase {
        const char *name;
        const char *method, *body; /* b's; body NULL: b is a GET without one */
        FakeAction (*decide)(FakeConn *c);
        unsigned status; /* 200: b was answered after all; else it failed with this */
        const char *reason;
        unsigned accepts, retries, errors;
} RetryCase;

static const RetryCase retry_cases[] = {
        /* the worker drops the socket just as we reuse it; PUT is idempotent */
        { .name = "PUT replayed whole on a fresh connection", .method = "PUT", .body = "hello",
          .decide = close_second_on_first, .status = 200, .accepts = 2, .retries = 1, .errors = 0 },
        /* the worker read a POST whole before the close: it may have acted on it */
        { .name = "POST never replayed", .method = "POST", .body = "hello", .decide = close_second_on_first,
          .status = 502, .reason = "before responding", .accepts = 1, .retries = 0, .errors = 1 },
        { .name = "the fresh connection closes too: retried only once", .decide = close_after_first,
          .status = 502, .reason = "before responding", .accepts = 2, .retries = 1, .errors = 1 },
};

static void test_forward_start_stale_keepalive(void **state) {
        const RetryCase *c = *state;
        FakeWorker w;
        FakeExchange a, b;
        ForwardPool *p;
        ForwardBufferStats s;

        fake_worker_init(&w, event, true);
        w.decide = c->decide;
        p = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        get_init(&a, "/1", "a");
        if (c->body) {
                fake_exchange_init(&b, c->method, "/2", "app.test");
                (void) snprintf(b.x.id, sizeof(b.x.id), "b");
                fake_exchange_set_body(&b, c->body, strlen(c->body), true, 0);
        } else
                get_init(&b, "/2", "b");

        assert_int_equal(forward_start(p, &a.x), 0);
        RUN_UNTIL(fake_exchange_finished(&a));
        assert_int_equal(forward_start(p, &b.x), 0);
        if (c->body)
                fake_exchange_pump(&b);
        RUN_UNTIL(fake_exchange_finished(&b));

        if (c->status == 200) {
                assert_int_equal(b.fails, 0); /* the router never saw the race */
                assert_int_equal(b.ends, 1);
                assert_int_equal(b.status, 200);
                /* the replay on the fresh connection carried the whole request, body included */
                assert_int_equal(fake_conn(&w, 1)->body_len, strlen(c->body));
                assert_memory_equal(fake_conn(&w, 1)->body, c->body, strlen(c->body));
                assert_int_equal(fake_conn(&w, 1)->requests, 1);
        } else {
                assert_int_equal(b.fails, 1);
                assert_int_equal(b.fail_status, c->status);
                assert_non_null(strstr(b.fail_reason, "w7 request b:"));
                assert_non_null(strstr(b.fail_reason, c->reason));
        }
        assert_int_equal(w.accepts, c->accepts);
        forward_pool_buffer_stats(p, &s);
        assert_int_equal(s.retries, c->retries);
        assert_int_equal(forward_pool_counters(p)->errors, c->errors);

        fake_exchange_done(&a);
        fake_exchange_done(&b);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static FakeAction always_close(FakeConn *c) {
        return FAKE_CLOSE;
}

static FakeAction silent(FakeConn *c) {
        return FAKE_SILENT;
}

static FakeAction silent_on_slow(FakeConn *c) {
        /* raw is the bytes received so far, not a C string */
        return c->raw && memmem(c->raw, c->raw_len, "GET /slow ", 10) ? FAKE_SILENT : FAKE_ANSWER;
}

/* Health counts what a worker leaves unanswered, not what it is slow at: a request that times out while
 * the worker answered another meanwhile does not count; one begun after its last answer does. */
static void test_forward_unanswered_only_after_last_answer(void **state) {
        const ForwardCounters *k;
        FakeExchange a, b, c;
        FakeWorker w;
        ForwardPool *p;

        fake_worker_init(&w, event, true);
        w.decide = silent_on_slow;
        p = pool_new(w.path, 4, 4, 100 * USEC_PER_MSEC);
        k = forward_pool_counters(p);
        get_init(&a, "/slow", "a");
        get_init(&b, "/", "b");
        assert_int_equal(forward_start(p, &a.x), 0);
        RUN_UNTIL(w.requests == 1);
        assert_int_equal(forward_start(p, &b.x), 0);
        RUN_UNTIL(fake_exchange_finished(&a) && fake_exchange_finished(&b));
        assert_int_equal(a.fail_status, 504);
        assert_int_equal(b.ends, 1);
        assert_int_equal(k->answers, 1);
        assert_int_equal(k->unanswered, 0);

        /* begun after that answer, and nothing answered while it waited: it counts */
        get_init(&c, "/slow", "c");
        assert_int_equal(forward_start(p, &c.x), 0);
        RUN_UNTIL(fake_exchange_finished(&c));
        assert_int_equal(c.fail_status, 504);
        assert_int_equal(k->unanswered, 1);

        fake_exchange_done(&a);
        fake_exchange_done(&b);
        fake_exchange_done(&c);
        forward_pool_free(p);
        fake_worker_done(&w);
}

/* Few fields, each large: the byte limit, not the field count, trips. */
static char *oversized_head(void) {
        size_t n = FORWARD_RESPONSE_HEAD_MAX + 1024;
        char *big = malloc(n + 16 * 1024);

        assert_non_null(big);
        strcpy(big, "HTTP/1.1 200 OK\r\n");
        for (size_t at = strlen(big); at < n; at = strlen(big)) {
                strcat(big, "X-Filler: ");
                memset(big + strlen(big), 'a', 8000);
                big[at + 10 + 8000] = 0;
                strcat(big, "\r\n");
        }
        strcat(big, "Content-Length: 0\r\n\r\n");
        return big;
}

static char *too_many_fields(void) {
        char *big = malloc(8192);

        assert_non_null(big);
        strcpy(big, "HTTP/1.1 200 OK\r\n");
        for (unsigned i = 0; i <= EXCHANGE_FIELDS_MAX; i++)
                (void) snprintf(big + strlen(big), 8192 - strlen(big), "X-F%u: v\r\n", i);
        strcat(big, "Content-Length: 0\r\n\r\n");
        return big;
}

/* One GET that fails before any response head reaches the client: no connection, a worker that hangs up
 * or stays silent, or one whose answer we must not pass on. A connection that failed is never reused. */
typedef enum FailureWorker {
        WORKER_LISTENING,
        WORKER_BOUND_ONLY, /* connect() is refused */
        WORKER_MISSING,    /* no socket file at all */
} FailureWorker;

typedef struct FailureCase {
        const char *name;
        FailureWorker worker;
        FakeAction (*decide)(FakeConn *c);
        const char *response;         /* NULL: OK_RESPONSE */
        char *(*make_response)(void); /* instead of response, when it is too long to spell out */
        usec_t response_timeout;      /* 0: 5 s */
        usec_t min_elapsed;
        const char *target; /* NULL: "/" */
        const char *id;
        unsigned status;
        const char *reason;
        bool worker_sees_eof; /* we hang up, not the worker */
        bool unanswered;      /* health counts it against the worker: no connection, or no head in time */
} FailureCase;

static const FailureCase failure_cases[] = {
        { .name = "connection refused", .worker = WORKER_BOUND_ONLY,
          .id = "cr", .status = 502, .reason = "refused", .unanswered = true },
        { .name = "socket missing", .worker = WORKER_MISSING,
          .id = "ms", .status = 502, .reason = "No such file", .unanswered = true },
        /* a fresh connection: no retry */
        { .name = "worker closes before responding", .decide = always_close,
          .id = "rst", .status = 502, .reason = "before responding" },
        { .name = "no response head in time", .decide = silent, .response_timeout = 60 * USEC_PER_MSEC,
          .min_elapsed = 55 * USEC_PER_MSEC, .worker_sees_eof = true,
          .target = "/slow", .id = "to", .status = 504, .reason = "no response head within",
          .unanswered = true },
        { .name = "status not a number", .response = "HTTP/1.1 2x0 OK\r\n\r\n",
          .id = "bad", .status = 502, .reason = "malformed response head" },
        { .name = "status above 599", .response = "HTTP/1.1 700 Weird\r\nContent-Length: 0\r\n\r\n",
          .id = "bad", .status = 502, .reason = "invalid status" },
        { .name = "status below 100", .response = "HTTP/1.1 099 Low\r\nContent-Length: 0\r\n\r\n",
          .id = "bad", .status = 502, .reason = "invalid status" },
        { .name = "101 upgrade",
          .response = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: upgrade\r\n\r\n",
          .id = "bad", .status = 502, .reason = "101" },
        { .name = "obs-fold",
          .response = "HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 0\r\n\r\n",
          .id = "bad", .status = 502, .reason = "obs-fold" },
        { .name = "Content-Length and chunked",
          .response = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
          .id = "bad", .status = 502, .reason = "malformed" },
        { .name = "chunked, then another coding",
          .response = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n2\r\nok\r\n0\r\n\r\n",
          .id = "bad", .status = 502, .reason = "a transfer coding other than chunked alone" },
        { .name = "another coding, then chunked",
          .response = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
          .id = "bad", .status = 502, .reason = "a transfer coding other than chunked alone" },
        { .name = "chunked twice",
          .response = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n",
          .id = "bad", .status = 502, .reason = "a transfer coding other than chunked alone" },
        { .name = "a coding alone (a body read until close)",
          .response = "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nok",
          .id = "bad", .status = 502, .reason = "a transfer coding other than chunked alone" },
        { .name = "control byte in a value",
          .response = "HTTP/1.1 200 OK\r\nX: a\x01z\r\nContent-Length: 0\r\n\r\n",
          .id = "bad", .status = 502, .reason = "malformed response head" },
        { .name = "not HTTP", .response = "SMTP ready\r\n",
          .id = "bad", .status = 502, .reason = "malformed response head" },
        { .name = "head larger than the limit", .make_response = oversized_head,
          .id = "big", .status = 502, .reason = "response head larger than 65536 bytes" },
        { .name = "too many fields", .make_response = too_many_fields,
          .id = "many", .status = 502, .reason = "more than 128 header fields" },
};

static void test_forward_start_fails_before_head(void **state) {
        const FailureCase *c = *state;
        _cleanup_free_ char *made = c->make_response ? c->make_response() : NULL;
        bool has_worker = c->worker != WORKER_MISSING, listening = c->worker == WORKER_LISTENING;
        FakeWorker w;
        FakeExchange f;
        ForwardPool *p;
        ForwardBufferStats s;
        char prefix[64];
        usec_t t0;

        if (has_worker) {
                fake_worker_init(&w, event, listening);
                w.decide = c->decide;
                w.response = made ?: c->response ?: OK_RESPONSE;
        }
        p = pool_new(has_worker ? w.path : "/nonexistent/elastic-pool/w7.sock", 4, 4,
                     c->response_timeout ?: 5 * USEC_PER_SEC);
        get_init(&f, c->target ?: "/", c->id);
        t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(forward_start(p, &f.x), 0); /* the outcome arrives through the router */
        assert_int_equal(f.fails, 0);
        RUN_UNTIL(fake_exchange_finished(&f));
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 >= c->min_elapsed);

        assert_int_equal(f.fails, 1);
        assert_int_equal(f.fail_status, c->status);
        assert_int_equal(f.heads, 0);
        assert_false(f.failed_after_head);
        (void) snprintf(prefix, sizeof(prefix), "w7 request %s:", c->id);
        assert_non_null(strstr(f.fail_reason, prefix));
        assert_non_null(strstr(f.fail_reason, c->reason));
        assert_int_equal(forward_pool_counters(p)->errors, 1);
        assert_int_equal(forward_pool_counters(p)->connections, 0);
        assert_int_equal(forward_pool_counters(p)->inflight, 0);
        /* a worker that answers wrongly answers: only silence counts for health */
        assert_int_equal(forward_pool_counters(p)->unanswered, c->unanswered ? 1 : 0);
        assert_int_equal(forward_pool_counters(p)->answers, 0);
        forward_pool_buffer_stats(p, &s);
        assert_true(s.response_buffer_peak <= FORWARD_RESPONSE_HEAD_MAX);
        if (listening) {
                assert_int_equal(w.accepts, 1);
                if (c->worker_sees_eof)
                        RUN_UNTIL(fake_conn(&w, 0)->eof);
                /* the next exchange gets a new connection, never the one that failed */
                second_get(p, &w, 2);
                assert_true(fake_conn(&w, 0)->closed);
        }

        fake_exchange_done(&f);
        forward_pool_free(p);
        if (has_worker)
                fake_worker_done(&w);
}

static void test_forward_start_queue_timeout(void **state) {
        FakeWorker w;
        FakeExchange a, b;
        ForwardPool *p;
        _cleanup_free_ char *body = calloc(1, 32 * 1024);

        assert_non_null(body);
        fake_worker_init(&w, event, true);
        p = pool_new(w.path, 1, 4, 80 * USEC_PER_MSEC);
        /* a holds the only connection while its client is slow with the body: no deadline of ours */
        fake_exchange_init(&a, "PUT", "/", "app.test");
        fake_exchange_set_body(&a, body, 32 * 1024, true, 1024);
        get_init(&b, "/", "b");
        assert_int_equal(forward_start(p, &a.x), 0);
        assert_int_equal(forward_request_body(&a.x, body, 1024), 0);
        assert_int_equal(forward_start(p, &b.x), 0);
        RUN_UNTIL(fake_exchange_finished(&b));
        assert_int_equal(b.fail_status, 504);
        assert_non_null(strstr(b.fail_reason, "w7 request b: no free connection to the worker within 80ms"));
        assert_false(fake_exchange_finished(&a));
        assert_int_equal(forward_pool_counters(p)->inflight, 1);
        fake_exchange_done(&a);
        assert_int_equal(forward_pool_counters(p)->inflight, 0);
        fake_exchange_done(&b);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static int start_accepting(sd_event_source *s, uint64_t usec, void *userdata) {
        fake_worker_start_accepting(userdata);
        return 0;
}

static void test_forward_start_backlog_full_retries_connect(void **state) {
        FakeWorker w;
        FakeExchange f[4];
        ForwardPool *p;
        ForwardBufferStats s;
        sd_event_source *later = NULL;

        fake_worker_init_backlogged(&w, event);
        p = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        for (unsigned i = 0; i < ELEMENTSOF(f); i++) {
                get_init(f + i, "/", "bl");
                assert_int_equal(forward_start(p, &f[i].x), 0);
        }
        assert_true(sd_event_add_time_relative(event, &later, CLOCK_MONOTONIC, 30 * USEC_PER_MSEC, 0,
                                               start_accepting, &w) >= 0);
        RUN_UNTIL(fake_exchanges_finished == ELEMENTSOF(f));
        for (unsigned i = 0; i < ELEMENTSOF(f); i++)
                assert_int_equal(f[i].ends, 1); /* a full accept backlog delays, it does not fail */
        forward_pool_buffer_stats(p, &s);
        assert_true(s.connects > ELEMENTSOF(f)); /* some connect()s met EAGAIN and were tried again */
        later = sd_event_source_disable_unref(later);
        for (unsigned i = 0; i < ELEMENTSOF(f); i++)
                fake_exchange_done(f + i);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_start_backlog_full_until_timeout(void **state) {
        FakeWorker w;
        FakeExchange f[3];
        ForwardPool *p;
        unsigned backlog = 0;

        fake_worker_init_backlogged(&w, event);
        p = pool_new(w.path, 4, 4, 60 * USEC_PER_MSEC);
        for (unsigned i = 0; i < ELEMENTSOF(f); i++) {
                get_init(f + i, "/", "bl");
                assert_int_equal(forward_start(p, &f[i].x), 0);
        }
        RUN_UNTIL(fake_exchanges_finished == ELEMENTSOF(f));
        for (unsigned i = 0; i < ELEMENTSOF(f); i++) {
                assert_int_equal(f[i].fail_status, 504);
                backlog += strstr(f[i].fail_reason, "backlog full") != NULL;
        }
        assert_true(backlog >= 1);
        for (unsigned i = 0; i < ELEMENTSOF(f); i++)
                fake_exchange_done(f + i);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_start_body_broken_after_head(void **state) {
        FakeWorker w;
        FakeExchange f;
        ForwardPool *p;

        fake_worker_init(&w, event, true);
        w.response = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf";
        p = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        get_init(&f, "/", "brk");
        assert_int_equal(forward_start(p, &f.x), 0);
        RUN_UNTIL(f.heads == 1 && f.body_len == 4);
        fake_conn_close(fake_conn(&w, 0));
        RUN_UNTIL(fake_exchange_finished(&f));
        assert_int_equal(f.fails, 1);
        assert_true(f.failed_after_head); /* the router aborts the client response */
        assert_non_null(strstr(f.fail_reason, "after 4 bytes"));
        assert_int_equal(forward_pool_counters(p)->errors, 1);
        fake_exchange_done(&f);
        forward_pool_free(p);
        fake_worker_done(&w);
}

/* ---- response heads ---- */

static FakeAction answer_close(FakeConn *c) {
        return FAKE_ANSWER_CLOSE;
}

/* One response from the worker and everything the client side saw of it; then whether its connection went
 * back to the pool, shown by a second GET that reuses it or needs a new one. */
typedef struct ResponseCase {
        const char *name;
        const char *method; /* NULL: GET */
        const char *response;
        FakeAction (*decide)(FakeConn *c); /* NULL: answer and keep the connection */
        unsigned status;
        const char *fields[4][2]; /* what the client may see, in order */
        const char *user;         /* NULL: no Elastic-Pool-User */
        int64_t content_length;   /* -1: none */
        const char *body;         /* NULL: the response has none (not even an empty one) */
        bool closes;              /* the connection is not reused */
} ResponseCase;

static const ResponseCase response_cases[] = {
        { .name = "hop-by-hop fields dropped, user taken, chunked body and trailer",
          .response = "HTTP/1.1 200 OK\r\nConnection: X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\n"
                      "Elastic-Pool-User: alice\r\nTransfer-Encoding: chunked\r\n"
                      "Content-Type: text/plain\r\n"
                      "\r\n5\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n",
          .status = 200, .fields = { { "Content-Type", "text/plain" } }, .user = "alice",
          .content_length = -1, .body = "hello world" },
        { .name = "logout",
          .response = "HTTP/1.1 200 OK\r\nelastic-pool-user: -\r\nContent-Length: 0\r\n\r\n",
          .status = 200, .user = "-", .content_length = 0, .body = "" },
        { .name = "no user", .response = OK_RESPONSE, .status = 200, .content_length = 2, .body = "ok" },
        /* the Content-Length a GET would have had, which the client side may announce; and nobody waits for
         * 100 bytes that never come */
        { .name = "HEAD request has no body", .method = "HEAD",
          .response = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nContent-Type: text/html\r\n\r\n",
          .status = 200, .fields = { { "Content-Type", "text/html" } }, .content_length = 100 },
        { .name = "304 has no body",
          .response = "HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\nETag: \"x\"\r\n\r\n",
          .status = 304, .fields = { { "ETag", "\"x\"" } }, .content_length = 50 },
        { .name = "204 has no body", .response = "HTTP/1.1 204 No Content\r\n\r\n",
          .status = 204, .content_length = -1 },
        /* nothing of the interim heads leaks into the final one */
        { .name = "100 Continue and 103 Early Hints swallowed",
          .response = "HTTP/1.1 100 Continue\r\n\r\n"
                      "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n" OK_RESPONSE,
          .status = 200, .content_length = 2, .body = "ok" },
        { .name = "Connection: close not reused",
          .response = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
          .status = 200, .content_length = 2, .body = "ok", .closes = true },
        { .name = "HTTP/1.0 with keep-alive reused",
          .response = "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
          .status = 200, .content_length = 2, .body = "ok" },
        { .name = "body delimited by the end of the connection", .decide = answer_close,
          .response = "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end",
          .status = 200, .fields = { { "Content-Type", "text/plain" } }, .content_length = -1,
          .body = "until the end", .closes = true },
        /* the start of a response nobody asked for: the connection is out of step */
        { .name = "extra bytes after the response not reused", .response = OK_RESPONSE "HTTP/1.1 200 OK\r\n",
          .status = 200, .content_length = 2, .body = "ok", .closes = true },
};

static void test_forward_response(void **state) {
        const ResponseCase *c = *state;
        size_t n_fields = N_PAIRS(c->fields);
        FakeWorker w;
        FakeExchange f;
        ForwardPool *p;

        run_one(c->response, c->decide, &f, c->method, &w, &p);
        assert_int_equal(f.heads, 1);
        assert_int_equal(f.ends, 1);
        assert_int_equal(f.status, c->status);
        assert_int_equal(f.n_fields, n_fields);
        for (size_t i = 0; i < n_fields; i++) {
                assert_string_equal(f.fields[i].name, c->fields[i][0]);
                assert_string_equal(f.fields[i].value, c->fields[i][1]);
        }
        assert_int_equal(f.has_user, c->user != NULL);
        if (c->user)
                assert_string_equal(f.user, c->user);
        else
                assert_null(f.user);
        assert_int_equal(f.has_body, c->body != NULL);
        assert_int_equal(f.has_content_length, c->content_length >= 0);
        if (c->content_length >= 0)
                assert_int_equal(f.content_length, c->content_length);
        assert_int_equal(f.body_len, strlen(strempty(c->body)));
        if (f.body_len > 0)
                assert_memory_equal(f.body, c->body, f.body_len);
        assert_int_equal(forward_pool_counters(p)->connections, c->closes ? 0 : 1);
        second_get(p, &w, c->closes ? 2 : 1);

        fake_exchange_done(&f);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_response_head_client_gone(void **state) {
        FakeWorker w;
        FakeExchange f;
        ForwardPool *p;

        fake_worker_init(&w, event, true);
        w.response = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        p = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        get_init(&f, "/", "gone");
        f.head_return = -EPIPE;
        assert_int_equal(forward_start(p, &f.x), 0);
        RUN_UNTIL(f.heads == 1);
        run_for(20 * USEC_PER_MSEC);
        assert_int_equal(f.ends + f.fails, 0); /* the router knows: no more calls */
        assert_null(f.x.upstream);
        assert_int_equal(forward_pool_counters(p)->inflight, 0);
        assert_int_equal(forward_pool_counters(p)->connections, 0);
        fake_exchange_done(&f);
        forward_pool_free(p);
        fake_worker_done(&w);
}

/* ---- request bodies ---- */

static void test_forward_request_body_chunked_reframing(void **state) {
        FakeWorker w;
        FakeExchange f;
        ForwardPool *p;
        FakeConn *c;

        fake_worker_init(&w, event, true);
        p = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        fake_exchange_init(&f, "POST", "/up", "app.test");
        (void) snprintf(f.x.id, sizeof(f.x.id), "ch");
        fake_exchange_set_body(&f, "hello chunked world", 19, false, 5);
        assert_int_equal(forward_start(p, &f.x), 0);
        fake_exchange_pump(&f);
        RUN_UNTIL(fake_exchange_finished(&f));
        assert_int_equal(f.ends, 1);
        c = fake_conn(&w, 0);
        assert_int_equal(c->body_len, 19);
        assert_memory_equal(c->body, "hello chunked world", 19);
        assert_non_null(memmem(c->raw, c->raw_len, "Transfer-Encoding: chunked\r\n", 28));
        {
                static const char framed[] =
                        "\r\n\r\n5\r\nhello\r\n5\r\n chun\r\n5\r\nked w\r\n4\r\norld\r\n0\r\n\r\n";
                size_t n = sizeof(framed) - 1;
                assert_true(c->raw_len > n);
                assert_memory_equal(c->raw + c->raw_len - n, framed, n); /* and nothing after */
        }
        assert_int_equal(w.parse_errors, 0);
        second_get(p, &w, 1);
        fake_exchange_done(&f);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_request_body_small_body_with_head(void **state) {
        FakeWorker w;
        FakeExchange f;
        ForwardPool *p;
        FakeConn *c;

        fake_worker_init(&w, event, true);
        p = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        fake_exchange_init(&f, "POST", "/form", "app.test");
        fake_exchange_set_body(&f, "a=1&b=2", 7, true, 3);
        assert_int_equal(forward_start(p, &f.x), 0);
        run_for(5 * USEC_PER_MSEC);
        assert_int_equal(w.requests, 0); /* the head waits for its small body */
        fake_exchange_pump(&f);
        RUN_UNTIL(fake_exchange_finished(&f));
        c = fake_conn(&w, 0);
        assert_int_equal(c->body_len, 7);
        assert_memory_equal(c->raw + c->raw_len - 7, "a=1&b=2", 7);
        assert_non_null(memmem(c->raw, c->raw_len, "\r\nContent-Length: 7\r\n\r\n", 23));
        fake_exchange_done(&f);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_detach_short_body_closes_connection(void **state) {
        FakeWorker w;
        FakeExchange f;
        ForwardPool *p;
        _cleanup_free_ char *body = calloc(1, 64 * 1024);

        assert_non_null(body);
        fake_worker_init(&w, event, true);
        w.decide = NULL;
        p = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        fake_exchange_init(&f, "PUT", "/big", "app.test");
        fake_exchange_set_body(&f, body, 64 * 1024, true, 20 * 1024);
        f.req_body_len = 20 * 1024; /* the client stops after 20 KiB of 64 */
        f.req_ended = true;
        assert_int_equal(forward_start(p, &f.x), 0);
        fake_exchange_pump(&f);
        RUN_UNTIL(fake_conn(&w, 0) && fake_conn(&w, 0)->body_len == 20 * 1024);

        forward_detach(&f.x); /* the client side gave up on it */
        assert_null(f.x.upstream);
        assert_int_equal(forward_pool_counters(p)->connections, 0);
        assert_int_equal(forward_pool_counters(p)->inflight, 0);
        RUN_UNTIL(fake_conn(&w, 0)->eof); /* the worker sees the truncated request end */
        assert_int_equal(fake_conn(&w, 0)->requests, 0);
        second_get(p, &w, 2);
        assert_int_equal(f.ends + f.fails, 0);
        fake_exchange_done(&f);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_request_end_short_body_refused(void **state) {
        FakeWorker w;
        FakeExchange f;
        ForwardPool *p;

        fake_worker_init(&w, event, true);
        p = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        fake_exchange_init(&f, "POST", "/", "app.test");
        fake_exchange_set_body(&f, "12345", 10, true, 0);
        assert_int_equal(forward_start(p, &f.x), 0);
        assert_int_equal(forward_request_body(&f.x, "12345", 5), 0);
        assert_int_equal(forward_request_end(&f.x), -EBADMSG);
        assert_null(f.x.upstream);
        assert_int_equal(forward_request_body(&f.x, "x", 1), -ENOTCONN);
        assert_int_equal(forward_pool_counters(p)->connections, 0);
        assert_int_equal(forward_pool_counters(p)->inflight, 0);
        run_for(20 * USEC_PER_MSEC);
        assert_int_equal(w.requests, 0);
        fake_exchange_done(&f);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_start_refuses_bad_head(void **state) {
        FakeWorker w;
        FakeExchange f;
        ForwardPool *p;

        fake_worker_init(&w, event, true);
        p = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        get_init(&f, "/", "bad");
        fake_exchange_add_field(&f, "X-Smuggle", "a\r\nGET /admin HTTP/1.1");
        assert_int_equal(forward_start(p, &f.x), -EBADMSG);
        assert_null(f.x.upstream);
        assert_int_equal(forward_pool_counters(p)->inflight, 0);
        assert_int_equal(forward_pool_counters(p)->connections, 0);
        run_for(10 * USEC_PER_MSEC);
        assert_int_equal(w.accepts, 0);
        fake_exchange_done(&f);
        forward_pool_free(p);
        fake_worker_done(&w);
}

/* 1 MiB up and back through an echoing worker while the client stops reading now and then: both
 * directions pause and resume, and no buffer of ours grows past its mark. */
typedef struct Streaming {
        FakeExchange f;
        sd_event_source *resume;
        size_t next_pause;
        unsigned response_pauses;
} Streaming;

static int on_resume_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Streaming *st = userdata;

        st->resume = sd_event_source_unref(st->resume);
        forward_response_resume(&st->f.x);
        return 0;
}

static int streaming_body(FakeExchange *f, const void *data, size_t size) {
        Streaming *st = (Streaming *) f;

        if (f->body_len < st->next_pause)
                return 0;
        st->next_pause += 128 * 1024;
        st->response_pauses++;
        assert_null(st->resume);
        assert_true(sd_event_add_time_relative(event, &st->resume, CLOCK_MONOTONIC, 3 * USEC_PER_MSEC, 0,
                                               on_resume_timer, st) >= 0);
        return 1;
}

static void streaming_request_resumed(FakeExchange *f) {
        fake_exchange_pump(f); /* pushes again from inside the callout */
}

static void test_forward_request_body_streams_with_backpressure(void **state) {
        const size_t size = 1024 * 1024, chunk = 16 * 1024;
        _cleanup_free_ char *body = malloc(size);
        FakeWorker w;
        Streaming st = {};
        ForwardPool *p;
        ForwardBufferStats s;

        assert_non_null(body);
        for (size_t i = 0; i < size; i++)
                body[i] = (char) ('a' + (i * 7 + i / 4096) % 26);
        fake_worker_init(&w, event, true);
        w.echo = true;
        p = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        fake_exchange_init(&st.f, "POST", "/echo", "app.test");
        (void) snprintf(st.f.x.id, sizeof(st.f.x.id), "echo");
        fake_exchange_set_body(&st.f, body, size, true, chunk);
        st.f.on_body = streaming_body;
        st.f.on_request_body_resume = streaming_request_resumed;
        st.next_pause = 64 * 1024;

        assert_int_equal(forward_start(p, &st.f.x), 0);
        fake_exchange_pump(&st.f);
        RUN_UNTIL(fake_exchange_finished(&st.f));

        assert_int_equal(st.f.ends, 1);
        assert_int_equal(st.f.content_length, size);
        assert_int_equal(st.f.body_len, size);
        assert_memory_equal(st.f.body, body, size);
        assert_int_equal(fake_conn(&w, 0)->body_len, size);
        assert_true(st.f.request_pauses >= 1);
        assert_true(st.f.request_resumes >= 1);
        assert_true(st.response_pauses >= 4);
        forward_pool_buffer_stats(p, &s);
        print_message("request buffer peak %zu, response buffer peak %zu, %u request pauses, "
                      "%u response pauses\n",
                      s.request_buffer_peak, s.response_buffer_peak, st.f.request_pauses,
                      st.response_pauses);
        assert_true(s.request_buffer_peak <= FORWARD_BODY_HIGH_WATER + chunk);
        assert_true(s.response_buffer_peak <= FORWARD_RESPONSE_HEAD_MAX);
        w.echo = false;
        second_get(p, &w, 1);

        st.resume = sd_event_source_disable_unref(st.resume);
        fake_exchange_done(&st.f);
        forward_pool_free(p);
        fake_worker_done(&w);
}

/* From another address than get_init()'s loopback: another client of the slot share. */
static void set_peer(FakeExchange *f, const char *addr) {
        struct sockaddr_in *sin = (struct sockaddr_in *) &f->x.peer;

        sin->sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, addr, &sin->sin_addr), 1);
}

static void test_forward_start_freed_connection_to_the_client_holding_fewest(void **state) {
        FakeWorker w;
        FakeExchange a[3], b;
        ForwardPool *p;

        fake_worker_init(&w, event, true);
        w.delay = 10 * USEC_PER_MSEC;
        p = pool_new(w.path, 1, 8, 5 * USEC_PER_SEC);
        for (unsigned i = 0; i < ELEMENTSOF(a); i++) {
                get_init(&a[i], "/greedy", "a");
                assert_int_equal(forward_start(p, &a[i].x), 0);
        }
        get_init(&b, "/polite", "b");
        set_peer(&b, "10.0.0.2");
        assert_int_equal(forward_start(p, &b.x), 0); /* queued last */
        RUN_UNTIL(fake_exchanges_finished == 4);
        /* the connection a[0] frees goes to b, which holds none, before a's other requests */
        assert_true(a[0].finished_seq < b.finished_seq);
        assert_true(b.finished_seq < a[1].finished_seq);
        assert_true(a[1].finished_seq < a[2].finished_seq);
        for (unsigned i = 0; i < ELEMENTSOF(a); i++) {
                assert_int_equal(a[i].status, 200);
                fake_exchange_done(&a[i]);
        }
        assert_int_equal(b.status, 200);
        fake_exchange_done(&b);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_start_refuses_past_the_client_queue_share(void **state) {
        FakeWorker w;
        FakeExchange a[4], b;
        ForwardPool *p;

        fake_worker_init(&w, event, true);
        w.decide = NULL;
        w.response = ""; /* never a byte back */
        p = pool_new(w.path, 1, 4, 5 * USEC_PER_SEC); /* a client may queue half of 4 */
        for (unsigned i = 0; i < ELEMENTSOF(a); i++)
                get_init(&a[i], "/", "a");
        assert_int_equal(forward_start(p, &a[0].x), 0); /* on the connection */
        assert_int_equal(forward_start(p, &a[1].x), 0);
        assert_int_equal(forward_start(p, &a[2].x), 0);
        assert_int_equal(forward_start(p, &a[3].x), -EDQUOT);
        assert_null(a[3].x.upstream);
        get_init(&b, "/", "b");
        set_peer(&b, "10.0.0.2");
        assert_int_equal(forward_start(p, &b.x), 0); /* another client still has room */
        assert_int_equal(forward_pool_counters(p)->inflight, 4);

        forward_pool_free(p);
        for (unsigned i = 0; i < ELEMENTSOF(a); i++)
                fake_exchange_done(&a[i]);
        fake_exchange_done(&b);
        fake_worker_done(&w);
}

static void test_forward_start_queued_body_waits_for_its_first_bytes(void **state) {
        FakeWorker w;
        FakeExchange a, b, c;
        ForwardPool *p;

        fake_worker_init(&w, event, true);
        w.delay = 10 * USEC_PER_MSEC;
        p = pool_new(w.path, 1, 8, 5 * USEC_PER_SEC);
        get_init(&a, "/", "a");
        fake_exchange_init(&b, "POST", "/", "app.test");
        fake_exchange_set_body(&b, "late body", 9, true, 0);
        get_init(&c, "/", "c");
        assert_int_equal(forward_start(p, &a.x), 0);
        assert_int_equal(forward_start(p, &b.x), 0); /* queued, no body byte yet */
        assert_int_equal(forward_start(p, &c.x), 0);
        /* a's connection goes to c, which can use it; b's head is held back */
        RUN_UNTIL(fake_exchanges_finished == 2);
        assert_true(fake_exchange_finished(&a) && fake_exchange_finished(&c));
        assert_false(b.x.on_worker);
        assert_int_equal(fake_conn(&w, 0)->requests, 2);
        fake_exchange_pump(&b); /* the body comes: b takes the idle connection */
        RUN_UNTIL(fake_exchanges_finished == 3);
        assert_int_equal(b.status, 200);
        assert_int_equal(w.accepts, 1);
        assert_int_equal(fake_conn(&w, 0)->body_len, 9);
        fake_exchange_done(&a);
        fake_exchange_done(&b);
        fake_exchange_done(&c);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_request_body_queued_exchange(void **state) {
        FakeWorker w;
        FakeExchange a, b;
        ForwardPool *p;

        fake_worker_init(&w, event, true);
        w.delay = 10 * USEC_PER_MSEC;
        p = pool_new(w.path, 1, 4, 5 * USEC_PER_SEC);
        get_init(&a, "/", "a");
        fake_exchange_init(&b, "POST", "/", "app.test");
        fake_exchange_set_body(&b, "queued body", 11, false, 4);
        assert_int_equal(forward_start(p, &a.x), 0);
        assert_int_equal(forward_start(p, &b.x), 0); /* waits for a's connection */
        fake_exchange_pump(&b);                       /* its body is kept meanwhile */
        RUN_UNTIL(fake_exchanges_finished == 2);
        assert_int_equal(b.ends, 1);
        assert_int_equal(w.accepts, 1);
        assert_int_equal(fake_conn(&w, 0)->requests, 2);
        assert_int_equal(fake_conn(&w, 0)->body_len, 11);
        assert_memory_equal(fake_conn(&w, 0)->body, "queued body", 11);
        fake_exchange_done(&a);
        fake_exchange_done(&b);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_pool_counters_track_exchanges(void **state) {
        FakeWorker w;
        FakeExchange a, b, c;
        ForwardPool *p;
        const ForwardCounters *k;

        fake_worker_init(&w, event, true);
        w.delay = 15 * USEC_PER_MSEC;
        p = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        k = forward_pool_counters(p);
        get_init(&a, "/", "a");
        get_init(&b, "/", "b");
        assert_int_equal(forward_start(p, &a.x), 0);
        assert_int_equal(forward_start(p, &b.x), 0);
        assert_int_equal(k->inflight, 2);
        assert_int_equal(k->connections, 2);
        RUN_UNTIL(fake_exchanges_finished == 2);
        assert_int_equal(k->requests, 2);
        assert_int_equal(k->errors, 0);
        assert_int_equal(k->inflight, 0);
        assert_int_equal(k->connections, 2);
        assert_int_equal(k->idle, 2);
        assert_true(k->busy_usec >= 2 * 15 * USEC_PER_MSEC);

        w.decide = always_close; /* one error */
        get_init(&c, "/", "c");
        assert_int_equal(forward_start(p, &c.x), 0);
        RUN_UNTIL(fake_exchange_finished(&c));
        assert_int_equal(k->requests, 2);
        assert_int_equal(k->errors, 1);
        assert_int_equal(k->inflight, 0);
        fake_exchange_done(&a);
        fake_exchange_done(&b);
        fake_exchange_done(&c);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_response_resume_after_head_pause(void **state) {
        FakeWorker w;
        FakeExchange f;
        ForwardPool *p;

        fake_worker_init(&w, event, true);
        w.response = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        p = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        get_init(&f, "/", "hp");
        f.head_return = 1; /* the client side is full already */
        assert_int_equal(forward_start(p, &f.x), 0);
        RUN_UNTIL(f.heads == 1);
        run_for(20 * USEC_PER_MSEC);
        assert_int_equal(f.body_len, 0); /* nothing while paused, though the body is in our buffer */
        assert_int_equal(f.ends, 0);
        forward_response_resume(&f.x);
        forward_response_resume(&f.x); /* twice is harmless */
        RUN_UNTIL(fake_exchange_finished(&f));
        assert_int_equal(f.ends, 1);
        assert_int_equal(f.body_len, 5);
        second_get(p, &w, 1);
        fake_exchange_done(&f);
        forward_pool_free(p);
        fake_worker_done(&w);
}

/* Edge-triggered reading: the whole response waits in the socket while the client side is paused, so no
 * new edge comes for it; the resume must read it all by itself. With a send buffer far above 16 reads of
 * the read buffer (root may force one), the reads also stop for fairness and go on in the socket's next
 * turn. */
static int pause_first_piece(FakeExchange *f, const void *data, size_t size) {
        return f->body_len == size ? 1 : 0; /* this piece is the first */
}

static void test_forward_response_resume_reads_what_waits_in_the_socket(void **state) {
        const size_t size = 3 * 1024 * 1024;
        _cleanup_free_ char *response = malloc(size + 128);
        FakeWorker w;
        FakeExchange f;
        ForwardPool *p;
        int n;

        assert_non_null(response);
        n = snprintf(response, 128, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", size);
        for (size_t i = 0; i < size; i++)
                response[n + i] = (char) ('a' + i % 26);
        response[n + size] = 0;
        fake_worker_init(&w, event, true);
        w.response = response;
        w.sndbuf = 8 * 1024 * 1024;
        p = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        get_init(&f, "/", "big");
        f.on_body = pause_first_piece;
        assert_int_equal(forward_start(p, &f.x), 0);
        RUN_UNTIL(f.body_len > 0);
        run_for(50 * USEC_PER_MSEC); /* the worker writes what the socket takes, then waits */
        assert_int_equal(f.ends, 0);
        assert_true(f.body_len < size);

        f.on_body = NULL;
        forward_response_resume(&f.x);
        RUN_UNTIL(fake_exchange_finished(&f));
        assert_int_equal(f.ends, 1);
        assert_int_equal(f.body_len, size);
        assert_memory_equal(f.body, response + n, size);
        second_get(p, &w, 1);
        fake_exchange_done(&f);
        forward_pool_free(p);
        fake_worker_done(&w);
}

/* A response that arrived whole: its connection goes idle without a loop wake-up of its own, and an idle
 * connection the worker closes is noticed from that single edge. */
static void test_forward_idle_connection_is_quiet(void **state) {
        FakeWorker w;
        FakeExchange f;
        ForwardPool *p;
        unsigned dispatched = 0;

        fake_worker_init(&w, event, true);
        p = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        get_init(&f, "/", "quiet");
        assert_int_equal(forward_start(p, &f.x), 0);
        RUN_UNTIL(fake_exchange_finished(&f));
        assert_int_equal(forward_pool_counters(p)->idle, 1);
        for (unsigned i = 0; i < 6; i++) {
                int r = sd_event_run(event, 5 * USEC_PER_MSEC);
                assert_true(r >= 0);
                dispatched += r > 0;
        }
        assert_true(dispatched <= 1); /* the one edge of the response's last read, at most */

        fake_conn_close(fake_conn(&w, 0));
        RUN_UNTIL(forward_pool_counters(p)->connections == 0);
        fake_exchange_done(&f);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_pool_idle_timeout_closes_connections(void **state) {
        FakeWorker w;
        FakeExchange f;
        ForwardPool *p;
        ForwardOptions o = {
                .max_connections = 4,
                .max_queued = 4,
                .response_timeout = 5 * USEC_PER_SEC,
                .idle_timeout = 40 * USEC_PER_MSEC,
                .worker_id = WORKER_ID,
        };
        usec_t t0;

        fake_worker_init(&w, event, true);
        assert_int_equal(forward_pool_new(batch, w.path, &o, &p), 0);
        get_init(&f, "/", "idle");
        assert_int_equal(forward_start(p, &f.x), 0);
        RUN_UNTIL(fake_exchange_finished(&f));
        t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(forward_pool_counters(p)->idle, 1);
        RUN_UNTIL(forward_pool_counters(p)->connections == 0);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 >= 30 * USEC_PER_MSEC);
        assert_int_equal(forward_pool_counters(p)->idle, 0);
        RUN_UNTIL(fake_conn(&w, 0)->eof);
        fake_exchange_done(&f);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_pool_worker_closes_idle_connection(void **state) {
        FakeWorker w;
        FakeExchange f;
        ForwardPool *p;
        ForwardBufferStats s;

        /* keep-alive response, then the worker hangs up while we hold the socket idle */
        run_one(OK_RESPONSE, answer_close, &f, NULL, &w, &p);
        assert_int_equal(f.ends, 1);
        RUN_UNTIL(forward_pool_counters(p)->connections == 0);
        assert_int_equal(forward_pool_counters(p)->errors, 0);
        second_get(p, &w, 2);
        forward_pool_buffer_stats(p, &s);
        assert_int_equal(s.retries, 0); /* noticed while idle: nothing to retry */
        fake_exchange_done(&f);
        forward_pool_free(p);
        fake_worker_done(&w);
}

/* ---- drain and free ---- */

/* Two connections, then c busy on one of them while the other is idle; the worker answers after 20 ms. */
static ForwardPool *one_busy_one_idle(FakeWorker *w, FakeExchange *a, FakeExchange *b, FakeExchange *c) {
        ForwardPool *p;

        fake_worker_init(w, event, true);
        w->delay = 20 * USEC_PER_MSEC;
        p = pool_new(w->path, 4, 4, 5 * USEC_PER_SEC);
        get_init(a, "/", "a");
        get_init(b, "/", "b");
        assert_int_equal(forward_start(p, &a->x), 0);
        assert_int_equal(forward_start(p, &b->x), 0);
        RUN_UNTIL(fake_exchanges_finished == 2);
        assert_int_equal(forward_pool_counters(p)->idle, 2);

        get_init(c, "/", "c");
        assert_int_equal(forward_start(p, &c->x), 0);
        return p;
}

static void test_forward_pool_drain_finishes_busy_then_closes(void **state) {
        FakeWorker w;
        FakeExchange a, b, c, d;
        ForwardPool *p;
        const ForwardCounters *k;

        p = one_busy_one_idle(&w, &a, &b, &c);
        k = forward_pool_counters(p);
        forward_pool_drain(p);
        assert_int_equal(k->idle, 0);
        assert_int_equal(k->connections, 1);
        RUN_UNTIL(w.open == 1); /* the idle one closed at once */

        get_init(&d, "/", "d");
        assert_int_equal(forward_start(p, &d.x), -ESHUTDOWN);
        assert_null(d.x.upstream);

        RUN_UNTIL(fake_exchange_finished(&c));
        assert_int_equal(c.ends, 1); /* in flight finishes */
        assert_int_equal(k->connections, 0); /* and its connection closes after the response */
        RUN_UNTIL(w.open == 0);
        fake_exchange_done(&a);
        fake_exchange_done(&b);
        fake_exchange_done(&c);
        fake_exchange_done(&d);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_pool_close_idle_keeps_busy_and_serving(void **state) {
        FakeWorker w;
        FakeExchange a, b, c, d;
        ForwardPool *p;
        const ForwardCounters *k;

        p = one_busy_one_idle(&w, &a, &b, &c);
        k = forward_pool_counters(p);
        forward_pool_close_idle(p);
        forward_pool_close_idle(NULL);
        assert_int_equal(k->idle, 0);
        assert_int_equal(k->connections, 1);
        RUN_UNTIL(w.open == 1); /* the idle one closed at once, before its idle timeout */
        RUN_UNTIL(fake_exchange_finished(&c));
        assert_int_equal(c.ends, 1); /* the busy one was left alone */

        /* unlike a drain, the pool goes on: the next request reuses c's connection or opens one */
        get_init(&d, "/", "d");
        assert_int_equal(forward_start(p, &d.x), 0);
        RUN_UNTIL(fake_exchange_finished(&d));
        assert_int_equal(d.ends, 1);
        assert_int_equal(k->errors, 0);
        fake_exchange_done(&a);
        fake_exchange_done(&b);
        fake_exchange_done(&c);
        fake_exchange_done(&d);
        forward_pool_free(p);
        fake_worker_done(&w);
}

static void test_forward_pool_free_fails_inflight_exchanges(void **state) {
        FakeWorker w;
        FakeExchange a, b, c;
        ForwardPool *p;

        fake_worker_init(&w, event, true);
        w.decide = silent;
        p = pool_new(w.path, 1, 4, 5 * USEC_PER_SEC);
        get_init(&a, "/", "a");
        get_init(&b, "/", "b");
        assert_int_equal(forward_start(p, &a.x), 0);
        assert_int_equal(forward_start(p, &b.x), 0);
        RUN_UNTIL(w.requests == 1);

        /* and one whose failure is still pending delivery */
        {
                ForwardPool *q = pool_new("/nonexistent/w.sock", 1, 1, USEC_PER_SEC);
                get_init(&c, "/", "c");
                assert_int_equal(forward_start(q, &c.x), 0);
                forward_pool_free(q);
                assert_int_equal(c.fails, 1);
                assert_int_equal(c.fail_status, 502);
        }

        forward_pool_free(p);
        assert_int_equal(a.fails, 1);
        assert_int_equal(b.fails, 1);
        assert_int_equal(a.fail_status, 502);
        assert_int_equal(b.fail_status, 502);
        assert_non_null(strstr(a.fail_reason, "worker gone"));
        assert_non_null(strstr(b.fail_reason, "w7 request b: worker gone"));
        RUN_UNTIL(fake_conn(&w, 0)->eof);
        fake_exchange_done(&a);
        fake_exchange_done(&b);
        fake_exchange_done(&c);
        fake_worker_done(&w);
}

static ForwardPool *free_me;

static void free_pool_on_finish(FakeExchange *f) {
        free_me = forward_pool_free(free_me);
}

static FakeAction answer_first_only(FakeConn *c) {
        return c->w->requests == 1 ? FAKE_ANSWER : FAKE_SILENT;
}

static void test_forward_pool_free_from_a_callout(void **state) {
        FakeWorker w;
        FakeExchange a, b;

        fake_worker_init(&w, event, true);
        w.decide = answer_first_only;
        free_me = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        get_init(&a, "/", "a");
        get_init(&b, "/", "b");
        /* the router retires the worker as the first response ends, with the other still in flight */
        a.on_finish = b.on_finish = free_pool_on_finish;
        assert_int_equal(forward_start(free_me, &a.x), 0);
        assert_int_equal(forward_start(free_me, &b.x), 0);
        RUN_UNTIL(fake_exchanges_finished == 2);
        assert_null(free_me);
        assert_int_equal(a.ends + b.ends, 1);
        assert_int_equal(a.fails + b.fails, 1);
        assert_int_equal(a.fails ? a.fail_status : b.fail_status, 502);
        run_for(10 * USEC_PER_MSEC); /* nothing of the pool fires any more */
        fake_exchange_done(&a);
        fake_exchange_done(&b);
        fake_worker_done(&w);
}

static int detach_on_body(FakeExchange *f, const void *data, size_t size) {
        forward_detach(&f->x); /* the client vanished while we were handing it bytes */
        return 0;
}

static void test_forward_detach_inside_body_callout(void **state) {
        FakeWorker w;
        FakeExchange f;
        ForwardPool *p;

        fake_worker_init(&w, event, true);
        w.response = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n";
        p = pool_new(w.path, 4, 4, 5 * USEC_PER_SEC);
        get_init(&f, "/", "det");
        f.on_body = detach_on_body;
        assert_int_equal(forward_start(p, &f.x), 0);
        RUN_UNTIL(f.body_len > 0);
        run_for(20 * USEC_PER_MSEC);
        assert_int_equal(f.body_len, 3); /* nothing after the detach */
        assert_int_equal(f.ends + f.fails, 0);
        assert_int_equal(forward_pool_counters(p)->connections, 0);
        second_get(p, &w, 2);
        fake_exchange_done(&f);
        forward_pool_free(p);
        fake_worker_done(&w);
}

/* tests that run a real sd-event loop get a fresh one each */
#define LOOP_TEST(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

/* One cmocka test per row of a case table, named "<runner>/<row name>" and handed the row as its state (the
 * names are allocated; main() frees them after the run). */
#define ADD_TABLE(tests, n, runner, table, loop)                                                         \
        for (size_t _i = 0; _i < ELEMENTSOF(table); _i++)                                                \
                (tests)[(n)++] = (struct CMUnitTest) {                                                   \
                        .name = row_test_name(#runner, (table)[_i].name),                                \
                        .test_func = runner,                                                             \
                        .setup_func = (loop) ? setup : NULL,                                             \
                        .teardown_func = (loop) ? teardown : NULL,                                       \
                        .initial_state = (void *) &(table)[_i],                                          \
                }

static char *row_test_name(const char *runner, const char *row) {
        char *s;

        if (asprintf(&s, "%s/%s", runner, row) < 0)
                abort(); /* before any test runs: nothing to report it to */
        return s;
}

int main(void) {
        if (getenv("EP_TEST_DEBUG"))
                log_set_max_level(LOG_DEBUG);

        const struct CMUnitTest single[] = {
                cmocka_unit_test(test_forward_request_serialize_small_buffer),
                cmocka_unit_test(test_forward_response_filter_as_strict_as_nghttp2),
                LOOP_TEST(test_forward_start_sends_serialized_head),
                LOOP_TEST(test_forward_start_reuses_keepalive_connection),
                LOOP_TEST(test_forward_start_queues_beyond_max_connections),
                LOOP_TEST(test_forward_start_refuses_when_queue_full),
                LOOP_TEST(test_forward_start_queue_timeout),
                LOOP_TEST(test_forward_start_backlog_full_retries_connect),
                LOOP_TEST(test_forward_start_backlog_full_until_timeout),
                LOOP_TEST(test_forward_start_body_broken_after_head),
                LOOP_TEST(test_forward_start_refuses_bad_head),
                LOOP_TEST(test_forward_response_head_client_gone),
                LOOP_TEST(test_forward_request_body_chunked_reframing),
                LOOP_TEST(test_forward_request_body_small_body_with_head),
                LOOP_TEST(test_forward_request_body_streams_with_backpressure),
                LOOP_TEST(test_forward_request_body_queued_exchange),
                LOOP_TEST(test_forward_start_freed_connection_to_the_client_holding_fewest),
                LOOP_TEST(test_forward_start_refuses_past_the_client_queue_share),
                LOOP_TEST(test_forward_start_queued_body_waits_for_its_first_bytes),
                LOOP_TEST(test_forward_request_end_short_body_refused),
                LOOP_TEST(test_forward_detach_short_body_closes_connection),
                LOOP_TEST(test_forward_detach_inside_body_callout),
                LOOP_TEST(test_forward_pool_counters_track_exchanges),
                LOOP_TEST(test_forward_response_resume_after_head_pause),
                LOOP_TEST(test_forward_response_resume_reads_what_waits_in_the_socket),
                LOOP_TEST(test_forward_idle_connection_is_quiet),
                LOOP_TEST(test_forward_pool_idle_timeout_closes_connections),
                LOOP_TEST(test_forward_pool_worker_closes_idle_connection),
                LOOP_TEST(test_forward_pool_drain_finishes_busy_then_closes),
                LOOP_TEST(test_forward_pool_close_idle_keeps_busy_and_serving),
                LOOP_TEST(test_forward_pool_free_fails_inflight_exchanges),
                LOOP_TEST(test_forward_pool_free_from_a_callout),
                LOOP_TEST(test_forward_unanswered_only_after_last_answer),
        };
        struct CMUnitTest tests[ELEMENTSOF(serialize_cases) + ELEMENTSOF(refuse_cases) +
                                ELEMENTSOF(filter_cases) + ELEMENTSOF(retry_cases) +
                                ELEMENTSOF(failure_cases) + ELEMENTSOF(response_cases) + ELEMENTSOF(single)];
        size_t n = 0, n_rows;
        int r;

        ADD_TABLE(tests, n, test_forward_request_serialize, serialize_cases, false);
        ADD_TABLE(tests, n, test_forward_request_serialize_refuses, refuse_cases, false);
        ADD_TABLE(tests, n, test_forward_response_filter, filter_cases, false);
        ADD_TABLE(tests, n, test_forward_start_stale_keepalive, retry_cases, true);
        ADD_TABLE(tests, n, test_forward_start_fails_before_head, failure_cases, true);
        ADD_TABLE(tests, n, test_forward_response, response_cases, true);
        n_rows = n;
        for (size_t i = 0; i < ELEMENTSOF(single); i++)
                tests[n++] = single[i];

        r = cmocka_run_group_tests(tests, NULL, NULL);
        for (size_t i = 0; i < n_rows; i++)
                free((char *) tests[i].name);
        return r;
}
