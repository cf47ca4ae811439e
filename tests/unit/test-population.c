/* SPDX-License-Identifier: MIT */
/* The population fan-out against fake workers on real Unix sockets, served from the same loop: one that
 * answers its monitor document, one that never accepts (a stopped worker: the kernel's queue takes the
 * connection, nobody answers), one that answers garbage, one that closes early, one whose answer is too
 * large, and no socket at all. The fetch ends every way with a reason and never calls back before the
 * loop runs; the population answers within its deadline with an error row for each worker that failed
 * and full rows for the others, the commander's consumption fused into the user rows. */
#include <errno.h>
#include <json-c/json.h>
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
#include "fd-util.h"
#include "macro.h"
#include "manager-fixture.h"
#include "population-fetch.h"
#include "population.h"

typedef enum FakeMode {
        FAKE_ANSWER, /* reads the request, writes `answer`, closes */
        FAKE_SILENT, /* listens, never accepts */
        FAKE_CLOSE,  /* reads the request and closes without a word */
} FakeMode;

typedef struct Fake {
        FakeMode mode;
        const char *answer;
        char path[108];
        int fd, conn;
        sd_event_source *io, *conn_io;
        char request[4096];
        size_t request_len;
        unsigned accepted;
} Fake;

static char dir[] = "/tmp/test-population.XXXXXX";
static sd_event *event;
static Manager *m;

static int setup(void **state) {
        strcpy(dir + strlen(dir) - 6, "XXXXXX");
        if (!mkdtemp(dir))
                return -1;
        m = fixture_manager_new();
        event = m->event;
        return 0;
}

static int teardown(void **state) {
        char cmd[sizeof dir + 16];

        fixture_manager_free(m);
        m = NULL;
        event = NULL;
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        return system(cmd) == 0 ? 0 : -1;
}

static int on_fake_conn(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Fake *f = userdata;
        ssize_t n = read(fd, f->request + f->request_len, sizeof f->request - 1 - f->request_len);

        if (n > 0) {
                f->request_len += (size_t) n;
                f->request[f->request_len] = 0;
                if (!strstr(f->request, "\r\n\r\n"))
                        return 0;
                if (f->mode == FAKE_ANSWER) {
                        (void) fd_set_nonblock(fd, false);
                        (void) loop_write(fd, f->answer, strlen(f->answer));
                }
        }
        f->conn_io = sd_event_source_disable_unref(f->conn_io);
        f->conn = safe_close(f->conn);
        return 0;
}

static int on_fake_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Fake *f = userdata;

        f->conn = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        assert_true(f->conn >= 0);
        f->accepted++;
        assert_true(sd_event_add_io(event, &f->conn_io, f->conn, EPOLLIN, on_fake_conn, f) >= 0);
        return 0;
}

static void fake_start(Fake *f, const char *name, FakeMode mode, const char *answer) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        *f = (Fake) { .mode = mode, .answer = answer, .conn = -EBADF };
        snprintf(f->path, sizeof f->path, "%s/%s.sock", dir, name);
        strcpy(sa.sun_path, f->path);
        f->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        assert_true(f->fd >= 0);
        assert_int_equal(bind(f->fd, (struct sockaddr *) &sa, sizeof sa), 0);
        assert_int_equal(listen(f->fd, 16), 0);
        if (mode != FAKE_SILENT)
                assert_true(sd_event_add_io(event, &f->io, f->fd, EPOLLIN, on_fake_accept, f) >= 0);
}

static void fake_stop(Fake *f) {
        f->io = sd_event_source_disable_unref(f->io);
        f->conn_io = sd_event_source_disable_unref(f->conn_io);
        f->fd = safe_close(f->fd);
        f->conn = safe_close(f->conn);
}

static char *http_answer(const char *body) {
        char *s;

        assert_true(asprintf(&s, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                                 "Connection: close\r\n\r\n%s",
                             strlen(body), body) > 0);
        return s;
}

/* Runs the loop until *flag, for at most limit; returns how long it took. */
static usec_t run_until(const bool *flag, usec_t limit) {
        usec_t start = __real_now_usec(CLOCK_MONOTONIC);

        while (!*flag) {
                assert_true(__real_now_usec(CLOCK_MONOTONIC) - start < limit);
                assert_true(sd_event_run(event, 50 * USEC_PER_MSEC) >= 0);
        }
        return __real_now_usec(CLOCK_MONOTONIC) - start;
}

/* ---- one fetch ---- */

static bool fetch_ended;

static void on_fetch_done(PopulationFetch *f, void *userdata) {
        fetch_ended = true;
}

