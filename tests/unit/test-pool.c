/* SPDX-License-Identifier: MIT */
/* The pool's reading side on a Manager in memory (manager-fixture.c, a test-driven clock): freshness in
 * each of its cases and at its borders (NEW, FRESH, STALE, MISSING, NO_CHANNEL), the stale horizon, and
 * pool_handle_frame() archiving reports into the window and the occupancy, taking a Hello to routable,
 * refusing a foreign protocol (also through a real channel, which the refusal frees from inside its own
 * callback), shrugging at frames only the commander sends, and a spawn failing before its child exists
 * going through the spawn throttle, and one failing on its way to exec named by its step. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "fd-util.h"
#include "frame.h"
#include "macro.h"
#include "manager-fixture.h"

static Manager *m;

static int setup(void **state) {
        m = fixture_manager_new();
        return 0;
}

static int teardown(void **state) {
        fixture_manager_free(m);
        m = NULL;
        return 0;
}

static Freshness freshness(const Worker *w, usec_t *ret_since) {
        usec_t since = 12345;
        Freshness f = capacity_freshness(&m->capacity, w, fixture_now, &since);

        if (ret_since)
                *ret_since = since;
        return f;
}

/* The horizon the evaluator judges w's reading by. */
static usec_t stale_horizon(const Worker *w) {
        FreshnessInput in;

        pool_freshness_input(&m->pool, w, &in);
        return in.horizon;
}

/* 5 s x 3 with the defaults */
static usec_t horizon(void) {
        return m->config.occupancy_interval * m->config.stale_after;
}

static void test_pool_stale_horizon(void **state) {
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);

        assert_true(horizon() == 15 * USEC_PER_SEC);
        assert_true(stale_horizon(w) == 15 * USEC_PER_SEC);
        /* the slower of the configured and the announced interval */
        w->sensor_interval = 10 * USEC_PER_SEC;
        assert_true(stale_horizon(w) == 30 * USEC_PER_SEC);
        w->sensor_interval = USEC_PER_SEC;
        assert_true(stale_horizon(w) == 15 * USEC_PER_SEC);
}

static void test_pool_stale_horizon_absurd_interval(void **state) {
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);

        /* a sensor announcing an interval so long that interval x stale_after wraps around 2^64: the
         * horizon must not come out shorter than the configured one (here it wraps to 2 us, and the worker
         * reads STALE right after every report) */
        fixture_hello(w, UINT64_MAX / 3 + 1, EP_PROTOCOL_VERSION);
        /* capped on arrival: an hour is the slowest a sensor may claim */
        assert_true(w->sensor_interval == 3600 * USEC_PER_SEC);
        fixture_report(w, READING(.cpu = 0.1));
        fixture_advance(10);
        CHECK_EXPLAINED(stale_horizon(w) >= horizon() && freshness(w, NULL) == FRESHNESS_FRESH,
                        "an announced interval_usec is worker input: the horizon must neither wrap nor grow "
                        "without bound (horizon %llu us, freshness %s)",
                        (unsigned long long) stale_horizon(w), freshness_to_string(freshness(w, NULL)));
}

static void test_pool_worker_freshness_new(void **state) {
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);
        usec_t since;

        /* routable, no report yet, younger than the horizon: NEW since it became routable */
        assert_int_equal(freshness(w, &since), FRESHNESS_NEW);
        assert_true(since == FIXTURE_T0);
        fixture_advance(horizon() - 1);
        assert_int_equal(freshness(w, NULL), FRESHNESS_NEW);
        /* as old as the horizon without a report: STALE, since birth */
        fixture_advance(1);
        assert_int_equal(freshness(w, &since), FRESHNESS_STALE);
        assert_true(since == FIXTURE_T0);
}

static void test_pool_worker_freshness_new_in_flight(void **state) {
        Worker *w = fixture_add_worker(m, WORKER_STARTING);
        usec_t since;

        /* not routable yet: born at its spawn */
        w->spawned_at = FIXTURE_T0 - 3 * USEC_PER_SEC;
        assert_int_equal(freshness(w, &since), FRESHNESS_NEW);
        assert_true(since == FIXTURE_T0 - 3 * USEC_PER_SEC);
        assert_string_equal(worker_why_no_users(w), "it is starting and not routable yet");
        /* routable later: the clock restarts there */
        fixture_advance(14 * USEC_PER_SEC);
        w->state = WORKER_ROUTABLE;
        w->routable_at = fixture_now - USEC_PER_SEC;
        assert_int_equal(freshness(w, &since), FRESHNESS_NEW);
        assert_true(since == fixture_now - USEC_PER_SEC);
        assert_null(worker_why_no_users(w));
}

