/* SPDX-License-Identifier: MIT */
/* Re-adoption: the workers an earlier commander of this group left running (a crash, a restart) are
 * taken back rather than leaked and replaced. Their places (scopes, leaves) are found through the
 * backend, each main process gets a pidfd, and each sensor reconnects to the channel socket, says Hello
 * and announces the users it holds; only then does the front end take requests again, so every sticky
 * user finds its worker. The channel socket also serves sensors whose channel broke while we ran. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup.h"
#include "cleanup.h"
#include "journal-ids.h"
#include "log.h"
#include "macro.h"
#include "pool-internal.h"

/* ---- the channel socket ---- */

/* The peer is w's main process, or lives in w's cgroup (or below it: a worker may divide its own). */
static bool peer_is_worker(const ChannelPeer *peer, const Worker *w) {
        const char *path = w->place.cgroup_path;
        size_t len;

        if (peer->pid == w->pid)
                return true;
        if (!peer->cgroup || !path)
                return false;
        len = strlen(path);
        return strncmp(peer->cgroup, path, len) == 0 && (peer->cgroup[len] == 0 || peer->cgroup[len] == '/');
}

static int on_channel_peer(int fd, const ChannelPeer *peer, const char **why, void *userdata) {
        Pool *p = userdata;

        for (size_t i = 0; i < p->n_workers; i++) {
                Worker *w = p->workers[i];

                if (!peer_is_worker(peer, w))
                        continue;
                if (w->state == WORKER_STOPPING || w->state == WORKER_DEAD) {
                        *why = "its worker is stopping";
                        return -EPERM;
                }
                (void) pool_attach_channel(p, w, fd);
                return 0;
        }
        *why = "it is not in the cgroup of one of this group's workers";
        return -EPERM;
}

int pool_listen_channel(Pool *p, int inherited_fd) {
        _cleanup_free_ char *path = NULL;
        int r;

        if (asprintf(&path, "%s/channel.sock", p->runtime_dir) < 0) {
                safe_close(inherited_fd);
                return log_oom();
        }
        r = channel_listener_new(p->event, path, inherited_fd, on_channel_peer, p, &p->channel_listener);
        if (r < 0)
                log_warning("Sensors cannot reconnect (%s): a worker whose channel breaks stays without one, and "
                            "a restarted commander cannot take its workers back", strerror(-r));
        return r;
}

/* ---- taking workers back ---- */

static int read_ppid(pid_t pid, pid_t *ret) {
        _cleanup_fclose_ FILE *f = NULL;
        char path[64], line[256];

        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof line, f)) {
                int ppid;
                if (sscanf(line, "PPid: %d", &ppid) == 1) {
                        *ret = ppid;
                        return 0;
                }
        }
        return -ENODATA;
}

/* The worker's main process is the one whose parent is not in its cgroup: the others are its own
 * children. Among several such (it daemonised something), the oldest pid. */
static int find_main_pid(int cgroup_fd, pid_t *ret) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_fclose_ FILE *f = NULL;
        pid_t pids[4096], best = 0;
        size_t n = 0;
        int pid;

        fd = openat(cgroup_fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        f = fdopen(TAKE_FD(fd), "re");
        if (!f)
                return -errno;
        while (n < ELEMENTSOF(pids) && fscanf(f, "%d", &pid) == 1)
                pids[n++] = pid;
        for (size_t i = 0; i < n; i++) {
                pid_t ppid = 0;
                bool inside = false;

                if (read_ppid(pids[i], &ppid) < 0)
                        continue;
                for (size_t k = 0; k < n && !inside; k++)
                        inside = pids[k] == ppid;
                if (!inside && (best == 0 || pids[i] < best))
                        best = pids[i];
        }
        if (best == 0)
                return -ESRCH;
        *ret = best;
        return 0;
}

static int on_adopted_exit(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Worker *w = userdata;

        pool_worker_exited(w->pool, w, NULL);
        return 0;
}

/* The pidfd of w's main process, checked to still be in w's cgroup once opened: the pid read from
 * cgroup.procs may have been reused in between. */
static int open_main_process(Worker *w) {
        _cleanup_free_ char *cgroup = NULL;
        pid_t pid;
        int r;

        r = find_main_pid(w->place.cgroup_fd, &pid);
        if (r < 0)
                return r;
        w->pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (w->pidfd < 0)
                return -errno;
        w->pid = pid;
        r = cgroup_pid_path(pid, &cgroup);
        if (r < 0)
                return r;
        return streq(cgroup, w->place.cgroup_path) ? 0 : -ESRCH;
}

static int adopt_socket(Pool *p, Worker *w) {
        struct stat st;

        if (asprintf(&w->socket_path, "%s/w%u.sock", p->runtime_dir, w->id) < 0)
                return -ENOMEM;
        if (stat(w->socket_path, &st) < 0)
                return -errno;
        return S_ISSOCK(st.st_mode) ? 0 : -ENOTSOCK;
}