static PopulationFetch *fetch(const char *path) {
        PopulationFetch *f = NULL;

        fetch_ended = false;
        assert_int_equal(population_fetch_start(event, path, POPULATION_TARGET, on_fetch_done, NULL, &f), 0);
        assert_false(fetch_ended); /* never from the start */
        return f;
}

static void test_population_fetch_answer(void **state) {
        _cleanup_free_ char *answer = http_answer("{\"users\":[]}");
        PopulationFetch *f;
        Fake w;

        fake_start(&w, "ok", FAKE_ANSWER, answer);
        f = fetch(w.path);
        (void) run_until(&fetch_ended, 5 * USEC_PER_SEC);
        assert_true(population_fetch_done(f));
        assert_int_equal(population_fetch_result(f)->error, 0);
        assert_int_equal(population_fetch_result(f)->status, 200);
        assert_string_equal(population_fetch_result(f)->body, "{\"users\":[]}");
        /* its own request: the monitor target, a Host, and no keep-alive to hold the worker */
        assert_non_null(strstr(w.request, "GET /_monitor/state HTTP/1.1\r\n"));
        assert_non_null(strstr(w.request, "\r\nHost: "));
        assert_non_null(strstr(w.request, "\r\nConnection: close\r\n"));
        population_fetch_free(f);
        fake_stop(&w);
}

static void test_population_fetch_no_socket(void **state) {
        char path[sizeof dir + 32];
        PopulationFetch *f;

        snprintf(path, sizeof path, "%s/nobody.sock", dir);
        f = fetch(path);
        (void) run_until(&fetch_ended, 5 * USEC_PER_SEC);
        assert_int_equal(population_fetch_result(f)->error, -ENOENT);
        assert_non_null(strstr(population_fetch_result(f)->reason, "cannot connect"));
        population_fetch_free(f);
}

static void test_population_fetch_abort_silent(void **state) {
        PopulationFetch *f;
        Fake w;

        fake_start(&w, "stopped", FAKE_SILENT, NULL);
        f = fetch(w.path);
        for (unsigned i = 0; i < 5; i++)
                assert_true(sd_event_run(event, 10 * USEC_PER_MSEC) >= 0);
        assert_false(fetch_ended); /* connected through the queue, nobody answers */
        population_fetch_abort(f, -ETIMEDOUT, "no answer within 1s");
        assert_false(fetch_ended); /* from the loop, not from the abort */
        (void) run_until(&fetch_ended, 5 * USEC_PER_SEC);
        assert_int_equal(population_fetch_result(f)->error, -ETIMEDOUT);
        assert_string_equal(population_fetch_result(f)->reason, "no answer within 1s");
        population_fetch_abort(f, -EIO, "again"); /* ended: left alone */
        assert_int_equal(population_fetch_result(f)->error, -ETIMEDOUT);
        population_fetch_free(f);
        fake_stop(&w);
}

static void test_population_fetch_closed_early(void **state) {
        PopulationFetch *f;
        Fake w;

        fake_start(&w, "closes", FAKE_CLOSE, NULL);
        f = fetch(w.path);
        (void) run_until(&fetch_ended, 5 * USEC_PER_SEC);
        assert_int_equal(population_fetch_result(f)->error, -ECONNRESET);
        assert_non_null(strstr(population_fetch_result(f)->reason, "closed the connection"));
        population_fetch_free(f);
        fake_stop(&w);
}

static void test_population_fetch_too_large(void **state) {
        char answer[256];
        PopulationFetch *f;
        Fake w;

        snprintf(answer, sizeof answer, "HTTP/1.1 200 OK\r\nContent-Length: %u\r\n\r\n{\"users\":[",
                 POPULATION_FETCH_BODY_MAX + 1);
        fake_start(&w, "huge", FAKE_ANSWER, answer);
        f = fetch(w.path);
        (void) run_until(&fetch_ended, 5 * USEC_PER_SEC);
        assert_int_equal(population_fetch_result(f)->error, -EFBIG);
        population_fetch_free(f);
        fake_stop(&w);
}

static void test_population_fetch_malformed(void **state) {
        PopulationFetch *f;
        Fake w;

        fake_start(&w, "garbage", FAKE_ANSWER, "SSH-2.0-OpenSSH_9.2\r\n\r\n");
        f = fetch(w.path);
        (void) run_until(&fetch_ended, 5 * USEC_PER_SEC);
        assert_int_equal(population_fetch_result(f)->error, -EBADMSG);
        assert_non_null(strstr(population_fetch_result(f)->reason, "malformed answer"));
        population_fetch_free(f);
        fake_stop(&w);
}

/* ---- the fan-out and its document ---- */

static bool population_ended;

static void on_population_done(Population *p, void *userdata) {
        population_ended = true;
}