static void test_pool_worker_freshness_fresh_then_stale(void **state) {
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);
        usec_t since, at;

        fixture_advance(USEC_PER_SEC);
        at = fixture_now;
        fixture_report(w, READING(.cpu = 0.2));
        assert_int_equal(freshness(w, &since), FRESHNESS_FRESH);
        assert_true(since == 0);
        fixture_advance(horizon() - 1);
        assert_int_equal(freshness(w, NULL), FRESHNESS_FRESH);
        fixture_advance(1);
        assert_int_equal(freshness(w, &since), FRESHNESS_STALE);
        assert_true(since == at); /* stale since its last report */
        /* a report brings it back */
        fixture_report(w, READING(.cpu = 0.2));
        assert_int_equal(freshness(w, NULL), FRESHNESS_FRESH);
}

static void test_pool_worker_freshness_missing(void **state) {
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);
        usec_t since, at;

        /* the first report of a connection has no cpu yet: forgiven */
        fixture_report(w, READING(.busy = 1, .total = 4));
        assert_int_equal(freshness(w, NULL), FRESHNESS_FRESH);
        fixture_advance(5 * USEC_PER_SEC);
        fixture_report(w, READING(.cpu = 0.3, .busy = 1, .total = 4));
        assert_int_equal(freshness(w, NULL), FRESHNESS_FRESH);

        /* then cpu and the executor vanish: MISSING, named, since that report */
        fixture_advance(5 * USEC_PER_SEC);
        at = fixture_now;
        fixture_report(w, READING());
        assert_int_equal(freshness(w, &since), FRESHNESS_MISSING);
        assert_true(since == at);
        assert_string_equal(w->reading.missing_names, "cpu,executor");
        /* still missing on the next one: since stays where it began */
        fixture_advance(5 * USEC_PER_SEC);
        fixture_report(w, READING(.busy = 2, .total = 4));
        assert_int_equal(freshness(w, &since), FRESHNESS_MISSING);
        assert_true(since == at);
        assert_string_equal(w->reading.missing_names, "cpu");

        /* stale beats missing */
        fixture_advance(horizon());
        assert_int_equal(freshness(w, NULL), FRESHNESS_STALE);

        /* a complete report: fresh again, nothing missing */
        fixture_report(w, READING(.cpu = 0.3, .busy = 1, .total = 4));
        assert_int_equal(freshness(w, NULL), FRESHNESS_FRESH);
        assert_int_equal(w->reading.missing_mask, 0);
}

static void test_pool_worker_freshness_missing_memory(void **state) {
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);

        /* with a memory limit every report must carry memory, the first one included */
        m->config.memory_limit = 1ULL << 30;
        capacity_setup_parameters(&m->capacity);
        fixture_report(w, READING());
        assert_int_equal(freshness(w, NULL), FRESHNESS_MISSING);
        assert_string_equal(w->reading.missing_names, "memory");
        fixture_report(w, READING(.cpu = 0.1, .memory = 512.0 * 1024 * 1024));
        assert_int_equal(freshness(w, NULL), FRESHNESS_FRESH);
        assert_true(w->reading.occupancy.has[COMPONENT_MEMORY]);
}

static void test_pool_worker_freshness_no_channel(void **state) {
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);
        usec_t since, closed;

        fixture_report(w, READING(.cpu = 0.1));
        fixture_advance(2 * USEC_PER_SEC);
        closed = fixture_now;
        fixture_close_channel(w);
        /* a fresh reading behind a closed channel is no reading: no more will come */
        fixture_advance(USEC_PER_SEC);
        assert_int_equal(freshness(w, &since), FRESHNESS_NO_CHANNEL);
        assert_true(since == closed);
        fixture_advance(horizon());
        assert_int_equal(freshness(w, NULL), FRESHNESS_NO_CHANNEL);
}

