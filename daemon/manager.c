/* SPDX-License-Identifier: MIT */
#include "manager.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "cleanup.h"
#include "config-worker.h"
#include "fd-util.h"
#include "path-util.h"
#include "journal-ids.h"
#include "log.h"
#include "macro.h"
#include "status.h"

#define STATUS_INTERVAL USEC_PER_SEC
/* Beyond stop_timeout: SIGKILL went out, the kernel needs a moment to deliver deaths. */
#define STOP_GRACE (5 * USEC_PER_SEC)

int manager_runtime_dir(const char *group, const char *override, char **ret) {
        return service_dir(override, "RUNTIME_DIRECTORY", "/run", "XDG_RUNTIME_DIR", NULL, group, ret);
}

/* --demo from a build tree: the bundled demo worker is not installed yet, but it sits beside us. */
static void find_demo_worker(Config *c) {
        static const char *const candidates[] = { "elastic-pool-demo-worker", "../demo/elastic-pool-demo-worker" };
        char self[PATH_MAX], path[PATH_MAX + 64];
        ssize_t n;
        char *slash;

        if (!c->exec || !c->exec[0] || access(c->exec[0], X_OK) == 0)
                return;
        n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
                return;
        self[n] = 0;
        slash = strrchr(self, '/');
        if (!slash)
                return;
        *slash = 0;
        for (size_t i = 0; i < ELEMENTSOF(candidates); i++) {
                char *copy;

                snprintf(path, sizeof path, "%s/%s", self, candidates[i]);
                if (access(path, X_OK) < 0)
                        continue;
                copy = realpath(path, NULL);
                if (!copy)
                        return;
                free(c->exec[0]);
                c->exec[0] = copy;
                log_info("Using the demo worker of this build: %s", copy);
                return;
        }
}

static int load_config(Manager *m, const ManagerOptions *o) {
        _cleanup_free_ char *path = NULL, *error = NULL;
        int r;

        r = config_init_defaults(&m->config);
        if (r < 0)
                return log_oom();
        if (!o->config_path && o->defaults) {
                log_info("Running group '%s' on built-in defaults (--demo): no configuration file read", m->group);
                find_demo_worker(&m->config);
                return config_validate(&m->config, &error) < 0 ? log_error("%s", strna(error)), -EINVAL : 0;
        }
        if (o->config_path)
                path = strdup(o->config_path);
        else if (asprintf(&path, "/etc/elastic-pool/%s.conf", m->group) < 0)
                path = NULL;
        if (!path)
                return log_oom();
        r = config_load(&m->config, path, &error);
        if (r == -ENOENT && !o->config_path)
                return log_error_errno(r, "No configuration for group '%s': %s does not exist. Write one (see "
                                          "elastic-pool.conf(5)) or run with --demo for built-in defaults.",
                                       m->group, path);
        if (r < 0)
                return log_error_errno(r, "Invalid configuration: %s", error ? error : "out of memory");
        return 0;
}

/* What the configuration can ask of the descriptor limit, roughly: a pidfd and a channel per worker, a client
 * connection each up to max_connections (a worker connection waits on one), and room for the rest
 * (listeners, journal, timers). Said once per load, so that a pool that will run short is named before it
 * does, not found from paused accepts and failed spawns. Unbounded max_workers counts none. */
static void check_nofile(const Config *c) {
        uint64_t need = 2 * (uint64_t) c->max_workers + (c->listen[0] ? c->max_connections : 0) + 64;
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || need <= rl.rlim_cur)
                return;
        log_warning("The descriptor limit (%llu) is short of what max_workers=%u and max_connections=%u can "
                    "need (about %llu: two per worker, one per client connection, 64 more); past it, "
                    "accepting pauses and spawns fail. Raise LimitNOFILE= (the hard limit).",
                    (unsigned long long) rl.rlim_cur, c->max_workers, c->max_connections,
                    (unsigned long long) need);
}

