/* SPDX-License-Identifier: MIT */
#include "manager-fixture.h"

#include "move-frames.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "log.h"
#include "macro.h"

#define PEERS_MAX 1024

usec_t fixture_now = FIXTURE_T0;
static int peers[PEERS_MAX];
static char runtime_dir[] = "/tmp/test-manager.XXXXXX";

usec_t __wrap_now_usec(clockid_t clock) {
        return clock == CLOCK_MONOTONIC ? fixture_now : __real_now_usec(clock);
}

void fixture_advance(usec_t delta) {
        fixture_now += delta;
}

Manager *fixture_manager_new(void) {
        Manager *m = calloc(1, sizeof *m);

        assert_non_null(m);
        fixture_now = FIXTURE_T0;
        for (size_t i = 0; i < PEERS_MAX; i++)
                peers[i] = -EBADF;
        assert_int_equal(config_init_defaults(&m->config), 0);
        assert_true(sd_event_new(&m->event) >= 0);
        m->group = strdup("test");
        assert_non_null(m->group);

        strcpy(runtime_dir + strlen(runtime_dir) - 6, "XXXXXX");
        assert_non_null(mkdtemp(runtime_dir));
        m->runtime_dir = strdup(runtime_dir);
        assert_true(asprintf(&m->status_path, "%s/status.json", runtime_dir) > 0);

        /* the pool as pool_init() makes it, with the none backend and without sock_diag */
        m->pool = (Pool) {
                .event = m->event,
                .config = &m->config,
                .group = m->group,
                .runtime_dir = m->runtime_dir,
                .next_worker_id = 1,
                .hooks = &manager_pool_hooks,
                .userdata = m,
        };
        spawn_throttle_init(&m->pool.throttle, m->event, NULL, NULL);
        m->pool.backend = calloc(1, sizeof *m->pool.backend);
        assert_non_null(m->pool.backend);
        m->pool.backend->vtable = &backend_none_vtable;
        m->pool.backend->root_fd = -EBADF;
        manager_wire(m);

        /* a wanted spawn is decided and journaled as refused, never started */
        m->pool.throttle.given_up = true;
        /* decisions journal at info and warning: not what these tests read */
        log_set_max_level(LOG_ERR);
        return m;
}

void fixture_manager_free(Manager *m) {
        if (!m)
                return;
        for (size_t i = 0; i < PEERS_MAX; i++)
                peers[i] = safe_close(peers[i]);
        manager_free(m); /* unlinks status.json */
        (void) rmdir(runtime_dir);
}

static void on_frame(Channel *c, const Frame *f, void *userdata) {
        pool_handle_frame(userdata, f);
}

static const ChannelCallbacks callbacks = { .on_frame = on_frame };

