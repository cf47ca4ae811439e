/* SPDX-License-Identifier: MIT */
/* The admin listener on a real Unix socket of a Manager in memory, its loop run by the test: each route
 * answers with its type (the monitor page with its Content-Security-Policy), HEAD without a body, other
 * methods 405, unknown paths 404, / to the monitor; population requests that arrive together share one
 * fan-out; a client that does not read a large answer holds up nobody else; a public address is refused
 * without admin_allow_public and taken with it; out of descriptors, accepting pauses instead of spinning
 * and the client that waited is answered once there is room. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
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

#include "admin.h"
#include "cleanup.h"
#include "fd-shortage.h"
#include "fd-util.h"
#include "macro.h"
#include "manager-fixture.h"

static char dir[] = "/tmp/test-admin.XXXXXX";
static char admin_path[sizeof dir + 16];
static Manager *m;
static Admin *admin;

static int setup(void **state) {
        strcpy(dir + strlen(dir) - 6, "XXXXXX");
        if (!mkdtemp(dir))
                return -1;
        snprintf(admin_path, sizeof admin_path, "%s/admin.sock", dir);
        m = fixture_manager_new();
        m->config.admin_population_timeout = 300 * USEC_PER_MSEC;
        return admin_new(m->event, admin_path, &m->status, &admin) < 0 ? -1 : 0;
}

static int teardown(void **state) {
        char cmd[sizeof dir + 16];

        admin = admin_free(admin);
        fixture_manager_free(m);
        m = NULL;
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        return system(cmd) == 0 ? 0 : -1;
}

static int connect_to(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

        assert_true(fd >= 0);
        strcpy(sa.sun_path, path);
        assert_int_equal(connect(fd, (struct sockaddr *) &sa, sizeof sa), 0);
        return fd;
}

static int send_request(const char *raw) {
        int fd = connect_to(admin_path);

        assert_int_equal(send(fd, raw, strlen(raw), MSG_NOSIGNAL), (ssize_t) strlen(raw));
        return fd;
}

/* Reads what the listener answers on fd until it closes, running the loop meanwhile. */
static char *receive(int fd) {
        usec_t start = __real_now_usec(CLOCK_MONOTONIC);
        char *out = NULL, buf[65536];
        size_t len = 0;

        for (;;) {
                ssize_t n = read(fd, buf, sizeof buf);

                if (n == 0)
                        break;
                if (n > 0) {
                        out = realloc(out, len + (size_t) n + 1);
                        assert_non_null(out);
                        memcpy(out + len, buf, (size_t) n);
                        len += (size_t) n;
                        continue;
                }
                assert_int_equal(errno, EAGAIN);
                assert_true(__real_now_usec(CLOCK_MONOTONIC) - start < 10 * USEC_PER_SEC);
                assert_true(sd_event_run(m->event, 20 * USEC_PER_MSEC) >= 0);
        }
        safe_close(fd);
        assert_non_null(out);
        out[len] = 0;
        return out;
}

static char *request(const char *raw) {
        return receive(send_request(raw));
}

static char *get(const char *path) {
        char raw[512];

        snprintf(raw, sizeof raw, "GET %s HTTP/1.1\r\nHost: admin\r\n\r\n", path);
        return request(raw);
}

static const char *body_of(const char *answer) {
        const char *b = strstr(answer, "\r\n\r\n");

        assert_non_null(b);
        return b + 4;
}

#define ASSERT_HAS(text, part) CHECK_EXPLAINED(strstr(text, part), "'%s' not in:\n%.2000s", part, text)

