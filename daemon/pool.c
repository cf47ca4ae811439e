/* SPDX-License-Identifier: MIT */
#include "pool-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "config-worker.h"
#include "fd-util.h"
#include "journal-ids.h"
#include "log.h"
#include "macro.h"
#include "spawn.h"

/* The accept probe looks again after 1 ms, doubling up to this. */
#define PROBE_INTERVAL_MAX (50 * USEC_PER_MSEC)
#define LISTEN_BACKLOG 4096

static void worker_dead(Pool *p, Worker *w);

void pool_changed(Pool *p) {
        p->generation++;
}

void pool_set_state(Worker *w, WorkerState state) {
        w->state = state;
        pool_changed(w->pool);
}

void pool_freshness_input(const Pool *p, const Worker *w, FreshnessInput *ret) {
        *ret = (FreshnessInput) {
                .channel_open = channel_is_open(w->channel),
                .channel_closed_at = w->channel_closed_at,
                .born = w->routable_at > 0 ? w->routable_at : w->spawned_at,
                .horizon = evaluator_stale_horizon(p->config->occupancy_interval, w->sensor_interval,
                                                   p->config->stale_after),
        };
}

/* ---- the workers of the group ---- */

int pool_add_worker(Pool *p, Worker *w) {
        Worker **a = reallocarray(p->workers, p->n_workers + 1, sizeof *a);
        size_t i;

        if (!a)
                return -ENOMEM;
        p->workers = a;
        for (i = p->n_workers; i > 0 && a[i - 1]->id > w->id; i--)
                a[i] = a[i - 1];
        a[i] = w;
        p->n_workers++;
        pool_changed(p);
        return 0;
}

void pool_remove_worker(Pool *p, Worker *w) {
        for (size_t i = 0; i < p->n_workers; i++) {
                if (p->workers[i] != w)
                        continue;
                memmove(p->workers + i, p->workers + i + 1, (p->n_workers - i - 1) * sizeof *p->workers);
                p->n_workers--;
                break;
        }
        pool_changed(p);
        if (p->reception == w)
                pool_pick_reception(p);
}

