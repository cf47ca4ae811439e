/* SPDX-License-Identifier: MIT */
/* The public sensor object: configuration from the environment, the report tick on a fixed
 * CLOCK_MONOTONIC cadence, the event-loop integration and the background-thread mode. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "app-state.h"
#include "cgroup-reading.h"
#include "channel-client.h"
#include "cleanup.h"
#include "log.h"
#include "macro.h"
#include "parse-util.h"
#include "report.h"
#include "sensor-internal.h"
#include "sensor-util.h"

#define GOODBYE_TIMEOUT_USEC USEC_PER_SEC

struct ep_sensor {
        CgroupReader reader;
        AppState app;
        ChannelClient *channel;

        ReportStorage storage;
        const ElasticPool__OccupancyReport *last_report;
        /* early reports (ELASTIC_POOL_BURST_QUEUE): the threshold, the side of it last told, the next look */
        ReportStorage early_storage;
        uint32_t burst_queue; /* 0: none asked for */
        bool burst_over;
        usec_t next_probe;
        uint64_t early_reports;
        CpuSample cpu_last;
        uint64_t seq;
        uint64_t reports_dropped;

        _Atomic uint64_t interval_usec;
        atomic_bool interval_changed;
        usec_t next_tick; /* 0: due at the first dispatch */
        usec_t last_deadline;

        char *group;
        char *package_format;
        bool has_worker_id;
        uint32_t worker_id;

        bool thread_running;
        pthread_t thread;
        int wake_fd;
        atomic_bool stop;
};

DEFINE_TRIVIAL_CLEANUP_FUNC(ep_sensor *, ep_sensor_free);

usec_t sensor_next_deadline(usec_t deadline, usec_t interval, usec_t now) {
        deadline += interval;
        if (deadline <= now)
                deadline += ((now - deadline) / interval + 1) * interval;
        return deadline;
}

static void fill_hello(void *userdata, ElasticPool__Hello *h, bool *ret_application_fields) {
        ep_sensor *s = userdata;

        h->group = s->group;
        h->has_worker_id = s->has_worker_id;
        h->worker_id = s->worker_id;
        h->has_interval_usec = true;
        h->interval_usec = atomic_load(&s->interval_usec);
        h->cgroup = (char *) cgroup_reader_v2_path(&s->reader);
        h->package_format = s->package_format;
        *ret_application_fields = app_state_any_set(&s->app);
}

static int send_report(ep_sensor *s, ElasticPool__OccupancyReport *report) {
        Frame f = ELASTIC_POOL__FRAME__INIT;
        int r;

        if (!channel_client_is_connected(s->channel))
                return 0; /* no commander to tell: the reading itself still happened */
        f.body_case = ELASTIC_POOL__FRAME__BODY_REPORT;
        f.report = report;
        r = channel_client_send(s->channel, &f);
        if (r == -ENOTCONN)
                return 0;
        if (r == -ENOBUFS) {
                /* the commander stopped reading; its staleness check will notice the gap in seq */
                if (s->reports_dropped++ == 0)
                        log_warning("The commander does not read the channel, dropping reports");
                return 0;
        }
        return r;
}

int sensor_tick_at(ep_sensor *s, usec_t now) {
        ElasticPool__OccupancyReport *report;
        ReportInput in = {};
        AppFields app;
        Readings rd;

        cgroup_reader_read(&s->reader, &rd);
        in.has_cpu = cpu_sample_update(&s->cpu_last, &rd, now, &in.cpu, &in.cpu_span);
        app_state_snapshot(&s->app, &app);
        in.seq = ++s->seq;
        in.monotonic_usec = now;
        in.readings = &rd;
        in.app = &app;
        report = report_build(&s->storage, &in);
        s->last_report = report;
        /* the tick told the commander which side of burst_queue the queue is on */
        s->burst_over = app.has_executor && s->burst_queue > 0 && app.queue_depth >= s->burst_queue;
        return send_report(s, report);
}

int sensor_probe_at(ep_sensor *s, usec_t now) {
        ElasticPool__OccupancyReport *report;
        AppFields app;
        bool over;

        if (s->burst_queue == 0)
                return 0;
        s->next_probe = now + SENSOR_BURST_PROBE_USEC;
        app_state_snapshot(&s->app, &app);
        over = app.has_executor && app.queue_depth >= s->burst_queue;
        if (over == s->burst_over)
                return 0;
        s->burst_over = over;
        report = report_build_early(&s->early_storage, now, &app);
        if (!report)
                return 0;
        s->early_reports++;
        return send_report(s, report);
}

uint64_t sensor_early_reports(const ep_sensor *s) {
        return s->early_reports;
}

