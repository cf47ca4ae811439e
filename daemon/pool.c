/* SPDX-License-Identifier: MIT */
#include "pool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "frontend-manager.h"
#include "journal-ids.h"
#include "log.h"
#include "macro.h"
#include "spawn.h"

/* Consecutive failed spawns before the throttle stops trying, and the first back-off step. */
#define SPAWN_FAILURES_MAX 5U
#define SPAWN_BACKOFF_FIRST (250 * USEC_PER_MSEC)
/* The floor of the stable period (see stable_period()). */
#define SPAWN_STABLE_MIN (10 * USEC_PER_SEC)
/* The accept probe looks again after 1 ms, doubling up to this. */
#define PROBE_INTERVAL_MAX (50 * USEC_PER_MSEC)
#define LISTEN_BACKLOG 4096

static void worker_dead(Manager *m, Worker *w);

/* Every change of a worker's state goes through here: the pool summary no longer holds. */
static void set_state(Worker *w, WorkerState state) {
        w->state = state;
        w->manager->summary.valid = false;
}

/* A sensor may tick slower than we asked (a wrapper started with its own --interval), but not slower
 * than this: past it, a silent worker would never read as stale. */
#define SENSOR_INTERVAL_MAX (3600 * USEC_PER_SEC)

usec_t pool_stale_horizon(const Manager *m, const Worker *w) {
        usec_t interval = MAX(m->config.occupancy_interval, MIN(w->sensor_interval, SENSOR_INTERVAL_MAX));

        /* saturating: a wrapped product would call every worker stale at once */
        if (interval > USEC_INFINITY / MAX(m->config.stale_after, 1U))
                return USEC_INFINITY;
        return interval * m->config.stale_after;
}

Freshness pool_worker_freshness(const Manager *m, const Worker *w, usec_t now, usec_t *ret_since) {
        usec_t horizon = pool_stale_horizon(m, w);
        const Row *last = window_latest(&w->window);

        if (!channel_is_open(w->channel)) {
                *ret_since = w->channel_closed_at;
                return FRESHNESS_NO_CHANNEL;
        }
        if (!last) {
                usec_t born = w->routable_at > 0 ? w->routable_at : w->spawned_at;
                *ret_since = born;
                return now - born < horizon ? FRESHNESS_NEW : FRESHNESS_STALE;
        }
        if (now - last->received >= horizon) {
                *ret_since = last->received;
                return FRESHNESS_STALE;
        }
        if (w->missing_mask != 0) {
                *ret_since = w->not_fresh_since;
                return FRESHNESS_MISSING;
        }
        *ret_since = 0;
        return FRESHNESS_FRESH;
}

static void arm_timer(Manager *m, Worker *w, usec_t delay, sd_event_time_handler_t handler) {
        int r;

        w->timer = sd_event_source_disable_unref(w->timer);
        r = sd_event_add_time_relative(m->event, &w->timer, CLOCK_MONOTONIC, delay, USEC_PER_MSEC, handler, w);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the timer of %s: %m", WORKER_NAME(w));
}

/* ---- spawn throttle ---- */

/* A worker must stay up this long after it became routable to count as started. One that dies sooner is
 * a failed spawn like one that never got there, or a crash loop just past its Hello respawns at full
 * speed forever; the count of consecutive failures starts over only once a worker has lasted this long.
 * spawn_timeout is what the operator gave a start; 10 s keeps the period meaningful under a short one. */
static usec_t stable_period(const Manager *m) {
        return MAX(m->config.spawn_timeout, SPAWN_STABLE_MIN);
}

static int on_spawn_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        m->spawn_retry = sd_event_source_disable_unref(m->spawn_retry);
        manager_check_capacity(m);
        return 0;
}

static void spawn_failed(Manager *m, Worker *w, const char *what) {
        usec_t backoff;

        m->spawn_failures++;
        free(m->last_spawn_error);
        m->last_spawn_error = strdup(what);
        log_struct(LOG_ERR, LOG_FIELDS(.message_id = MESSAGE_ID_SPAWN_FAILED, .event = "spawn-failed", .worker = (int) w->id),
                   "Worker %s failed to start: %s (%u consecutive failed spawns)", WORKER_NAME(w), what,
                   m->spawn_failures);
        if (m->spawn_failures >= SPAWN_FAILURES_MAX) {
                m->spawn_given_up = true;
                log_struct(LOG_CRIT, LOG_FIELDS(.message_id = MESSAGE_ID_SPAWN_GAVE_UP, .event = "spawn-gave-up"),
                           "Stopped spawning workers after %u consecutive failed spawns (last: %s). Fix the cause "
                           "([worker] exec in %s, or the host) and restart the commander.",
                           m->spawn_failures, what, m->config.path ? m->config.path : "the built-in defaults");
                return;
        }
        backoff = SPAWN_BACKOFF_FIRST << (m->spawn_failures - 1);
        m->spawn_not_before = now_usec(CLOCK_MONOTONIC) + backoff;
}

