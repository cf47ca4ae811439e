/* SPDX-License-Identifier: MIT */
/* Health (daemon/health.c) on a Manager in memory (manager-fixture.c, test-driven clock): a routable
 * worker whose reports stopped is taken out of new work (not a taker, no longer the reception; its users
 * stay), takes work again when it reports, and, silent for hung_timeout, is stopped; hung_timeout=0 never
 * stops it. The same for a worker that reports but leaves unanswered_limit requests in a row unanswered
 * (the front end's counters faked here): out of new work, back when it answers (a request, or the health
 * probe on a real socket), stopped when it stays out for hung_timeout; a slow worker that answers in
 * between is never taken out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "macro.h"
#include "manager-fixture.h"

#define INTERVAL (200 * USEC_PER_MSEC)

static Manager *m;
/* the front end's counters of w1 and w2, as health reads them */
static WorkerTraffic traffic[3];

static bool fake_traffic(unsigned worker, WorkerTraffic *ret, void *userdata) {
        *ret = (WorkerTraffic) {};
        if (worker >= ELEMENTSOF(traffic))
                return false;
        *ret = traffic[worker];
        return true;
}

static int setup(void **state) {
        m = fixture_manager_new();
        m->config.occupancy_interval = INTERVAL;
        m->config.hung_timeout = 5 * USEC_PER_SEC;
        m->config.response_timeout = 2 * USEC_PER_SEC;
        m->capacity.sources.worker_traffic = fake_traffic;
        for (size_t i = 0; i < ELEMENTSOF(traffic); i++)
                traffic[i] = (WorkerTraffic) { .has_forward = true };
        return 0;
}

static int teardown(void **state) {
        fixture_manager_free(m);
        m = NULL;
        return 0;
}

/* seconds of reports every interval from w1 (and w2 when it reports), health checked each time */
static void run(Worker *w1, Worker *w2, bool w2_reports, usec_t span) {
        for (usec_t t = 0; t < span; t += INTERVAL) {
                fixture_advance(INTERVAL);
                fixture_report(w1, READING(.cpu = 0.1));
                if (w2_reports)
                        fixture_report(w2, READING(.cpu = 0.1));
                health_check(&m->health, fixture_now);
        }
}

static void test_health_silent_worker_out_then_back(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE);

        Worker *silent, *other;

        run(w1, w2, true, USEC_PER_SEC);
        assert_null(w2->unhealthy);
        /* the reception goes silent: out of new work, the reception passes, its users stay */
        silent = m->pool.reception;
        other = silent == w1 ? w2 : w1;
        fixture_set_users(m, silent, 2);
        for (usec_t t = 0; t < 2 * USEC_PER_SEC; t += INTERVAL) {
                fixture_advance(INTERVAL);
                fixture_report(other, READING(.cpu = 0.1));
                health_check(&m->health, fixture_now);
        }
        assert_non_null(silent->unhealthy);
        assert_non_null(strstr(silent->unhealthy, "no report for"));
        assert_false(worker_takes_users(silent));
        assert_string_equal(worker_why_no_users(silent), "it is unhealthy");
        assert_true(worker_is_routable(silent));
        assert_ptr_equal(m->pool.reception, other);
        assert_int_equal(surface_worker_users(&m->surface, silent->id), 2);
        /* it reports again: back to work */
        fixture_report(silent, READING(.cpu = 0.1));
        health_check(&m->health, fixture_now);
        assert_null(silent->unhealthy);
        assert_true(worker_takes_users(silent));
}

static void test_health_hung_worker_stopped(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE);

        run(w1, w2, true, USEC_PER_SEC);
        run(w1, w2, false, 4 * USEC_PER_SEC);
        assert_non_null(w2->unhealthy);
        assert_int_equal(w2->state, WORKER_ROUTABLE); /* not yet hung_timeout */
        run(w1, w2, false, 2 * USEC_PER_SEC);
        assert_int_equal(w2->state, WORKER_STOPPING);
        assert_string_equal(w2->stop_reason, "hung: no report for hung_timeout");
}

static void test_health_never_stopped_without_timeout(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE);

        m->config.hung_timeout = 0;
        run(w1, w2, true, USEC_PER_SEC);
        run(w1, w2, false, 30 * USEC_PER_SEC);
        assert_non_null(w2->unhealthy);
        assert_int_equal(w2->state, WORKER_ROUTABLE);
}

/* requests answered (n > 0) or left unanswered (n < 0) by w, as the front end counts them */
static void answer(Worker *w, int n) {
        WorkerTraffic *t = &traffic[w->id];

        if (n > 0) {
                t->answers += (unsigned) n;
                t->unanswered = 0;
        } else
                t->unanswered += (unsigned) -n;
}

