/* SPDX-License-Identifier: MIT */
#include "handlers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "macro.h"
#include "parse-util.h"
#include "query.h"
#include "time-util.h"

static const char hello_body[] = "Hello from elastic-pool-demo-worker\n";
#define TEXT_PLAIN "text/plain; charset=utf-8"
#define APPLICATION_JSON "application/json"

/* The worker id comes from the environment: escape it once for every JSON body it appears in. */
static char *json_escape(const char *s) {
        char *buf = malloc(strlen(s) * 6 + 1), *p = buf;

        if (!buf)
                return NULL;
        for (; *s; s++) {
                unsigned char c = (unsigned char) *s;
                if (c == '"' || c == '\\')
                        p += sprintf(p, "\\%c", c);
                else if (c < 0x20)
                        p += sprintf(p, "\\u%04x", c);
                else
                        *p++ = (char) c;
        }
        *p = 0;
        return buf;
}

int app_init(App *app, UserStore *users, ep_sensor *sensor, unsigned threads, uint64_t max_body) {
        pthread_condattr_t attr;
        const char *w = getenv("ELASTIC_POOL_WORKER");

        *app = (App) { .users = users, .sensor = sensor, .threads = threads, .max_body = max_body };
        app->worker = json_escape(w && *w ? w : "-");
        if (!app->worker)
                return -ENOMEM;
        pthread_mutex_init(&app->stop_lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&app->stop_cond, &attr);
        pthread_condattr_destroy(&attr);
        return 0;
}

void app_done(App *app) {
        free((char *) app->worker);
        pthread_cond_destroy(&app->stop_cond);
        pthread_mutex_destroy(&app->stop_lock);
}

void app_hard_stop(App *app) {
        pthread_mutex_lock(&app->stop_lock);
        atomic_store(&app->hard_stop, true);
        pthread_mutex_unlock(&app->stop_lock);
        pthread_cond_broadcast(&app->stop_cond);
}

/* Formats the body into scratch, or onto the heap when it does not fit there. */
_printf_(3, 4) static void response_printf(HttpResponse *resp, const char *content_type, const char *fmt,
                                           ...) {
        va_list ap;
        int n;

        resp->content_type = content_type;
        va_start(ap, fmt);
        n = vsnprintf(resp->scratch, sizeof resp->scratch, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t) n < sizeof resp->scratch) {
                resp->body = resp->scratch;
                resp->body_len = (size_t) n;
                return;
        }
        va_start(ap, fmt);
        n = vasprintf(&resp->heap, fmt, ap);
        va_end(ap);
        if (n < 0) {
                resp->heap = NULL;
                http_response_text(resp, 503, "out of memory\n");
                return;
        }
        resp->body = resp->heap;
        resp->body_len = (size_t) n;
}

void http_response_text(HttpResponse *resp, int status, const char *fmt, ...) {
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(resp->scratch, sizeof resp->scratch, fmt, ap);
        va_end(ap);
        resp->status = status;
        resp->content_type = TEXT_PLAIN;
        resp->body = resp->scratch;
        resp->body_len = n < 0 ? 0 : MIN((size_t) n, sizeof resp->scratch - 1);
}

void http_response_done(HttpResponse *resp) {
        free(resp->heap);
        resp->heap = NULL;
        if (resp->hold)
                (void) munmap(resp->hold, resp->hold_len);
        resp->hold = NULL;
}

static void on_hello(App *app, const HttpRequest *req, const Target *t, HttpResponse *resp) {
        resp->content_type = TEXT_PLAIN;
        resp->body = hello_body;
        resp->body_len = sizeof hello_body - 1;
}

static void on_login(App *app, const HttpRequest *req, const Target *t, HttpResponse *resp) {
        char *name = resp->user_buf;
        int r;

        r = query_get(t->query, t->query_len, "user", name, sizeof resp->user_buf);
        if (r == -ENOENT)
                return http_response_text(resp, 400, "missing parameter: /login?user=NAME\n");
        if (r < 0 || !user_name_is_valid(name, (size_t) r))
                return http_response_text(resp, 400,
                                          "invalid user name (allowed: [A-Za-z0-9._@-], 1..%d characters)\n",
                                          USER_NAME_MAX);
        r = user_store_login(app->users, name);
        if (r < 0) {
                log_warning_errno(r, "Failed to log in user '%s': %m", name);
                return http_response_text(resp, 503, "cannot create the state of user %s\n", name);
        }
        ep_sensor_user_active(app->sensor, name, false);
        resp->user_header = name;
        http_response_text(resp, 200, "%s %s\n", r > 0 ? "logged in as" : "already logged in as", name);
}