int pool_spawn_throttle(Manager *m) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        int r;

        if (m->spawn_given_up)
                return -ECANCELED;
        if (now >= m->spawn_not_before)
                return 0;
        if (!m->spawn_retry) {
                r = sd_event_add_time(m->event, &m->spawn_retry, CLOCK_MONOTONIC, m->spawn_not_before,
                                      USEC_PER_MSEC, on_spawn_retry, m);
                if (r < 0)
                        return r;
        }
        return -EAGAIN;
}

/* A spawn that failed before a child of it was running: no death will come to ask for the next
 * attempt, so the retry is scheduled here, through the same back-off. */
static void birth_failed(Manager *m, Worker *w, const char *what) {
        int r;

        spawn_failed(m, w, what);
        r = pool_spawn_throttle(m);
        if (r < 0 && r != -EAGAIN && r != -ECANCELED)
                log_warning_errno(r, "Failed to schedule the next spawn attempt: %m");
}

/* Fills what with "<step>: <error>" for the throttle's message; returns error. */
static int step_failed(int error, char *what, size_t size, const char *step) {
        snprintf(what, size, "%s: %s", step, strerror(-error));
        return error;
}

/* ---- birth ---- */

static int make_listen_socket(Manager *m, Worker *w) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (asprintf(&w->socket_path, "%s/w%u.sock", m->runtime_dir, w->id) < 0)
                return -ENOMEM;
        if (strlen(w->socket_path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG; /* sun_path holds 108 bytes: a long --runtime-dir does not fit */
        strcpy(sa.sun_path, w->socket_path);
        (void) unlink(w->socket_path);

        /* blocking on purpose: the file description is shared with the worker, which expects what
         * systemd would hand it */
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return -errno;
        (void) chmod(w->socket_path, 0600);
        if (listen(fd, LISTEN_BACKLOG) < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        w->socket_ino = st.st_ino;
        w->listen_fd = TAKE_FD(fd);
        return 0;
}

static void on_channel_frame(Channel *c, const Frame *f, void *userdata);
static void on_channel_close(Channel *c, int error, const char *reason, void *userdata);

static const ChannelCallbacks channel_callbacks = {
        .on_frame = on_channel_frame,
        .on_close = on_channel_close,
};

static char **worker_env(Manager *m, Worker *w) {
        char **env = calloc(8, sizeof(char *));
        size_t n = 0;

        if (!env)
                return NULL;
        env[n++] = spawn_env("LISTEN_FDS", "1");
        env[n++] = spawn_env("LISTEN_FDNAMES", "http");
        env[n++] = spawn_env("ELASTIC_POOL_CHANNEL_FD", "%d", SPAWN_CHANNEL_FD);
        env[n++] = spawn_env("ELASTIC_POOL_GROUP", "%s", m->group);
        env[n++] = spawn_env("ELASTIC_POOL_WORKER", "%u", w->id);
        env[n++] = spawn_env("ELASTIC_POOL_INTERVAL", "%lluus", (unsigned long long) m->config.occupancy_interval);
        for (size_t i = 0; i < n; i++)
                if (!env[i]) {
                        for (size_t k = 0; k < n; k++)
                                free(env[k]);
                        free(env);
                        return NULL;
                }
        return env;
}

static void free_env(char **env) {
        for (char **e = env; e && *e; e++)
                free(*e);
        free(env);
}

/* Reads what the close-on-exec pipe says: nothing yet, exec succeeded (EOF), or exec's errno. */
static void check_exec_error(Manager *m, Worker *w) {
        char what[512];
        int e = 0, r;

        if (w->exec_error_fd < 0)
                return;
        r = spawn_read_exec_error(w->exec_error_fd, &e);
        if (r == -EAGAIN)
                return;
        w->exec_error_source = sd_event_source_disable_unref(w->exec_error_source);
        w->exec_error_fd = safe_close(w->exec_error_fd);
        if (r == 0) {
                log_debug("%s (pid %d) executed %s", WORKER_NAME(w), (int) w->pid, m->config.exec_line);
                return;
        }
        if (r < 0)
                return;
        /* the whole command line: which of several configured commands, and with which arguments */
        snprintf(what, sizeof what, "cannot execute '%.400s': %s", m->config.exec_line, strerror(e));
        /* the child exits 127 right after this; its death is then not a second failure */
        w->exec_failed = true;
        spawn_failed(m, w, what);
}

static int on_exec_error(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Worker *w = userdata;

        check_exec_error(w->manager, w);
        return 0;
}

static int on_spawn_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Worker *w = userdata;
        Manager *m = w->manager;
        char span[32], what[256];

        w->timer = sd_event_source_disable_unref(w->timer);
        if (w->state != WORKER_STARTING && w->state != WORKER_PROBING)
                return 0;
        format_timespan(span, sizeof span, m->config.spawn_timeout);
        snprintf(what, sizeof what, "%s within spawn_timeout=%s; killed it",
                 w->state == WORKER_STARTING ? "no Hello on its channel" : "its socket did not accept", span);
        free(w->stop_reason);
        w->stop_reason = strdup("spawn timeout");
        spawn_failed(m, w, what);
        set_state(w, WORKER_STOPPING);
        (void) worker_signal(w, SIGKILL);
        return 0;
}

static int on_child_exit(sd_event_source *s, const siginfo_t *si, void *userdata);

/* Everything a worker needs before its process exists: its window, listening socket, channel and
 * placement. On failure, what names the step. */
static int prepare_birth(Manager *m, Worker *w, int *ret_ours, int *ret_theirs, int *ret_cgroup_fd,
                         char *what, size_t size) {
        char step[PATH_MAX + 64];
        int sv[2], r;

        r = window_init(&w->window, m->config.window_rows);
        if (r < 0)
                return step_failed(r, what, size, "cannot allocate its window");
        r = make_listen_socket(m, w);
        if (r < 0) {
                snprintf(step, sizeof step, "cannot create its listening socket %s", strna(w->socket_path));
                return step_failed(r, what, size, step);
        }
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return step_failed(-errno, what, size, "cannot create its channel socketpair");
        *ret_ours = sv[0], *ret_theirs = sv[1];
        r = m->backend->vtable->prepare(m->backend, w, ret_cgroup_fd);
        if (r < 0)
                return step_failed(r, what, size, "the placement backend cannot prepare it");
        return 0;
}

/* clone3() (or fork()) into the prepared place; the child waits parked (scope) or goes on to exec. */
static int start_child(Manager *m, Worker *w, int theirs, int cgroup_fd, char *what, size_t size) {
        char **env;
        SpawnResult res;
        int r;

        env = worker_env(m, w);
        if (!env)
                return step_failed(-ENOMEM, what, size, "cannot build its environment");
        SpawnRequest req = {
                .argv = m->config.exec,
                .env = env,
                .listen_fd = w->listen_fd,
                .channel_fd = theirs,
                .cgroup_fd = cgroup_fd,
                .park = m->backend->vtable->kind == BACKEND_SCOPE,
                /* scopes outlive us by design (re-adoption); plain processes and leaves do not */
                .death_signal = m->backend->vtable->kind == BACKEND_SCOPE ? 0 : SIGKILL,
        };
        w->spawned_at = now_usec(CLOCK_MONOTONIC);
        r = spawn_worker(&req, &res);
        free_env(env);
        if (r < 0)
                return step_failed(r, what, size, "cannot create its process");
        w->pid = res.pid;
        w->pidfd = res.pidfd;
        w->release_fd = res.release_fd;
        w->exec_error_fd = res.exec_error_fd;
        m->spawns++;
        if (res.used_fork && !m->warned_fork) {
                m->warned_fork = true;
                log_notice("clone3() is not available here (ENOSYS): workers start with fork() and "
                           "pidfd_open(), and move into their cgroup themselves before exec");
        } else if (!res.into_cgroup && cgroup_fd >= 0)
                log_notice("CLONE_INTO_CGROUP refused for w%u; the child moved itself into %s before exec", w->id,
                           strna(w->cgroup_path));
        return 0;
}

/* The child exists: its channel (which takes ours, also on failure), its death through the pidfd,
 * exec's errno through the pipe. */
static int watch_child(Manager *m, Worker *w, int ours, char *what, size_t size) {
        int r;

        r = channel_new(m->event, ours, FRAME_MAX_SIZE_DEFAULT, &channel_callbacks, w, &w->channel);
        if (r < 0)
                return step_failed(r, what, size, "cannot open its channel");
        r = sd_event_add_child_pidfd(m->event, &w->child_source, w->pidfd, WEXITED, on_child_exit, w);
        if (r < 0)
                return step_failed(r, what, size, "cannot watch its pidfd");
        (void) sd_event_source_set_child_pidfd_own(w->child_source, false);
        r = sd_event_add_io(m->event, &w->exec_error_source, w->exec_error_fd, EPOLLIN, on_exec_error, w);
        if (r < 0)
                return step_failed(r, what, size, "cannot watch its exec-error pipe");
        r = manager_add_worker(m, w);
        if (r < 0)
                return step_failed(r, what, size, "cannot track it");
        return 0;
}

int pool_spawn(Manager *m, const char *reason) {
        _cleanup_close_ int cgroup_fd = -EBADF, ours = -EBADF, theirs = -EBADF;
        char what[PATH_MAX + 128];
        Worker *w = NULL;
        int r;

        r = pool_spawn_throttle(m);
        if (r < 0)
                return r;
        r = worker_new(m, m->next_worker_id, &w);
        if (r < 0)
                return log_oom();
        /* the name is spent even when the spawn fails: a leaf of that name may still be on its way out */
        m->next_worker_id++;
        r = prepare_birth(m, w, &ours, &theirs, &cgroup_fd, what, sizeof what);
        if (r < 0)
                goto fail;
        r = start_child(m, w, theirs, cgroup_fd, what, sizeof what);
        if (r < 0)
                goto fail;
        r = watch_child(m, w, TAKE_FD(ours), what, sizeof what);
        if (r < 0) {
                /* the child is parked or exec'ing and must not run unwatched: kill it and reap it
                 * synchronously, nothing else will */
                (void) worker_signal(w, SIGKILL);
                (void) waitid(P_PIDFD, (id_t) w->pidfd, NULL, WEXITED);
                goto fail;
        }
        arm_timer(m, w, m->config.spawn_timeout, on_spawn_timeout);
        log_struct(LOG_INFO, LOG_FIELDS(.message_id = MESSAGE_ID_SPAWN, .event = "spawn", .worker = (int) w->id),
                   "Spawned worker %s (pid %d%s%s): %s", WORKER_NAME(w), (int) w->pid, w->cgroup_path ? ", cgroup " : "",
                   strempty(w->cgroup_path), reason);

        r = m->backend->vtable->attach(m->backend, w);
        if (r < 0) {
                log_error_errno(r, "Failed to place worker %s: %m", WORKER_NAME(w));
                set_state(w, WORKER_STOPPING);
                (void) worker_signal(w, SIGKILL);
                /* its death arrives through the pidfd and removes it */
        }
        return 0;

fail:
        birth_failed(m, w, what);
        if (w->socket_path)
                (void) unlink(w->socket_path);
        if (w->cgroup_path)
                m->backend->vtable->release(m->backend, w);
        worker_free(w);
        return r;
}

void pool_attach_done(Worker *w, int error) {
        Manager *m = w->manager;
        int r;

        if (error < 0) {
                char what[256];
                snprintf(what, sizeof what, "placement failed: %s", strerror(-error));
                spawn_failed(m, w, what);
                set_state(w, WORKER_STOPPING);
                (void) worker_signal(w, SIGKILL);
                return;
        }
        r = spawn_release(&w->release_fd);
        if (r < 0)
                log_warning_errno(r, "Failed to release %s to exec: %m", WORKER_NAME(w));
}

/* ---- ready: Hello, then the socket accepts ---- */

static int on_worker_stable(sd_event_source *s, uint64_t usec, void *userdata) {
        Worker *w = userdata;
        Manager *m = w->manager;
        char span[32];

        w->stable_timer = sd_event_source_disable_unref(w->stable_timer);
        if (m->spawn_failures > 0)
                log_info("%s stayed up %s after it became routable: the spawn throttle forgets %u failures",
                         WORKER_NAME(w), format_timespan(span, sizeof span, stable_period(m)),
                         m->spawn_failures);
        m->spawn_failures = 0;
        return 0;
}

/* The throttle's count starts over once w has been routable for the stable period, not at once. */
static void arm_stable_timer(Manager *m, Worker *w) {
        int r;

        w->stable_timer = sd_event_source_disable_unref(w->stable_timer);
        r = sd_event_add_time_relative(m->event, &w->stable_timer, CLOCK_MONOTONIC, stable_period(m),
                                       100 * USEC_PER_MSEC, on_worker_stable, w);
        if (r >= 0)
                return;
        log_warning_errno(r, "Failed to arm the stable-period timer of %s (%m); counting it as started now",
                          WORKER_NAME(w));
        m->spawn_failures = 0;
}

static void become_routable(Manager *m, Worker *w) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        char total[32], hello[32];

        set_state(w, WORKER_ROUTABLE);
        w->routable_at = now;
        m->pool_changed_at = now;
        w->timer = sd_event_source_disable_unref(w->timer);
        w->probe_timer = sd_event_source_disable_unref(w->probe_timer);
        w->probe_fd = safe_close(w->probe_fd);
        arm_stable_timer(m, w);
        if (!m->reception)
                m->reception = w;
        w->reception = m->reception == w;
        log_struct(LOG_INFO, LOG_FIELDS(.message_id = MESSAGE_ID_READY, .event = "ready", .worker = (int) w->id),
                   "Worker %s is routable %s after its spawn (Hello after %s)%s", WORKER_NAME(w),
                   format_timespan(total, sizeof total, now - w->spawned_at),
                   format_timespan(hello, sizeof hello, w->hello_at - w->spawned_at),
                   w->reception ? "; it is the reception" : "");
        if (m->on_worker_routable)
                m->on_worker_routable(m, w);
        manager_maybe_ready(m);
        manager_check_capacity(m);
        manager_write_status(m);
}