const ElasticPool__OccupancyReport *sensor_last_report(const ep_sensor *s) {
        return s->last_report;
}

/* A changed interval applies from the last deadline on: the grid is re-anchored there. */
static void apply_interval_change(ep_sensor *s) {
        if (!atomic_exchange(&s->interval_changed, false) || s->next_tick == 0)
                return;
        s->next_tick = s->last_deadline + atomic_load(&s->interval_usec);
}

static int tick_if_due(ep_sensor *s) {
        usec_t now = now_usec(CLOCK_MONOTONIC), deadline;
        int r;

        apply_interval_change(s);
        if (s->next_tick != 0 && now < s->next_tick)
                return 0;
        deadline = s->next_tick != 0 ? s->next_tick : now;
        r = sensor_tick_at(s, now);
        s->last_deadline = deadline;
        s->next_tick = sensor_next_deadline(deadline, atomic_load(&s->interval_usec), now);
        return r;
}

static int dispatch(ep_sensor *s) {
        int r;

        r = channel_client_dispatch(s->channel);
        if (r < 0)
                return r;
        r = tick_if_due(s);
        if (r < 0)
                return r;
        if (s->burst_queue > 0 && now_usec(CLOCK_MONOTONIC) >= s->next_probe)
                return sensor_probe_at(s, now_usec(CLOCK_MONOTONIC));
        return 0;
}

static usec_t next_wakeup(ep_sensor *s) {
        usec_t next;

        if (atomic_load(&s->interval_changed))
                return 0;
        next = MIN(s->next_tick, channel_client_next_wakeup(s->channel));
        return s->burst_queue > 0 ? MIN(next, s->next_probe) : next;
}

static int parse_env_interval(ep_sensor *s) {
        const char *e = getenv("ELASTIC_POOL_INTERVAL");
        usec_t v;
        int r;

        if (!e)
                return 0;
        r = parse_duration(e, &v);
        if (r < 0 || v == 0)
                return log_error_errno(r < 0 ? r : -EINVAL, "Invalid ELASTIC_POOL_INTERVAL='%s': %m", e);
        atomic_store(&s->interval_usec, v);
        return 0;
}

/* ELASTIC_POOL_BURST_QUEUE (the commander's [policy] burst_queue, set while its burst path is on): the
 * executor queue crossing it is reported early. Unset: no probing, ticks only. */
static int parse_env_burst_queue(ep_sensor *s) {
        const char *e = getenv("ELASTIC_POOL_BURST_QUEUE");
        int r;

        if (!e)
                return 0;
        r = parse_uint32(e, &s->burst_queue);
        if (r < 0 || s->burst_queue == 0) {
                /* a hint, not a requirement: the ticks still report the queue */
                log_warning("Invalid ELASTIC_POOL_BURST_QUEUE='%s', reporting on the ticks only", e);
                s->burst_queue = 0;
        }
        return 0;
}

static int parse_env_identity(ep_sensor *s) {
        const char *e;
        int r;

        e = getenv("ELASTIC_POOL_GROUP");
        if (e) {
                s->group = strdup(e);
                if (!s->group)
                        return -ENOMEM;
        }
        e = getenv("ELASTIC_POOL_WORKER");
        if (e) {
                r = parse_uint32(e, &s->worker_id);
                if (r < 0)
                        return log_error_errno(r, "Invalid ELASTIC_POOL_WORKER='%s': %m", e);
                s->has_worker_id = true;
        }
        return 0;
}

static int setup_channel(ep_sensor *s) {
        _cleanup_free_ char *value = NULL;
        const char *e;
        uint32_t fd;
        int r;

        e = getenv("ELASTIC_POOL_CHANNEL");
        if (e && *e) {
                r = channel_client_set_path(s->channel, e);
                if (r < 0)
                        return log_error_errno(r, "Invalid ELASTIC_POOL_CHANNEL='%s': %m", e);
        }
        /* A child of the worker that links the sensor too would connect there at once, and from inside the
         * worker's cgroup a re-adopting commander would take it for the worker. */
        (void) unsetenv("ELASTIC_POOL_CHANNEL");
        e = getenv("ELASTIC_POOL_CHANNEL_FD");
        if (!e)
                return 0;
        value = strdup(e);
        if (!value)
                return -ENOMEM;
        /* whatever becomes of it, our children must not find it and think the channel is theirs */
        (void) unsetenv("ELASTIC_POOL_CHANNEL_FD");
        r = parse_uint32(value, &fd);
        if (r >= 0 && fd > INT_MAX)
                r = -ERANGE;
        if (r < 0)
                return log_error_errno(r, "Invalid ELASTIC_POOL_CHANNEL_FD='%s': %m", value);
        r = channel_client_adopt_fd(s->channel, (int) fd);
        if (r < 0)
                return log_error_errno(r, "ELASTIC_POOL_CHANNEL_FD=%s is not a usable channel: %m", value);
        return 0;
}

