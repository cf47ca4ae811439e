/* SPDX-License-Identifier: MIT */
#include "worker.h"

#include "pool.h"

#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "macro.h"

const char *worker_state_to_string(WorkerState s) {
        static const char *const table[_WORKER_STATE_MAX] = {
                [WORKER_STARTING] = "starting",
                [WORKER_PROBING] = "probing",
                [WORKER_ROUTABLE] = "routable",
                [WORKER_DRAINING] = "draining",
                [WORKER_STOPPING] = "stopping",
                [WORKER_DEAD] = "dead",
        };
        return s >= 0 && s < _WORKER_STATE_MAX ? table[s] : NULL;
}

const char *worker_death_cause_to_string(WorkerDeathCause c) {
        static const char *const table[_WORKER_DEATH_MAX] = {
                [WORKER_DEATH_STOPPED] = "stopped",
                [WORKER_DEATH_EXITED] = "exited",
                [WORKER_DEATH_SIGNALED] = "signaled",
                [WORKER_DEATH_OOM] = "oom",
                [WORKER_DEATH_EXEC_FAILED] = "exec-failed",
                [WORKER_DEATH_UNKNOWN] = "unknown",
        };
        return c >= 0 && c < _WORKER_DEATH_MAX ? table[c] : NULL;
}

WorkerDeathCause worker_death_cause(const siginfo_t *si, bool oom, bool expected, bool exec_failed) {
        if (exec_failed)
                return WORKER_DEATH_EXEC_FAILED;
        /* before oom: the SIGKILL after a stop's grace is still the stop we asked for */
        if (expected)
                return WORKER_DEATH_STOPPED;
        if (oom)
                return WORKER_DEATH_OOM;
        if (!si)
                return WORKER_DEATH_UNKNOWN;
        return si->si_code == CLD_EXITED ? WORKER_DEATH_EXITED : WORKER_DEATH_SIGNALED;
}

int worker_new(Pool *p, unsigned id, Worker **ret) {
        Worker *w;

        w = calloc(1, sizeof *w);
        if (!w)
                return -ENOMEM;
        *w = (Worker) {
                .pool = p,
                .id = id,
                .state = WORKER_STARTING,
                .pidfd = -EBADF,
                .release_fd = -EBADF,
                .exec_error_fd = -EBADF,
                .listen_fd = -EBADF,
                .probe_fd = -EBADF,
                .place = { .cgroup_fd = -EBADF },
                .burst = BURST_TRACK_INIT,
        };
        evaluator_reading_init(&w->reading);
        *ret = w;
        return 0;
}

Worker *worker_free(Worker *w) {
        if (!w)
                return NULL;
        w->child_source = sd_event_source_disable_unref(w->child_source);
        w->exec_error_source = sd_event_source_disable_unref(w->exec_error_source);
        w->timer = sd_event_source_disable_unref(w->timer);
        w->stable_timer = sd_event_source_disable_unref(w->stable_timer);
        w->probe_timer = sd_event_source_disable_unref(w->probe_timer);
        w->channel = channel_free(w->channel);
        safe_close(w->pidfd);
        free(w->package_format);
        free(w->unhealthy);
        safe_close(w->release_fd);
        safe_close(w->exec_error_fd);
        safe_close(w->listen_fd);
        safe_close(w->probe_fd);
        window_done(&w->window);
        free(w->socket_path);
        free(w->channel_close_reason);
        free(w->stop_reason);
        free(w->death_cause);
        backend_place_done(&w->place);
        free(w->sensor_version);
        free(w);
        return NULL;
}

const char *worker_name(const Worker *w, char *buf, size_t size) {
        snprintf(buf, size, "w%u", w->id);
        return buf;
}

bool worker_is_alive(const Worker *w) {
        return w->state != WORKER_DEAD;
}

bool worker_is_routable(const Worker *w) {
        return w->state == WORKER_ROUTABLE;
}

bool worker_outdated(const Worker *w) {
        return w->pool && w->pool->rolling && w->exec_generation != w->pool->exec_generation;
}

bool worker_takes_users(const Worker *w) {
        return !worker_why_no_users(w);
}

bool worker_is_starting(const Worker *w) {
        return w->state == WORKER_STARTING || w->state == WORKER_PROBING;
}

const char *worker_why_no_users(const Worker *w) {
        if (worker_is_starting(w))
                return "it is starting and not routable yet";
        if (w->state != WORKER_ROUTABLE)
                return "it is retiring or stopping";
        if (w->evacuating)
                return "it is being drained";
        if (worker_outdated(w))
                return "it runs the old definition while a rolling reload replaces it";
        if (w->unhealthy)
                return "it is unhealthy";
        return NULL;
}

bool worker_in_policy(const Worker *w) {
        return w->state == WORKER_STARTING || w->state == WORKER_PROBING || w->state == WORKER_ROUTABLE ||
               w->state == WORKER_DRAINING;
}

void worker_prefetch_report(const Worker *w) {
        prefetch_range(w, offsetof(Worker, drift) + sizeof w->drift, true);
}

int worker_signal(Worker *w, int sig) {
        if (w->pidfd < 0)
                return -ESRCH;
        if (syscall(SYS_pidfd_send_signal, w->pidfd, sig, NULL, 0) < 0)
                return -errno;
        return 0;
}