static int connect_probe(Worker *w) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        strcpy(sa.sun_path, w->socket_path);
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return -errno;
        w->probe_fd = TAKE_FD(fd);
        return 0;
}

/* The probe connection sits in the accept queue until the worker takes it; sock_diag shows when. */
static int on_probe_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Worker *w = userdata;
        Manager *m = w->manager;
        uint32_t queued = 0;
        int r;

        r = sock_diag_unix_backlog(m->sock_diag, w->socket_ino, &queued, NULL);
        if (r < 0) {
                log_warning_errno(r, "sock_diag of %s failed (%m); calling it routable on its Hello alone",
                                  WORKER_NAME(w));
                become_routable(m, w);
                return 0;
        }
        if (queued == 0) {
                become_routable(m, w);
                return 0;
        }
        uint64_t step = MIN((usec - w->hello_at) * 2 + USEC_PER_MSEC, PROBE_INTERVAL_MAX);
        (void) sd_event_source_set_time_relative(s, step);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

static void start_probe(Manager *m, Worker *w) {
        int r;

        set_state(w, WORKER_PROBING);
        if (!m->sock_diag) {
                become_routable(m, w);
                return;
        }
        r = connect_probe(w);
        if (r < 0) {
                log_warning_errno(r, "Failed to connect to %s's socket %s: %m", WORKER_NAME(w), w->socket_path);
                return; /* the spawn timeout decides */
        }
        /* accuracy 1us: 0 would mean sd-event's default of 250ms, far coarser than a worker's start */
        r = sd_event_add_time_relative(m->event, &w->probe_timer, CLOCK_MONOTONIC, 0, 1, on_probe_timer, w);
        if (r < 0)
                become_routable(m, w);
}