static void on_logout(App *app, const HttpRequest *req, const Target *t, HttpResponse *resp) {
        resp->user_header = "-";
        if (!req->user)
                return http_response_text(resp, 200, "not logged in\n");
        if (user_store_drop(app->users, req->user) < 0)
                return http_response_text(resp, 200, "user %s had no state here\n", req->user);
        http_response_text(resp, 200, "logged out %s\n", req->user);
}

static void on_state(App *app, const HttpRequest *req, const Target *t, HttpResponse *resp) {
        uint64_t counter;
        uint32_t crc;

        if (!req->user)
                return http_response_text(
                        resp, 404,
                        "no user: the request has no X-Elastic-Pool-User header (log in with "
                        "/login?user=NAME)\n");
        if (user_store_bump(app->users, req->user, &counter, &crc) < 0)
                return http_response_text(resp, 404, "unknown user '%s' on this worker\n", req->user);
        ep_sensor_user_active(app->sensor, req->user, false);
        response_printf(resp, APPLICATION_JSON,
                        "{\"user\":\"%s\",\"counter\":%" PRIu64 ",\"worker\":\"%s\",\"blob_crc\":%" PRIu32
                        "}\n",
                        req->user, counter, app->worker, crc);
}

typedef struct MonitorState {
        FILE *f;
        bool first;
} MonitorState;

static int monitor_user(const UserInfo *u, void *userdata) {
        MonitorState *m = userdata;

        fprintf(m->f,
                "%s{\"user\":\"%s\",\"counter\":%" PRIu64 ",\"blob_size\":%zu,\"blob_crc\":%" PRIu32 "}",
                m->first ? "" : ",", u->name, u->counter, u->blob_size, u->blob_crc);
        m->first = false;
        return 0;
}

static void on_monitor_state(App *app, const HttpRequest *req, const Target *t, HttpResponse *resp) {
        MonitorState m = { .first = true };
        size_t len = 0;

        m.f = open_memstream(&resp->heap, &len);
        if (!m.f)
                return http_response_text(resp, 503, "out of memory\n");
        fprintf(m.f,
                "{\"worker\":\"%s\",\"pid\":%d,\"threads\":%u,\"busy\":%u,\"connections\":%u,\"users\":[",
                app->worker, (int) getpid(), app->threads, atomic_load(&app->busy),
                atomic_load(&app->connections));
        (void) user_store_foreach(app->users, monitor_user, &m);
        fputs("]}\n", m.f);
        if (fclose(m.f) != 0 || !resp->heap) {
                free(resp->heap);
                resp->heap = NULL;
                return http_response_text(resp, 503, "out of memory\n");
        }
        resp->content_type = APPLICATION_JSON;
        resp->body = resp->heap;
        resp->body_len = len;
}

static uint64_t thread_cpu_usec(void) {
        return now_usec(CLOCK_THREAD_CPUTIME_ID);
}

/* Burns thread CPU time (not wall time: a preempted burner still does the work it was asked for). */
static uint64_t burn_cpu(App *app, uint64_t usec) {
        uint64_t start = thread_cpu_usec(), now = start;
        volatile uint64_t sink = 0;

        while (usec > 0 && now - start < usec &&
               !atomic_load_explicit(&app->hard_stop, memory_order_relaxed)) {
                for (unsigned i = 0; i < 20000; i++)
                        sink = sink * 6364136223846793005ULL + i;
                now = thread_cpu_usec();
        }
        return now - start;
}

/* Sleeps on the stop condition, so a hard stop at the shutdown deadline wakes it. */
static uint64_t sleep_interruptibly(App *app, uint64_t usec) {
        usec_t start = now_usec(CLOCK_MONOTONIC), deadline = start + usec;
        struct timespec ts = { .tv_sec = (time_t) (deadline / USEC_PER_SEC),
                               .tv_nsec = (long) (deadline % USEC_PER_SEC * NSEC_PER_USEC) };

        if (usec == 0)
                return 0;
        pthread_mutex_lock(&app->stop_lock);
        while (!atomic_load(&app->hard_stop))
                if (pthread_cond_timedwait(&app->stop_cond, &app->stop_lock, &ts) == ETIMEDOUT)
                        break;
        pthread_mutex_unlock(&app->stop_lock);
        return now_usec(CLOCK_MONOTONIC) - start;
}

