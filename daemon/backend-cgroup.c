/* SPDX-License-Identifier: MIT */
/* cgroup: without systemd (containers, CI, bare hosts), each worker gets a cgroup v2 leaf under a root
 * of ours and is born in it with CLONE_INTO_CGROUP. The root is our own cgroup when it was delegated to
 * us (we then move into a "supervisor" leaf: no processes in inner nodes); when we sit in the
 * hierarchy's root we make elastic-pool-<group> there, so two groups never share a tree. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "backend.h"
#include "cleanup.h"
#include "log.h"
#include "macro.h"
#include "time-util.h"
#include "worker.h"

/* How long the exit path waits for leaves that are still emptying, all of them together. */
#define CGROUP_REMOVE_TIMEOUT (5 * USEC_PER_SEC)
/* cgroup.kill is asynchronous: a leaf empties once every process in it has exited, within milliseconds
 * usually, later for a process in uninterruptible sleep (NFS, a failing disk). A leaf still populated
 * when its worker's death is handled is retried from the loop, 10 ms doubling to 1 s: 11 attempts span
 * 5.3 s, about as long as the exit path waits. */
#define LEAF_RETRY_FIRST (10 * USEC_PER_MSEC)
#define LEAF_RETRY_MAX USEC_PER_SEC
#define LEAF_RETRY_ATTEMPTS 11U

/* A leaf being emptied: its kill was written, its rmdir() is retried. Listed in Backend.data. */
typedef struct PendingLeaf PendingLeaf;
struct PendingLeaf {
        Backend *backend;
        PendingLeaf *next;
        sd_event_source *timer;
        unsigned attempts;
        usec_t delay;
        usec_t since;
        char name[32];
};