static void on_hello(Manager *m, Worker *w, const ElasticPool__Hello *h) {
        if (!h->has_protocol_version || h->protocol_version != EP_PROTOCOL_VERSION) {
                char reason[96];
                snprintf(reason, sizeof reason, "it speaks channel protocol %u, we speak %u",
                         h->has_protocol_version ? h->protocol_version : 0, EP_PROTOCOL_VERSION);
                log_warning("Worker %s: %s; closing its channel", WORKER_NAME(w), reason);
                /* we are inside this channel's own frame callback: channel_free() allows that */
                w->channel = channel_free(w->channel);
                free(w->channel_close_reason);
                w->channel_close_reason = strdup(reason);
                w->channel_closed_at = now_usec(CLOCK_MONOTONIC);
                m->summary.valid = false;
                return;
        }
        free(w->sensor_version);
        w->sensor_version = h->sensor_version ? strdup(h->sensor_version) : NULL;
        w->sensor_protocol = h->protocol_version;
        usec_t interval = h->has_interval_usec ? MIN(h->interval_usec, SENSOR_INTERVAL_MAX) : 0;
        if (interval != w->sensor_interval)
                m->summary.valid = false; /* its stale horizon changed */
        w->sensor_interval = interval;
        w->capabilities = 0;
        for (size_t i = 0; i < h->n_capabilities; i++)
                if (h->capabilities[i] > 0 && h->capabilities[i] < 32)
                        w->capabilities |= 1U << h->capabilities[i];
        if (w->state != WORKER_STARTING)
                return; /* a sensor that reconnected says Hello again */
        w->hello_at = now_usec(CLOCK_MONOTONIC);
        log_debug("%s said Hello (sensor %s, pid %d)", WORKER_NAME(w), strna(w->sensor_version),
                  h->has_pid ? h->pid : 0);
        start_probe(m, w);
}