Worker *fixture_add_worker(Manager *m, WorkerState state) {
        Worker *w;
        int sv[2];

        assert_true(m->pool.next_worker_id < PEERS_MAX);
        assert_int_equal(worker_new(&m->pool, m->pool.next_worker_id++, &w), 0);
        assert_int_equal(window_init(&w->window, m->config.window_rows), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(channel_new(m->event, sv[0], 0, &callbacks, w, &w->channel), 0);
        peers[w->id] = sv[1];
        w->state = state;
        w->spawned_at = fixture_now;
        if (state == WORKER_ROUTABLE || state == WORKER_DRAINING) {
                w->hello_at = w->routable_at = fixture_now;
                if (!m->pool.reception && state == WORKER_ROUTABLE)
                        m->pool.reception = w;
        }
        assert_int_equal(pool_add_worker(&m->pool, w), 0);
        return w;
}

int fixture_peer(const Worker *w) {
        return peers[w->id];
}

void fixture_set_users(Manager *m, Worker *w, unsigned n) {
        (void) surface_worker_gone(&m->surface, w->id);
        for (unsigned k = 0; k < n; k++) {
                char name[32];
                snprintf(name, sizeof name, "w%u-%u", w->id, k);
                assert_int_equal(surface_user_place(&m->surface, name, w->id, fixture_now, NULL), 0);
        }
        m->capacity.summary_valid = false;
}

void fixture_report(Worker *w, FixtureReading r) {
        ElasticPool__OccupancyReport rep = ELASTIC_POOL__OCCUPANCY_REPORT__INIT;
        ElasticPool__Executor e = ELASTIC_POOL__EXECUTOR__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;

        rep.has_seq = true, rep.seq = w->window.total + 1;
        rep.has_monotonic_usec = true, rep.monotonic_usec = fixture_now;
        if (r.cpu >= 0)
                rep.has_cpu = true, rep.cpu = r.cpu;
        if (r.memory >= 0)
                rep.has_memory_bytes = true, rep.memory_bytes = (uint64_t) r.memory;
        if (r.busy >= 0 && r.total >= 0) {
                e.has_busy = e.has_total = true;
                e.busy = (uint32_t) r.busy, e.total = (uint32_t) r.total;
                rep.executor = &e;
        }
        f.body_case = ELASTIC_POOL__FRAME__BODY_REPORT, f.report = &rep;
        pool_handle_frame(w, &f);
}

void fixture_hello(Worker *w, uint64_t interval_usec, uint32_t protocol) {
        ElasticPool__Hello h = ELASTIC_POOL__HELLO__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;

        h.has_protocol_version = true, h.protocol_version = protocol;
        h.has_worker_id = true, h.worker_id = w->id;
        h.sensor_version = (char *) "test";
        if (interval_usec > 0)
                h.has_interval_usec = true, h.interval_usec = interval_usec;
        f.body_case = ELASTIC_POOL__FRAME__BODY_HELLO, f.hello = &h;
        pool_handle_frame(w, &f);
}

bool fixture_frame_pending(const Worker *w) {
        char c;

        return recv(peers[w->id], &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

Frame *fixture_read_frame(const Worker *w, ElasticPool__Frame__BodyCase expect) {
        FrameDecoder d;
        uint8_t byte;
        Frame *f = NULL;
        size_t used = 0;
        ssize_t n;

        /* a byte at a time: exactly one frame is taken, the next stays for the next call */
        frame_decoder_init(&d, 0);
        do {
                n = recv(peers[w->id], &byte, 1, MSG_DONTWAIT);
                CHECK_EXPLAINED(n == 1, "w%u: no frame waiting (expected body %d)", w->id, (int) expect);
        } while (frame_decoder_feed(&d, &byte, 1, &used, &f) != 1);
        frame_decoder_done(&d);
        CHECK_EXPLAINED(f->body_case == expect, "w%u sent a %s frame, expected body %d", w->id,
                        frame_body_name(f), (int) expect);
        return f;
}

void fixture_package(Worker *from, uint64_t move_id, const char *blob, const char *error) {
        ElasticPool__Package p;
        Frame f;

        move_frame_package(&f, &p, move_id, blob, error);
        pool_handle_frame(from, &f);
}

void fixture_install_result(Worker *to, uint64_t move_id, bool ok, const char *error) {
        ElasticPool__InstallResult r;
        Frame f;

        move_frame_install_result(&f, &r, move_id, ok, error);
        pool_handle_frame(to, &f);
}

void fixture_close_channel(Worker *w) {
        w->channel = channel_free(w->channel);
        w->channel_closed_at = fixture_now;
        free(w->channel_close_reason);
        w->channel_close_reason = strdup("undecodable frame (not an elastic_pool.Frame)");
        w->pool->generation++;
        peers[w->id] = safe_close(peers[w->id]);
}

void fixture_check_failed(const char *file, int line, const char *check, const char *format, ...) {
        char what[1024];
        va_list ap;

        va_start(ap, format);
        vsnprintf(what, sizeof what, format, ap);
        va_end(ap);
        print_message("%s:%d: failed check: %s\n    %s\n", file, line, check, what);
        fail_msg("%s", what);
}