static json_object *population_document(Population *p) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        json_object *doc;

        assert_non_null(f);
        assert_int_equal(population_write(p, &m->status, f), 0);
        assert_int_equal(fclose(f), 0);
        doc = json_tokener_parse(buf);
        if (!doc)
                fail_msg("not JSON: %s", buf);
        return doc;
}

static json_object *get(json_object *o, const char *key) {
        json_object *v = NULL;

        if (!json_object_object_get_ex(o, key, &v))
                fail_msg("no \"%s\" in %s", key, json_object_to_json_string(o));
        return v;
}

static json_object *row_of(json_object *doc, const char *worker) {
        json_object *workers = get(doc, "workers");

        for (size_t i = 0; i < json_object_array_length(workers); i++) {
                json_object *w = json_object_array_get_idx(workers, i);
                if (streq(json_object_get_string(get(w, "worker")), worker))
                        return w;
        }
        fail_msg("no row for %s", worker);
        return NULL;
}

static json_object *user_of(json_object *row, const char *user) {
        json_object *users = get(row, "users");

        for (size_t i = 0; i < json_object_array_length(users); i++) {
                json_object *u = json_object_array_get_idx(users, i);
                if (streq(json_object_get_string(get(u, "user")), user))
                        return u;
        }
        fail_msg("no user %s in %s", user, json_object_to_json_string(row));
        return NULL;
}

static void place(const char *user, Worker *w, uint64_t requests) {
        SurfaceUser *u;

        assert_int_equal(surface_user_place(&m->surface, user, w->id, fixture_now, &u), 0);
        u->requests = requests;
        u->busy_usec = requests * 2 * USEC_PER_MSEC;
}

static void test_population_fan_out_error_rows(void **state) {
        _cleanup_free_ char *good = http_answer("{\"worker\":\"1\",\"pid\":42,\"users\":["
                                                "{\"user\":\"alice\",\"counter\":7},"
                                                "{\"user\":\"zed\",\"counter\":1,\"tags\":[\"x\",{\"deep\":true}]}]}");
        _cleanup_free_ char *garbage = http_answer("{\"users\": [1, 2");
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE),
               *w3 = fixture_add_worker(m, WORKER_ROUTABLE), *w4 = fixture_add_worker(m, WORKER_STARTING);
        const usec_t timeout = 300 * USEC_PER_MSEC;
        Population *p = NULL;
        json_object *doc, *row, *u;
        Fake f1, f2, f3;
        usec_t took;

        fake_start(&f1, "w1", FAKE_ANSWER, good);
        fake_start(&f2, "w2", FAKE_SILENT, NULL);
        fake_start(&f3, "w3", FAKE_ANSWER, garbage);
        w1->socket_path = strdup(f1.path);
        w2->socket_path = strdup(f2.path);
        w3->socket_path = strdup(f3.path);
        w4->socket_path = strdup("/nonexistent/w4.sock");
        place("alice", w1, 5);
        place("bob", w1, 3);   /* placed on w1, which does not list it */
        place("carol", w2, 2); /* on the worker that does not answer */
        fixture_advance(4 * USEC_PER_SEC);

        population_ended = false;
        assert_int_equal(population_start(event, &m->status, timeout, on_population_done, NULL, &p), 0);
        took = run_until(&population_ended, 5 * USEC_PER_SEC);
        /* the stopped worker costs the deadline, not more */
        CHECK_EXPLAINED(took >= timeout - 10 * USEC_PER_MSEC && took < timeout + 500 * USEC_PER_MSEC,
                        "the population took %llu ms with a %llu ms deadline", (unsigned long long) took / 1000,
                        (unsigned long long) timeout / 1000);
        assert_int_equal(f2.accepted, 0);
        doc = population_document(p);

        assert_int_equal(json_object_get_int(get(doc, "asked")), 3);
        assert_int_equal(json_object_get_int(get(doc, "answered")), 1);
        /* w1: a full row; the worker's fields passed on as it said them, the commander's side added */
        row = row_of(doc, "w1");
        assert_string_equal(json_object_get_string(get(row, "status")), "ok");
        assert_int_equal(json_object_get_int(get(get(row, "reported"), "pid")), 42);
        u = user_of(row, "alice");
        assert_true(json_object_get_boolean(get(u, "listed")));
        assert_true(json_object_get_boolean(get(u, "placed")));
        assert_int_equal(json_object_get_int(get(u, "requests")), 5);
        assert_true(json_object_get_double(get(u, "seconds")) == 0.010);
        assert_int_equal(json_object_get_int(get(u, "last_seen_ms_ago")), 4000);
        assert_int_equal(json_object_get_int(get(get(u, "app"), "counter")), 7);
        u = user_of(row, "zed"); /* the worker holds it, the commander does not know it */
        assert_true(json_object_get_boolean(get(u, "listed")));
        assert_false(json_object_get_boolean(get(u, "placed")));
        assert_true(json_object_is_type(get(u, "requests"), json_type_null));
        assert_true(json_object_get_boolean(get(json_object_array_get_idx(get(get(u, "app"), "tags"), 1), "deep")));
        u = user_of(row, "bob"); /* the commander places it there, the worker does not list it */
        assert_false(json_object_get_boolean(get(u, "listed")));
        assert_true(json_object_get_boolean(get(u, "placed")));
        assert_int_equal(json_object_get_int(get(row, "n_users")), 3);
        /* w2: stopped: an error row with the reason, and the users the commander knows there */
        row = row_of(doc, "w2");
        assert_string_equal(json_object_get_string(get(row, "status")), "error");
        assert_non_null(strstr(json_object_get_string(get(row, "error")), "no answer within 300ms"));
        u = user_of(row, "carol");
        assert_true(json_object_is_type(get(u, "listed"), json_type_null)); /* unknown, not "no" */
        assert_int_equal(json_object_get_int(get(u, "requests")), 2);
        /* w3: garbage */
        row = row_of(doc, "w3");
        assert_string_equal(json_object_get_string(get(row, "status")), "error");
        assert_non_null(strstr(json_object_get_string(get(row, "error")), "not JSON"));
        /* w4: starting, not asked */
        row = row_of(doc, "w4");
        assert_string_equal(json_object_get_string(get(row, "status")), "not-asked");
        assert_string_equal(json_object_get_string(get(row, "state")), "starting");
        assert_int_equal(json_object_get_int(get(doc, "users")), 4);

        json_object_put(doc);
        population_free(p);
        fake_stop(&f1);
        fake_stop(&f2);
        fake_stop(&f3);
}