static void on_report(Manager *m, Worker *w, const ElasticPool__OccupancyReport *r) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        unsigned missing;
        Row row;

        /* this worker's share of the pool summary changes with its reading: take it out, put it back */
        manager_summary_forget(m, w);
        row_from_report(&row, r, now);
        if (m->frontend)
                frontend_fill_row(m->frontend, w, &row);
        window_push(&w->window, &row);
        w->last_report_at = now;
        m->reports_received++;

        evaluator_evaluate(&w->window, &m->evaluator, &w->occupancy);
        missing = evaluator_missing_components(&w->window, &m->evaluator);
        if (missing != 0 && w->missing_mask == 0)
                w->not_fresh_since = now;
        if (missing != w->missing_mask) {
                size_t n = 0;
                w->missing_names[0] = 0;
                for (Component c = 0; c < _COMPONENT_MAX; c++)
                        if (missing & (1U << c))
                                n += (size_t) snprintf(w->missing_names + n, sizeof w->missing_names - n, "%s%s",
                                                       n > 0 ? "," : "", component_to_string(c));
        }
        w->missing_mask = missing;
        manager_summary_account(m, w, now);

        if (w->state == WORKER_ROUTABLE || w->state == WORKER_DRAINING)
                manager_check_capacity(m);
}

static void on_channel_frame(Channel *c, const Frame *f, void *userdata) {
        pool_handle_frame(userdata, f);
}