static void test_admin_routes(void **state) {
        static const struct {
                const char *path, *status, *type, *body_start;
        } routes[] = {
                { "/_commander/monitor", "HTTP/1.1 200 OK\r\n", "text/html; charset=utf-8", "<!DOCTYPE html>" },
                { "/_commander/monitor.json", "HTTP/1.1 200 OK\r\n", "application/json", "{\"group\":\"test\"" },
                { "/_commander/monitor.json?x=1", "HTTP/1.1 200 OK\r\n", "application/json", "{\"group\":" },
                { "/_commander/status", "HTTP/1.1 200 OK\r\n", "application/json", "{\"group\":\"test\",\"backend\"" },
                { "/_commander/population", "HTTP/1.1 200 OK\r\n", "application/json", "{\"group\":\"test\"" },
                { "/metrics", "HTTP/1.1 200 OK\r\n", "text/plain; version=0.0.4; charset=utf-8",
                  "# HELP elastic_pool_" },
                { "/", "HTTP/1.1 303 See Other\r\n", "text/plain; charset=utf-8", "/_commander/monitor" },
                { "/nothing", "HTTP/1.1 404 Not Found\r\n", "text/plain; charset=utf-8", "not found: try" },
        };

        (void) fixture_add_worker(m, WORKER_STARTING);
        for (size_t i = 0; i < ELEMENTSOF(routes); i++) {
                _cleanup_free_ char *a = get(routes[i].path);
                char type[128];

                CHECK_EXPLAINED(startswith(a, routes[i].status), "%s: %.300s", routes[i].path, a);
                snprintf(type, sizeof type, "\r\nContent-Type: %s\r\n", routes[i].type);
                ASSERT_HAS(a, type);
                ASSERT_HAS(a, "\r\nConnection: close\r\n");
                ASSERT_HAS(a, "\r\nCache-Control: no-store\r\n");
                CHECK_EXPLAINED(startswith(body_of(a), routes[i].body_start), "%s: %.300s", routes[i].path, a);
        }
}

static void test_admin_monitor_headers(void **state) {
        _cleanup_free_ char *a = get("/_commander/monitor"), *r = get("/");

        ASSERT_HAS(a, "\r\nContent-Security-Policy: default-src 'none'; style-src 'sha256-");
        ASSERT_HAS(a, "; connect-src 'self'; ");
        ASSERT_HAS(a, "\r\nX-Frame-Options: DENY\r\n");
        ASSERT_HAS(a, "\r\nReferrer-Policy: no-referrer\r\n");
        ASSERT_HAS(a, "\r\nX-Content-Type-Options: nosniff\r\n");
        ASSERT_HAS(r, "\r\nLocation: /_commander/monitor\r\n");
}

static void test_admin_methods(void **state) {
        _cleanup_free_ char *head = request("HEAD /metrics HTTP/1.1\r\nHost: a\r\n\r\n"),
                            *post = request("POST /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"),
                            *bad = request("NOT HTTP AT ALL\r\n\r\n");

        assert_true(startswith(head, "HTTP/1.1 200 OK\r\n"));
        ASSERT_HAS(head, "\r\nContent-Length: ");
        assert_string_equal(body_of(head), ""); /* the length of the GET, no body */
        assert_true(startswith(post, "HTTP/1.1 405 Method Not Allowed\r\n"));
        ASSERT_HAS(post, "\r\nAllow: GET, HEAD\r\n");
        assert_true(startswith(bad, "HTTP/1.1 400 Bad Request\r\n"));
}

/* A worker that counts who asks it and answers its monitor document (from the loop: the fan-out sends
 * its request from there too). */
typedef struct Counter {
        int fd;
        sd_event_source *io;
        unsigned accepted;
} Counter;

static int on_counter_request(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{\"users\":[]}";
        char buf[1024];

        if (read(fd, buf, sizeof buf) > 0) { /* one small request, whole */
                (void) fd_set_nonblock(fd, false);
                assert_int_equal(loop_write(fd, answer, sizeof answer - 1), 0);
        }
        (void) sd_event_source_set_enabled(s, SD_EVENT_OFF); /* floating: freed with the loop */
        safe_close(fd);
        return 0;
}

static int on_counter_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Counter *c = userdata;
        int conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

        assert_true(conn >= 0);
        c->accepted++;
        /* floating: owned by the loop until it unrefs itself */
        assert_true(sd_event_add_io(m->event, NULL, conn, EPOLLIN, on_counter_request, NULL) >= 0);
        return 0;
}

static void counter_start(Counter *c, Worker *w) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        *c = (Counter) {};
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s/w%u.sock", dir, w->id);
        w->socket_path = strdup(sa.sun_path);
        c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        assert_int_equal(bind(c->fd, (struct sockaddr *) &sa, sizeof sa), 0);
        assert_int_equal(listen(c->fd, 16), 0);
        assert_true(sd_event_add_io(m->event, &c->io, c->fd, EPOLLIN, on_counter_accept, c) >= 0);
}

static void counter_stop(Counter *c) {
        c->io = sd_event_source_disable_unref(c->io);
        c->fd = safe_close(c->fd);
}

