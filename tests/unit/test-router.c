/* SPDX-License-Identifier: MIT */
/* The router (daemon/frontend/exchange.c, router.c, session.c) with the front end around it
 * (daemon/frontend/frontend.c): a real Frontend made by manager_add_frontend() (no listener, a key in a
 * temporary state directory), talking to the commander's placement through CommanderOps, on a Manager in
 * memory (manager-fixture.c) whose workers have no forward pool, so every request the router lets
 * through is answered 503 "no routable worker" right there. Exchanges come from exchange_new() with a ClientOps
 * that records what the client would get; login and logout are worker responses handed to
 * exchange_response_head(). The journal is captured by wrapping log_internal(), fields included.
 *
 * Logout revokes every earlier cookie of the user and a new login in the same second works at once; a
 * user the surface does not know is re-placed with the real reason; a Unix socket peer is trusted for
 * X-Forwarded-Proto only when trusted_proxies says "unix"; error lines carry the request id and are
 * rate-limited with the rest counted and reported; held requests keep their order and bodies. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "cookie.h"
#include "frontend-internal.h"
#include "router.h"
#include "log.h"
#include "macro.h"
#include "manager-fixture.h"

/* ---- the journal, captured ---- */

#define LOGS_MAX 256

typedef struct LogRecord {
        int level;
        char event[32];
        char extra[128];
        char user[64];
        char message[1024];
} LogRecord;

static LogRecord logs[LOGS_MAX];
static unsigned n_logs;

int __wrap_log_internal(int level, int error, const LogFields *fields, const char *format, ...);

int __wrap_log_internal(int level, int error, const LogFields *fields, const char *format, ...) {
        LogRecord *l = &logs[MIN(n_logs, LOGS_MAX - 1)];
        va_list ap;

        *l = (LogRecord) { .level = level };
        va_start(ap, format);
        vsnprintf(l->message, sizeof l->message, format, ap);
        va_end(ap);
        if (fields) {
                snprintf(l->event, sizeof l->event, "%s", strempty(fields->event));
                snprintf(l->extra, sizeof l->extra, "%s", strempty(fields->extra));
                snprintf(l->user, sizeof l->user, "%s", strempty(fields->user));
        }
        if (n_logs < LOGS_MAX)
                n_logs++;
        return error != 0 ? -ERRNO_VALUE(error) : 0;
}

static unsigned logs_matching(const char *needle) {
        unsigned n = 0;

        for (unsigned i = 0; i < n_logs; i++)
                n += strstr(logs[i].message, needle) != NULL;
        return n;
}

static const LogRecord *log_find(const char *needle) {
        for (unsigned i = 0; i < n_logs; i++)
                if (strstr(logs[i].message, needle))
                        return &logs[i];
        return NULL;
}

static void logs_print(void) {
        for (unsigned i = 0; i < n_logs; i++)
                print_message("  log %u: [%s] %s {%s}\n", i, logs[i].event, logs[i].message, logs[i].extra);
}

#define ASSERT_LOGGED(needle)                                              \
        do {                                                               \
                if (!log_find(needle)) {                                   \
                        logs_print();                                      \
                        fail_msg("nothing logged matches '%s'", needle);   \
                }                                                          \
        } while (0)

/* ---- a client that records ---- */

typedef struct Client {
        unsigned status;          /* of the head, or of response_error */
        char set_cookie[COOKIE_VALUE_MAX + 128];
        bool errored, headed;
} Client;

static Client *answer_order[64];
static unsigned n_answers;

static Client *client_of(Exchange *x) {
        return x->client_data;
}

static int on_response_head(Exchange *x, const ResponseHead *h) {
        Client *c = client_of(x);

        c->headed = true;
        c->status = h->status;
        for (size_t i = 0; i < h->n_extra; i++)
                if (header_name_is(&h->extra[i], "set-cookie"))
                        snprintf(c->set_cookie, sizeof c->set_cookie, "%.*s", (int) h->extra[i].value_len,
                                 h->extra[i].value);
        return 0;
}

static int on_response_body(Exchange *x, const void *data, size_t size) {
        return 0;
}

static int on_response_end(Exchange *x) {
        return 0;
}

static void on_response_error(Exchange *x, unsigned status, unsigned retry_after, const char *reason) {
        Client *c = client_of(x);

        c->errored = true;
        c->status = status;
        if (n_answers < ELEMENTSOF(answer_order))
                answer_order[n_answers++] = c;
}

static void on_response_abort(Exchange *x, const char *reason) {
}

static void on_request_body_resume(Exchange *x) {
}