void pool_handle_frame(Worker *w, const Frame *f) {
        Manager *m = w->manager;

        switch (f->body_case) {
        case ELASTIC_POOL__FRAME__BODY_HELLO:
                on_hello(m, w, f->hello);
                break;
        case ELASTIC_POOL__FRAME__BODY_REPORT:
                on_report(m, w, f->report);
                break;
        case ELASTIC_POOL__FRAME__BODY_GOODBYE:
                log_info("%s says goodbye: %s", WORKER_NAME(w), strna(f->goodbye->reason));
                break;
        case ELASTIC_POOL__FRAME__BODY_PACKAGE:
        case ELASTIC_POOL__FRAME__BODY_INSTALL_RESULT:
                if (m->on_move_frame)
                        m->on_move_frame(m, w, f);
                break;
        default:
                /* commander-bound frames only; anything else means a confused peer */
                log_warning("%s sent a %s frame, which only the commander sends; ignoring", WORKER_NAME(w),
                            frame_body_name(f));
                break;
        }
}

static void on_channel_close(Channel *c, int error, const char *reason, void *userdata) {
        Worker *w = userdata;
        Manager *m = w->manager;

        w->channel_closed_at = now_usec(CLOCK_MONOTONIC);
        m->summary.valid = false;
        free(w->channel_close_reason);
        w->channel_close_reason = strdup(reason);
        if (w->state == WORKER_STOPPING || w->state == WORKER_DEAD || m->stopping || w->exec_failed) {
                log_debug("Channel of %s closed: %s", WORKER_NAME(w), reason);
                return;
        }
        log_struct_errno(error < 0 ? LOG_WARNING : LOG_NOTICE, error,
                         LOG_FIELDS(.message_id = MESSAGE_ID_CHANNEL_CLOSED, .event = "channel-closed",
                                    .worker = (int) w->id),
                         "Closed the channel of %s: %s; decisions that depend on its readings are held",
                         WORKER_NAME(w), reason);
}

