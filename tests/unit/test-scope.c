/* SPDX-License-Identifier: MIT */
/* The scope backend against a fake systemd manager on the other end of a socketpair() bus: the unit
 * name and properties we ask for, a start job that ends "done" (also when its JobRemoved overtakes the
 * method reply), one that fails, a name systemd refuses, the PIDFDs= fallback, a worker dying while its
 * job is pending, and what release() and done() leave for systemd to clean up.
 *
 * The backend's init() calls the manager synchronously, so the fake serves from a thread of its own
 * (its own sd-event loop and bus end); what it saw is recorded under a mutex. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>
#include <systemd/sd-id128.h>

#include "backend.h"
#include "cleanup.h"
#include "log.h"
#include "macro.h"
#include "time-util.h"
#include "worker.h"

#define NAME_MAX_LEN 160

typedef enum FakeMode {
        FAKE_DONE,         /* reply with the job, then JobRemoved "done" */
        FAKE_SIGNAL_FIRST, /* JobRemoved "done" before the reply: the race */
        FAKE_JOB_FAILED,   /* reply, then JobRemoved "failed" */
        FAKE_UNIT_EXISTS,  /* a method error, as for a name already taken */
        FAKE_SILENT,       /* reply with the job and leave it pending; StopUnit cancels it */
} FakeMode;

/* What the fake manager was asked; read by the tests through fake_get(). */
typedef struct FakeSeen {
        unsigned n_start, n_stop, n_reset, n_subscribe, n_list;
        char stop_unit[NAME_MAX_LEN], reset_unit[NAME_MAX_LEN];
        /* the last StartTransientUnit */
        char name[NAME_MAX_LEN], job_mode[16], description[NAME_MAX_LEN], slice[NAME_MAX_LEN];
        char collect_mode[64];
        int send_sighup, memory_accounting;
        bool has_pids, has_pidfds, has_memory_max, has_swap_max;
        uint32_t pid;
        uint64_t memory_max, swap_max;
} FakeSeen;

typedef struct Fake {
        pthread_t thread;
        pthread_mutex_t lock;
        int stop_fd;             /* eventfd: the test asks the thread to leave its loop */
        sd_event *event;         /* the fake's own loop, run by its thread */
        sd_bus *server;
        /* set by the test before it acts, read by the fake thread */
        FakeMode mode;
        bool take_pidfds;
        uint32_t next_job;
        char pending_job[NAME_MAX_LEN]; /* FAKE_SILENT: the job left pending, and its unit */
        char pending_unit[NAME_MAX_LEN];
        FakeSeen seen;
} Fake;

static Fake fake = { .lock = PTHREAD_MUTEX_INITIALIZER, .stop_fd = -EBADF };
static char root[PATH_MAX]; /* the fake unified cgroup mount */
static sd_event *event;     /* the backend's loop (the test's thread) */
static Backend backend;
static Config config;
static unsigned n_attach_done;
static int attach_error;

static void on_attach_done(Worker *w, int error) {
        n_attach_done++;
        attach_error = error;
}

/* ---- the fake manager (its own thread) ---- */