static void on_frontend_drained(void *userdata) {
        Manager *m = userdata;

        manager_stop(m, m->stop_why ? m->stop_why : "shutdown");
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        char why[64];

        snprintf(why, sizeof why, "SIG%s", strna(sigabbrev_np((int) si->ssi_signo)));
        if ((m->pool.stopping || m->stop_why) && si->ssi_signo == SIGINT) {
                log_notice("Second SIGINT: killing every worker now");
                for (size_t i = 0; i < m->pool.n_workers; i++)
                        (void) worker_signal(m->pool.workers[i], SIGKILL);
                return 0;
        }
        if (m->stop_why)
                return 0;
        m->stop_why = strdup(why);
        (void) sd_notify(false, "STOPPING=1");
        /* clients first: workers keep serving until every accepted request is answered */
        if (m->frontend) {
                frontend_begin_shutdown(m->frontend, on_frontend_drained, m);
                return 0;
        }
        manager_stop(m, why);
        return 0;
}

/* STATUS= in one line, told to systemd when it changed ("3 workers, 120 users, occupancy ..."). */
static void notify_status(Manager *m) {
        char line[512];

        status_line(&m->status, line, sizeof line);
        if (streq_ptr(line, m->status_line))
                return;
        free(m->status_line);
        m->status_line = strdup(line);
        (void) sd_notifyf(false, "STATUS=%s", line);
}

/* What a reload changes besides the Config itself, which every module reads where it uses it. old: the
 * worker definition before the reload; any part of it that differs now replaces the workers. */
static void apply_config(Manager *m, const ConfigWorkerDigest *old) {
        char changes[1024];
        int r;

        capacity_setup_parameters(&m->capacity);
        m->moves.timeout = config_move_timeout(&m->config);
        if (config_worker_changes(old, &m->config, changes, sizeof changes) > 0) {
                m->pool.exec_generation++;
                log_notice("The worker definition changed ([worker] %s): the %zu running workers are replaced one "
                           "at a time",
                           changes, m->pool.n_workers);
                rollout_start(&m->rollout, now_usec(CLOCK_MONOTONIC));
        }
        if (m->frontend) {
                r = frontend_reload(m->frontend);
                if (r < 0)
                        log_warning_errno(r, "Reload: a new listen= address could not be opened (see above): %m");
        }
        m->pool.generation++; /* the policies' parameters changed: no summary of the old ones holds */
}

int manager_reload(Manager *m, char **ret_error) {
        _cleanup_free_ char *error = NULL, *path = NULL;
        ConfigWorkerDigest old;
        int r;

        /* the environment file and the user database are read again too: a changed file under an
         * unchanged configuration is a changed definition */
        config_worker_digest_parts(&m->config, &old);

        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%llu",
                          (unsigned long long) now_usec(CLOCK_MONOTONIC));
        if (!m->config.path) {
                r = -EOPNOTSUPP;
                error = strdup("running on built-in defaults (--demo without --config): no file to read again");
        } else {
                path = strdup(m->config.path);
                r = path ? config_load(&m->config, path, &error) : -ENOMEM;
        }
        if (r < 0) {
                log_struct(LOG_ERR, LOG_FIELDS(.message_id = MESSAGE_ID_RELOAD, .event = "reload"),
                           "Reload failed, the running configuration stays: %s", error ? error : strerror(-r));
                free(m->reload_error);
                m->reload_error = strdup(error ? error : strerror(-r));
        } else {
                apply_config(m, &old);
                check_nofile(&m->config);
                m->reload_error = mfree(m->reload_error);
                log_struct(LOG_NOTICE, LOG_FIELDS(.message_id = MESSAGE_ID_RELOAD, .event = "reload"),
                           "Reloaded the configuration from %s", m->config.path);
                capacity_check(&m->capacity);
                compaction_step(&m->compaction, now_usec(CLOCK_MONOTONIC));
        }
        manager_write_status(m);
        notify_status(m);
        (void) sd_notify(false, "READY=1");
        if (ret_error)
                *ret_error = TAKE_PTR(error);
        return r;
}

static int reload_from_bus(void *userdata, char **ret_error) {
        return manager_reload(userdata, ret_error);
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        if (m->stop_why || m->pool.stopping)
                return 0;
        (void) manager_reload(m, NULL);
        return 0;
}

void manager_write_status(Manager *m) {
        int r;

        r = status_write_file(&m->status, m->status_path);
        if (r < 0)
                log_debug_errno(r, "Failed to write %s: %m", m->status_path);
}