static const ClientOps client_ops = {
        .response_head = on_response_head,
        .response_body = on_response_body,
        .response_end = on_response_end,
        .response_error = on_response_error,
        .response_abort = on_response_abort,
        .request_body_resume = on_request_body_resume,
};

/* ---- fixture ---- */

static Manager *m;
static Frontend *fe;
static char state_dir[] = "/tmp/test-router.XXXXXX";

/* A front end over a manager with one routable worker (the reception, w1), trusting these proxies. */
static void start(const char *const *trusted) {
        m = fixture_manager_new();
        log_set_max_level(LOG_DEBUG);
        n_logs = 0;
        n_answers = 0;
        /* no listener: the front end is driven from here */
        for (size_t i = 0; m->config.listen[i]; i++) {
                free(m->config.listen[i]);
                m->config.listen[i] = NULL;
        }
        for (size_t i = 0; trusted && trusted[i]; i++) {
                size_t n = i + 2;
                m->config.trusted_proxies = reallocarray(m->config.trusted_proxies, n, sizeof(char *));
                assert_non_null(m->config.trusted_proxies);
                m->config.trusted_proxies[i] = strdup(trusted[i]);
                m->config.trusted_proxies[i + 1] = NULL;
        }
        (void) fixture_add_worker(m, WORKER_ROUTABLE);
        strcpy(state_dir + strlen(state_dir) - 6, "XXXXXX");
        assert_non_null(mkdtemp(state_dir));
        assert_int_equal(manager_add_frontend(m, state_dir), 0);
        fe = m->frontend;
}

static void stop(void) {
        char cmd[sizeof state_dir + 16];

        fixture_manager_free(m); /* the front end with it */
        fe = NULL;
        m = NULL;
        snprintf(cmd, sizeof cmd, "rm -rf %s", state_dir);
        assert_int_equal(system(cmd), 0);
}

typedef struct Request {
        Exchange *x;
        Client client;
        HeaderField fields[4];
        char cookie[COOKIE_VALUE_MAX + 16];
        char id[40];
} Request;

/* A GET / from peer with these fields (the cookie value and request id when not NULL), begun. */
static void request(Request *r, const struct sockaddr_storage *peer, const char *cookie, const char *id,
                    const char *proto) {
        size_t n = 0;

        *r = (Request) {};
        r->x = exchange_new(fe, &client_ops, &r->client);
        assert_non_null(r->x);
        r->x->req = (RequestHead) {
                .method = "GET", .method_len = 3, .target = "/", .target_len = 1,
                .authority = "app.test", .authority_len = 8, .http_major = 1, .http_minor = 1,
        };
        if (cookie) {
                snprintf(r->cookie, sizeof r->cookie, "%s=%s", COOKIE_NAME, cookie);
                r->fields[n++] = (HeaderField) { "Cookie", 6, r->cookie, strlen(r->cookie) };
        }
        if (id) {
                snprintf(r->id, sizeof r->id, "%s", id);
                r->fields[n++] = (HeaderField) { "X-Request-Id", 12, r->id, strlen(r->id) };
        }
        if (proto)
                r->fields[n++] = (HeaderField) { "X-Forwarded-Proto", 17, proto, strlen(proto) };
        r->x->req.fields = r->fields;
        r->x->req.n_fields = n;
        if (peer)
                r->x->peer = *peer;
        exchange_begin(r->x);
}

static void done(Request *r) {
        r->x = exchange_free(r->x);
}

/* The worker w1 answers x with Elastic-Pool-User: user ("-" logs out); returns the Set-Cookie value. */
static const char *respond_as(Request *r, const char *user) {
        ResponseHead h = { .status = 200 };

        r->x->worker = 1;
        r->x->state = EXCHANGE_FORWARDING;
        assert_int_equal(exchange_response_head(r->x, &h, user, strlen(user)), 0);
        assert_true(r->client.headed);
        return r->client.set_cookie;
}

/* The value of "ep_user=VALUE; ..." into out. */
static void cookie_value(const char *set_cookie, char *out, size_t size) {
        const char *v = set_cookie + strlen(COOKIE_NAME) + 1;

        assert_memory_equal(set_cookie, COOKIE_NAME "=", strlen(COOKIE_NAME) + 1);
        snprintf(out, size, "%.*s", (int) strcspn(v, ";"), v);
}

/* Logs user in through a worker response to a guest request; its cookie value into out. */
static void login(const char *user, char *out, size_t size) {
        Request r;

        request(&r, NULL, NULL, NULL, NULL);
        cookie_value(respond_as(&r, user), out, size);
        assert_true(strlen(out) > 0);
        done(&r);
}