/* cmocka's assertions jump back into the test's thread; the fake's thread aborts instead */
#define CHECK(expr)                                                                              \
        do {                                                                                     \
                if (!(expr)) {                                                                   \
                        fprintf(stderr, "fake manager: %s:%d: check failed: %s\n", __FILE__, __LINE__, \
                                #expr);                                                          \
                        abort();                                                                 \
                }                                                                                \
        } while (0)

static void copy(char *dst, const char *src) {
        snprintf(dst, NAME_MAX_LEN, "%s", src);
}

static int read_string_property(sd_bus_message *m, char *dst, size_t size) {
        const char *s;
        int r = sd_bus_message_read(m, "v", "s", &s);
        if (r > 0)
                snprintf(dst, size, "%s", s);
        return r;
}

static int read_property(sd_bus_message *m, FakeSeen *seen) {
        const char *name;
        uint64_t t;
        int b, r;

        r = sd_bus_message_enter_container(m, 'r', "sv");
        if (r <= 0)
                return r;
        CHECK(sd_bus_message_read(m, "s", &name) == 1);
        if (streq(name, "PIDs")) {
                const void *pids;
                size_t size;
                CHECK(sd_bus_message_enter_container(m, 'v', "au") > 0);
                CHECK(sd_bus_message_read_array(m, 'u', &pids, &size) > 0);
                CHECK(size == sizeof(uint32_t));
                seen->has_pids = true;
                memcpy(&seen->pid, pids, sizeof seen->pid);
                CHECK(sd_bus_message_exit_container(m) >= 0);
        } else if (streq(name, "PIDFDs")) {
                seen->has_pidfds = true;
                CHECK(sd_bus_message_skip(m, "v") >= 0);
        } else if (streq(name, "Description"))
                CHECK(read_string_property(m, seen->description, sizeof seen->description) > 0);
        else if (streq(name, "Slice"))
                CHECK(read_string_property(m, seen->slice, sizeof seen->slice) > 0);
        else if (streq(name, "CollectMode"))
                CHECK(read_string_property(m, seen->collect_mode, sizeof seen->collect_mode) > 0);
        else if (streq(name, "SendSIGHUP") || streq(name, "MemoryAccounting")) {
                CHECK(sd_bus_message_read(m, "v", "b", &b) > 0);
                *(streq(name, "SendSIGHUP") ? &seen->send_sighup : &seen->memory_accounting) = b;
        } else if (streq(name, "MemoryMax")) {
                CHECK(sd_bus_message_read(m, "v", "t", &t) > 0);
                seen->has_memory_max = true;
                seen->memory_max = t;
        } else if (streq(name, "MemorySwapMax")) {
                CHECK(sd_bus_message_read(m, "v", "t", &t) > 0);
                seen->has_swap_max = true;
                seen->swap_max = t;
        } else
                CHECK(sd_bus_message_skip(m, "v") >= 0);
        CHECK(sd_bus_message_exit_container(m) >= 0);
        return 1;
}

static int emit_job_removed(const char *job, const char *unit, const char *result) {
        return sd_bus_emit_signal(fake.server, "/org/freedesktop/systemd1",
                                  "org.freedesktop.systemd1.Manager", "JobRemoved", "uoss", fake.next_job,
                                  job, unit, result);
}

static int fake_start(sd_bus_message *m) {
        FakeSeen *seen = &fake.seen;
        const char *name, *mode;
        char job[NAME_MAX_LEN];
        int r;

        seen->n_start++;
        seen->has_pids = seen->has_pidfds = seen->has_memory_max = seen->has_swap_max = false;
        CHECK(sd_bus_message_read(m, "ss", &name, &mode) == 1);
        copy(seen->name, name);
        snprintf(seen->job_mode, sizeof seen->job_mode, "%s", mode);
        CHECK(sd_bus_message_enter_container(m, 'a', "(sv)") > 0);
        while ((r = read_property(m, seen)) > 0)
                ;
        CHECK(r >= 0);
        CHECK(sd_bus_message_exit_container(m) >= 0);

        /* systemd < 253's words for a property it does not know */
        if (seen->has_pidfds && !fake.take_pidfds)
                return sd_bus_reply_method_errorf(m, SD_BUS_ERROR_PROPERTY_READ_ONLY,
                                                  "Cannot set property PIDFDs, or unknown property.");
        if (fake.mode == FAKE_UNIT_EXISTS)
                return sd_bus_reply_method_errorf(m, "org.freedesktop.systemd1.UnitExists",
                                                  "Unit %s was already loaded or has a fragment file.",
                                                  name);
        snprintf(job, sizeof job, "/org/freedesktop/systemd1/job/%u", ++fake.next_job);
        if (fake.mode == FAKE_SIGNAL_FIRST) {
                CHECK(emit_job_removed(job, name, "done") >= 0);
                return sd_bus_reply_method_return(m, "o", job);
        }
        CHECK(sd_bus_reply_method_return(m, "o", job) >= 0);
        if (fake.mode == FAKE_SILENT) {
                copy(fake.pending_job, job);
                copy(fake.pending_unit, name);
                return 1;
        }
        return emit_job_removed(job, name, fake.mode == FAKE_JOB_FAILED ? "failed" : "done");
}

static int fake_get_property(sd_bus_message *m) {
        const char *interface, *property, *path = sd_bus_message_get_path(m);
        _cleanup_free_ char *unit = NULL;
        char cgroup[NAME_MAX_LEN + 16];

        CHECK(sd_bus_message_read(m, "ss", &interface, &property) == 1);
        if (streq(path, "/org/freedesktop/systemd1") && streq(property, "Version"))
                return sd_bus_reply_method_return(m, "v", "s", "252-fake");
        CHECK(streq(property, "ControlGroup"));
        CHECK(sd_bus_path_decode(path, "/org/freedesktop/systemd1/unit", &unit) == 1);
        if (streq(interface, "org.freedesktop.systemd1.Slice"))
                snprintf(cgroup, sizeof cgroup, "/fake.slice");
        else
                snprintf(cgroup, sizeof cgroup, "/fake.slice/%s", unit);
        return sd_bus_reply_method_return(m, "v", "s", cgroup);
}

static int fake_stop(sd_bus_message *m) {
        const char *unit, *mode;

        CHECK(sd_bus_message_read(m, "ss", &unit, &mode) == 1);
        fake.seen.n_stop++;
        copy(fake.seen.stop_unit, unit);
        CHECK(sd_bus_reply_method_return(m, "o", "/org/freedesktop/systemd1/job/999") >= 0);
        /* "replace" cancels the start job still pending, as systemd does */
        if (fake.pending_job[0] && streq(fake.pending_unit, unit)) {
                CHECK(emit_job_removed(fake.pending_job, unit, "canceled") >= 0);
                fake.pending_job[0] = 0;
        }
        return 1;
}

/* One leftover of an earlier commander still running, one already dead. */
static int fake_list_units(sd_bus_message *m) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        static const char *const units[][2] = {
                { "elastic-pool-web-w1.scope", "active" },
                { "elastic-pool-web-w2.scope", "inactive" },
        };

        fake.seen.n_list++;
        CHECK(sd_bus_message_new_method_return(m, &reply) >= 0);
        CHECK(sd_bus_message_open_container(reply, 'a', "(ssssssouso)") >= 0);
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                CHECK(sd_bus_message_append(reply, "(ssssssouso)", units[i][0], "leftover", "loaded",
                                                  units[i][1], "running", "",
                                                  "/org/freedesktop/systemd1/unit/x", 0, "", "/") >= 0);
        CHECK(sd_bus_message_close_container(reply) >= 0);
        return sd_bus_send(NULL, reply, NULL);
}