/* Users idle past user_expiry leave the surface; looked for every eighth of it (1 s to 1 min). */
static void expire_users(Manager *m, usec_t now) {
        usec_t expiry = config_user_expiry(&m->config);

        if (now < m->next_expiry_scan)
                return;
        m->next_expiry_scan = now + CLAMP(expiry / 8, USEC_PER_SEC, 60 * USEC_PER_SEC);
        if (placement_expire_users(&m->placement, expiry, now) > 0)
                compaction_step(&m->compaction, now); /* a drain may have been waiting on them */
}

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        expire_users(m, now_usec(CLOCK_MONOTONIC));
        health_check(&m->health, now_usec(CLOCK_MONOTONIC));
        manager_write_status(m);
        if (m->notified_ready)
                notify_status(m);
        (void) sd_event_source_set_time(s, usec + STATUS_INTERVAL);
        return 0;
}

static void free_passed(Manager *m) {
        for (size_t i = 0; i < m->n_passed; i++) {
                safe_close(m->passed_fds[i]);
                free(m->passed_names[i]);
        }
        m->passed_fds = mfree(m->passed_fds);
        m->passed_names = mfree(m->passed_names);
        m->n_passed = 0;
}

/* LISTEN_FDS: the channel socket of our previous run (fd store) is the pool's; everything else the
 * front end's (listen= sockets from the fd store, socket units'). Returns the channel fd or -EBADF. */
static int take_passed_fds(Manager *m) {
        char **names = NULL;
        int n, channel_fd = -EBADF;

        n = sd_listen_fds_with_names(true, &names);
        if (n <= 0)
                return -EBADF;
        m->passed_fds = calloc(n, sizeof(int));
        m->passed_names = calloc(n, sizeof(char *));
        for (int i = 0; i < n; i++) {
                int fd = SD_LISTEN_FDS_START + i;
                char *name = names ? names[i] : NULL;

                if (name && streq(name, "channel") && channel_fd < 0) {
                        channel_fd = fd;
                        free(name);
                } else if (m->passed_fds && m->passed_names) {
                        m->passed_fds[m->n_passed] = fd;
                        m->passed_names[m->n_passed++] = name;
                } else {
                        safe_close(fd);
                        free(name);
                }
        }
        free(names);
        return channel_fd;
}