/* A private anonymous mapping, every page written so that it really counts in memory.current. */
static int hold_memory(uint64_t kib, void **ret, size_t *ret_len) {
        size_t len = (size_t) kib * 1024, page = (size_t) sysconf(_SC_PAGESIZE);
        uint8_t *p;

        if (len == 0)
                return 0;
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return -errno;
        for (size_t i = 0; i < len; i += page)
                p[i] = 1;
        *ret = p;
        *ret_len = len;
        return 0;
}

typedef struct WorkParam {
        const char *name;
        uint64_t max;
} WorkParam;

static const WorkParam work_params[] = {
        { "cpu_ms", WORK_CPU_MS_MAX },
        { "alloc_kb", WORK_ALLOC_KB_MAX },
        { "sleep_ms", WORK_SLEEP_MS_MAX },
        { "bytes", WORK_BYTES_MAX },
};

static void on_work(App *app, const HttpRequest *req, const Target *t, HttpResponse *resp) {
        uint64_t v[ELEMENTSOF(work_params)], cpu_used, slept;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(work_params); i++) {
                r = query_get_uint64(t->query, t->query_len, work_params[i].name, work_params[i].max,
                                     UINT64_MAX, &v[i]);
                if (r < 0)
                        return http_response_text(resp, 400,
                                                  "bad value for %s: a whole number 0..%" PRIu64 "\n",
                                                  work_params[i].name, work_params[i].max);
        }
        for (size_t i = 0; i < 3; i++)
                if (v[i] == UINT64_MAX) /* absent: do nothing of that kind */
                        v[i] = 0;

        if ((v[0] > 0 || v[1] > 0 || v[2] > 0) && req->before_slow)
                req->before_slow(req->conn);
        r = hold_memory(v[1], &resp->hold, &resp->hold_len);
        if (r < 0)
                return http_response_text(resp, 503, "cannot allocate %" PRIu64 " KiB: %s\n", v[1],
                                          strerror(-r));
        cpu_used = burn_cpu(app, v[0] * USEC_PER_MSEC);
        slept = sleep_interruptibly(app, v[2] * USEC_PER_MSEC);

        if (v[3] != UINT64_MAX) {
                /* A download: the connection layer generates the bytes in chunks, never holding them. */
                resp->content_type = "application/octet-stream";
                resp->stream_bytes = v[3];
                return;
        }
        response_printf(resp, APPLICATION_JSON,
                        "{\"cpu_ms\":%" PRIu64 ",\"cpu_used_ms\":%.3f,\"alloc_kb\":%" PRIu64
                        ",\"sleep_ms\":%" PRIu64 ",\"slept_ms\":%.3f,\"body_bytes\":%" PRIu64
                        ",\"worker\":\"%s\"}\n",
                        v[0], (double) cpu_used / 1000.0, v[1], v[2], (double) slept / 1000.0,
                        req->body_bytes, app->worker);
}

/* --debug-hang only (else it is no endpoint at all): the requests after this one are not answered for
 * the duration. */
static void on_debug_hang(App *app, const HttpRequest *req, const Target *t, HttpResponse *resp) {
        char value[32], span[32];
        usec_t d;

        if (!app->debug_hang)
                return http_response_text(resp, 404, "no such endpoint: /debug/hang (needs --debug-hang)\n");
        if (query_get(t->query, t->query_len, "for", value, sizeof value) < 0 ||
            parse_duration(value, &d) < 0)
                return http_response_text(resp, 400, "/debug/hang?for=DURATION (such as 10s)\n");
        atomic_store(&app->hang_until, now_usec(CLOCK_MONOTONIC) + d);
        log_warning("Not answering requests for %s (/debug/hang)", format_timespan(span, sizeof span, d));
        http_response_text(resp, 200, "not answering requests for %s\n", span);
}

/* A request that arrives while /debug/hang holds waits it out (a hard stop ends the wait). */
static void wait_while_hung(App *app) {
        usec_t until = atomic_load(&app->hang_until), now = now_usec(CLOCK_MONOTONIC);

        if (until > now)
                (void) sleep_interruptibly(app, until - now);
}

typedef void (*handler_t)(App *app, const HttpRequest *req, const Target *t, HttpResponse *resp);

typedef struct Route {
        const char *path;
        handler_t handler;
        bool user_activity; /* a request of the calling user counts as activity (dispatch marks it) */
} Route;

/* /login and /state mark activity themselves, only once they know the user; /logout ends it. */
static const Route routes[] = {
        { "/", on_hello, true },
        { "/hello", on_hello, true },
        { "/work", on_work, true },
        { "/login", on_login, false },
        { "/logout", on_logout, false },
        { "/state", on_state, false },
        { "/_monitor/state", on_monitor_state, false }, /* a system request: never activity */
        { "/debug/hang", on_debug_hang, false },
};