static int fake_dispatch(sd_bus_message *m) {
        const char *unit;

        if (sd_bus_message_is_method_call(m, "org.freedesktop.DBus.Properties", "Get"))
                return fake_get_property(m);
        if (sd_bus_message_is_method_call(m, "org.freedesktop.systemd1.Manager", "Subscribe")) {
                fake.seen.n_subscribe++;
                return sd_bus_reply_method_return(m, NULL);
        }
        if (sd_bus_message_is_method_call(m, "org.freedesktop.systemd1.Manager", "ListUnitsByPatterns"))
                return fake_list_units(m);
        if (sd_bus_message_is_method_call(m, "org.freedesktop.systemd1.Manager", "StartTransientUnit"))
                return fake_start(m);
        if (sd_bus_message_is_method_call(m, "org.freedesktop.systemd1.Manager", "StopUnit"))
                return fake_stop(m);
        if (sd_bus_message_is_method_call(m, "org.freedesktop.systemd1.Manager", "ResetFailedUnit")) {
                CHECK(sd_bus_message_read(m, "s", &unit) == 1);
                fake.seen.n_reset++;
                copy(fake.seen.reset_unit, unit);
                return sd_bus_reply_method_return(m, NULL);
        }
        return sd_bus_reply_method_errorf(m, SD_BUS_ERROR_UNKNOWN_METHOD, "fake: no %s",
                                          sd_bus_message_get_member(m));
}