/* The user the router resolved for a request with this cookie ("" for a guest). */
static void user_of(const char *cookie, char *out, size_t size) {
        Request r;

        request(&r, NULL, cookie, NULL, NULL);
        snprintf(out, size, "%s", strempty(r.x->user));
        done(&r);
}

/* ---- logout ---- */

static void test_router_logout_revokes_earlier_cookies(void **state) {
        char first[COOKIE_VALUE_MAX], second[COOKIE_VALUE_MAX], again[COOKIE_VALUE_MAX], user[64];
        const LogRecord *l;
        Request r;

        start(NULL);
        login("alice", first, sizeof first);
        login("alice", second, sizeof second); /* a second device, or tab */
        user_of(first, user, sizeof user);
        assert_string_equal(user, "alice");

        /* /logout with the first cookie: the response deletes it */
        request(&r, NULL, first, "logout-1", NULL);
        assert_string_equal(r.x->user, "alice");
        respond_as(&r, "-");
        assert_non_null(strstr(r.client.set_cookie, COOKIE_NAME "=; "));
        assert_non_null(strstr(r.client.set_cookie, "Max-Age=0"));
        done(&r);
        ASSERT_LOGGED("User alice logged out of w1");

        /* both earlier cookies replayed: guests (no X-Elastic-Pool-User reaches a worker), each logged */
        n_logs = 0;
        user_of(first, user, sizeof user);
        assert_string_equal(user, "");
        user_of(second, user, sizeof user);
        assert_string_equal(user, "");
        assert_int_equal(logs_matching("revoked by logout, treated as a guest"), 2);
        l = log_find("revoked by logout");
        assert_non_null(strstr(l->extra, "EP_REQUEST_ID="));
        /* and nobody was placed again for them */
        assert_int_equal(logs_matching("re-placed"), 0);

        /* a new login at once (the same second, likely the same millisecond): valid */
        login("alice", again, sizeof again);
        user_of(again, user, sizeof user);
        assert_string_equal(user, "alice");
        user_of(first, user, sizeof user);
        assert_string_equal(user, "");
        /* another user is not touched by alice's logout */
        login("bob", again, sizeof again);
        user_of(again, user, sizeof user);
        assert_string_equal(user, "bob");
        stop();
}

static void test_router_logout_of_a_user_the_surface_forgot(void **state) {
        char cookie[COOKIE_VALUE_MAX], user[64];
        Request r;

        start(NULL);
        login("carol", cookie, sizeof cookie);
        /* its worker went away: the surface forgets carol, whose cookie is still genuine */
        (void) surface_worker_gone(&m->surface, 1);
        request(&r, NULL, cookie, NULL, NULL);
        (void) surface_worker_gone(&m->surface, 1);
        respond_as(&r, "-");
        done(&r);
        /* the logout still revokes */
        user_of(cookie, user, sizeof user);
        assert_string_equal(user, "");
        stop();
}

/* ---- re-placement reasons ---- */

static void test_router_replace_says_why(void **state) {
        char value[COOKIE_VALUE_MAX], user[64];
        uint64_t now = now_usec(CLOCK_REALTIME) / USEC_PER_SEC;

        start(NULL);
        /* a cookie from before this commander started: the surface never knew the user */
        assert_true(cookie_sign(&fe->cookie_key, "dave", fe->cookie_epoch - 1, now + 3600, value,
                                sizeof value) > 0);
        user_of(value, user, sizeof user);
        assert_string_equal(user, "dave");
        ASSERT_LOGGED("User dave re-placed on w1: the surface does not know it (its cookie is older than "
                      "this commander)");
        assert_null(log_find("User dave re-placed on w1: the surface does not know it (its worker is "
                             "gone)"));

        /* one of ours whose worker went away */
        login("erin", value, sizeof value);
        (void) surface_worker_gone(&m->surface, 1);
        user_of(value, user, sizeof user);
        assert_string_equal(user, "erin");
        ASSERT_LOGGED("User erin re-placed on w1: the surface does not know it (its worker is gone)");
        stop();
}

/* ---- X-Forwarded-Proto ---- */

static struct sockaddr_storage unix_peer(void) {
        struct sockaddr_storage ss = {};

        ss.ss_family = AF_UNIX; /* accept() on a Unix listener: an unnamed peer */
        return ss;
}

static struct sockaddr_storage ipv4_peer(const char *a) {
        struct sockaddr_storage ss = {};
        struct sockaddr_in *sin = (struct sockaddr_in *) &ss;