static void test_health_unanswered_out_then_back(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE);

        answer(w1, 5);
        run(w1, w2, true, USEC_PER_SEC);
        assert_ptr_equal(m->pool.reception, w1);
        /* it reports, but its requests time out: two are not enough */
        answer(w1, -2);
        run(w1, w2, true, USEC_PER_SEC);
        assert_null(w1->unhealthy);
        answer(w1, -1);
        run(w1, w2, true, USEC_PER_SEC);
        assert_non_null(w1->unhealthy);
        assert_non_null(strstr(w1->unhealthy, "3 requests in a row unanswered"));
        assert_false(worker_takes_users(w1));
        assert_true(worker_is_routable(w1));
        assert_ptr_equal(m->pool.reception, w2);
        /* one of its users' requests gets an answer: back to work */
        answer(w1, 1);
        run(w1, w2, true, USEC_PER_SEC);
        assert_null(w1->unhealthy);
        assert_true(worker_takes_users(w1));
}

static void test_health_slow_worker_not_taken_out(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE);

        /* timeouts by the dozen, but answers in between: merely slow */
        for (int i = 0; i < 20; i++) {
                answer(w2, -2);
                answer(w2, 1);
                run(w1, w2, true, INTERVAL);
                assert_null(w2->unhealthy);
        }
        /* and unanswered_limit=0 never takes one out */
        m->config.unanswered_limit = 0;
        answer(w2, -50);
        run(w1, w2, true, USEC_PER_SEC);
        assert_null(w2->unhealthy);
}

static void test_health_unanswered_hung_stopped(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE);

        answer(w2, -3);
        run(w1, w2, true, USEC_PER_SEC);
        assert_non_null(w2->unhealthy);
        run(w1, w2, true, 3 * USEC_PER_SEC);
        assert_int_equal(w2->state, WORKER_ROUTABLE); /* not yet hung_timeout */
        run(w1, w2, true, 2 * USEC_PER_SEC);
        assert_int_equal(w2->state, WORKER_STOPPING);
        assert_string_equal(w2->stop_reason, "hung: unanswered for hung_timeout");
}

static void test_health_sole_worker_keeps_reception(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE);

        answer(w1, -3);
        run(w1, NULL, false, USEC_PER_SEC);
        assert_non_null(w1->unhealthy);
        /* nobody to pass it to: guests still find a worker, the one there is */
        assert_ptr_equal(m->pool.reception, w1);
        answer(w1, 1);
        run(w1, NULL, false, USEC_PER_SEC);
        assert_null(w1->unhealthy);
        assert_ptr_equal(m->pool.reception, w1);
}

/* The worker's socket, played by the test: a listener at w's socket_path. */
static int listen_as(Worker *w) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        free(w->socket_path);
        assert_true(asprintf(&w->socket_path, "%s/w%u.sock", m->runtime_dir, w->id) > 0);
        strcpy(sa.sun_path, w->socket_path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *) &sa, sizeof sa), 0);
        assert_int_equal(listen(fd, 8), 0);
        return fd;
}

static void test_health_probe_answer_takes_back(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE);
        static const char answer_404[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        char buf[512];
        ssize_t n;
        int lfd = listen_as(w2), cfd;

        answer(w2, -3);
        run(w1, w2, true, USEC_PER_SEC);
        assert_non_null(w2->unhealthy);
        /* the probe came: an OPTIONS * on a connection of its own */
        cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        assert_true(cfd >= 0);
        n = read(cfd, buf, sizeof buf - 1);
        assert_true(n > 0);
        buf[n] = 0;
        assert_non_null(strstr(buf, "OPTIONS * HTTP/1.1\r\n"));
        /* unanswered, it stays out */
        run(w1, w2, true, USEC_PER_SEC);
        assert_non_null(w2->unhealthy);
        assert_int_equal(write(cfd, answer_404, sizeof answer_404 - 1), (ssize_t) sizeof answer_404 - 1);
        while (w2->unhealthy && sd_event_run(m->event, 1000 * USEC_PER_MSEC) > 0)
                ;
        assert_null(w2->unhealthy);
        assert_true(worker_takes_users(w2));
        /* the three it left unanswered are forgiven; three more take it out again */
        run(w1, w2, true, USEC_PER_SEC);
        assert_null(w2->unhealthy);
        answer(w2, -3);
        run(w1, w2, true, USEC_PER_SEC);
        assert_non_null(w2->unhealthy);
        safe_close(cfd);
        safe_close(lfd);
        (void) unlink(w2->socket_path);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_health_silent_worker_out_then_back, setup, teardown),
                cmocka_unit_test_setup_teardown(test_health_hung_worker_stopped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_health_never_stopped_without_timeout, setup, teardown),
                cmocka_unit_test_setup_teardown(test_health_unanswered_out_then_back, setup, teardown),
                cmocka_unit_test_setup_teardown(test_health_slow_worker_not_taken_out, setup, teardown),
                cmocka_unit_test_setup_teardown(test_health_unanswered_hung_stopped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_health_probe_answer_takes_back, setup, teardown),
                cmocka_unit_test_setup_teardown(test_health_sole_worker_keeps_reception, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