/* ---- retire, stop, death ---- */

static int on_kill_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Worker *w = userdata;
        char span[32];

        w->timer = sd_event_source_disable_unref(w->timer);
        log_warning("%s did not exit within stop_timeout=%s of SIGTERM; sending SIGKILL", WORKER_NAME(w),
                    format_timespan(span, sizeof span, w->manager->config.stop_timeout));
        (void) worker_signal(w, SIGKILL);
        return 0;
}

void pool_stop_worker(Manager *m, Worker *w, const char *why) {
        int r;

        if (w->state == WORKER_DEAD)
                return;
        if (w->state == WORKER_STOPPING && w->stop_started_at > 0)
                return;
        set_state(w, WORKER_STOPPING);
        w->stop_started_at = now_usec(CLOCK_MONOTONIC);
        /* it left the policies' world now, not at its death: the next compaction waits for the survivors'
         * windows to see its load, or a report between SIGTERM and death could retire one more */
        if (w->routable_at > 0)
                m->pool_changed_at = w->stop_started_at;
        if (!w->stop_reason)
                w->stop_reason = strdup(why);
        /* a parked child never ran the command: nothing to be graceful about */
        if (w->release_fd >= 0) {
                w->release_fd = safe_close(w->release_fd);
                (void) worker_signal(w, SIGKILL);
                return;
        }
        r = worker_signal(w, SIGTERM);
        if (r < 0 && r != -ESRCH)
                log_warning_errno(r, "Failed to send SIGTERM to %s: %m", WORKER_NAME(w));
        arm_timer(m, w, m->config.stop_timeout, on_kill_timer);
}

static int on_drain_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Worker *w = userdata;
        char span[32];

        w->timer = sd_event_source_disable_unref(w->timer);
        log_warning("%s still had %u requests after drain_timeout=%s; stopping it anyway", WORKER_NAME(w),
                    w->inflight, format_timespan(span, sizeof span, w->manager->config.drain_timeout));
        pool_stop_worker(w->manager, w, "drain timeout");
        return 0;
}

void manager_retire_worker(Manager *m, Worker *w, const char *why) {
        ElasticPool__Drain drain = ELASTIC_POOL__DRAIN__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;

        if (w->state != WORKER_ROUTABLE && w->state != WORKER_PROBING && w->state != WORKER_STARTING)
                return;
        if (w->state != WORKER_ROUTABLE) {
                pool_stop_worker(m, w, why);
                return;
        }
        set_state(w, WORKER_DRAINING);
        free(w->stop_reason);
        w->stop_reason = strdup(why);
        if (m->reception == w)
                manager_pick_reception(m);
        log_struct(LOG_INFO, LOG_FIELDS(.message_id = MESSAGE_ID_RETIRE, .event = "retire", .worker = (int) w->id,
                                        .has_occupancy = true, .occupancy = w->occupancy.value),
                   "Retiring %s (%s): no new requests; %u in flight get drain_timeout to finish", WORKER_NAME(w), why,
                   w->inflight);
        drain.has_deadline_usec = true;
        drain.deadline_usec = now_usec(CLOCK_MONOTONIC) + m->config.drain_timeout;
        drain.reason = (char *) why;
        f.body_case = ELASTIC_POOL__FRAME__BODY_DRAIN;
        f.drain = &drain;
        (void) channel_send(w->channel, &f);
        if (m->on_worker_draining)
                m->on_worker_draining(m, w);
        if (w->inflight == 0) {
                pool_stop_worker(m, w, why);
                return;
        }
        arm_timer(m, w, m->config.drain_timeout, on_drain_timeout);
}

void manager_worker_drained(Manager *m, Worker *w) {
        if (w->state == WORKER_DRAINING && w->inflight == 0)
                pool_stop_worker(m, w, w->stop_reason ? w->stop_reason : "drained");
}