Worker *pool_get_worker(Pool *p, unsigned id) {
        size_t lo = 0, hi = p->n_workers;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (p->workers[mid]->id == id)
                        return p->workers[mid];
                if (p->workers[mid]->id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

void pool_pick_reception(Pool *p) {
        Worker *old = p->reception;

        pool_changed(p);
        p->reception = NULL;
        /* a worker whose users are moving off, or one a rolling reload replaces, is the last choice */
        for (int pass = 0; pass < 2 && !p->reception; pass++)
                for (size_t i = 0; i < p->n_workers && !p->reception; i++) {
                        Worker *w = p->workers[i];
                        if (w != old && worker_is_routable(w) &&
                            (pass > 0 || (!w->evacuating && !worker_outdated(w) && !w->unhealthy)))
                                p->reception = w;
                }
        /* taken out of new work with nobody to pass to: it stays the reception rather than none (guests
         * would get 503 even after it answers again) */
        if (!p->reception && old && old->unhealthy && worker_is_routable(old)) {
                p->reception = old;
                return;
        }
        if (p->reception)
                log_info("%s is now the reception", WORKER_NAME(p->reception));
}

unsigned pool_routable(const Pool *p) {
        unsigned n = 0;

        for (size_t i = 0; i < p->n_workers; i++)
                n += worker_is_routable(p->workers[i]);
        return n;
}

static void arm_timer(Pool *p, Worker *w, usec_t delay, sd_event_time_handler_t handler) {
        int r;

        w->timer = sd_event_source_disable_unref(w->timer);
        r = sd_event_add_time_relative(p->event, &w->timer, CLOCK_MONOTONIC, delay, USEC_PER_MSEC, handler, w);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the timer of %s: %m", WORKER_NAME(w));
}

static void spawn_failed(Pool *p, Worker *w, const char *what) {
        p->spawn_failures++;
        spawn_throttle_failed(&p->throttle, w->id, what, p->config->path, now_usec(CLOCK_MONOTONIC));
}

/* Fills what with "<step>: <error>" for the throttle's message; returns error. */
static int step_failed(int error, char *what, size_t size, const char *step) {
        snprintf(what, size, "%s: %s", step, strerror(-error));
        return error;
}

/* ---- birth ---- */

static int make_listen_socket(Pool *p, Worker *w) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (asprintf(&w->socket_path, "%s/w%u.sock", p->runtime_dir, w->id) < 0)
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

static void on_channel_throttled(Channel *c, int body_case, unsigned per_second, void *userdata) {
        Worker *w = userdata;

        log_warning("%s sends %s frames faster than %u a second: the excess is dropped unread", WORKER_NAME(w),
                    frame_body_case_name(body_case), per_second);
}

/* Mostly a report (every interval, from each of up to thousands of workers): w's state is fetched while
 * the frame is read and decoded (its window's slots once the report is decoded: on_report()). */
static void on_channel_readable(Channel *c, void *userdata) {
        Worker *w = userdata;

        worker_prefetch_report(w);
}

static const ChannelCallbacks channel_callbacks = {
        .on_frame = on_channel_frame,
        .on_close = on_channel_close,
        .on_throttled = on_channel_throttled,
        .on_readable = on_channel_readable,
};

/* The group's variables (environment_file's, overridden by environment=), then the worker's own, which
 * the configuration cannot name (config_env_check() refuses them). */
static char **worker_env(Pool *p, Worker *w) {
        char **env = NULL, **t;
        size_t n, first;

        if (config_worker_environment(p->config, &env) < 0)
                return NULL;
        first = n = config_env_length(env);
        t = reallocarray(env, n + 10, sizeof(char *));
        if (!t)
                return config_env_free(env);
        env = t;
        env[n++] = spawn_env("LISTEN_FDS", "1");
        env[n++] = spawn_env("LISTEN_FDNAMES", "http");
        env[n++] = spawn_env("ELASTIC_POOL_CHANNEL_FD", "%d", SPAWN_CHANNEL_FD);
        env[n++] = spawn_env("ELASTIC_POOL_GROUP", "%s", p->group);
        env[n++] = spawn_env("ELASTIC_POOL_WORKER", "%u", w->id);
        env[n++] = spawn_env("ELASTIC_POOL_INTERVAL", "%lluus", (unsigned long long) p->config->occupancy_interval);
        /* the burst path: its sensor reports a crossing of burst_queue by the executor queue at once */
        if (p->config->burst_window > 0)
                env[n++] = spawn_env("ELASTIC_POOL_BURST_QUEUE", "%u", p->config->burst_queue);
        /* where its sensor finds us again when the channel breaks, or after our restart */
        if (p->channel_listener)
                env[n++] = spawn_env("ELASTIC_POOL_CHANNEL", "%s", channel_listener_path(p->channel_listener));
        env[n] = NULL;
        for (size_t i = first; i < n; i++)
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

void pool_describe_spawn_error(const Pool *p, const SpawnError *e, char *what, size_t size) {
        const Config *c = p->config;
        const ConfigIdentity *id = &c->identity;

        switch (e->step) {
        case SPAWN_STEP_EXEC:
                /* the whole command line: which of several configured commands, and with which arguments */
                snprintf(what, size, "cannot execute '%.400s': %s", c->exec_line, strerror(e->error));
                break;
        case SPAWN_STEP_CGROUP:
                snprintf(what, size, "cannot move itself into its cgroup: %s", strerror(e->error));
                break;
        case SPAWN_STEP_FDS:
                snprintf(what, size, "cannot take its listening socket and channel as fds 3 and 4: %s",
                         strerror(e->error));
                break;
        case SPAWN_STEP_SETGROUPS:
                snprintf(what, size, "cannot take the %zu supplementary groups of user '%s': %s",
                         id->n_groups, strna(id->user_name), strerror(e->error));
                break;
        case SPAWN_STEP_SETGID:
                snprintf(what, size, "cannot switch to group '%s' (gid %u): %s", strna(id->group_name),
                         (unsigned) id->gid, strerror(e->error));
                break;
        case SPAWN_STEP_SETUID:
                snprintf(what, size, "cannot switch to user '%s' (uid %u): %s", strna(id->user_name),
                         (unsigned) id->uid, strerror(e->error));
                break;
        case SPAWN_STEP_CHDIR:
                snprintf(what, size, "cannot change into working_directory '%.400s': %s",
                         strna(c->working_directory), strerror(e->error));
                break;
        default:
                snprintf(what, size, "failed before exec, its report unreadable: %s", strerror(e->error));
                break;
        }
}

/* Reads what the close-on-exec pipe says: nothing yet, exec succeeded (EOF), or the step that failed on
 * the way (its errno). The configuration named is the one of the spawn unless a reload came in the few
 * milliseconds between. */
static void check_exec_error(Pool *p, Worker *w) {
        SpawnError e = {};
        char what[640];
        int r;

        if (w->exec_error_fd < 0)
                return;
        r = spawn_read_exec_error(w->exec_error_fd, &e);
        if (r == -EAGAIN)
                return;
        w->exec_error_source = sd_event_source_disable_unref(w->exec_error_source);
        w->exec_error_fd = safe_close(w->exec_error_fd);
        if (r == 0) {
                log_debug("%s (pid %d) executed %s", WORKER_NAME(w), (int) w->pid, p->config->exec_line);
                return;
        }
        if (r < 0)
                return;
        pool_describe_spawn_error(p, &e, what, sizeof what);
        /* the child exits 127 right after this; its death is then not a second failure */
        w->exec_failed = true;
        spawn_failed(p, w, what);
}

static int on_exec_error(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Worker *w = userdata;

        check_exec_error(w->pool, w);
        return 0;
}

static int on_spawn_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Worker *w = userdata;
        Pool *p = w->pool;
        char span[32], what[256];

        w->timer = sd_event_source_disable_unref(w->timer);
        if (w->state != WORKER_STARTING && w->state != WORKER_PROBING)
                return 0;
        format_timespan(span, sizeof span, p->config->spawn_timeout);
        snprintf(what, sizeof what, "%s within spawn_timeout=%s; killed it",
                 w->state == WORKER_STARTING ? "no Hello on its channel" : "its socket did not accept", span);
        free(w->stop_reason);
        w->stop_reason = strdup("spawn timeout");
        spawn_failed(p, w, what);
        pool_set_state(w, WORKER_STOPPING);
        (void) worker_signal(w, SIGKILL);
        return 0;
}

static int on_child_exit(sd_event_source *s, const siginfo_t *si, void *userdata);

/* Everything a worker needs before its process exists: its window, listening socket, channel and
 * placement. On failure, what names the step. */
static int prepare_birth(Pool *p, Worker *w, int *ret_ours, int *ret_theirs, int *ret_cgroup_fd,
                         char *what, size_t size) {
        char step[PATH_MAX + 64];
        int sv[2], r;

        r = window_init(&w->window, p->config->window_rows);
        if (r < 0)
                return step_failed(r, what, size, "cannot allocate its window");
        r = make_listen_socket(p, w);
        if (r < 0) {
                snprintf(step, sizeof step, "cannot create its listening socket %s", strna(w->socket_path));
                return step_failed(r, what, size, step);
        }
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return step_failed(-errno, what, size, "cannot create its channel socketpair");
        *ret_ours = sv[0], *ret_theirs = sv[1];
        r = p->backend->vtable->prepare(p->backend, w, ret_cgroup_fd);
        if (r < 0)
                return step_failed(r, what, size, "the placement backend cannot prepare it");
        return 0;
}

/* A worker that runs as another user must still reach channel.sock, where its sensor reconnects after
 * our restart: connect() needs write permission on the socket file. It is opened to every user: the
 * peer check admits only processes of the group's workers whatever the mode, and one mode serves both
 * generations of a rolling reload that changes user= (a socket given to one user would lock the other
 * out). The workers' own sockets stay ours, mode 0600: the worker accepts on the fd it inherited, which
 * needs no permission on the path, and only the commander connects to it; a socket its user could
 * connect to would let every process of that user around the front end. */
static void open_channel_to(Pool *p, uid_t uid) {
        int r;

        if (!p->channel_listener || uid == geteuid())
                return;
        r = channel_listener_open_to_all(p->channel_listener);
        if (r < 0)
                log_warning_errno(r, "Failed to open %s to workers of uid %u (they cannot reconnect after a "
                                     "restart): %m",
                                  channel_listener_path(p->channel_listener), (unsigned) uid);
}

/* clone3() (or fork()) into the prepared place; the child waits parked (scope) or goes on to exec. */
static int start_child(Pool *p, Worker *w, int theirs, int cgroup_fd, char *what, size_t size) {
        const ConfigIdentity *id = &p->config->identity;
        /* only root switches; a commander that is not root could only name its own ids (config) */
        bool switch_ids = id->set && geteuid() == 0;
        char **env;
        SpawnResult res;
        int r;

        env = worker_env(p, w);
        if (!env)
                return step_failed(-ENOMEM, what, size, "cannot build its environment");
        if (switch_ids)
                open_channel_to(p, id->uid);
        SpawnRequest req = {
                .argv = p->config->exec,
                .env = env,
                .listen_fd = w->listen_fd,
                .channel_fd = theirs,
                .cgroup_fd = cgroup_fd,
                .park = p->backend->vtable->kind == BACKEND_SCOPE,
                /* scopes and leaves outlive us for the next commander to take back (readopt); plain
                 * processes cannot be told from others after us, so they die with us */
                .death_signal = p->config->readopt && p->backend->vtable->kind != BACKEND_NONE ? 0 : SIGKILL,
                .nofile_soft = fd_nofile_original_soft(),
                .working_directory = p->config->working_directory,
                .set_identity = switch_ids,
                .uid = id->uid,
                .gid = id->gid,
                .groups = id->groups,
                .n_groups = id->n_groups,
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
        p->spawns++;
        if (res.used_fork && !p->warned_fork) {
                p->warned_fork = true;
                log_notice("clone3() is not available here (ENOSYS): workers start with fork() and "
                           "pidfd_open(), and move into their cgroup themselves before exec");
        } else if (!res.into_cgroup && cgroup_fd >= 0)
                log_notice("CLONE_INTO_CGROUP refused for w%u; the child moved itself into %s before exec", w->id,
                           strna(w->place.cgroup_path));
        return 0;
}

/* The child exists: its channel (which takes ours, also on failure), its death through the pidfd,
 * exec's errno through the pipe. */
static int watch_child(Pool *p, Worker *w, int ours, char *what, size_t size) {
        int r;

        r = channel_new(p->event, ours, FRAME_MAX_SIZE_DEFAULT, &channel_callbacks, w, &w->channel);
        if (r < 0)
                return step_failed(r, what, size, "cannot open its channel");
        channel_set_limits(w->channel, &channel_worker_limits);
        r = sd_event_add_child_pidfd(p->event, &w->child_source, w->pidfd, WEXITED, on_child_exit, w);
        if (r < 0)
                return step_failed(r, what, size, "cannot watch its pidfd");
        (void) sd_event_source_set_child_pidfd_own(w->child_source, false);
        r = sd_event_add_io(p->event, &w->exec_error_source, w->exec_error_fd, EPOLLIN, on_exec_error, w);
        if (r < 0)
                return step_failed(r, what, size, "cannot watch its exec-error pipe");
        r = pool_add_worker(p, w);
        if (r < 0)
                return step_failed(r, what, size, "cannot track it");
        return 0;
}

int pool_spawn(Pool *p, const char *reason) {
        _cleanup_close_ int cgroup_fd = -EBADF, ours = -EBADF, theirs = -EBADF;
        char what[PATH_MAX + 128];
        Worker *w = NULL;
        int r;

        r = spawn_throttle_check(&p->throttle, now_usec(CLOCK_MONOTONIC));
        if (r < 0)
                return r;
        r = worker_new(p, p->next_worker_id, &w);
        if (r < 0)
                return log_oom();
        /* the name is spent even when the spawn fails: a leaf of that name may still be on its way out */
        p->next_worker_id++;
        w->exec_generation = p->exec_generation;
        r = prepare_birth(p, w, &ours, &theirs, &cgroup_fd, what, sizeof what);
        if (r < 0)
                goto fail;
        r = start_child(p, w, theirs, cgroup_fd, what, sizeof what);
        if (r < 0)
                goto fail;
        r = watch_child(p, w, TAKE_FD(ours), what, sizeof what);
        if (r < 0) {
                /* the child is parked or exec'ing and must not run unwatched: kill it and reap it
                 * synchronously, nothing else will */
                (void) worker_signal(w, SIGKILL);
                (void) waitid(P_PIDFD, (id_t) w->pidfd, NULL, WEXITED);
                goto fail;
        }
        arm_timer(p, w, p->config->spawn_timeout, on_spawn_timeout);
        log_struct(LOG_INFO, LOG_FIELDS(.message_id = MESSAGE_ID_SPAWN, .event = "spawn", .worker = (int) w->id),
                   "Spawned worker %s (pid %d%s%s): %s", WORKER_NAME(w), (int) w->pid,
                   w->place.cgroup_path ? ", cgroup " : "", strempty(w->place.cgroup_path), reason);

        r = p->backend->vtable->attach(p->backend, w);
        if (r < 0) {
                log_error_errno(r, "Failed to place worker %s: %m", WORKER_NAME(w));
                pool_set_state(w, WORKER_STOPPING);
                (void) worker_signal(w, SIGKILL);
                /* its death arrives through the pidfd and removes it */
        }
        return 0;

fail:
        p->spawn_failures++;
        spawn_throttle_failed_early(&p->throttle, w->id, what, p->config->path, now_usec(CLOCK_MONOTONIC));
        if (w->socket_path)
                (void) unlink(w->socket_path);
        if (w->place.cgroup_path)
                p->backend->vtable->release(p->backend, w);
        worker_free(w);
        return r;
}

void pool_attach_done(Worker *w, int error) {
        Pool *p = w->pool;
        int r;

        if (error < 0) {
                char what[256];
                snprintf(what, sizeof what, "placement failed: %s", strerror(-error));
                spawn_failed(p, w, what);
                pool_set_state(w, WORKER_STOPPING);
                (void) worker_signal(w, SIGKILL);
                return;
        }
        r = spawn_release(&w->release_fd);
        if (r < 0)
                log_warning_errno(r, "Failed to release %s to exec: %m", WORKER_NAME(w));
}

/* ---- ready: Hello, then the socket accepts ---- */

static usec_t stable_period(const Pool *p) {
        return spawn_throttle_stable_period(p->config->spawn_timeout);
}

static int on_worker_stable(sd_event_source *s, uint64_t usec, void *userdata) {
        Worker *w = userdata;
        Pool *p = w->pool;

        w->stable_timer = sd_event_source_disable_unref(w->stable_timer);
        spawn_throttle_stable(&p->throttle, w->id, stable_period(p));
        return 0;
}

/* The throttle's count starts over once w has been routable for the stable period, not at once. */
static void arm_stable_timer(Pool *p, Worker *w) {
        int r;

        w->stable_timer = sd_event_source_disable_unref(w->stable_timer);
        r = sd_event_add_time_relative(p->event, &w->stable_timer, CLOCK_MONOTONIC, stable_period(p),
                                       100 * USEC_PER_MSEC, on_worker_stable, w);
        if (r >= 0)
                return;
        log_warning_errno(r, "Failed to arm the stable-period timer of %s (%m); counting it as started now",
                          WORKER_NAME(w));
        p->throttle.failures = 0;
}

static void become_routable(Pool *p, Worker *w) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        char total[32], hello[32];

        pool_set_state(w, WORKER_ROUTABLE);
        w->routable_at = now;
        p->changed_at = now;
        w->timer = sd_event_source_disable_unref(w->timer);
        w->probe_timer = sd_event_source_disable_unref(w->probe_timer);
        w->probe_fd = safe_close(w->probe_fd);
        arm_stable_timer(p, w);
        /* one taken out of new work stayed the reception only for want of another */
        if (!p->reception || p->reception->unhealthy)
                p->reception = w;
        log_struct(LOG_INFO, LOG_FIELDS(.message_id = MESSAGE_ID_READY, .event = "ready", .worker = (int) w->id),
                   "Worker %s is routable %s after its spawn (Hello after %s)%s", WORKER_NAME(w),
                   format_timespan(total, sizeof total, now - w->spawned_at),
                   format_timespan(hello, sizeof hello, w->hello_at - w->spawned_at),
                   p->reception == w ? "; it is the reception" : "");
        if (p->hooks->worker_routable)
                p->hooks->worker_routable(w, p->userdata);
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
        Pool *p = w->pool;
        uint32_t queued = 0;
        int r;

        r = sock_diag_unix_backlog(p->sock_diag, w->socket_ino, &queued, NULL);
        if (r < 0) {
                log_warning_errno(r, "sock_diag of %s failed (%m); calling it routable on its Hello alone",
                                  WORKER_NAME(w));
                become_routable(p, w);
                return 0;
        }
        if (queued == 0) {
                become_routable(p, w);
                return 0;
        }
        uint64_t step = MIN((usec - w->hello_at) * 2 + USEC_PER_MSEC, PROBE_INTERVAL_MAX);
        (void) sd_event_source_set_time_relative(s, step);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

static void start_probe(Pool *p, Worker *w) {
        int r;

        pool_set_state(w, WORKER_PROBING);
        if (!p->sock_diag) {
                become_routable(p, w);
                return;
        }
        r = connect_probe(w);
        if (r < 0) {
                log_warning_errno(r, "Failed to connect to %s's socket %s: %m", WORKER_NAME(w), w->socket_path);
                return; /* the spawn timeout decides */
        }
        /* accuracy 1us: 0 would mean sd-event's default of 250ms, far coarser than a worker's start */
        r = sd_event_add_time_relative(p->event, &w->probe_timer, CLOCK_MONOTONIC, 0, 1, on_probe_timer, w);
        if (r < 0)
                become_routable(p, w);
}

static void on_hello(Pool *p, Worker *w, const ElasticPool__Hello *h) {
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
                pool_changed(p);
                return;
        }
        free(w->sensor_version);
        w->sensor_version = h->sensor_version ? strdup(h->sensor_version) : NULL;
        free(w->package_format);
        w->package_format = h->package_format ? strdup(h->package_format) : NULL;
        w->sensor_protocol = h->protocol_version;
        usec_t interval = h->has_interval_usec ? MIN(h->interval_usec, EVALUATOR_SENSOR_INTERVAL_MAX) : 0;
        if (interval != w->sensor_interval)
                pool_changed(p); /* its stale horizon changed */
        w->sensor_interval = interval;
        w->capabilities = 0;
        for (size_t i = 0; i < h->n_capabilities; i++)
                if (h->capabilities[i] > 0 && h->capabilities[i] < 32)
                        w->capabilities |= 1U << h->capabilities[i];
        if (w->state != WORKER_STARTING) {
                /* a sensor that reconnected says Hello again; one that cannot list its users has said
                 * all a re-adopted worker will */
                if (w->awaiting_sensor &&
                    !(w->capabilities & (1U << ELASTIC_POOL__CAPABILITY__CAPABILITY_LIST_USERS))) {
                        log_notice("%s's sensor cannot list the users it holds (no CAPABILITY_LIST_USERS): "
                                   "users who lived there are placed anew on their next request",
                                   WORKER_NAME(w));
                        pool_adopt_settled(p, w);
                }
                return;
        }
        w->hello_at = now_usec(CLOCK_MONOTONIC);
        log_debug("%s said Hello (sensor %s, pid %d)", WORKER_NAME(w), strna(w->sensor_version),
                  h->has_pid ? h->pid : 0);
        start_probe(p, w);
}

/* The lifecycle's part of a report: when it came, and the row it makes, handed over to be archived,
 * interpreted and judged above (PoolHooks.report). */
static void on_report(Pool *p, Worker *w, const ElasticPool__OccupancyReport *r) {
        usec_t now;
        Row row;

        /* the window's slots are fetched while the row is made and the first checks run: asked for at
         * on_readable, they would wait there for w's own fields to arrive */
        window_prefetch(&w->window, p->config->smoothing_rows);
        now = now_usec(CLOCK_MONOTONIC);
        row_from_report(&row, r, now);
        w->last_report_at = now;
        p->reports_received += !row.early; /* the counter is of the reports on the grid */
        if (p->hooks->report)
                p->hooks->report(w, &row, p->userdata);
}

static void on_channel_frame(Channel *c, const Frame *f, void *userdata) {
        pool_handle_frame(userdata, f);
}

void pool_handle_frame(Worker *w, const Frame *f) {
        Pool *p = w->pool;

        switch (f->body_case) {
        case ELASTIC_POOL__FRAME__BODY_HELLO:
                on_hello(p, w, f->hello);
                break;
        case ELASTIC_POOL__FRAME__BODY_REPORT:
                on_report(p, w, f->report);
                break;
        case ELASTIC_POOL__FRAME__BODY_USERS:
                if (p->hooks->users)
                        p->hooks->users(w, f->users, p->userdata);
                if (!f->users->more && w->awaiting_sensor)
                        pool_adopt_settled(p, w);
                break;
        case ELASTIC_POOL__FRAME__BODY_GOODBYE:
                log_info("%s says goodbye: %s", WORKER_NAME(w), strna(f->goodbye->reason));
                break;
        case ELASTIC_POOL__FRAME__BODY_PACKAGE:
        case ELASTIC_POOL__FRAME__BODY_INSTALL_RESULT:
                if (p->hooks->move_frame)
                        p->hooks->move_frame(w, f, p->userdata);
                break;
        default:
                /* commander-bound frames only; anything else means a confused peer */
                log_warning("%s sent a %s frame, which only the commander sends; ignoring", WORKER_NAME(w),
                            frame_body_name(f));
                break;
        }
}

int pool_attach_channel(Pool *p, Worker *w, int fd) {
        int r;

        /* a sensor that reconnects while its old channel still looks open: the new one is the truth */
        w->channel = channel_free(w->channel);
        r = channel_new(p->event, fd, FRAME_MAX_SIZE_DEFAULT, &channel_callbacks, w, &w->channel);
        if (r < 0)
                return log_warning_errno(r, "Failed to open the reconnected channel of %s: %m", WORKER_NAME(w));
        channel_set_limits(w->channel, &channel_worker_limits);
        w->channel_closed_at = 0;
        w->channel_close_reason = mfree(w->channel_close_reason);
        pool_changed(p);
        log_info("%s's sensor reconnected on the channel socket (pid %d)%s", WORKER_NAME(w), (int) w->pid,
                 w->adopted ? "; its decision window starts empty: nothing from before the restart is judged" : "");
        return 0;
}

static void on_channel_close(Channel *c, int error, const char *reason, void *userdata) {
        Worker *w = userdata;
        Pool *p = w->pool;

        w->channel_closed_at = now_usec(CLOCK_MONOTONIC);
        pool_changed(p);
        free(w->channel_close_reason);
        w->channel_close_reason = strdup(reason);
        if (w->state == WORKER_STOPPING || w->state == WORKER_DEAD || p->stopping || w->exec_failed) {
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
                    format_timespan(span, sizeof span, w->pool->config->stop_timeout));
        (void) worker_signal(w, SIGKILL);
        return 0;
}

void pool_stop_worker(Pool *p, Worker *w, const char *why) {
        int r;

        if (w->state == WORKER_DEAD)
                return;
        if (w->state == WORKER_STOPPING && w->stop_started_at > 0)
                return;
        pool_set_state(w, WORKER_STOPPING);
        w->stop_started_at = now_usec(CLOCK_MONOTONIC);
        /* it left the policies' world now, not at its death: the next compaction waits for the survivors'
         * windows to see its load, or a report between SIGTERM and death could retire one more */
        if (w->routable_at > 0)
                p->changed_at = w->stop_started_at;
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
        arm_timer(p, w, p->config->stop_timeout, on_kill_timer);
}

/* Requests the front end has open on w: what a retire waits for. */
static unsigned inflight(const Pool *p, const Worker *w) {
        return p->hooks->inflight ? p->hooks->inflight(w, p->userdata) : 0;
}

static int on_drain_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Worker *w = userdata;
        char span[32];

        w->timer = sd_event_source_disable_unref(w->timer);
        log_warning("%s still had %u requests after drain_timeout=%s; stopping it anyway", WORKER_NAME(w),
                    inflight(w->pool, w), format_timespan(span, sizeof span, w->pool->config->drain_timeout));
        pool_stop_worker(w->pool, w, "drain timeout");
        return 0;
}

void pool_retire_worker(Pool *p, Worker *w, const char *why) {
        ElasticPool__Drain drain = ELASTIC_POOL__DRAIN__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;

        if (w->state != WORKER_ROUTABLE && w->state != WORKER_PROBING && w->state != WORKER_STARTING)
                return;
        if (w->state != WORKER_ROUTABLE) {
                pool_stop_worker(p, w, why);
                return;
        }
        pool_set_state(w, WORKER_DRAINING);
        free(w->stop_reason);
        w->stop_reason = strdup(why);
        if (p->reception == w)
                pool_pick_reception(p);
        log_struct(LOG_INFO, LOG_FIELDS(.message_id = MESSAGE_ID_RETIRE, .event = "retire", .worker = (int) w->id,
                                        .has_occupancy = true, .occupancy = w->reading.occupancy.value),
                   "Retiring %s (%s): no new requests; %u in flight get drain_timeout to finish", WORKER_NAME(w), why,
                   inflight(p, w));
        drain.has_deadline_usec = true;
        drain.deadline_usec = now_usec(CLOCK_MONOTONIC) + p->config->drain_timeout;
        drain.reason = (char *) why;
        f.body_case = ELASTIC_POOL__FRAME__BODY_DRAIN;
        f.drain = &drain;
        (void) channel_send(w->channel, &f);
        if (p->hooks->worker_draining)
                p->hooks->worker_draining(w, p->userdata);
        if (inflight(p, w) == 0) {
                pool_stop_worker(p, w, why);
                return;
        }
        arm_timer(p, w, p->config->drain_timeout, on_drain_timeout);
}

void pool_set_evacuating(Pool *p, Worker *w, bool on) {
        if (w->evacuating == on)
                return;
        w->evacuating = on;
        pool_changed(p);
}

void pool_set_unhealthy(Pool *p, Worker *w, const char *why) {
        char *copy = NULL;

        if (!why && !w->unhealthy)
                return;
        if (why && w->unhealthy && streq(why, w->unhealthy))
                return;
        if (why) {
                copy = strdup(why);
                if (!copy)
                        return;
                log_struct(LOG_WARNING, LOG_FIELDS(.event = "unhealthy", .worker = (int) w->id),
                           "%s is taken out of new work: %s; its own users still go to it", WORKER_NAME(w), why);
        } else
                log_struct(LOG_NOTICE, LOG_FIELDS(.event = "unhealthy", .worker = (int) w->id),
                           "%s takes new work again (was: %s)", WORKER_NAME(w), w->unhealthy);
        free(w->unhealthy);
        w->unhealthy = copy;
        pool_changed(p);
        /* guests are served by a worker that answers */
        if ((why && p->reception == w) || !p->reception)
                pool_pick_reception(p);
}

void pool_set_rolling(Pool *p, bool on) {
        if (p->rolling == on)
                return;
        p->rolling = on;
        pool_changed(p);
        /* guests land on the new version as soon as there is one */
        if (on && p->reception && worker_outdated(p->reception))
                pool_pick_reception(p);
}

void pool_worker_drained(Pool *p, Worker *w) {
        if (w->state == WORKER_DRAINING && inflight(p, w) == 0)
                pool_stop_worker(p, w, w->stop_reason ? w->stop_reason : "drained");
}

/* Describes the death into buf (si NULL: not our child, the status is unknown); true when the kernel's
 * OOM killer did it. */
static bool describe_death(Pool *p, Worker *w, const siginfo_t *si, char *buf, size_t size) {
        uint64_t oom = 0;

        if (p->backend->vtable->oom_kills(p->backend, w, &oom) >= 0 && oom > w->place.oom_kills_at_start) {
                snprintf(buf, size, "killed by the kernel OOM killer (memory.events oom_kill=%llu, signal %s)",
                         (unsigned long long) oom, si ? strna(sigabbrev_np(si->si_status)) : "unknown");
                return true;
        }
        if (!si) {
                snprintf(buf, size, "ended (its exit status is unknown: a worker taken back after a restart "
                                    "is not our child)");
                return false;
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
static void count_early_death(Pool *p, Worker *w, const siginfo_t *si, bool oom, const char *cause,
                              bool expected) {
        char what[384], up[32], period[32];
        usec_t lived;

        if (expected || w->stop_reason || w->exec_failed || w->adopted)
                return;
        if (w->routable_at == 0) {
                snprintf(what, sizeof what, "%.250s before it became routable", cause);
                spawn_failed(p, w, what);
                return;
        }
        if (!si || killed_from_outside(si, oom))
                return;
        lived = now_usec(CLOCK_MONOTONIC) - w->routable_at;
        if (lived >= stable_period(p))
                return;
        format_timespan(up, sizeof up, lived);
        format_timespan(period, sizeof period, stable_period(p));
        snprintf(what, sizeof what, "%.250s %s after it became routable (a worker must stay up %s)", cause, up,
                 period);
        spawn_failed(p, w, what);
}

static int on_child_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        Worker *w = userdata;

        pool_worker_exited(w->pool, w, si);
        return 0;
}

void pool_worker_exited(Pool *p, Worker *w, const siginfo_t *si) {
        bool expected = w->state == WORKER_STOPPING || p->stopping;
        char cause[256], why[160] = "";
        bool oom;

        /* the pidfd and the exec-error pipe race: an exec failure must be read before the death */
        check_exec_error(p, w);
        oom = describe_death(p, w, si, cause, sizeof cause);
        p->deaths++;
        p->deaths_by_cause[worker_death_cause(si, oom, expected, w->exec_failed)]++;
        if (w->exec_failed)
                snprintf(why, sizeof why, " (its command could not be executed)");
        else if (w->stop_reason)
                snprintf(why, sizeof why, " (stopped: %.120s)", w->stop_reason);
        log_struct(expected ? LOG_INFO : LOG_WARNING,
                   LOG_FIELDS(.message_id = MESSAGE_ID_DEATH, .event = "death", .worker = (int) w->id),
                   "Worker %s (pid %d) %s%s", WORKER_NAME(w), (int) w->pid, cause, why);
        free(w->death_cause);
        if (asprintf(&w->death_cause, "%s%s", cause, why) < 0)
                w->death_cause = NULL; /* the hooks then say less; the journal line has it all */
        count_early_death(p, w, si, oom, cause, expected);
        worker_dead(p, w);
}

static void worker_dead(Pool *p, Worker *w) {
        bool awaited = w->awaiting_sensor;

        if (w->routable_at > 0)
                p->changed_at = now_usec(CLOCK_MONOTONIC);
        pool_set_state(w, WORKER_DEAD);
        w->child_source = sd_event_source_disable_unref(w->child_source);
        w->timer = sd_event_source_disable_unref(w->timer);
        w->probe_timer = sd_event_source_disable_unref(w->probe_timer);
        w->stable_timer = sd_event_source_disable_unref(w->stable_timer);
        w->channel = channel_free(w->channel);
        if (w->socket_path)
                (void) unlink(w->socket_path);
        p->backend->vtable->release(p->backend, w);
        /* before the hooks: what they release (a moving user's held requests) is placed on the new one */
        if (p->reception == w)
                pool_pick_reception(p);
        if (p->hooks->worker_gone)
                p->hooks->worker_gone(w, p->userdata);
        pool_remove_worker(p, w);
        w->awaiting_sensor = false;
        worker_free(w);
        if (awaited)
                pool_adopt_settled(p, NULL);

        if (p->stopping) {
                if (p->n_workers == 0 && p->hooks->stopped)
                        p->hooks->stopped(p, p->userdata);
                return;
        }
        if (p->hooks->changed)
                p->hooks->changed(p, p->userdata);
}

void pool_stop(Pool *p, const char *why) {
        if (p->stopping)
                return;
        p->stopping = true;
        if (p->n_workers == 0) {
                if (p->hooks->stopped)
                        p->hooks->stopped(p, p->userdata);
                return;
        }
        for (size_t i = p->n_workers; i > 0; i--)
                pool_stop_worker(p, p->workers[i - 1], why);
}

/* ---- the pool's own parts ---- */

static void on_spawn_retry(void *userdata) {
        Pool *p = userdata;

        if (p->hooks->changed)
                p->hooks->changed(p, p->userdata);
}

int pool_init(Pool *p, sd_event *event, const Config *config, const char *group, const char *runtime_dir,
              const PoolHooks *hooks, void *userdata) {
        int r;

        *p = (Pool) {
                .event = event,
                .config = config,
                .group = group,
                .runtime_dir = runtime_dir,
                .next_worker_id = 1,
                .hooks = hooks,
                .userdata = userdata,
        };
        spawn_throttle_init(&p->throttle, event, on_spawn_retry, p);
        r = backend_new(config->backend, event, config, group, pool_attach_done, &p->backend);
        if (r < 0)
                return r;
        r = sock_diag_new(&p->sock_diag);
        if (r < 0)
                log_warning_errno(r, "NETLINK_SOCK_DIAG unavailable (%m): workers become routable on their Hello "
                                     "without the accept probe");
        return 0;
}

void pool_done(Pool *p) {
        /* workers still alive here means the loop ended early: never leave them behind */
        for (size_t i = 0; i < p->n_workers; i++) {
                Worker *w = p->workers[i];

                (void) worker_signal(w, SIGKILL);
                /* one taken back is not our child: waitid() refuses it, its pidfd tells its end */
                if (w->pidfd >= 0 && w->adopted)
                        (void) poll(&(struct pollfd) { .fd = w->pidfd, .events = POLLIN }, 1, 1000);
                else if (w->pidfd >= 0)
                        (void) waitid(P_PIDFD, (id_t) w->pidfd, NULL, WEXITED);
                if (w->socket_path)
                        (void) unlink(w->socket_path);
                if (p->backend)
                        p->backend->vtable->release(p->backend, w);
                worker_free(w);
        }
        p->workers = mfree(p->workers);
        p->n_workers = 0;
        p->reception = NULL;
        p->adopt_timer = sd_event_source_disable_unref(p->adopt_timer);
        /* an orderly stop: nobody will come back to it */
        p->channel_listener = channel_listener_free(p->channel_listener, p->stopping);
        spawn_throttle_done(&p->throttle);
        p->backend = backend_free(p->backend);
        p->sock_diag = sock_diag_free(p->sock_diag);
}