int manager_new(const ManagerOptions *o, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r, channel_fd;

        m = calloc(1, sizeof *m);
        if (!m)
                return log_oom();
        m->group = strdup(o->group);
        if (!m->group)
                return log_oom();
        r = load_config(m, o);
        if (r < 0)
                return r;
        check_nofile(&m->config);

        r = manager_runtime_dir(m->group, o->runtime_dir, &m->runtime_dir);
        if (r == -ENXIO)
                return log_error_errno(r, "No runtime directory: not root, no $XDG_RUNTIME_DIR; pass --runtime-dir");
        if (r < 0)
                return log_oom();
        r = mkdir_parents(m->runtime_dir, 0755);
        if (r < 0)
                return log_error_errno(r, "Failed to create the runtime directory %s: %m", m->runtime_dir);
        if (asprintf(&m->status_path, "%s/status.json", m->runtime_dir) < 0)
                return log_oom();

        r = sd_event_new(&m->event);
        if (r < 0)
                return log_error_errno(r, "Failed to create the event loop: %m");
        (void) sd_event_set_watchdog(m->event, true);
        r = sd_event_add_signal(m->event, NULL, SIGTERM, on_signal, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT, on_signal, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGHUP, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch SIGTERM/SIGINT/SIGHUP (blocked?): %m");

        channel_fd = take_passed_fds(m);
        r = pool_init(&m->pool, m->event, &m->config, m->group, m->runtime_dir, &manager_pool_hooks, m);
        if (r < 0) {
                safe_close(channel_fd);
                return r;
        }
        /* kept across restarts, so sensors reconnecting while we are down wait in its queue */
        if (pool_listen_channel(&m->pool, channel_fd) >= 0)
                (void) fd_store_add(channel_listener_fd(m->pool.channel_listener), "channel");
        manager_wire(m);
        if (!o->no_frontend) {
                r = manager_add_frontend(m, o->state_dir);
                if (r < 0)
                        return r;
        }
        if (m->config.admin_listen) {
                r = admin_new(m->event, m->config.admin_listen, &m->status, &m->admin);
                if (r < 0)
                        return r;
        }
        r = bus_new(&(const BusOptions) {
                        .event = m->event,
                        .group = m->group,
                        .config = &m->config,
                        .pool = &m->pool,
                        .capacity = &m->capacity,
                        .compaction = &m->compaction,
                        .rollout = &m->rollout,
                        .surface = &m->surface,
                        .status = &m->status,
                        .reload = reload_from_bus,
                        .userdata = m,
                        .bus_env = getenv("EP_BUS"),
                }, &m->bus);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(m->event, &m->status_timer, CLOCK_MONOTONIC, STATUS_INTERVAL,
                                       100 * USEC_PER_MSEC, on_status_timer, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(m->status_timer, SD_EVENT_ON);
        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        m->admin = admin_free(m->admin);
        m->bus = bus_free(m->bus);
        /* the front end first: its connections end, and with them every exchange held or open */
        m->frontend = frontend_free(m->frontend);
        m->frontend_hooks = NULL;
        health_done(&m->health);
        rollout_done(&m->rollout);
        relief_done(&m->relief);
        compaction_done(&m->compaction);
        moves_done(&m->moves);
        surface_done(&m->surface);
        capacity_done(&m->capacity);
        pool_done(&m->pool);
        free_passed(m);
        m->stop_deadline = sd_event_source_disable_unref(m->stop_deadline);
        m->status_timer = sd_event_source_disable_unref(m->status_timer);
        if (m->status_path)
                (void) unlink(m->status_path);
        sd_event_unref(m->event);
        config_done(&m->config);
        free(m->status_path);
        free(m->status_line);
        free(m->reload_error);
        free(m->runtime_dir);
        free(m->group);
        free(m->stop_why);
        free(m);
        return NULL;
}

static int on_stop_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        log_error("%zu workers still alive past the stop deadline; leaving the loop (they are killed on exit)",
                  m->pool.n_workers);
        return sd_event_exit(m->event, m->exit_code ? m->exit_code : 1);
}

void manager_stop(Manager *m, const char *why) {
        int r;

        if (m->pool.stopping)
                return;
        log_struct(LOG_NOTICE, LOG_FIELDS(.message_id = MESSAGE_ID_STOP, .event = "stop"),
                   "Stopping (%s): %zu workers get SIGTERM, SIGKILL after stop_timeout", why, m->pool.n_workers);
        pool_stop(&m->pool, why);
        /* an orderly stop: no sensor is to come back, nor a next commander to hand it to */
        (void) fd_store_remove("channel");
        if (m->pool.n_workers == 0)
                return;
        r = sd_event_add_time_relative(m->event, &m->stop_deadline, CLOCK_MONOTONIC,
                                       m->config.stop_timeout + STOP_GRACE, USEC_PER_MSEC, on_stop_deadline, m);
        if (r < 0)
                (void) sd_event_exit(m->event, 1);
}

void manager_maybe_ready(Manager *m) {
        unsigned routable;

        if (m->notified_ready || m->pool.adopting > 0)
                return;
        routable = pool_routable(&m->pool);
        if (routable < m->config.min_workers)
                return;
        m->notified_ready = true;
        (void) sd_notifyf(false, "READY=1\nSTATUS=%u workers routable", routable);
        log_info("Ready: %u workers routable%s", routable, m->frontend ? ", front end listening" : "");
}

int manager_run(Manager *m) {
        int r;

        if (pool_adopt(&m->pool) > 0) {
                /* decisions wait for the workers taken back (the adopted hook) */
                if (m->frontend)
                        frontend_hold_listeners(m->frontend);
        } else
                capacity_check(&m->capacity);
        r = sd_event_loop(m->event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return r;
}

/* ---- the wiring ---- */

static void on_worker_routable(Worker *w, void *userdata) {
        Manager *m = userdata;

        if (m->frontend_hooks)
                m->frontend_hooks->worker_routable(m->frontend, w->id, w->socket_path);
        manager_maybe_ready(m);
        bus_worker_spawned(m->bus, w);
        /* a worker taken back: the pool is judged once all of them are (on_adopted) */
        if (m->pool.adopting == 0) {
                usec_t now = now_usec(CLOCK_MONOTONIC);

                /* first: a new-definition worker takes over new users before the policies judge the pool */
                rollout_step(&m->rollout, now);
                capacity_check(&m->capacity);
                compaction_step(&m->compaction, now);
                /* a saturated worker hands users to the newcomer now, not at the next burst sample */
                relief_burst_check(&m->relief, compaction_draining(&m->compaction), now);
        }
        manager_write_status(m);
}

static void on_worker_draining(Worker *w, void *userdata) {
        Manager *m = userdata;

        if (m->frontend_hooks)
                m->frontend_hooks->worker_draining(m->frontend, w->id);
}

static void on_worker_gone(Worker *w, void *userdata) {
        Manager *m = userdata;
        unsigned n;

        compaction_worker_gone(&m->compaction, w->id, now_usec(CLOCK_MONOTONIC));
        relief_worker_gone(&m->relief, w->id);
        move_worker_gone(&m->moves, w->id, now_usec(CLOCK_MONOTONIC));
        n = surface_worker_gone(&m->surface, w->id);
        if (n > 0)
                log_warning("%u users lived on %s, which is gone: each is placed again on its next request "
                            "(its state there is lost)", n, WORKER_NAME(w));
        if (m->frontend_hooks)
                m->frontend_hooks->worker_gone(m->frontend, w->id);
        bus_worker_died(m->bus, w);
}

static void on_report(Worker *w, Row *row, void *userdata) {
        Manager *m = userdata;

        capacity_take_row(&m->capacity, w, row);
        if (row->early)
                return; /* the burst path's alone: w's reading did not change */
        compaction_step(&m->compaction, row->received);
        rollout_step(&m->rollout, row->received);
        relief_report(&m->relief, w, compaction_draining(&m->compaction), row->received);
}

static void on_move_frame(Worker *w, const Frame *f, void *userdata) {
        Manager *m = userdata;

        move_on_frame(&m->moves, w->id, f, now_usec(CLOCK_MONOTONIC));
}

static void on_pool_changed(Pool *p, void *userdata) {
        Manager *m = userdata;

        if (p->adopting > 0)
                return; /* on_adopted judges the pool once every worker taken back is */
        capacity_check(&m->capacity);
        compaction_step(&m->compaction, now_usec(CLOCK_MONOTONIC));
        rollout_step(&m->rollout, now_usec(CLOCK_MONOTONIC));
        manager_write_status(m);
}

static bool worker_traffic(unsigned worker, WorkerTraffic *ret, void *userdata) {
        Manager *m = userdata;

        return status_worker_traffic(&m->status, worker, ret);
}

static unsigned worker_inflight(const Worker *w, void *userdata) {
        WorkerTraffic t;

        (void) worker_traffic(w->id, &t, userdata);
        return t.inflight;
}

static void on_users(Worker *w, const ElasticPool__Users *u, void *userdata) {
        Manager *m = userdata;

        (void) placement_users_announced(&m->placement, w->id, u->users, u->n_users);
}

static void on_adopted(Pool *p, void *userdata) {
        Manager *m = userdata;

        if (m->frontend)
                frontend_release_listeners(m->frontend, "every worker taken back is accounted for");
        manager_maybe_ready(m);
        capacity_check(&m->capacity);
        manager_write_status(m);
}

static void on_pool_stopped(Pool *p, void *userdata) {
        Manager *m = userdata;

        (void) sd_event_exit(m->event, m->exit_code);
}

const PoolHooks manager_pool_hooks = {
        .worker_routable = on_worker_routable,
        .worker_draining = on_worker_draining,
        .worker_gone = on_worker_gone,
        .report = on_report,
        .move_frame = on_move_frame,
        .users = on_users,
        .adopted = on_adopted,
        .changed = on_pool_changed,
        .inflight = worker_inflight,
        .stopped = on_pool_stopped,
};

static unsigned worker_users(unsigned worker, void *userdata) {
        Manager *m = userdata;

        /* the surface is the one record of who lives where: never a copy to keep in sync */
        return surface_worker_users(&m->surface, worker);
}

static bool move_worker(unsigned worker, MoveWorker *ret, void *userdata) {
        Manager *m = userdata;
        Worker *w = pool_get_worker(&m->pool, worker);

        if (!w)
                return false;
        *ret = (MoveWorker) {
                .routable = worker_is_routable(w),
                .capabilities = w->capabilities,
                .package_format = w->package_format,
        };
        return true;
}

static int move_send(unsigned worker, const Frame *f, void *userdata) {
        Manager *m = userdata;
        Worker *w = pool_get_worker(&m->pool, worker);

        if (!w || !channel_is_open(w->channel))
                return -ENOTCONN;
        return channel_send(w->channel, f);
}

static unsigned held_requests(const char *user, void *userdata) {
        Manager *m = userdata;

        return m->frontend_hooks ? m->frontend_hooks->held_requests(m->frontend, user) : 0;
}

static void release_held(const char *user, void *userdata) {
        Manager *m = userdata;

        if (m->frontend_hooks)
                m->frontend_hooks->release_held(m->frontend, user);
}

static void move_started(const char *user, void *userdata) {
        Manager *m = userdata;

        if (m->frontend_hooks && m->frontend_hooks->user_moving)
                m->frontend_hooks->user_moving(m->frontend, user);
}

static void move_ended(const MoveEnd *e, void *userdata) {
        Manager *m = userdata;

        usec_t now = now_usec(CLOCK_MONOTONIC);

        compaction_move_ended(&m->compaction, e, now);
        relief_move_ended(&m->relief, e, now);
        rollout_step(&m->rollout, now);
        bus_user_moved(m->bus, e);
}

static int drain(unsigned worker, const Decision *d, char *why, size_t why_size, void *userdata) {
        Manager *m = userdata;

        /* a round moves users onto the least occupied worker: the one compaction would drain */
        if (relief_running(&m->relief)) {
                snprintf(why, why_size, "a relief round moves users from w%u to w%u", m->relief.round.from,
                         m->relief.round.to);
                return -EAGAIN;
        }
        return compaction_drain(&m->compaction, worker, d, why, why_size);
}

static void on_burst_sampled(usec_t now, void *userdata) {
        Manager *m = userdata;

        relief_burst_check(&m->relief, compaction_draining(&m->compaction), now);
}

void manager_wire(Manager *m) {
        const CapacitySources sources = {
                .worker_users = worker_users,
                .worker_traffic = worker_traffic,
                .userdata = m,
        };
        const MoveHooks move_hooks = {
                .worker = move_worker,
                .send = move_send,
                .held_requests = held_requests,
                .release_held = release_held,
                .started = move_started,
                .ended = move_ended,
                .userdata = m,
        };
        const CapacityActions actions = { .drain = drain, .burst_sampled = on_burst_sampled, .userdata = m };

        capacity_init(&m->capacity, &m->pool, &m->config, &sources);
        capacity_set_actions(&m->capacity, &actions);
        surface_init(&m->surface);
        /* by default within half the hold timeout, so a held request is released (to A or B) before it
         * would be answered 503 */
        moves_init(&m->moves, m->event, &m->surface, config_move_timeout(&m->config), &move_hooks);
        m->placement = (Placement) {
                .pool = &m->pool,
                .capacity = &m->capacity,
                .surface = &m->surface,
                .moves = &m->moves,
        };
        compaction_init(&m->compaction, &m->pool, &m->capacity, &m->surface, &m->moves);
        relief_init(&m->relief, &m->pool, &m->capacity, &m->surface, &m->moves);
        rollout_init(&m->rollout, &m->pool, &m->compaction, &m->surface);
        health_init(&m->health, &m->pool, &m->capacity, m->event);
        m->status = (StatusView) {
                .group = m->group,
                .pool = &m->pool,
                .capacity = &m->capacity,
                .compaction = &m->compaction,
                .relief = &m->relief,
                .rollout = &m->rollout,
                .surface = &m->surface,
                .moves = &m->moves,
                .reload_error = &m->reload_error,
        };
}

int manager_add_frontend(Manager *m, const char *state_dir) {
        const FrontendOptions o = {
                .event = m->event,
                .config = &m->config,
                .group = m->group,
                .state_dir = state_dir,
                .commander = &placement_ops,
                .commander_userdata = &m->placement,
                .fds = m->passed_fds,
                .fd_names = m->passed_names,
                .n_fds = m->n_passed,
        };
        int r;

        r = frontend_new(&o, &m->frontend);
        /* the fds are the front end's now, also on failure; the names stay ours */
        for (size_t i = 0; i < m->n_passed; i++)
                m->passed_fds[i] = -EBADF;
        free_passed(m);
        if (r < 0)
                return r;
        m->frontend_hooks = &frontend_hooks;
        m->status.frontend = m->frontend_hooks;
        m->status.frontend_data = m->frontend;
        return 0;
}