static int adopt_watch(Pool *p, Worker *w) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        int r;

        r = window_init(&w->window, p->config->window_rows);
        if (r < 0)
                return r;
        /* not our child: waitid() would refuse it; the pidfd turns readable when it ends */
        r = sd_event_add_io(p->event, &w->child_source, w->pidfd, EPOLLIN, on_adopted_exit, w);
        if (r < 0)
                return r;
        w->adopted = w->awaiting_sensor = true;
        w->exec_generation = p->exec_generation;
        w->spawned_at = w->routable_at = now;
        w->channel_closed_at = now;
        w->channel_close_reason = strdup("taken back after a commander restart; waiting for its sensor to "
                                         "reconnect");
        w->state = WORKER_ROUTABLE;
        return pool_add_worker(p, w);
}

/* What cannot be taken back is stopped: a worker nobody can reach must not run unsupervised. */
static void give_up(Pool *p, Worker *w, const char *step, int error) {
        log_warning("Cannot take back %s (%s, cgroup %s): %s: %s; stopping it", WORKER_NAME(w),
                    strna(w->place.unit), strna(w->place.cgroup_path), step, strerror(-error));
        if (w->pidfd >= 0)
                (void) worker_signal(w, SIGKILL);
        p->backend->vtable->release(p->backend, w);
        worker_free(w);
}

static void adopt_one(Pool *p, const BackendFound *f) {
        Worker *w = NULL;
        int r;

        if (worker_new(p, f->id, &w) < 0) {
                log_oom();
                return;
        }
        r = backend_adopt_place(p->backend, w, f);
        if (r < 0)
                return give_up(p, w, "its cgroup cannot be opened", r);
        r = open_main_process(w);
        if (r < 0)
                return give_up(p, w, "its main process cannot be found", r);
        r = adopt_socket(p, w);
        if (r < 0)
                return give_up(p, w, "its socket is gone from the runtime directory", r);
        r = adopt_watch(p, w);
        if (r < 0)
                return give_up(p, w, "it cannot be watched", r);
        p->adopting++;
        p->adopted++;
        log_struct(LOG_NOTICE, LOG_FIELDS(.message_id = MESSAGE_ID_ADOPT, .event = "adopt", .worker = (int) w->id),
                   "Took back worker %s (pid %d, %s %s) left by an earlier commander; waiting for its sensor",
                   WORKER_NAME(w), (int) w->pid, w->place.unit ? "scope" : "cgroup",
                   w->place.unit ?: w->place.cgroup_path);
        if (!p->reception)
                p->reception = w;
        if (p->hooks->worker_routable)
                p->hooks->worker_routable(w, p->userdata);
}

static void adoption_over(Pool *p) {
        p->adopt_timer = sd_event_source_disable_unref(p->adopt_timer);
        if (p->hooks->adopted)
                p->hooks->adopted(p, p->userdata);
}

void pool_adopt_settled(Pool *p, Worker *w) {
        if (w) {
                if (!w->awaiting_sensor)
                        return;
                w->awaiting_sensor = false;
        }
        if (p->adopting == 0 || --p->adopting > 0)
                return;
        log_info("Every worker taken back is accounted for (%llu taken back)", (unsigned long long) p->adopted);
        adoption_over(p);
}

static int on_adopt_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Pool *p = userdata;
        char span[32];

        format_timespan(span, sizeof span, p->config->adopt_timeout);
        for (size_t i = 0; i < p->n_workers; i++) {
                Worker *w = p->workers[i];

                if (!w->awaiting_sensor)
                        continue;
                w->awaiting_sensor = false;
                if (channel_is_open(w->channel)) {
                        log_warning("%s reconnected but did not announce its users within adopt_timeout=%s: users "
                                    "who lived there are placed anew on their next request", WORKER_NAME(w), span);
                        continue;
                }
                log_warning("%s's sensor did not reconnect within adopt_timeout=%s; stopping it (it is replaced "
                            "as capacity needs)", WORKER_NAME(w), span);
                pool_stop_worker(p, w, "its sensor did not reconnect after the restart");
        }
        p->adopting = 0;
        adoption_over(p);
        return 0;
}

static void warn_leftovers(Pool *p, const BackendFound *found, size_t n) {
        log_warning("%zu worker(s) of group %s outlived an earlier commander (first: %s); [pool] readopt=no, so "
                    "they are left alone: stop them by hand", n, p->group, found[0].unit ?: found[0].cgroup_path);
}

int pool_adopt(Pool *p) {
        BackendFound *found = NULL;
        size_t n = 0;
        int r;

        if (!p->backend->vtable->discover)
                return 0;
        r = p->backend->vtable->discover(p->backend, &found, &n);
        if (r < 0)
                return 0; /* logged; new workers may then clash with names in use, and fail to spawn */
        for (size_t i = 0; i < n; i++)
                p->next_worker_id = MAX(p->next_worker_id, found[i].id + 1);
        if (n > 0 && !p->config->readopt)
                warn_leftovers(p, found, n);
        for (size_t i = 0; i < n && p->config->readopt; i++)
                adopt_one(p, &found[i]);
        backend_found_free(found, n);
        if (p->adopting == 0)
                return 0;
        r = sd_event_add_time_relative(p->event, &p->adopt_timer, CLOCK_MONOTONIC, p->config->adopt_timeout,
                                       10 * USEC_PER_MSEC, on_adopt_timeout, p);
        if (r < 0)
                log_warning_errno(r, "Failed to arm adopt_timeout (%m): the workers taken back are awaited without "
                                     "a limit");
        return (int) p->adopting;
}