        sin->sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, a, &sin->sin_addr), 1);
        return ss;
}

static bool tls_believed(const struct sockaddr_storage *peer) {
        Request r;
        bool b;

        request(&r, peer, NULL, NULL, "https");
        b = r.x->via_tls_proxy;
        done(&r);
        return b;
}

static void test_router_unix_peer_trusted_only_when_configured(void **state) {
        static const char *const ip_only[] = { "127.0.0.1", NULL };
        static const char *const with_unix[] = { "unix", NULL };
        struct sockaddr_storage u = unix_peer(), lo = ipv4_peer("127.0.0.1"), other = ipv4_peer("192.0.2.1");
        char cookie[COOKIE_VALUE_MAX + 128];
        Request r;

        start(NULL);
        assert_false(tls_believed(&u)); /* by default nobody, a Unix socket peer included */
        assert_false(tls_believed(&lo));
        stop();

        start(ip_only);
        assert_false(tls_believed(&u));
        assert_true(tls_believed(&lo));
        assert_false(tls_believed(&other));
        stop();

        start(with_unix);
        assert_true(tls_believed(&u));
        assert_false(tls_believed(&lo));
        /* which is what decides Secure on the cookie */
        request(&r, &u, NULL, NULL, "https");
        snprintf(cookie, sizeof cookie, "%s", respond_as(&r, "alice"));
        done(&r);
        assert_non_null(strstr(cookie, "; Secure"));
        stop();
}

/* ---- error lines ---- */

static void test_router_503_lines_rate_limited_and_counted(void **state) {
        char id[32], want[64];
        Request r;

        start(NULL);
        /* an overloaded pool: no worker can take anything (w1 has no forward pool here) */
        n_logs = 0;
        for (unsigned i = 0; i < 25; i++) {
                snprintf(id, sizeof id, "flood-%u", i);
                request(&r, NULL, NULL, id, NULL);
                assert_int_equal(r.client.status, 503);
                done(&r);
        }
        /* 20 lines, each with its request id in the message and as a field */
        assert_int_equal(logs_matching(": 503 no routable worker"), 20);
        for (unsigned i = 0; i < 20; i++) {
                snprintf(want, sizeof want, "Request flood-%u GET /: 503", i);
                const LogRecord *l = log_find(want);
                assert_non_null(l);
                snprintf(want, sizeof want, "EP_REQUEST_ID=flood-%u\nEP_STATUS=503", i);
                assert_string_equal(l->extra, want);
                assert_string_equal(l->event, "request-error");
                assert_int_equal(l->level, LOG_WARNING);
        }
        assert_int_equal(n_logs, 20);
        /* the flood stops; the 5 left out are reported when the second ends, by the timer */
        for (unsigned i = 0; i < 30 && !log_find("more 503s"); i++)
                assert_true(sd_event_run(fe->event, 100 * USEC_PER_MSEC) >= 0);
        ASSERT_LOGGED("... and 5 more 503s in the last second");

        /* the next second: 22 more, 2 of them left out, reported when a line opens the second after */
        fixture_advance(USEC_PER_SEC);
        n_logs = 0;
        for (unsigned i = 0; i < 22; i++) {
                request(&r, NULL, NULL, NULL, NULL);
                done(&r);
        }
        frontend_log_client_error(fe, "a client error");
        fixture_advance(USEC_PER_SEC);
        frontend_log_client_error(fe, "a client error in the next second");
        ASSERT_LOGGED("... and 2 more 503s and 1 more client error in the last second");
        ASSERT_LOGGED("a client error in the next second");
        stop();
}

static void test_router_forward_errors_one_line_each(void **state) {
        char id[32], want[64];
        Request r;

        start(NULL);
        n_logs = 0;
        /* worker-side failures are requests a worker took: each is logged, past the limit too */
        for (unsigned i = 0; i < 30; i++) {
                snprintf(id, sizeof id, "fwd-%u", i);
                request(&r, NULL, NULL, id, NULL);
                r.x->state = EXCHANGE_FORWARDING;
                r.x->worker = 1;
                r.client.errored = false;
                exchange_fail(r.x, i % 2 ? 502 : 504, "the worker failed");
                assert_int_equal(r.client.status, i % 2 ? 502U : 504U);
                done(&r);
        }
        for (unsigned i = 0; i < 30; i++) {
                snprintf(want, sizeof want, "Request fwd-%u GET / on w1: %u", i, i % 2 ? 502U : 504U);
                const LogRecord *l = log_find(want);
                if (!l)
                        logs_print();
                assert_non_null(l);
                snprintf(want, sizeof want, "EP_REQUEST_ID=fwd-%u\nEP_STATUS=%u", i, i % 2 ? 502U : 504U);
                assert_string_equal(l->extra, want);
        }
        stop();
}