static int on_fake_message(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        int r;

        if (!sd_bus_message_is_method_call(m, NULL, NULL))
                return 0;
        pthread_mutex_lock(&fake.lock);
        r = fake_dispatch(m);
        pthread_mutex_unlock(&fake.lock);
        CHECK(r >= 0);
        return 1;
}

static int on_fake_stop(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static void *fake_thread(void *arg) {
        CHECK(sd_event_loop(fake.event) >= 0);
        return NULL;
}

/* Starts the fake on one end of a socketpair and returns a bus connected to the other. */
static sd_bus *fake_start_thread(void) {
        sd_bus *client = NULL;
        sd_id128_t id;
        int fds[2];

        fake.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        assert_true(fake.stop_fd >= 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds), 0);
        assert_int_equal(sd_id128_randomize(&id), 0);
        assert_int_equal(sd_event_new(&fake.event), 0);
        assert_int_equal(sd_event_add_io(fake.event, NULL, fake.stop_fd, EPOLLIN, on_fake_stop, NULL), 0);
        assert_int_equal(sd_bus_new(&fake.server), 0);
        assert_int_equal(sd_bus_set_fd(fake.server, fds[1], fds[1]), 0);
        assert_int_equal(sd_bus_set_server(fake.server, 1, id), 0);
        assert_int_equal(sd_bus_negotiate_fds(fake.server, 1), 0);
        assert_int_equal(sd_bus_add_filter(fake.server, NULL, on_fake_message, NULL), 0);
        assert_int_equal(sd_bus_start(fake.server), 0);
        assert_int_equal(sd_bus_attach_event(fake.server, fake.event, 0), 0);
        assert_int_equal(pthread_create(&fake.thread, NULL, fake_thread, NULL), 0);

        assert_int_equal(sd_bus_new(&client), 0);
        assert_int_equal(sd_bus_set_fd(client, fds[0], fds[0]), 0);
        assert_int_equal(sd_bus_negotiate_fds(client, 1), 0);
        assert_int_equal(sd_bus_start(client), 0);
        return client;
}

static void fake_stop_thread(void) {
        assert_int_equal(eventfd_write(fake.stop_fd, 1), 0);
        assert_int_equal(pthread_join(fake.thread, NULL), 0);
        fake.server = sd_bus_flush_close_unref(fake.server);
        fake.event = sd_event_unref(fake.event);
        fake.stop_fd = safe_close(fake.stop_fd);
}

static FakeSeen fake_seen(void) {
        FakeSeen s;

        pthread_mutex_lock(&fake.lock);
        s = fake.seen;
        pthread_mutex_unlock(&fake.lock);
        return s;
}

static void fake_set(FakeMode mode, bool take_pidfds) {
        pthread_mutex_lock(&fake.lock);
        fake.mode = mode;
        fake.take_pidfds = take_pidfds;
        pthread_mutex_unlock(&fake.lock);
}

/* ---- fixtures ---- */

