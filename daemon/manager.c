/* SPDX-License-Identifier: MIT */
#include "manager.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "admin.h"
#include "cleanup.h"
#include "path-util.h"
#include "frontend-manager.h"
#include "journal-ids.h"
#include "log.h"
#include "macro.h"
#include "pool.h"
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

void manager_setup_parameters(Manager *m) {
        const Config *c = &m->config;

        m->evaluator = (EvaluatorParams) {
                .memory_limit = c->memory_limit,
                .cpu_wall_cores = c->cpu_wall_cores,
                .smoothing_rows = c->smoothing_rows,
                .concurrency = c->concurrency,
        };
        m->policy = (PolicyParams) {
                .reception_threshold = c->reception_threshold,
                .admission_threshold = c->admission_threshold,
                .compaction_margin = c->compaction_margin,
                .min_workers = c->min_workers,
                .max_workers = c->max_workers,
                .min_free_memory = c->min_free_memory,
        };
}

static void on_frontend_drained(Frontend *fe) {
        Manager *m = fe->manager;

        manager_stop(m, m->stop_why ? m->stop_why : "shutdown");
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        char why[64];

        snprintf(why, sizeof why, "SIG%s", strna(sigabbrev_np((int) si->ssi_signo)));
        if ((m->stopping || m->stop_why) && si->ssi_signo == SIGINT) {
                log_notice("Second SIGINT: killing every worker now");
                for (size_t i = 0; i < m->n_workers; i++)
                        (void) worker_signal(m->workers[i], SIGKILL);
                return 0;
        }
        if (m->stop_why)
                return 0;
        m->stop_why = strdup(why);
        (void) sd_notify(false, "STOPPING=1");
        /* clients first: workers keep serving until every accepted request is answered */
        if (m->frontend) {
                frontend_begin_shutdown(m->frontend, on_frontend_drained);
                return 0;
        }
        manager_stop(m, why);
        return 0;
}

void manager_write_status(Manager *m) {
        int r;

        r = status_write_file(m, m->status_path);
        if (r < 0)
                log_debug_errno(r, "Failed to write %s: %m", m->status_path);
}

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        manager_write_status(m);
        (void) sd_event_source_set_time(s, usec + STATUS_INTERVAL);
        return 0;
}

int manager_new(const ManagerOptions *o, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        m = calloc(1, sizeof *m);
        if (!m)
                return log_oom();
        m->next_worker_id = 1;
        m->group = strdup(o->group);
        if (!m->group)
                return log_oom();
        r = load_config(m, o);
        if (r < 0)
                return r;
        manager_setup_parameters(m);

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
        if (r < 0)
                return log_error_errno(r, "Failed to watch SIGTERM/SIGINT (blocked?): %m");

        r = backend_new(m->config.backend, m->event, &m->config, m->group, pool_attach_done, &m->backend);
        if (r < 0)
                return r;
        m->next_worker_id = MAX(m->next_worker_id, m->backend->first_worker_id);
        r = sock_diag_new(&m->sock_diag);
        if (r < 0)
                log_warning_errno(r, "NETLINK_SOCK_DIAG unavailable (%m): workers become routable on their Hello "
                                     "without the accept probe");
        if (!o->no_frontend) {
                FrontendOptions fo = { .state_dir = o->state_dir };
                r = frontend_new(m, &fo, &m->frontend);
                if (r < 0)
                        return r;
        }
        if (m->config.admin_listen) {
                r = admin_new(m, m->config.admin_listen, &m->admin);
                if (r < 0)
                        return r;
        }
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
        m->frontend = frontend_free(m->frontend);
        /* workers still alive here means the loop ended early: never leave them behind */
        for (size_t i = 0; i < m->n_workers; i++) {
                Worker *w = m->workers[i];
                (void) worker_signal(w, SIGKILL);
                if (w->pidfd >= 0)
                        (void) waitid(P_PIDFD, (id_t) w->pidfd, NULL, WEXITED);
                if (w->socket_path)
                        (void) unlink(w->socket_path);
                if (m->backend)
                        m->backend->vtable->release(m->backend, w);
                worker_free(w);
        }
        free(m->workers);
        free(m->policy_buf);
        m->spawn_retry = sd_event_source_disable_unref(m->spawn_retry);
        m->deferred_check = sd_event_source_disable_unref(m->deferred_check);
        m->stop_deadline = sd_event_source_disable_unref(m->stop_deadline);
        m->status_timer = sd_event_source_disable_unref(m->status_timer);
        backend_free(m->backend);
        sock_diag_free(m->sock_diag);
        if (m->status_path)
                (void) unlink(m->status_path);
        sd_event_unref(m->event);
        config_done(&m->config);
        free(m->status_path);
        free(m->runtime_dir);
        free(m->group);
        free(m->last_spawn_error);
        free(m->stop_why);
        free(m);
        return NULL;
}