/* Describes the death into buf; true when the kernel's OOM killer did it. */
static bool describe_death(Manager *m, Worker *w, const siginfo_t *si, char *buf, size_t size) {
        uint64_t oom = 0;

        if (m->backend->vtable->oom_kills(m->backend, w, &oom) >= 0 && oom > w->oom_kills_at_start) {
                snprintf(buf, size, "killed by the kernel OOM killer (memory.events oom_kill=%llu, signal %s)",
                         (unsigned long long) oom, strna(sigabbrev_np(si->si_status)));
                return true;
        }
        switch (si->si_code) {
        case CLD_EXITED:
                snprintf(buf, size, "exited with status %d", si->si_status);
                break;
        case CLD_KILLED:
                snprintf(buf, size, "killed by signal SIG%s", strna(sigabbrev_np(si->si_status)));
                break;
        case CLD_DUMPED:
                snprintf(buf, size, "killed by signal SIG%s (core dumped)", strna(sigabbrev_np(si->si_status)));
                break;
        default:
                snprintf(buf, size, "ended (si_code %d, status %d)", si->si_code, si->si_status);
        }
        return false;
}

/* SIGKILL or SIGTERM, and not from the OOM killer: someone outside ended a running worker (an operator, a
 * test, a deployment tool). That says nothing of whether the worker can start. */
static bool killed_from_outside(const siginfo_t *si, bool oom) {
        return !oom && si->si_code == CLD_KILLED && (si->si_status == SIGKILL || si->si_status == SIGTERM);
}

/* A death we did not ask for, before the worker became routable or within the stable period after, is a
 * failed spawn: a crash loop. One we asked for, one already counted (exec failed, spawn timeout), or, once
 * routable, a kill from outside, is not: five kill -9 of fresh workers must not stop the pool spawning. */
static void count_early_death(Manager *m, Worker *w, const siginfo_t *si, bool oom, const char *cause,
                              bool expected) {
        char what[384], up[32], period[32];
        usec_t lived;

        if (expected || w->stop_reason || w->exec_failed)
                return;
        if (w->routable_at == 0) {
                snprintf(what, sizeof what, "%.250s before it became routable", cause);
                spawn_failed(m, w, what);
                return;
        }
        if (killed_from_outside(si, oom))
                return;
        lived = now_usec(CLOCK_MONOTONIC) - w->routable_at;
        if (lived >= stable_period(m))
                return;
        format_timespan(up, sizeof up, lived);
        format_timespan(period, sizeof period, stable_period(m));
        snprintf(what, sizeof what, "%.250s %s after it became routable (a worker must stay up %s)", cause, up,
                 period);
        spawn_failed(m, w, what);
}

static int on_child_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        Worker *w = userdata;
        Manager *m = w->manager;
        bool expected = w->state == WORKER_STOPPING || m->stopping;
        char cause[256], why[160] = "";
        bool oom;

        /* the pidfd and the exec-error pipe race: an exec failure must be read before the death */
        check_exec_error(m, w);
        oom = describe_death(m, w, si, cause, sizeof cause);
        m->deaths++;
        if (w->exec_failed)
                snprintf(why, sizeof why, " (its command could not be executed)");
        else if (w->stop_reason)
                snprintf(why, sizeof why, " (stopped: %.120s)", w->stop_reason);
        log_struct(expected ? LOG_INFO : LOG_WARNING,
                   LOG_FIELDS(.message_id = MESSAGE_ID_DEATH, .event = "death", .worker = (int) w->id),
                   "Worker %s (pid %d) %s%s", WORKER_NAME(w), (int) w->pid, cause, why);
        count_early_death(m, w, si, oom, cause, expected);
        worker_dead(m, w);
        return 0;
}

static void worker_dead(Manager *m, Worker *w) {
        if (w->routable_at > 0)
                m->pool_changed_at = now_usec(CLOCK_MONOTONIC);
        set_state(w, WORKER_DEAD);
        w->child_source = sd_event_source_disable_unref(w->child_source);
        w->timer = sd_event_source_disable_unref(w->timer);
        w->probe_timer = sd_event_source_disable_unref(w->probe_timer);
        w->stable_timer = sd_event_source_disable_unref(w->stable_timer);
        w->channel = channel_free(w->channel);
        if (w->socket_path)
                (void) unlink(w->socket_path);
        m->backend->vtable->release(m->backend, w);
        if (m->on_worker_gone)
                m->on_worker_gone(m, w);
        manager_remove_worker(m, w);
        worker_free(w);

        if (m->stopping) {
                if (m->n_workers == 0)
                        (void) sd_event_exit(m->event, m->exit_code);
                return;
        }
        manager_check_capacity(m);
        manager_write_status(m);
}