/* ---- held requests ---- */

static void test_router_held_requests_keep_order_and_bodies(void **state) {
        static int move_stand_in;
        char cookie[COOKIE_VALUE_MAX];
        Request r[4];
        SurfaceUser *u;
        HeldQueue *q;

        start(NULL);
        login("frank", cookie, sizeof cookie);
        u = surface_user_get(&m->surface, "frank");
        assert_non_null(u);
        /* frank is moving: the commander answers "held" (it only tests the pointer), and its requests wait
         * in the front end */
        u->move = (Move *) &move_stand_in;
        for (unsigned i = 0; i < 4; i++) {
                request(&r[i], NULL, cookie, NULL, NULL);
                assert_int_equal(r[i].x->state, EXCHANGE_HELD);
        }
        q = strmap_get(&fe->held, "frank");
        assert_non_null(q);
        assert_int_equal(q->n, 4);
        assert_int_equal(frontend_hooks.held_requests(fe, "frank"), 4);
        /* bodies wait with them, in the router's own record */
        assert_int_equal(exchange_request_body(r[1].x, "hello", 5), 0);
        assert_int_equal(exchange_request_end(r[1].x), 0);
        assert_int_equal(exchange_request_body(r[2].x, "x", 1), 0);
        /* a client gone mid-hold leaves the list whole */
        done(&r[2]);
        assert_int_equal(q->n, 3);
        assert_ptr_equal(q->first, r[0].x);
        assert_ptr_equal(q->first->held_next, r[1].x);
        assert_ptr_equal(q->first->held_next->held_next, r[3].x);
        assert_ptr_equal(q->last, r[3].x);
        assert_null(r[3].x->held_next);
        assert_null(r[0].x->upstream); /* the forward side's slot is not the list's */

        /* answered in the order they came */
        n_answers = 0;
        router_fail_held(fe, "frank", "the test says so");
        assert_int_equal(n_answers, 3);
        assert_ptr_equal(answer_order[0], &r[0].client);
        assert_ptr_equal(answer_order[1], &r[1].client);
        assert_ptr_equal(answer_order[2], &r[3].client);
        assert_int_equal(frontend_hooks.held_requests(fe, "frank"), 0);
        assert_null(strmap_get(&fe->held, "frank"));
        u->move = NULL;
        for (unsigned i = 0; i < 4; i++)
                if (i != 2)
                        done(&r[i]);
        stop();
}

/* A move that ended releases its user's held requests in the order they came, each dispatched again
 * (here to a worker without a forward pool: each is answered 503, in that order). */
static void test_router_held_requests_released_in_order(void **state) {
        static int move_stand_in;
        char cookie[COOKIE_VALUE_MAX];
        Request r[3];
        SurfaceUser *u;

        start(NULL);
        login("gwen", cookie, sizeof cookie);
        u = surface_user_get(&m->surface, "gwen");
        assert_non_null(u);
        u->move = (Move *) &move_stand_in;
        for (unsigned i = 0; i < 3; i++)
                request(&r[i], NULL, cookie, NULL, NULL);
        /* the move ended: the commander answers with the worker again */
        u->move = NULL;
        n_answers = 0;
        frontend_hooks.release_held(fe, "gwen");
        assert_int_equal(n_answers, 3);
        for (unsigned i = 0; i < 3; i++) {
                assert_ptr_equal(answer_order[i], &r[i].client);
                assert_int_equal(r[i].client.status, 503);
                assert_int_not_equal(r[i].x->state, EXCHANGE_HELD);
        }
        assert_int_equal(frontend_hooks.held_requests(fe, "gwen"), 0);
        for (unsigned i = 0; i < 3; i++)
                done(&r[i]);
        stop();
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_router_logout_revokes_earlier_cookies),
                cmocka_unit_test(test_router_logout_of_a_user_the_surface_forgot),
                cmocka_unit_test(test_router_replace_says_why),
                cmocka_unit_test(test_router_unix_peer_trusted_only_when_configured),
                cmocka_unit_test(test_router_503_lines_rate_limited_and_counted),
                cmocka_unit_test(test_router_forward_errors_one_line_each),
                cmocka_unit_test(test_router_held_requests_keep_order_and_bodies),
                cmocka_unit_test(test_router_held_requests_released_in_order),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