static void test_pool_handle_frame_report_archives(void **state) {
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);
        const Row *last;

        fixture_add_worker(m, WORKER_ROUTABLE);
        for (int i = 0; i < 8; i++) {
                fixture_advance(5 * USEC_PER_SEC);
                /* cpu 0.1 .. 0.8: the occupancy averages the last smoothing_rows = 6 of them */
                fixture_report(w, READING(.cpu = 0.1 * (i + 1), .busy = 1, .total = 10));
        }
        assert_int_equal(w->window.count, 8);
        assert_true(m->pool.reports_received == 8);
        assert_true(w->last_report_at == fixture_now);
        last = window_latest(&w->window);
        assert_non_null(last);
        assert_true(last->received == fixture_now);
        assert_true(last->seq == 8);
        assert_true(last->has_cpu);
        assert_true(w->reading.occupancy.has[COMPONENT_CPU]);
        assert_float_equal(w->reading.occupancy.component[COMPONENT_CPU], (0.3 + 0.4 + 0.5 + 0.6 + 0.7 + 0.8) / 6, 1e-9);
        assert_float_equal(w->reading.occupancy.component[COMPONENT_EXECUTOR], 0.1, 1e-9);
        assert_float_equal(w->reading.occupancy.value, 0.55, 1e-9);
        assert_int_equal(w->reading.occupancy.bottleneck, COMPONENT_CPU);

        /* a report cpu cannot be (NaN, infinite) is no reading: absent, and missing */
        fixture_report(w, READING(.cpu = INFINITY, .busy = 1, .total = 10));
        assert_false(window_latest(&w->window)->has_cpu);
        assert_int_equal(freshness(w, NULL), FRESHNESS_MISSING);
}

static void test_pool_handle_frame_report_window_is_a_ring(void **state) {
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);

        for (unsigned i = 0; i < m->config.window_rows + 25; i++) {
                fixture_advance(USEC_PER_SEC);
                fixture_report(w, READING(.cpu = 0.5));
        }
        assert_int_equal(w->window.count, m->config.window_rows);
        assert_true(w->window.total == m->config.window_rows + 25);
        assert_true(window_latest(&w->window)->seq == m->config.window_rows + 25);
}

static void test_pool_handle_frame_hello_makes_routable(void **state) {
        Worker *w = fixture_add_worker(m, WORKER_STARTING);
        char buf[256];
        int fd;

        fixture_advance(300 * USEC_PER_MSEC);
        /* without sock_diag there is no accept probe: the Hello alone makes it routable */
        assert_null(m->pool.sock_diag);
        fixture_hello(w, 2 * USEC_PER_SEC, EP_PROTOCOL_VERSION);
        assert_int_equal(w->state, WORKER_ROUTABLE);
        assert_true(w->hello_at == fixture_now);
        assert_true(w->routable_at == fixture_now);
        assert_ptr_equal(m->pool.reception, w);
        assert_true(w->sensor_interval == 2 * USEC_PER_SEC);
        assert_string_equal(w->sensor_version, "test");
        assert_true(m->pool.changed_at == fixture_now);
        assert_int_equal(freshness(w, NULL), FRESHNESS_NEW);
        /* and the status file was rewritten for the new pool */
        fd = open(m->status_path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_true(read(fd, buf, sizeof buf) > 0);
        close(fd);
        assert_memory_equal(buf, "{\"group\":\"test\"", 15);

        /* a second Hello (a sensor that reconnected) updates the facts, not the state */
        fixture_hello(w, 4 * USEC_PER_SEC, EP_PROTOCOL_VERSION);
        assert_int_equal(w->state, WORKER_ROUTABLE);
        assert_true(w->sensor_interval == 4 * USEC_PER_SEC);
}

static void test_pool_handle_frame_hello_capabilities(void **state) {
        ElasticPool__Capability caps[] = { ELASTIC_POOL__CAPABILITY__CAPABILITY_SNAPSHOT_USERS,
                                           ELASTIC_POOL__CAPABILITY__CAPABILITY_INSTALL_USERS,
                                           (ElasticPool__Capability) 40, /* unknown, beyond the mask */
                                           ELASTIC_POOL__CAPABILITY__CAPABILITY_UNSPECIFIED };
        ElasticPool__Hello h = ELASTIC_POOL__HELLO__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);

        h.has_protocol_version = true, h.protocol_version = EP_PROTOCOL_VERSION;
        h.n_capabilities = ELEMENTSOF(caps), h.capabilities = caps;
        f.body_case = ELASTIC_POOL__FRAME__BODY_HELLO, f.hello = &h;
        pool_handle_frame(w, &f);
        assert_int_equal(w->capabilities, (1U << 1) | (1U << 2));
        assert_null(w->sensor_version);
        assert_true(w->sensor_interval == 0);
}