int manager_add_worker(Manager *m, Worker *w) {
        Worker **a = reallocarray(m->workers, m->n_workers + 1, sizeof *a);
        size_t i;

        if (!a)
                return -ENOMEM;
        m->workers = a;
        for (i = m->n_workers; i > 0 && a[i - 1]->id > w->id; i--)
                a[i] = a[i - 1];
        a[i] = w;
        m->n_workers++;
        m->summary.valid = false;
        return 0;
}

void manager_remove_worker(Manager *m, Worker *w) {
        for (size_t i = 0; i < m->n_workers; i++) {
                if (m->workers[i] != w)
                        continue;
                memmove(m->workers + i, m->workers + i + 1, (m->n_workers - i - 1) * sizeof *m->workers);
                m->n_workers--;
                break;
        }
        m->summary.valid = false;
        if (m->reception == w)
                manager_pick_reception(m);
}

Worker *manager_get_worker(Manager *m, unsigned id) {
        size_t lo = 0, hi = m->n_workers;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (m->workers[mid]->id == id)
                        return m->workers[mid];
                if (m->workers[mid]->id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

void manager_pick_reception(Manager *m) {
        Worker *old = m->reception;

        m->summary.valid = false;
        m->reception = NULL;
        for (size_t i = 0; i < m->n_workers; i++) {
                Worker *w = m->workers[i];
                w->reception = false;
                if (!m->reception && w != old && w->state == WORKER_ROUTABLE)
                        m->reception = w;
        }
        if (m->reception) {
                m->reception->reception = true;
                log_info("%s is now the reception", WORKER_NAME(m->reception));
        }
}

static int on_stop_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        log_error("%zu workers still alive past the stop deadline; leaving the loop (they are killed on exit)",
                  m->n_workers);
        return sd_event_exit(m->event, m->exit_code ? m->exit_code : 1);
}

void manager_stop(Manager *m, const char *why) {
        int r;

        if (m->stopping)
                return;
        m->stopping = true;
        log_struct(LOG_NOTICE, LOG_FIELDS(.message_id = MESSAGE_ID_STOP, .event = "stop"),
                   "Stopping (%s): %zu workers get SIGTERM, SIGKILL after stop_timeout", why, m->n_workers);
        if (m->n_workers == 0) {
                (void) sd_event_exit(m->event, m->exit_code);
                return;
        }
        for (size_t i = m->n_workers; i > 0; i--)
                pool_stop_worker(m, m->workers[i - 1], why);
        r = sd_event_add_time_relative(m->event, &m->stop_deadline, CLOCK_MONOTONIC,
                                       m->config.stop_timeout + STOP_GRACE, USEC_PER_MSEC, on_stop_deadline, m);
        if (r < 0)
                (void) sd_event_exit(m->event, 1);
}

unsigned manager_worker_users(const Manager *m, const Worker *w) {
        /* the surface is the one record of who lives where: never a copy to keep in sync */
        return m->frontend ? surface_worker_users(&m->frontend->surface, w->id) : 0;
}

void manager_maybe_ready(Manager *m) {
        unsigned routable = 0;

        if (m->notified_ready)
                return;
        for (size_t i = 0; i < m->n_workers; i++)
                routable += worker_is_routable(m->workers[i]);
        if (routable < m->config.min_workers)
                return;
        m->notified_ready = true;
        (void) sd_notifyf(false, "READY=1\nSTATUS=%u workers routable", routable);
        log_info("Ready: %u workers routable%s", routable, m->frontend ? ", front end listening" : "");
}

int manager_run(Manager *m) {
        int r;

        manager_check_capacity(m);
        r = sd_event_loop(m->event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return r;
}