static void test_admin_population_shared(void **state) {
        static const char raw[] = "GET /_commander/population HTTP/1.1\r\nHost: a\r\n\r\n";
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);
        _cleanup_free_ char *a = NULL, *b = NULL;
        int fa, fb;
        Counter c;

        counter_start(&c, w);
        fa = send_request(raw);
        fb = send_request(raw);
        a = receive(fa);
        b = receive(fb);
        assert_int_equal(c.accepted, 1);
        assert_true(startswith(a, "HTTP/1.1 200 OK\r\n"));
        assert_string_equal(a, b);
        ASSERT_HAS(a, "\"answered\":1");
        /* the next one asks again */
        free(a);
        a = get("/_commander/population");
        assert_int_equal(c.accepted, 2);
        counter_stop(&c);
}

/* A client that asks for megabytes and reads nothing: the loop goes on, others are answered. */
static void test_admin_slow_reader_blocks_nobody(void **state) {
        static const char raw[] = "GET /_commander/population HTTP/1.1\r\nHost: a\r\n\r\n";
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);
        _cleanup_free_ char *other = NULL;
        int sleeper, size = 4096;
        Counter c;

        for (unsigned i = 0; i < 20000; i++) {
                char name[96];
                snprintf(name, sizeof name, "a-user-with-a-rather-long-name-so-the-answer-gets-big-%06u", i);
                assert_int_equal(surface_user_place(&m->surface, name, w->id, fixture_now, NULL), 0);
        }
        counter_start(&c, w);
        sleeper = send_request(raw);
        assert_int_equal(setsockopt(sleeper, SOL_SOCKET, SO_RCVBUF, &size, sizeof size), 0);
        /* the fan-out ends and the answer starts going out; the sleeper's buffers fill */
        for (unsigned i = 0; i < 20; i++)
                assert_true(sd_event_run(m->event, 20 * USEC_PER_MSEC) >= 0);
        other = get("/metrics");
        assert_true(startswith(other, "HTTP/1.1 200 OK\r\n"));
        safe_close(sleeper);
        counter_stop(&c);
}

static int free_tcp_port(void) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
        socklen_t len = sizeof sa;
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_int_equal(bind(fd, (struct sockaddr *) &sa, len), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *) &sa, &len), 0);
        return ntohs(sa.sin_port);
}

static void test_admin_new_refuses_public(void **state) {
        Admin *a = NULL;
        char address[64];

        snprintf(address, sizeof address, "0.0.0.0:%d", free_tcp_port());
        assert_int_equal(admin_new(m->event, address, &m->status, &a), -EPERM);
        assert_null(a);
        snprintf(address, sizeof address, "127.0.0.1:%d", free_tcp_port());
        assert_int_equal(admin_new(m->event, address, &m->status, &a), 0);
        a = admin_free(a);
        m->config.admin_allow_public = true;
        snprintf(address, sizeof address, "0.0.0.0:%d", free_tcp_port());
        assert_int_equal(admin_new(m->event, address, &m->status, &a), 0);
        a = admin_free(a);
        assert_int_equal(admin_new(m->event, "not an address", &m->status, &a), -EINVAL);
}

static void test_admin_out_of_descriptors(void **state) {
        static const char raw[] = "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n";
        _cleanup_free_ char *answer = NULL;
        unsigned dispatches = 0;
        struct rlimit old;
        usec_t start;
        int fd;

        fd = send_request(raw);
        fd_shortage_begin(&old);
        /* a listener that stayed on would be dispatched again at once, tens of thousands of times */
        start = __real_now_usec(CLOCK_MONOTONIC);
        while (__real_now_usec(CLOCK_MONOTONIC) - start < 200 * USEC_PER_MSEC)
                if (sd_event_run(m->event, 10 * USEC_PER_MSEC) > 0)
                        dispatches++;
        fd_shortage_end(&old);
        CHECK_EXPLAINED(dispatches < 20, "%u dispatches in 200 ms out of descriptors: the listener spins",
                        dispatches);
        /* the pause ends on its own: the client that waited in the queue is answered */
        answer = receive(fd);
        assert_true(startswith(answer, "HTTP/1.1 200 OK\r\n"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_admin_routes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_admin_monitor_headers, setup, teardown),
                cmocka_unit_test_setup_teardown(test_admin_methods, setup, teardown),
                cmocka_unit_test_setup_teardown(test_admin_population_shared, setup, teardown),
                cmocka_unit_test_setup_teardown(test_admin_slow_reader_blocks_nobody, setup, teardown),
                cmocka_unit_test_setup_teardown(test_admin_new_refuses_public, setup, teardown),
                cmocka_unit_test_setup_teardown(test_admin_out_of_descriptors, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