static void test_pool_handle_frame_hello_foreign_protocol(void **state) {
        Worker *w = fixture_add_worker(m, WORKER_STARTING);
        usec_t since;

        fixture_advance(USEC_PER_SEC);
        fixture_hello(w, 0, EP_PROTOCOL_VERSION + 1);
        /* we do not guess at a protocol we do not speak: the channel goes, the worker is not routable */
        assert_null(w->channel);
        assert_int_equal(w->state, WORKER_STARTING);
        assert_false(m->capacity.summary_valid);
        assert_int_equal(freshness(w, &since), FRESHNESS_NO_CHANNEL);
        assert_true(since == fixture_now);
}

/* Runs the manager's loop until cond holds (bounded: a stuck test fails instead of hanging). */
#define RUN_UNTIL(cond)                                                                  \
        do {                                                                             \
                for (unsigned _i = 0; !(cond); _i++) {                                   \
                        if (_i > 500)                                                    \
                                fail_msg("timed out waiting for %s", #cond);             \
                        assert_true(sd_event_run(m->event, 10 * USEC_PER_MSEC) >= 0);    \
                }                                                                        \
        } while (0)

/* The bytes a sensor writes for one frame, appended at buf + *n. */
static void encode_into(const Frame *f, uint8_t *buf, size_t size, size_t *n) {
        _cleanup_free_ uint8_t *bytes = NULL;
        size_t len;

        assert_int_equal(frame_encode(f, 0, &bytes, &len), 0);
        assert_true(*n + len <= size);
        memcpy(buf + *n, bytes, len);
        *n += len;
}

static void test_pool_hello_foreign_protocol_through_channel(void **state) {
        ElasticPool__OccupancyReport rep = ELASTIC_POOL__OCCUPANCY_REPORT__INIT;
        ElasticPool__Hello h = ELASTIC_POOL__HELLO__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        Worker *w = fixture_add_worker(m, WORKER_STARTING);
        uint8_t buf[1024];
        size_t n = 0;

        /* the real path: bytes on the socket, the channel's io callback, the decoder loop, then on_hello
         * dropping the channel from inside that callback, with a report still behind it in the same read.
         * Under AddressSanitizer any look at the freed channel afterwards aborts here. */
        h.has_protocol_version = true, h.protocol_version = 99;
        h.sensor_version = (char *) "from the future";
        f.body_case = ELASTIC_POOL__FRAME__BODY_HELLO, f.hello = &h;
        encode_into(&f, buf, sizeof buf, &n);
        rep.has_seq = true, rep.seq = 1;
        rep.has_cpu = true, rep.cpu = 0.5;
        f.body_case = ELASTIC_POOL__FRAME__BODY_REPORT, f.report = &rep;
        encode_into(&f, buf, sizeof buf, &n);
        assert_int_equal(loop_write(fixture_peer(w), buf, n), 0);

        RUN_UNTIL(!w->channel);
        for (int i = 0; i < 3; i++)
                assert_true(sd_event_run(m->event, 1000) >= 0);
        assert_int_equal(w->state, WORKER_STARTING);
        assert_int_equal(w->window.count, 0); /* the report behind the Hello was never dispatched */
        assert_true(m->pool.reports_received == 0);
        assert_int_equal(freshness(w, NULL), FRESHNESS_NO_CHANNEL);
        assert_non_null(w->channel_close_reason);
        assert_non_null(strstr(w->channel_close_reason, "protocol 99"));
}

static void test_pool_spawn_failure_before_child_is_throttled(void **state) {
        usec_t backoff = 250 * USEC_PER_MSEC;

        /* w<N>.sock under this does not fit sun_path: the spawn fails before any child exists, where no
         * death will come to ask again. It must still count, back off, schedule its retry, and stop. */
        free(m->runtime_dir);
        assert_true(asprintf(&m->runtime_dir, "/tmp/%0120d", 0) > 0);
        m->pool.runtime_dir = m->runtime_dir;
        m->pool.throttle.given_up = false;
        for (unsigned i = 1; i <= 5; i++) {
                assert_int_equal(pool_spawn(&m->pool, "test"), -ENAMETOOLONG);
                assert_int_equal(m->pool.throttle.failures, i);
                assert_non_null(strstr(m->pool.throttle.last_error, "cannot create its listening socket"));
                assert_non_null(strstr(m->pool.throttle.last_error, "File name too long"));
                assert_int_equal(m->pool.n_workers, 0);
                if (i == 5)
                        break;
                assert_false(m->pool.throttle.given_up);
                assert_true(m->pool.throttle.not_before == fixture_now + backoff);
                assert_non_null(m->pool.throttle.retry); /* the retry is on the loop */
                assert_int_equal(pool_spawn(&m->pool, "too early"), -EAGAIN);
                /* what on_spawn_retry() does when the back-off ends */
                m->pool.throttle.retry = sd_event_source_disable_unref(m->pool.throttle.retry);
                fixture_advance(backoff);
                backoff *= 2;
        }
        assert_true(m->pool.throttle.given_up);
        assert_int_equal(pool_spawn(&m->pool, "after"), -ECANCELED);
        /* each attempt spent its name */
        assert_int_equal(m->pool.next_worker_id, 6);
}

/* Every step a child can report failing, as the operator reads it: naming the command, the directory,
 * the user or the group of the configuration. */
static void test_pool_describe_spawn_error_names_the_step(void **state) {
        _cleanup_free_ char *exec = NULL;
        char what[640];

        m->config.working_directory = strdup("/srv/web");
        m->config.identity = (ConfigIdentity) {
                .set = true, .uid = 4242, .gid = 4343, .n_groups = 2,
                .user_name = strdup("web"), .group_name = strdup("webgroup"),
        };
        assert_true(asprintf(&exec, "cannot execute '%s': No such file or directory", m->config.exec_line) >
                    0);
        const struct {
                SpawnError e;
                const char *what;
        } cases[] = {
                { { SPAWN_STEP_EXEC, ENOENT }, exec },
                { { SPAWN_STEP_CGROUP, ENOENT },
                  "cannot move itself into its cgroup: No such file or directory" },
                { { SPAWN_STEP_FDS, EBADF },
                  "cannot take its listening socket and channel as fds 3 and 4: Bad file descriptor" },
                { { SPAWN_STEP_SETGROUPS, EPERM },
                  "cannot take the 2 supplementary groups of user 'web': Operation not permitted" },
                { { SPAWN_STEP_SETGID, EINVAL },
                  "cannot switch to group 'webgroup' (gid 4343): Invalid argument" },
                { { SPAWN_STEP_SETUID, EAGAIN },
                  "cannot switch to user 'web' (uid 4242): Resource temporarily unavailable" },
                { { SPAWN_STEP_CHDIR, EACCES },
                  "cannot change into working_directory '/srv/web': Permission denied" },
                { { _SPAWN_STEP_INVALID, EIO },
                  "failed before exec, its report unreadable: Input/output error" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                pool_describe_spawn_error(&m->pool, &cases[i].e, what, sizeof what);
                assert_string_equal(what, cases[i].what);
        }
}

/* A real child that cannot enter its working directory: the spawn fails as that step, named, not as
 * "cannot execute". */
static void test_pool_spawn_chdir_failure_named(void **state) {
        sigset_t chld, saved;

        /* sd-event watches children only with SIGCHLD blocked, as the commander's main() does */
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        assert_int_equal(sigprocmask(SIG_BLOCK, &chld, &saved), 0);
        m->config.working_directory = strdup("/nonexistent/test-pool-wd");
        m->pool.throttle.given_up = false;
        m->pool.backend->attach_done = pool_attach_done; /* what backend_new() wires */
        assert_int_equal(pool_spawn(&m->pool, "test"), 0);
        assert_int_equal(m->pool.n_workers, 1);
        /* the exec-error pipe, then the death through the pidfd */
        for (unsigned i = 0; i < 500 && m->pool.n_workers > 0; i++)
                assert_true(sd_event_run(m->event, 20 * USEC_PER_MSEC) >= 0);
        assert_int_equal(m->pool.n_workers, 0);
        assert_int_equal(m->pool.throttle.failures, 1);
        assert_string_equal(m->pool.throttle.last_error,
                            "cannot change into working_directory '/nonexistent/test-pool-wd': No such "
                            "file or directory");
        assert_int_equal(sigprocmask(SIG_SETMASK, &saved, NULL), 0);
}

static void test_pool_handle_frame_ignores_commander_frames(void **state) {
        ElasticPool__Drain d = ELASTIC_POOL__DRAIN__INIT;
        ElasticPool__Goodbye g = ELASTIC_POOL__GOODBYE__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);

        f.body_case = ELASTIC_POOL__FRAME__BODY_DRAIN, f.drain = &d;
        pool_handle_frame(w, &f);
        g.reason = (char *) "bye";
        f.body_case = ELASTIC_POOL__FRAME__BODY_GOODBYE, f.goodbye = &g;
        pool_handle_frame(w, &f);
        /* neither changes the worker or its channel */
        assert_int_equal(w->state, WORKER_ROUTABLE);
        assert_true(channel_is_open(w->channel));
        assert_int_equal(w->window.count, 0);
        assert_true(m->pool.reports_received == 0);
}

static void test_pool_handle_frame_move_frames_to_hook(void **state) {
        ElasticPool__Package p = ELASTIC_POOL__PACKAGE__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);

        /* without a front end there is no hook: ignored, not a crash */
        f.body_case = ELASTIC_POOL__FRAME__BODY_PACKAGE, f.package = &p;
        pool_handle_frame(w, &f);
        assert_true(channel_is_open(w->channel));
}