static void write_file(const char *dir, const char *file, const char *text) {
        char path[PATH_MAX * 2];
        FILE *f;

        snprintf(path, sizeof path, "%s/%s", dir, file);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

/* A cgroup directory of the fake tree, with the two files the backend reads. */
static void make_cgroup(const char *rel, const char *events, const char *memory_events) {
        char dir[PATH_MAX * 2];

        snprintf(dir, sizeof dir, "%s%s", root, rel);
        assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
        write_file(dir, "cgroup.events", events);
        write_file(dir, "memory.events", memory_events);
}

static void remove_tree(void) {
        char cmd[PATH_MAX + 16];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
}

static void run_for(usec_t span) {
        usec_t end = now_usec(CLOCK_MONOTONIC) + span;

        while (now_usec(CLOCK_MONOTONIC) < end)
                assert_true(sd_event_run(event, 5 * USEC_PER_MSEC) >= 0);
}

/* Runs the backend's loop until attach_done() came `count` times (true) or two seconds passed. */
static bool run_until_attach_done(unsigned count) {
        usec_t end = now_usec(CLOCK_MONOTONIC) + 2 * USEC_PER_SEC;

        while (n_attach_done < count && now_usec(CLOCK_MONOTONIC) < end)
                assert_true(sd_event_run(event, 5 * USEC_PER_MSEC) >= 0);
        return n_attach_done >= count;
}

/* Runs the loop until the fake's counter at `offset` of FakeSeen reached count, or two seconds passed. */
static bool run_until_seen(size_t offset, unsigned count) {
        usec_t end = now_usec(CLOCK_MONOTONIC) + 2 * USEC_PER_SEC;
        FakeSeen s;

        for (;;) {
                s = fake_seen();
                if (*(unsigned *) ((char *) &s + offset) >= count)
                        return true;
                if (now_usec(CLOCK_MONOTONIC) >= end)
                        return false;
                assert_true(sd_event_run(event, 5 * USEC_PER_MSEC) >= 0);
        }
}

static int setup(void **state) {
        pthread_mutex_lock(&fake.lock);
        fake.mode = FAKE_DONE;
        fake.take_pidfds = false;
        fake.next_job = 0;
        fake.pending_job[0] = 0;
        fake.seen = (FakeSeen) {};
        pthread_mutex_unlock(&fake.lock);
        n_attach_done = 0;
        attach_error = 1;
        log_set_max_level(getenv("EP_TEST_DEBUG") ? LOG_DEBUG : LOG_CRIT);

        snprintf(root, sizeof root, "/tmp/test-scope.XXXXXX");
        assert_non_null(mkdtemp(root));
        make_cgroup("/fake.slice", "populated 0\n", "oom_kill 0\n");
        assert_int_equal(sd_event_new(&event), 0);
        config = (Config) { .memory_limit = 256ULL << 20 };
        backend = (Backend) {
                .vtable = &backend_scope_vtable,
                .event = event,
                .bus = fake_start_thread(),
                .config = &config,
                .group = "web",
                .root_fd = -EBADF,
                .cgroup_mount = strdup(root),
                .attach_done = on_attach_done,
        };
        assert_non_null(backend.cgroup_mount);
        assert_int_equal(backend.vtable->init(&backend), 0);
        return 0;
}

static int teardown(void **state) {
        if (backend.vtable->done)
                backend.vtable->done(&backend);
        assert_null(backend.data);
        backend.bus = sd_bus_flush_close_unref(backend.bus);
        free(backend.cgroup_mount);
        free(backend.slice);
        fake_stop_thread();
        event = sd_event_unref(event);
        remove_tree();
        return 0;
}

static Worker *new_worker(unsigned id) {
        Worker *w = calloc(1, sizeof *w);

        assert_non_null(w);
        w->id = id;
        w->pid = getpid();
        w->pidfd = -EBADF;
        w->place.cgroup_fd = -EBADF;
        return w;
}

static void free_worker(Worker *w) {
        sd_bus_slot_unref(w->place.job_slot);
        safe_close(w->pidfd);
        safe_close(w->place.cgroup_fd);
        free(w->place.cgroup_path);
        free(w->place.unit);
        free(w->place.job);
        free(w);
}

/* prepare() then attach(): the worker's scope is asked for */
static void place(Worker *w) {
        int cgroup_fd = 42;
        char dir[NAME_MAX_LEN];

        assert_int_equal(backend.vtable->prepare(&backend, w, &cgroup_fd), 0);
        assert_int_equal(cgroup_fd, -EBADF);
        snprintf(dir, sizeof dir, "/fake.slice/%s", w->place.unit);
        make_cgroup(dir, "populated 1\n", "oom_kill 0\n");
        assert_int_equal(backend.vtable->attach(&backend, w), 0);
}

static void set_populated(const Worker *w, bool populated) {
        char dir[PATH_MAX * 2];

        snprintf(dir, sizeof dir, "%s/fake.slice/%s", root, w->place.unit);
        write_file(dir, "cgroup.events", populated ? "populated 1\n" : "populated 0\n");
}

/* ---- tests ---- */

static void test_scope_init_subscribes(void **state) {
        assert_string_equal(backend.slice, "elastic-pool-web.slice");
        assert_non_null(backend.data);
        assert_int_equal(fake_seen().n_subscribe, 1);
        assert_int_equal(fake_seen().n_list, 0); /* leftovers are the pool's to ask for (discover) */
}

/* Re-adoption starts from the scopes still active, with the cgroup systemd gives each. */
static void test_scope_discover_lists_active_scopes(void **state) {
        BackendFound *found = NULL;
        size_t n = 0;

        assert_int_equal(backend.vtable->discover(&backend, &found, &n), 0);
        assert_int_equal(fake_seen().n_list, 1);
        assert_int_equal(n, 1); /* w2's scope is inactive: nothing to take back */
        assert_int_equal(found[0].id, 1);
        assert_string_equal(found[0].unit, "elastic-pool-web-w1.scope");
        assert_string_equal(found[0].cgroup_path, "/fake.slice/elastic-pool-web-w1.scope");
        backend_found_free(found, n);
}

static void test_scope_prepare_names_unit(void **state) {
        Worker *w = new_worker(3);
        int cgroup_fd = 42;
        uint64_t oom;

        assert_int_equal(backend.vtable->prepare(&backend, w, &cgroup_fd), 0);
        assert_int_equal(cgroup_fd, -EBADF);
        assert_string_equal(w->place.unit, "elastic-pool-web-w3.scope");
        assert_int_equal(backend.vtable->oom_kills(&backend, w, &oom), -ENODATA);
        free_worker(w);
}

static void test_scope_attach_properties(void **state) {
        Worker *w = new_worker(3);
        FakeSeen seen;

        place(w);
        assert_true(run_until_attach_done(1));
        assert_int_equal(attach_error, 0);
        seen = fake_seen();
        assert_int_equal(seen.n_start, 1);
        assert_string_equal(seen.name, "elastic-pool-web-w3.scope");
        assert_string_equal(seen.job_mode, "fail");
        assert_string_equal(seen.description, "elastic-pool web worker w3");
        assert_string_equal(seen.slice, "elastic-pool-web.slice");
        assert_string_equal(seen.collect_mode, "inactive-or-failed");
        assert_int_equal(seen.send_sighup, 0);
        assert_int_equal(seen.memory_accounting, 1);
        assert_true(seen.has_pids);
        assert_false(seen.has_pidfds);
        assert_int_equal(seen.pid, (uint32_t) getpid());
        assert_true(seen.has_memory_max);
        assert_int_equal(seen.memory_max, 256ULL << 20);
        assert_true(seen.has_swap_max);
        assert_int_equal(seen.swap_max, 0);
        free_worker(w);
}

static void test_scope_attach_no_memory_limit(void **state) {
        Worker *w = new_worker(1);

        config.memory_limit = 0;
        place(w);
        assert_true(run_until_attach_done(1));
        assert_int_equal(attach_error, 0);
        assert_false(fake_seen().has_memory_max);
        assert_false(fake_seen().has_swap_max);
        free_worker(w);
}

static void test_scope_attach_done_opens_cgroup(void **state) {
        Worker *w = new_worker(3);
        char dir[PATH_MAX * 2];
        uint64_t oom = 0;

        place(w);
        assert_true(run_until_attach_done(1));
        assert_int_equal(attach_error, 0);
        assert_string_equal(w->place.cgroup_path, "/fake.slice/elastic-pool-web-w3.scope");
        assert_true(w->place.cgroup_fd >= 0);
        assert_true(w->place.unit_owned);
        assert_null(w->place.job);      /* only while waiting */
        assert_null(w->place.job_slot);
        assert_int_equal(backend.vtable->oom_kills(&backend, w, &oom), 0);
        assert_int_equal(oom, 0);
        snprintf(dir, sizeof dir, "%s%s", root, w->place.cgroup_path);
        write_file(dir, "memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n");
        assert_int_equal(backend.vtable->oom_kills(&backend, w, &oom), 0);
        assert_int_equal(oom, 2);
        free_worker(w);
}

static void test_scope_attach_signal_before_reply(void **state) {
        Worker *w = new_worker(2);

        fake_set(FAKE_SIGNAL_FIRST, false);
        place(w);
        assert_true(run_until_attach_done(1));
        assert_int_equal(attach_error, 0);
        assert_string_equal(w->place.cgroup_path, "/fake.slice/elastic-pool-web-w2.scope");
        run_for(20 * USEC_PER_MSEC);
        assert_int_equal(n_attach_done, 1);
        free_worker(w);
}

static void test_scope_attach_job_failed(void **state) {
        Worker *w = new_worker(4);

        fake_set(FAKE_JOB_FAILED, false);
        place(w);
        assert_true(run_until_attach_done(1));
        assert_int_equal(attach_error, -EIO);
        assert_null(w->place.cgroup_path);
        /* ours, so release() makes sure it is gone */
        backend.vtable->release(&backend, w);
        assert_true(run_until_seen(offsetof(FakeSeen, n_reset), 1));
        assert_int_equal(fake_seen().n_stop, 1);
        free_worker(w);
}

static void test_scope_attach_unit_exists(void **state) {
        Worker *w = new_worker(5);

        fake_set(FAKE_UNIT_EXISTS, false);
        place(w);
        assert_true(run_until_attach_done(1));
        assert_int_equal(attach_error, -EEXIST);
        assert_false(w->place.unit_owned);
        /* somebody else's unit: never stopped nor reset by us */
        backend.vtable->release(&backend, w);
        run_for(50 * USEC_PER_MSEC);
        assert_int_equal(fake_seen().n_stop, 0);
        assert_int_equal(fake_seen().n_reset, 0);
        free_worker(w);
}

static void test_scope_attach_pidfd_fallback(void **state) {
        Worker *w = new_worker(1), *w2 = new_worker(2);

        w->pidfd = (int) syscall(SYS_pidfd_open, getpid(), 0);
        assert_true(w->pidfd >= 0);
        place(w);
        assert_true(run_until_attach_done(1));
        assert_int_equal(attach_error, 0);
        assert_int_equal(fake_seen().n_start, 2); /* PIDFDs= refused, then PIDs= */
        assert_true(fake_seen().has_pids);

        /* remembered: the next worker is named by PID at once */
        w2->pidfd = fcntl(w->pidfd, F_DUPFD_CLOEXEC, 3);
        place(w2);
        assert_true(run_until_attach_done(2));
        assert_int_equal(attach_error, 0);
        assert_int_equal(fake_seen().n_start, 3);
        free_worker(w);
        free_worker(w2);
}

static void test_scope_attach_pidfd_taken(void **state) {
        Worker *w = new_worker(1);

        fake_set(FAKE_DONE, true);
        w->pidfd = (int) syscall(SYS_pidfd_open, getpid(), 0);
        assert_true(w->pidfd >= 0);
        place(w);
        assert_true(run_until_attach_done(1));
        assert_int_equal(attach_error, 0);
        assert_int_equal(fake_seen().n_start, 1);
        assert_true(fake_seen().has_pidfds);
        assert_false(fake_seen().has_pids);
        free_worker(w);
}

static void test_scope_release_while_job_pending(void **state) {
        Worker *w = new_worker(6);
        usec_t end = now_usec(CLOCK_MONOTONIC) + 2 * USEC_PER_SEC;

        fake_set(FAKE_SILENT, false);
        place(w);
        while (!w->place.job && now_usec(CLOCK_MONOTONIC) < end)
                assert_true(sd_event_run(event, 5 * USEC_PER_MSEC) >= 0);
        assert_non_null(w->place.job);
        /* the worker died: its job is cancelled by the stop, whose JobRemoved must go unheard */
        backend.vtable->release(&backend, w);
        assert_null(w->place.job_slot);
        assert_true(run_until_seen(offsetof(FakeSeen, n_reset), 1));
        assert_int_equal(fake_seen().n_stop, 1);
        assert_string_equal(fake_seen().stop_unit, "elastic-pool-web-w6.scope");
        run_for(50 * USEC_PER_MSEC);
        assert_int_equal(n_attach_done, 0);
        free_worker(w);
}

static void test_scope_release_before_reply(void **state) {
        Worker *w = new_worker(7);

        fake_set(FAKE_SILENT, false);
        place(w);
        /* no reply processed yet: not known to be ours, so nothing is stopped */
        backend.vtable->release(&backend, w);
        run_for(50 * USEC_PER_MSEC);
        assert_int_equal(n_attach_done, 0);
        assert_int_equal(fake_seen().n_stop, 0);
        assert_int_equal(fake_seen().n_reset, 0);
        free_worker(w);
}

static void test_scope_release_populated_scope_is_stopped(void **state) {
        Worker *w = new_worker(8);

        place(w);
        assert_true(run_until_attach_done(1));
        /* the worker died and left a child behind in its scope */
        backend.vtable->release(&backend, w);
        assert_int_equal(w->place.cgroup_fd, -EBADF);
        assert_true(run_until_seen(offsetof(FakeSeen, n_reset), 1));
        assert_int_equal(fake_seen().n_stop, 1);
        assert_string_equal(fake_seen().stop_unit, "elastic-pool-web-w8.scope");
        assert_string_equal(fake_seen().reset_unit, "elastic-pool-web-w8.scope");
        free_worker(w);
}

static void test_scope_release_empty_scope_is_left_to_systemd(void **state) {
        Worker *w = new_worker(9);

        place(w);
        assert_true(run_until_attach_done(1));
        set_populated(w, false);
        backend.vtable->release(&backend, w);
        assert_true(run_until_seen(offsetof(FakeSeen, n_reset), 1));
        assert_int_equal(fake_seen().n_stop, 0);
        free_worker(w);
}

static void test_scope_done_stops_empty_slice(void **state) {
        Worker *w = new_worker(1);

        place(w);
        assert_true(run_until_attach_done(1));
        set_populated(w, false);
        backend.vtable->release(&backend, w);
        assert_true(run_until_seen(offsetof(FakeSeen, n_reset), 1));
        backend.vtable->done(&backend);
        /* the group's slice, then elastic-pool.slice and elastic.slice, which its name nests it in */
        assert_int_equal(fake_seen().n_stop, 3);
        assert_string_equal(fake_seen().stop_unit, "elastic.slice");
        free_worker(w);
}

static void test_scope_done_leaves_populated_slice(void **state) {
        Worker *w = new_worker(1);
        char dir[PATH_MAX * 2];

        place(w);
        assert_true(run_until_attach_done(1));
        snprintf(dir, sizeof dir, "%s/fake.slice", root);
        write_file(dir, "cgroup.events", "populated 1\n");
        backend.vtable->done(&backend);
        assert_int_equal(fake_seen().n_stop, 0);
        free_worker(w);
}

static void test_scope_done_without_scopes(void **state) {
        backend.vtable->done(&backend);
        assert_int_equal(fake_seen().n_stop, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_scope_init_subscribes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_scope_discover_lists_active_scopes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_scope_prepare_names_unit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_scope_attach_properties, setup, teardown),
                cmocka_unit_test_setup_teardown(test_scope_attach_no_memory_limit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_scope_attach_done_opens_cgroup, setup, teardown),
                cmocka_unit_test_setup_teardown(test_scope_attach_signal_before_reply, setup, teardown),
                cmocka_unit_test_setup_teardown(test_scope_attach_job_failed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_scope_attach_unit_exists, setup, teardown),
                cmocka_unit_test_setup_teardown(test_scope_attach_pidfd_fallback, setup, teardown),
                cmocka_unit_test_setup_teardown(test_scope_attach_pidfd_taken, setup, teardown),
                cmocka_unit_test_setup_teardown(test_scope_release_while_job_pending, setup, teardown),
                cmocka_unit_test_setup_teardown(test_scope_release_before_reply, setup, teardown),
                cmocka_unit_test_setup_teardown(test_scope_release_populated_scope_is_stopped, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_scope_release_empty_scope_is_left_to_systemd, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_scope_done_stops_empty_slice, setup, teardown),
                cmocka_unit_test_setup_teardown(test_scope_done_leaves_populated_slice, setup, teardown),
                cmocka_unit_test_setup_teardown(test_scope_done_without_scopes, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