static int open_dir(const char *mount, const char *path) {
        _cleanup_free_ char *full = NULL;
        int fd;

        if (asprintf(&full, "%s%s", mount, path) < 0)
                return -ENOMEM;
        fd = open(full, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* Write access proves nothing for root: on a host booted with systemd, root's cgroup is ours to divide
 * only when systemd delegated it (Delegate=yes), which the system manager marks with the xattr
 * trusted.delegate=1 (since v251; Debian 12 has 252). Without the mark we would rearrange a tree systemd
 * manages. Without systemd (a container, CI) whoever placed us there owns the tree; and an unprivileged
 * commander can only write to a cgroup that was delegated to it. */
static bool delegation_missing(int dir_fd) {
        char path[64], value[8];
        ssize_t n;

        if (geteuid() != 0 || sd_booted() <= 0)
                return false;
        snprintf(path, sizeof path, "/proc/self/fd/%d", dir_fd);
        n = getxattr(path, "trusted.delegate", value, sizeof value - 1);
        if (n <= 0)
                return true;
        value[n] = 0;
        return !streq(value, "1");
}

/* Our cgroup is delegated to us when it is not the hierarchy root, we may create children in it, and,
 * for root under systemd, systemd marked it delegated. */
static int pick_root(Backend *b, char **ret_root, bool *ret_delegated) {
        _cleanup_free_ char *own = NULL, *root = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        r = cgroup_pid_path(0, &own);
        if (r < 0)
                return log_error_errno(r, "Failed to read our cgroup from /proc/self/cgroup: %m");
        if (streq(own, "/")) {
                if (asprintf(&root, "/elastic-pool-%s", b->group) < 0)
                        return -ENOMEM;
                *ret_delegated = false;
                *ret_root = TAKE_PTR(root);
                return 0;
        }
        /* already inside our own supervisor leaf (a restart of ours in the same tree)? */
        size_t len = strlen(own);
        if (len > strlen("/supervisor") && streq(own + len - strlen("/supervisor"), "/supervisor"))
                own[len - strlen("/supervisor")] = 0;
        fd = open_dir(b->cgroup_mount, own);
        if (fd < 0)
                return log_error_errno(fd, "Failed to open our cgroup %s%s: %m", b->cgroup_mount, own);
        if (faccessat(fd, "cgroup.subtree_control", W_OK, 0) < 0 || faccessat(fd, ".", W_OK, 0) < 0)
                return log_error_errno(errno, "Our cgroup %s is not delegated to us (not writable): %m", own);
        if (delegation_missing(fd))
                return log_error_errno(-EPERM,
                                       "Our cgroup %s is managed by systemd and not delegated to us (no "
                                       "Delegate=yes on the unit): backend=cgroup would rearrange systemd's "
                                       "tree; use backend=scope, or Delegate=yes", own);
        *ret_delegated = true;
        *ret_root = TAKE_PTR(own);
        return 0;
}

static int enter_supervisor_leaf(Backend *b) {
        int r;

        if (mkdirat(b->root_fd, "supervisor", 0755) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Failed to create %s%s/supervisor: %m", b->cgroup_mount, b->root);
        _cleanup_close_ int fd = openat(b->root_fd, "supervisor", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = cgroup_attach_pid(fd, 0);
        if (r < 0)
                return log_error_errno(r, "Failed to move the commander into %s/supervisor: %m", b->root);
        return 0;
}

static int cgroup_init(Backend *b) {
        _cleanup_free_ char *root = NULL;
        bool delegated;
        int r;

        if (b->layout == CGROUP_LAYOUT_NONE)
                return -EOPNOTSUPP;
        if (access("/proc/self/cgroup", R_OK) < 0)
                return -errno;
        r = pick_root(b, &root, &delegated);
        if (r < 0)
                return r;
        if (!delegated) {
                _cleanup_free_ char *full = NULL;
                if (asprintf(&full, "%s%s", b->cgroup_mount, root) < 0)
                        return -ENOMEM;
                if (mkdir(full, 0755) < 0 && errno != EEXIST)
                        return log_debug_errno(errno, "Cannot create %s: %m", full);
        }
        b->root_fd = open_dir(b->cgroup_mount, root);
        if (b->root_fd < 0)
                return b->root_fd;
        if (faccessat(b->root_fd, "cgroup.kill", F_OK, 0) < 0) {
                log_notice("cgroup backend needs cgroup.kill (Linux >= 5.14), which %s%s lacks", b->cgroup_mount,
                           root);
                b->root_fd = safe_close(b->root_fd);
                return -EOPNOTSUPP;
        }
        if (delegated) {
                r = enter_supervisor_leaf(b);
                if (r < 0) {
                        b->root_fd = safe_close(b->root_fd);
                        return r;
                }
        }
        r = cgroup_enable_controllers(b->root_fd, "cpu memory pids");
        if (!cgroup_has_controller(b->root_fd, "memory") && b->config->memory_limit > 0)
                log_notice("memory_limit is not applied as memory.max: the memory controller is not available "
                           "on the unified hierarchy here (%s layout); the evaluator still uses the limit",
                           cgroup_layout_to_string(b->layout));
        b->root = TAKE_PTR(root);
        b->root_owned = !delegated;
        log_debug("cgroup backend root %s%s (%s, %d controllers delegated to leaves)", b->cgroup_mount, b->root,
                  delegated ? "delegated to us" : "made by us", MAX(r, 0));
        return 0;
}

static PendingLeaf *pending_free(PendingLeaf *p) {
        Backend *b = p->backend;

        if (b->data == p)
                b->data = p->next;
        else
                for (PendingLeaf *i = b->data; i && i->next; i = i->next)
                        if (i->next == p) {
                                i->next = p->next;
                                break;
                        }
        p->timer = sd_event_source_disable_unref(p->timer);
        free(p);
        return NULL;
}

static int on_leaf_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        PendingLeaf *p = userdata;
        Backend *b = p->backend;
        char span[32];
        int r;

        p->attempts++;
        r = cgroup_kill_and_try_remove(b->root_fd, p->name);
        if (r == 0) {
                log_debug("Removed cgroup %s%s/%s after %u attempts", b->cgroup_mount, b->root, p->name,
                          p->attempts);
                pending_free(p);
                return 0;
        }
        if (r != -EBUSY) {
                log_warning_errno(r, "Failed to remove cgroup %s%s/%s: %m", b->cgroup_mount, b->root,
                                  p->name);
                pending_free(p);
                return 0;
        }
        if (p->attempts >= LEAF_RETRY_ATTEMPTS) {
                log_warning("Gave up removing cgroup %s%s/%s: still populated %s after its processes were "
                            "killed (one stuck in the kernel?); it stays until they exit",
                            b->cgroup_mount, b->root, p->name,
                            format_timespan(span, sizeof span, now_usec(CLOCK_MONOTONIC) - p->since));
                pending_free(p);
                return 0;
        }
        p->delay = MIN(p->delay * 2, LEAF_RETRY_MAX);
        (void) sd_event_source_set_time_relative(s, p->delay);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

static int pending_add(Backend *b, const char *name) {
        _cleanup_free_ PendingLeaf *p = NULL;
        int r;

        for (PendingLeaf *i = b->data; i; i = i->next)
                if (streq(i->name, name))
                        return 0;
        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        *p = (PendingLeaf) { .backend = b, .delay = LEAF_RETRY_FIRST, .since = now_usec(CLOCK_MONOTONIC) };
        snprintf(p->name, sizeof p->name, "%s", name);
        r = sd_event_add_time_relative(b->event, &p->timer, CLOCK_MONOTONIC, p->delay, USEC_PER_MSEC,
                                       on_leaf_retry, p);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(p->timer, "cgroup-leaf-remove");
        p->next = b->data;
        b->data = TAKE_PTR(p);
        return 0;
}

/* Kills and removes a leaf without waiting on the loop: what is not gone yet is retried from a timer. */
static int remove_leaf(Backend *b, const char *name) {
        int r;

        r = cgroup_kill_and_try_remove(b->root_fd, name);
        if (r == -EBUSY) {
                int q = pending_add(b, name);
                if (q < 0)
                        log_warning_errno(q, "Failed to schedule the removal of cgroup %s%s/%s (%m); it "
                                          "stays", b->cgroup_mount, b->root, name);
                return r;
        }
        if (r < 0)
                log_warning_errno(r, "Failed to remove cgroup %s%s/%s: %m", b->cgroup_mount, b->root, name);
        return r;
}

/* On the way out the loop no longer runs: wait for the leaves still emptying, within one deadline. */
static void finish_pending(Backend *b) {
        usec_t deadline = now_usec(CLOCK_MONOTONIC) + CGROUP_REMOVE_TIMEOUT;

        while (b->data) {
                PendingLeaf *p = b->data;
                usec_t now = now_usec(CLOCK_MONOTONIC);
                int r;

                r = cgroup_kill_and_remove(b->root_fd, p->name, deadline > now ? deadline - now : 0);
                if (r < 0)
                        log_warning_errno(r, "Failed to remove cgroup %s%s/%s: %m", b->cgroup_mount, b->root,
                                          p->name);
                pending_free(p);
        }
}

static void cgroup_done(Backend *b) {
        _cleanup_free_ char *full = NULL;

        if (b->root_fd < 0 || !b->root)
                return;
        finish_pending(b);
        /* The root is ours to remove only when we made it; a delegated one belongs to whoever
         * delegated it (and still holds our supervisor leaf). */
        if (!b->root_owned)
                return;
        if (asprintf(&full, "%s%s", b->cgroup_mount, b->root) < 0)
                return;
        if (rmdir(full) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Failed to remove cgroup %s: %m", full);
}

static int cgroup_prepare(Backend *b, Worker *w, int *ret_cgroup_fd) {
        _cleanup_close_ int fd = -EBADF;
        char name[32], value[32];
        int r;

        snprintf(name, sizeof name, "w%u", w->id);
        /* a leaf left over from an earlier commander of this group: its processes are not ours. Still
         * emptying: this spawn fails (the throttle retries, under the next name) rather than wait. */
        r = remove_leaf(b, name);
        if (r == -EBUSY)
                return log_notice_errno(r, "cgroup %s%s/%s, left over, is still being emptied",
                                        b->cgroup_mount, b->root, name);
        if (mkdirat(b->root_fd, name, 0755) < 0)
                return log_error_errno(errno, "Failed to create cgroup %s%s/%s: %m", b->cgroup_mount, b->root,
                                       name);
        fd = openat(b->root_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (b->config->memory_limit > 0 && cgroup_has_controller(fd, "memory")) {
                snprintf(value, sizeof value, "%llu", (unsigned long long) b->config->memory_limit);
                r = cgroup_write_attr(fd, "memory.max", value);
                if (r < 0)
                        log_warning_errno(r, "Failed to set memory.max=%s on %s: %m", value, name);
                /* swap would hide pressure from memory.current */
                (void) cgroup_write_attr(fd, "memory.swap.max", "0");
        }
        if (asprintf(&w->place.cgroup_path, "%s/%s", b->root, name) < 0)
                return -ENOMEM;
        w->place.cgroup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (w->place.cgroup_fd < 0)
                return -errno;
        *ret_cgroup_fd = TAKE_FD(fd);
        return 0;
}

static int cgroup_attach(Backend *b, Worker *w) {
        /* Born in the leaf with CLONE_INTO_CGROUP; the spawner moved it there otherwise. */
        b->attach_done(w, 0);
        return 0;
}

static void cgroup_release(Backend *b, Worker *w) {
        char name[32];

        if (!w->place.cgroup_path)
                return;
        snprintf(name, sizeof name, "w%u", w->id);
        w->place.cgroup_fd = safe_close(w->place.cgroup_fd);
        (void) remove_leaf(b, name); /* still emptying: finished from the loop */
}

static int cgroup_oom_kills(Backend *b, Worker *w, uint64_t *ret) {
        if (w->place.cgroup_fd < 0)
                return -ENODATA;
        int r = cgroup_read_keyed(w->place.cgroup_fd, "memory.events", "oom_kill", ret);
        return r == -ENOENT ? -ENODATA : r;
}

/* Leaves w<N> under our root that still hold processes: workers of an earlier commander of this group
 * (re-adoption). Empty ones are removed as prepare() would. */
static int cgroup_discover(Backend *b, BackendFound **ret, size_t *ret_n) {
        _cleanup_close_ int dfd = -EBADF;
        BackendFound *found = NULL;
        struct dirent *de;
        size_t n = 0;
        DIR *d;
        int r = 0;

        dfd = openat(b->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        d = fdopendir(dfd);
        if (!d)
                return -errno;
        TAKE_FD(dfd);
        while ((de = readdir(d))) {
                _cleanup_close_ int fd = -EBADF;
                unsigned id;
                char tail;

                if (de->d_type != DT_DIR || sscanf(de->d_name, "w%u%c", &id, &tail) != 1)
                        continue;
                fd = openat(b->root_fd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                if (cgroup_is_empty(fd)) {
                        (void) remove_leaf(b, de->d_name);
                        continue;
                }
                BackendFound *a = reallocarray(found, n + 1, sizeof *a);
                if (!a) {
                        r = -ENOMEM;
                        break;
                }
                found = a;
                size_t i = n++;
                for (; i > 0 && a[i - 1].id > id; i--)
                        a[i] = a[i - 1];
                a[i] = (BackendFound) { .id = id };
                if (asprintf(&a[i].cgroup_path, "%s/%s", b->root, de->d_name) < 0) {
                        a[i].cgroup_path = NULL;
                        r = -ENOMEM;
                        break;
                }
        }
        closedir(d);
        if (r < 0) {
                backend_found_free(found, n);
                return r;
        }
        *ret = found;
        *ret_n = n;
        return 0;
}

const BackendVTable backend_cgroup_vtable = {
        .kind = BACKEND_CGROUP,
        .init = cgroup_init,
        .done = cgroup_done,
        .prepare = cgroup_prepare,
        .attach = cgroup_attach,
        .release = cgroup_release,
        .oom_kills = cgroup_oom_kills,
        .discover = cgroup_discover,
};