/* How a death is counted: what we asked for first (a stop that ends with the grace's SIGKILL is a stop),
 * then the OOM killer, then the exit status; no status at all is unknown. */
static void test_worker_death_cause(void **state) {
        siginfo_t exited = { .si_code = CLD_EXITED, .si_status = 1 }, killed = { .si_code = CLD_KILLED, .si_status = 9 },
                  dumped = { .si_code = CLD_DUMPED, .si_status = 11 };

        assert_int_equal(worker_death_cause(&exited, false, false, false), WORKER_DEATH_EXITED);
        assert_int_equal(worker_death_cause(&killed, false, false, false), WORKER_DEATH_SIGNALED);
        assert_int_equal(worker_death_cause(&dumped, false, false, false), WORKER_DEATH_SIGNALED);
        assert_int_equal(worker_death_cause(&killed, true, false, false), WORKER_DEATH_OOM);
        assert_int_equal(worker_death_cause(&killed, true, true, false), WORKER_DEATH_STOPPED);
        assert_int_equal(worker_death_cause(&exited, false, true, false), WORKER_DEATH_STOPPED);
        assert_int_equal(worker_death_cause(&exited, false, true, true), WORKER_DEATH_EXEC_FAILED);
        assert_int_equal(worker_death_cause(NULL, false, false, false), WORKER_DEATH_UNKNOWN);
        for (WorkerDeathCause c = 0; c < _WORKER_DEATH_MAX; c++)
                assert_non_null(worker_death_cause_to_string(c));
        assert_null(worker_death_cause_to_string(_WORKER_DEATH_MAX));
        assert_string_equal(pool_spawn_cause_to_string(POOL_SPAWN_FLOOR), "floor");
        assert_null(pool_spawn_cause_to_string(_POOL_SPAWN_CAUSE_MAX));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_pool_stale_horizon, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_stale_horizon_absurd_interval, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_worker_freshness_new, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_worker_freshness_new_in_flight, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_worker_freshness_fresh_then_stale, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_worker_freshness_missing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_worker_freshness_missing_memory, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_worker_freshness_no_channel, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_handle_frame_report_archives, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_handle_frame_report_window_is_a_ring, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_handle_frame_hello_makes_routable, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_handle_frame_hello_capabilities, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_handle_frame_hello_foreign_protocol, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_hello_foreign_protocol_through_channel, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_handle_frame_ignores_commander_frames, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_spawn_failure_before_child_is_throttled, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_describe_spawn_error_names_the_step, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_spawn_chdir_failure_named, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pool_handle_frame_move_frames_to_hook, setup, teardown),
                cmocka_unit_test(test_worker_death_cause),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