/* Shapes that are JSON but not a monitor document are error rows too, each with its reason. */
static void test_population_not_a_monitor_document(void **state) {
        static const char *const bodies[] = {
                "[]",
                "{\"users\":{}}",
                "{\"users\":[{\"name\":\"x\"}]}",
                "{\"users\":[]} trailing",
        };
        static const char *const reasons[] = {
                "without a \"users\" array",
                "without a \"users\" array",
                "users[0] is not an object with a \"user\" string",
                "bytes after the document",
        };
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);

        for (size_t i = 0; i < ELEMENTSOF(bodies); i++) {
                _cleanup_free_ char *answer = http_answer(bodies[i]);
                Population *p = NULL;
                json_object *doc;
                Fake f;

                fake_start(&f, "w", FAKE_ANSWER, answer);
                free(w->socket_path);
                w->socket_path = strdup(f.path);
                population_ended = false;
                assert_int_equal(population_start(event, &m->status, USEC_PER_SEC, on_population_done, NULL, &p), 0);
                (void) run_until(&population_ended, 5 * USEC_PER_SEC);
                doc = population_document(p);
                CHECK_EXPLAINED(strstr(json_object_get_string(get(row_of(doc, "w1"), "error")), reasons[i]),
                                "body %s: %s", bodies[i], json_object_to_json_string(doc));
                json_object_put(doc);
                population_free(p);
                fake_stop(&f);
                (void) unlink(f.path);
        }
}

static void test_population_nobody_to_ask(void **state) {
        Population *p = NULL;
        json_object *doc;

        (void) fixture_add_worker(m, WORKER_STARTING);
        population_ended = false;
        assert_int_equal(population_start(event, &m->status, USEC_PER_SEC, on_population_done, NULL, &p), 0);
        assert_false(population_ended); /* from the loop, not from the start */
        (void) run_until(&population_ended, USEC_PER_SEC);
        doc = population_document(p);
        assert_int_equal(json_object_get_int(get(doc, "asked")), 0);
        assert_int_equal(json_object_array_length(get(doc, "workers")), 1);
        json_object_put(doc);
        population_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_population_fetch_answer, setup, teardown),
                cmocka_unit_test_setup_teardown(test_population_fetch_no_socket, setup, teardown),
                cmocka_unit_test_setup_teardown(test_population_fetch_abort_silent, setup, teardown),
                cmocka_unit_test_setup_teardown(test_population_fetch_closed_early, setup, teardown),
                cmocka_unit_test_setup_teardown(test_population_fetch_too_large, setup, teardown),
                cmocka_unit_test_setup_teardown(test_population_fetch_malformed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_population_fan_out_error_rows, setup, teardown),
                cmocka_unit_test_setup_teardown(test_population_not_a_monitor_document, setup, teardown),
                cmocka_unit_test_setup_teardown(test_population_nobody_to_ask, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