_public_ int ep_sensor_new(ep_sensor **ret) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        const char *proc_root, *cgroup_root;
        int r;

        if (!ret)
                return -EINVAL;
        /* In the shared library this sets up the library's own (hidden) copy of the log layer, so sensor
         * messages carry their own identifier and honour EP_LOG_LEVEL/EP_LOG_TARGET. */
        log_setup("elastic-pool-sensor", getenv("ELASTIC_POOL_GROUP"));
        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->wake_fd = -EBADF;
        atomic_init(&s->interval_usec, SENSOR_INTERVAL_DEFAULT_USEC);
        app_state_init(&s->app);

        r = parse_env_interval(s);
        if (r < 0)
                return r;
        r = parse_env_identity(s);
        if (r < 0)
                return r;
        r = parse_env_burst_queue(s);
        if (r < 0)
                return r;

        proc_root = getenv("ELASTIC_POOL_PROC_ROOT");
        cgroup_root = getenv("ELASTIC_POOL_CGROUP_ROOT");
        /* a given cgroup root is a test tree: it is taken as it is, without a cgroupfs underneath */
        r = cgroup_reader_init(&s->reader, proc_root ?: "/proc", cgroup_root ?: "/sys/fs/cgroup",
                               cgroup_root);
        if (r < 0)
                return r;

        r = channel_client_new(&s->channel);
        if (r < 0)
                return r;
        channel_client_set_hello(s->channel, fill_hello, s);
        r = setup_channel(s);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(s);
        return 0;
}

static void stop_thread(ep_sensor *s) {
        uint64_t one = 1;

        if (!s->thread_running)
                return;
        atomic_store(&s->stop, true);
        (void) write(s->wake_fd, &one, sizeof one);
        (void) pthread_join(s->thread, NULL);
        s->thread_running = false;
}

_public_ ep_sensor *ep_sensor_free(ep_sensor *s) {
        if (!s)
                return NULL;
        stop_thread(s);
        s->channel = channel_client_free(s->channel);
        cgroup_reader_done(&s->reader);
        app_state_done(&s->app);
        safe_close(s->wake_fd);
        free(s->group);
        free(s->package_format);
        free(s);
        return NULL;
}

_public_ int ep_sensor_set_interval(ep_sensor *s, uint64_t usec) {
        uint64_t one = 1;

        if (!s || usec == 0)
                return -EINVAL;
        atomic_store(&s->interval_usec, usec);
        atomic_store(&s->interval_changed, true);
        if (s->thread_running)
                (void) write(s->wake_fd, &one, sizeof one); /* recompute the poll timeout now */
        return 0;
}

_public_ void ep_sensor_set_users(ep_sensor *s, uint32_t users) {
        if (s)
                app_state_set_users(&s->app, users);
}

_public_ void ep_sensor_set_pages(ep_sensor *s, uint32_t pages) {
        if (s)
                app_state_set_pages(&s->app, pages);
}

_public_ void ep_sensor_set_connections(ep_sensor *s, uint32_t connections) {
        if (s)
                app_state_set_connections(&s->app, connections);
}

_public_ void ep_sensor_user_active(ep_sensor *s, const char *user, bool system) {
        if (s)
                app_state_user_active(&s->app, user, system);
}

_public_ void ep_sensor_set_executor(ep_sensor *s, uint32_t busy, uint32_t total, uint32_t queue_depth) {
        if (s)
                app_state_set_executor(&s->app, busy, total, queue_depth);
}

_public_ void ep_sensor_set_executor_total(ep_sensor *s, uint32_t total) {
        if (s)
                app_state_set_executor_total(&s->app, total);
}

_public_ void ep_sensor_request_queued(ep_sensor *s) {
        if (s)
                app_state_request_queued(&s->app);
}

_public_ void ep_sensor_request_begin(ep_sensor *s) {
        if (s)
                app_state_request_begin(&s->app);
}

_public_ void ep_sensor_request_end(ep_sensor *s) {
        if (s)
                app_state_request_end(&s->app);
}

_public_ void ep_sensor_set_backlog(ep_sensor *s, uint64_t pending, uint64_t outbox) {
        if (s)
                app_state_set_backlog(&s->app, pending, outbox);
}

