/* SPDX-License-Identifier: MIT */
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "macro.h"
#include "time-util.h"

const char *cgroup_layout_to_string(CgroupLayout l) {
        static const char *const table[_CGROUP_LAYOUT_MAX] = {
                [CGROUP_LAYOUT_NONE] = "none",
                [CGROUP_LAYOUT_UNIFIED] = "unified",
                [CGROUP_LAYOUT_HYBRID] = "hybrid",
        };
        return l >= 0 && l < _CGROUP_LAYOUT_MAX ? table[l] : NULL;
}

static bool is_cgroup2(const char *path) {
        struct statfs fs;

        return statfs(path, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

int cgroup_detect(const char *sys_fs_cgroup, CgroupLayout *ret_layout, char **ret_mount) {
        _cleanup_free_ char *unified = NULL;
        char *m;

        if (is_cgroup2(sys_fs_cgroup)) {
                m = strdup(sys_fs_cgroup);
                if (!m)
                        return -ENOMEM;
                *ret_layout = CGROUP_LAYOUT_UNIFIED;
                *ret_mount = m;
                return 0;
        }
        if (asprintf(&unified, "%s/unified", sys_fs_cgroup) < 0)
                return -ENOMEM;
        if (is_cgroup2(unified)) {
                *ret_layout = CGROUP_LAYOUT_HYBRID;
                *ret_mount = TAKE_PTR(unified);
                return 0;
        }
        *ret_layout = CGROUP_LAYOUT_NONE;
        *ret_mount = NULL;
        return 0;
}

int cgroup_pid_path(pid_t pid, char **ret_path) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        char proc[64];
        size_t n = 0;

        if (pid == 0)
                snprintf(proc, sizeof proc, "/proc/self/cgroup");
        else
                snprintf(proc, sizeof proc, "/proc/%d/cgroup", (int) pid);
        f = fopen(proc, "re");
        if (!f)
                return -errno;
        while (getline(&line, &n, f) > 0) {
                const char *p = startswith(line, "0::");
                char *copy;

                if (!p)
                        continue;
                copy = strndup(p, strcspn(p, "\n"));
                if (!copy)
                        return -ENOMEM;
                *ret_path = copy;
                return 0;
        }
        return -ENODATA;
}

int cgroup_write_attr(int dir_fd, const char *attr, const char *value) {
        _cleanup_close_ int fd = -EBADF;
        size_t len = strlen(value);
        ssize_t n;

        fd = openat(dir_fd, attr, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        /* one write(): cgroup files take a value per write call */
        n = write(fd, value, len);
        if (n < 0)
                return -errno;
        return (size_t) n == len ? 0 : -EIO;
}

int cgroup_read_keyed(int dir_fd, const char *file, const char *key, uint64_t *ret) {
        char buf[4096];
        size_t klen = strlen(key);
        ssize_t n;

        n = read_string_at(dir_fd, file, buf, sizeof buf);
        if (n < 0)
                return (int) n;
        for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                if (strncmp(line, key, klen) != 0 || line[klen] != ' ')
                        continue;
                char *end;
                errno = 0;
                unsigned long long v = strtoull(line + klen + 1, &end, 10);
                if (errno != 0 || end == line + klen + 1)
                        return -EBADMSG;
                *ret = v;
                return 0;
        }
        return -ENODATA;
}

bool cgroup_has_controller(int dir_fd, const char *controller) {
        char buf[512];
        size_t len = strlen(controller);

        if (len == 0) /* strstr() would match "" everywhere without ever advancing */
                return false;
        if (read_string_at(dir_fd, "cgroup.controllers", buf, sizeof buf) < 0)
                return false;
        for (const char *p = buf; (p = strstr(p, controller)); p += len)
                if ((p == buf || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\n' || p[len] == 0))
                        return true;
        return false;
}

int cgroup_enable_controllers(int dir_fd, const char *wanted) {
        _cleanup_free_ char *copy = strdup(wanted);
        char *save = NULL;
        int enabled = 0;

        if (!copy)
                return -ENOMEM;
        for (char *c = strtok_r(copy, " ", &save); c; c = strtok_r(NULL, " ", &save)) {
                char value[64];

                if (!cgroup_has_controller(dir_fd, c))
                        continue;
                snprintf(value, sizeof value, "+%s", c);
                if (cgroup_write_attr(dir_fd, "cgroup.subtree_control", value) >= 0)
                        enabled++;
        }
        return enabled;
}

int cgroup_attach_pid(int dir_fd, pid_t pid) {
        char value[32];

        snprintf(value, sizeof value, "%d", (int) pid);
        return cgroup_write_attr(dir_fd, "cgroup.procs", value);
}

bool cgroup_is_empty(int dir_fd) {
        uint64_t populated;

        return cgroup_read_keyed(dir_fd, "cgroup.events", "populated", &populated) >= 0 && populated == 0;
}

/* The kernel announces "populated 0" with a modify event on cgroup.events: wait for that instead of
 * polling the file. */
static int wait_empty(int dir_fd, uint64_t timeout_usec) {
        _cleanup_close_ int ino = -EBADF;
        char path[64];
        usec_t deadline = now_usec(CLOCK_MONOTONIC) + timeout_usec;

        ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (ino < 0)
                return -errno;
        snprintf(path, sizeof path, "/proc/self/fd/%d/cgroup.events", dir_fd);
        if (inotify_add_watch(ino, path, IN_MODIFY) < 0)
                return -errno;
        for (;;) {
                char buf[4096];
                usec_t now;
                struct pollfd pfd = { .fd = ino, .events = POLLIN };

                if (cgroup_is_empty(dir_fd))
                        return 0;
                now = now_usec(CLOCK_MONOTONIC);
                if (now >= deadline)
                        return -EBUSY;
                if (poll(&pfd, 1, (int) ((deadline - now + 999) / 1000)) < 0 && errno != EINTR)
                        return -errno;
                (void) !read(ino, buf, sizeof buf);
        }
}

int cgroup_kill_and_try_remove(int parent_fd, const char *name) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!cgroup_is_empty(fd)) {
                /* again on every call: harmless on a leaf already dying, and it catches a process that
                 * was moved in since */
                r = cgroup_write_attr(fd, "cgroup.kill", "1");
                if (r < 0)
                        return r;
                /* the kill is asynchronous: usually not empty yet at this point, so say so now instead
                 * of paying for an rmdir() that fails */
                if (!cgroup_is_empty(fd))
                        return -EBUSY;
        }
        /* EBUSY too while the kernel still holds on to exiting tasks: the caller tries again */
        if (unlinkat(parent_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int cgroup_kill_and_remove(int parent_fd, const char *name, uint64_t timeout_usec) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        r = cgroup_kill_and_try_remove(parent_fd, name);
        if (r != -EBUSY)
                return r;
        fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        r = wait_empty(fd, timeout_usec);
        if (r < 0)
                return r;
        return cgroup_kill_and_try_remove(parent_fd, name);
}