static const Route *route_find(const Target *t) {
        for (size_t i = 0; i < ELEMENTSOF(routes); i++)
                if (target_path_is(t, routes[i].path))
                        return &routes[i];
        return NULL;
}

void handlers_dispatch(App *app, const HttpRequest *req, HttpResponse *resp) {
        const Route *route;
        Target t;

        resp->status = 200;
        wait_while_hung(app);
        if (target_split(req->url, req->url_len, &t) < 0)
                return http_response_text(resp, 400, "bad request target\n");
        route = route_find(&t);
        if (!route)
                return http_response_text(resp, 404, "no such endpoint: %.*s\n",
                                          (int) MIN(t.path_len, (size_t) 256), t.path);
        if (req->method != HTTP_GET && req->method != HTTP_HEAD && req->method != HTTP_POST) {
                resp->allow_header = true;
                return http_response_text(resp, 405, "method %s not allowed on %s (GET, HEAD, POST)\n",
                                          http_method_str(req->method), route->path);
        }
        if (req->user_invalid)
                return http_response_text(resp, 400, "invalid X-Elastic-Pool-User header\n");
        if (route->user_activity && req->user)
                ep_sensor_user_active(app->sensor, req->user, false);
        route->handler(app, req, &t, resp);
}

/* A --install-delay or --snapshot-delay fault. It blocks the calling thread, which is the event loop: the
 * worker takes no new request and answers no signal meanwhile, as a hung target or a slow source would. The
 * signals the loop handles are blocked (it reads them from a signalfd), so EINTR is not expected; it only
 * resumes the sleep towards the same deadline. */
static void fault_delay(const char *what, const char *user, usec_t delay) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        usec_t deadline = delay > USEC_INFINITY - now ? USEC_INFINITY : now + delay;
        struct timespec ts = { .tv_sec = (time_t) (deadline / USEC_PER_SEC),
                               .tv_nsec = (long) (deadline % USEC_PER_SEC * NSEC_PER_USEC) };
        char buf[32];

        if (delay == 0)
                return;
        log_info("Delaying the %s of user '%s' by %s (fault injected on purpose)", what, user,
                 format_timespan(buf, sizeof buf, delay));
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

/* The sensor's user callbacks: they run in the event-loop thread, the loop syncs the user count. */
static int on_snapshot(void *userdata, const char *user, void **ret_blob, size_t *ret_size) {
        App *app = userdata;

        fault_delay("snapshot", user, app->faults.snapshot_delay);
        return user_store_snapshot(app->users, user, ret_blob, ret_size);
}

static int on_install(void *userdata, const char *user, const void *blob, size_t size) {
        App *app = userdata;
        int r;

        fault_delay("install", user, app->faults.install_delay);
        /* -EPERM: the sensor puts its strerror() in the InstallResult, "Operation not permitted" */
        if (app->faults.install_error)
                return log_warning_errno(EPERM, "Refused to install user '%s' (%zu bytes): --install-error",
                                         user, size);
        /* no package: a user re-pointed from another version, whose state this one cannot read */
        r = blob ? user_store_install(app->users, user, blob, size) : user_store_login(app->users, user);
        if (r < 0)
                return log_warning_errno(r, "Refused to install user '%s' (%zu bytes): %m", user, size);
        log_info("Installed user '%s' (%zu bytes)", user, size);
        return 0;
}

static int on_drop(void *userdata, const char *user) {
        App *app = userdata;
        int r;

        r = user_store_drop(app->users, user);
        if (r >= 0)
                log_info("Dropped user '%s'", user);
        return r;
}

typedef struct ListSink {
        ep_sensor_user_sink sink;
        void *ctx;
} ListSink;

static int list_user(const UserInfo *u, void *userdata) {
        ListSink *l = userdata;

        return l->sink(l->ctx, u->name);
}

/* A whole walk under the store's lock: the sink only copies names, and it runs once per connection of the
 * channel, so the executors pause for one copy of the names at most; in return the list is one moment's. */
static int on_list(void *userdata, ep_sensor_user_sink sink, void *sink_ctx) {
        App *app = userdata;

        return user_store_foreach(app->users, list_user, &(ListSink) { .sink = sink, .ctx = sink_ctx });
}

const ep_sensor_user_callbacks app_user_callbacks = {
        .snapshot = on_snapshot,
        .install = on_install,
        .drop = on_drop,
        .list = on_list,
};