_public_ int ep_sensor_set_user_callbacks(ep_sensor *s, const ep_sensor_user_callbacks *cb, void *userdata) {
        if (!s)
                return -EINVAL;
        channel_client_set_user_callbacks(s->channel, cb, userdata);
        return 0;
}

_public_ int ep_sensor_set_package_format(ep_sensor *s, const char *format) {
        char *copy = NULL;

        if (!s || s->thread_running)
                return -EINVAL;
        if (format) {
                if (strlen(format) > 128)
                        return -EINVAL;
                for (const char *c = format; *c; c++)
                        if ((unsigned char) *c < 0x20 || *c == 0x7f)
                                return -EINVAL;
                copy = strdup(format);
                if (!copy)
                        return -ENOMEM;
        }
        free(s->package_format);
        s->package_format = copy;
        return 0;
}

_public_ void ep_sensor_set_drain_callback(ep_sensor *s, ep_sensor_drain_callback cb, void *userdata) {
        if (s)
                channel_client_set_drain_callback(s->channel, cb, userdata);
}

_public_ int ep_sensor_watch_pid(ep_sensor *s, int pid) {
        if (!s || pid <= 0)
                return -EINVAL;
        if (s->thread_running)
                return -EBUSY;
        cgroup_reader_watch_pid(&s->reader, pid);
        return 0;
}

_public_ int ep_sensor_get_fd(ep_sensor *s) {
        if (!s || s->thread_running)
                return -1;
        return channel_client_is_connected(s->channel) ? channel_client_fd(s->channel) : -1;
}

_public_ int ep_sensor_get_events(ep_sensor *s) {
        if (!s || s->thread_running)
                return 0;
        return channel_client_events(s->channel);
}

_public_ int ep_sensor_get_timeout(ep_sensor *s, uint64_t *ret_usec) {
        if (!s || !ret_usec)
                return -EINVAL;
        if (s->thread_running)
                return -EBUSY;
        *ret_usec = next_wakeup(s);
        return 0;
}

_public_ int ep_sensor_dispatch(ep_sensor *s) {
        if (!s)
                return -EINVAL;
        if (s->thread_running)
                return -EBUSY;
        return dispatch(s);
}

_public_ int ep_sensor_tick(ep_sensor *s) {
        if (!s)
                return -EINVAL;
        if (s->thread_running)
                return -EBUSY;
        return sensor_tick_at(s, now_usec(CLOCK_MONOTONIC));
}

static int poll_timeout_ms(usec_t deadline) {
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (deadline <= now)
                return 0;
        if (deadline == USEC_INFINITY || deadline - now >= (usec_t) INT_MAX * USEC_PER_MSEC)
                return -1;
        return (int) ((deadline - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC); /* late rather than early */
}

static void *sensor_thread(void *userdata) {
        ep_sensor *s = userdata;
        bool warned = false;

        while (!atomic_load(&s->stop)) {
                struct pollfd p[2] = {
                        { .fd = s->wake_fd, .events = POLLIN },
                        { .fd = channel_client_fd(s->channel), .events = channel_client_events(s->channel) },
                };
                uint64_t v;
                int r;

                r = poll(p, ELEMENTSOF(p), poll_timeout_ms(next_wakeup(s)));
                if (r < 0 && errno != EINTR) {
                        log_error_errno(-errno, "Sensor thread cannot poll, stopping: %m");
                        break;
                }
                if (p[0].revents & POLLIN)
                        (void) read(s->wake_fd, &v, sizeof v);
                if (atomic_load(&s->stop))
                        break;
                r = dispatch(s);
                if (r < 0 && !warned) {
                        log_warning_errno(r, "Sensor dispatch failed, carrying on: %m");
                        warned = true;
                }
        }
        return NULL;
}

_public_ int ep_sensor_start_thread(ep_sensor *s) {
        sigset_t all, saved;
        int r;

        if (!s)
                return -EINVAL;
        if (s->thread_running)
                return -EBUSY;
        if (s->wake_fd < 0) {
                s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
                if (s->wake_fd < 0)
                        return -errno;
        }
        atomic_store(&s->stop, false);
        /* the application's signals are the application's: the thread is born with all of them blocked */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        r = -pthread_create(&s->thread, NULL, sensor_thread, s);
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        if (r < 0)
                return r;
        (void) pthread_setname_np(s->thread, "ep-sensor");
        s->thread_running = true;
        return 0;
}

_public_ void ep_sensor_goodbye(ep_sensor *s, const char *reason) {
        if (!s)
                return;
        stop_thread(s);
        channel_client_goodbye(s->channel, reason ?: "goodbye", GOODBYE_TIMEOUT_USEC);
}
