/* SPDX-License-Identifier: MIT */
#include "procfs-reading.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "macro.h"
#include "parse-util.h"

/* A parent chain longer than this is not a process tree we care about (and guards against a loop in a
 * hand-made fixture). */
#define ANCESTRY_MAX 128U

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

void proc_table_done(ProcTable *t) {
        free(t->entries);
        *t = (ProcTable) {};
}

uint64_t procfs_ticks_to_usec(uint64_t ticks) {
        long hz = sysconf(_SC_CLK_TCK); /* glibc answers from the auxiliary vector: cheap */
        uint64_t h = hz > 0 ? (uint64_t) hz : 100;

        return ticks / h * 1000000ULL + ticks % h * 1000000ULL / h;
}

uint64_t proc_stat_cpu_ticks(const ProcStat *st) {
        return st->utime + st->stime + st->cutime + st->cstime;
}

/* A process that exited between listing and reading shows up as ENOENT (or ESRCH on an fd kept open). */
static int gone_is_esrch(int r) {
        return r == -ENOENT || r == -ESRCH ? -ESRCH : r;
}

int procfs_read_stat_fd(int fd, ProcStat *ret) {
        char buf[2048];
        ssize_t n;

        n = pread_string(fd, buf, sizeof buf);
        if (n < 0)
                return gone_is_esrch((int) n);
        return parse_proc_stat(buf, ret);
}

static int open_pid_file(int proc_fd, pid_t pid, const char *name) {
        char path[48];
        int fd;

        snprintf(path, sizeof path, "%d/%s", (int) pid, name);
        fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        return fd < 0 ? gone_is_esrch(-errno) : fd;
}

int procfs_read_stat(int proc_fd, pid_t pid, ProcStat *ret) {
        _cleanup_close_ int fd = -EBADF;

        fd = open_pid_file(proc_fd, pid, "stat");
        if (fd < 0)
                return fd;
        return procfs_read_stat_fd(fd, ret);
}

int procfs_read_rss_fd(int fd, uint64_t *ret_bytes) {
        char buf[256];
        uint64_t pages;
        ssize_t n;
        int r;

        n = pread_string(fd, buf, sizeof buf);
        if (n < 0)
                return gone_is_esrch((int) n);
        r = parse_statm_resident(buf, &pages);
        if (r < 0)
                return r;
        *ret_bytes = pages * (uint64_t) sysconf(_SC_PAGESIZE);
        return 0;
}

int procfs_read_rss(int proc_fd, pid_t pid, uint64_t *ret_bytes) {
        _cleanup_close_ int fd = -EBADF;

        fd = open_pid_file(proc_fd, pid, "statm");
        if (fd < 0)
                return fd;
        return procfs_read_rss_fd(fd, ret_bytes);
}

int procfs_pid_descends_from(int proc_fd, pid_t pid, pid_t ancestor) {
        for (unsigned depth = 0; depth < ANCESTRY_MAX; depth++) {
                ProcStat st;
                int r;

                if (pid == ancestor)
                        return 1;
                if (pid <= 1)
                        return 0;
                r = procfs_read_stat(proc_fd, pid, &st);
                if (r == -ESRCH)
                        /* pid itself gone: say so; an ancestor gone mid-walk means pid was reparented
                         * away from whatever it descended from, so it is not ours */
                        return depth == 0 ? -ESRCH : 0;
                if (r < 0)
                        return r;
                pid = st.ppid;
        }
        return 0;
}

int procfs_sum_rss_pid_list(int proc_fd, const char *pids, pid_t kept_pid, int kept_fd,
                            uint64_t *ret_bytes) {
        uint64_t sum = 0;
        unsigned counted = 0;
        pid_t pid;
        int r;

        while ((r = parse_pid_list_next(&pids, &pid)) > 0) {
                uint64_t rss;

                if (pid == kept_pid && kept_fd >= 0)
                        r = procfs_read_rss_fd(kept_fd, &rss);
                else
                        r = procfs_read_rss(proc_fd, pid, &rss);
                if (r == -ESRCH)
                        continue;
                if (r < 0)
                        return r;
                sum += rss;
                counted++;
        }
        if (r < 0)
                return r;
        if (counted == 0)
                return -ENOENT;
        *ret_bytes = sum;
        return 0;
}

static int table_append(ProcTable *t, const ProcEntry *e) {
        if (t->n == t->allocated) {
                size_t n = MAX(t->allocated * 2, (size_t) 256);
                ProcEntry *p = reallocarray(t->entries, n, sizeof *p);
                if (!p)
                        return -ENOMEM;
                t->entries = p;
                t->allocated = n;
        }
        t->entries[t->n++] = *e;
        return 0;
}

static int pid_from_name(const char *name, pid_t *ret) {
        uint32_t v;

        if (name[0] < '1' || name[0] > '9') /* ".", "self", "sys", ...; no pid starts with 0 */
                return -EINVAL;
        if (parse_uint32(name, &v) < 0 || v > INT32_MAX)
                return -EINVAL;
        *ret = (pid_t) v;
        return 0;
}

static int table_scan(int proc_fd, ProcTable *t) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        int fd;

        fd = openat(proc_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -errno;
        }
        t->n = 0;
        while ((errno = 0, de = readdir(d))) {
                ProcEntry e = {};
                ProcStat st;
                int r;

                if (pid_from_name(de->d_name, &e.pid) < 0)
                        continue;
                r = procfs_read_stat(proc_fd, e.pid, &st);
                if (r == -ESRCH)
                        continue;
                if (r < 0)
                        return r;
                e.ppid = st.ppid;
                e.cpu_ticks = proc_stat_cpu_ticks(&st);
                r = table_append(t, &e);
                if (r < 0)
                        return r;
        }
        return errno > 0 ? -errno : 0;
}

static int entry_compare(const void *a, const void *b) {
        pid_t x = ((const ProcEntry *) a)->pid, y = ((const ProcEntry *) b)->pid;
        return (x > y) - (x < y);
}

static ProcEntry *table_find(ProcTable *t, pid_t pid) {
        ProcEntry key = { .pid = pid };
        return bsearch(&key, t->entries, t->n, sizeof key, entry_compare);
}

/* Marks root and its descendants. Parents usually have lower pids than their children, so with the table
 * sorted one pass mostly suffices; more passes settle the rest (pid wrap-around). */
static void table_mark_tree(ProcTable *t, ProcEntry *root) {
        bool changed = true;

        for (size_t i = 0; i < t->n; i++)
                t->entries[i].in_tree = false;
        root->in_tree = true;
        while (changed) {
                changed = false;
                for (size_t i = 0; i < t->n; i++) {
                        ProcEntry *e = &t->entries[i], *parent;

                        if (e->in_tree)
                                continue;
                        parent = table_find(t, e->ppid);
                        if (parent && parent->in_tree) {
                                e->in_tree = true;
                                changed = true;
                        }
                }
        }
}

int procfs_tree_usage(int proc_fd, ProcTable *t, pid_t root, uint64_t *ret_cpu_usec,
                      uint64_t *ret_rss_bytes) {
        uint64_t ticks = 0, rss_sum = 0;
        ProcEntry *r_entry;
        int r;

        r = table_scan(proc_fd, t);
        if (r < 0)
                return r;
        qsort(t->entries, t->n, sizeof *t->entries, entry_compare);
        r_entry = table_find(t, root);
        if (!r_entry)
                return -ESRCH;
        table_mark_tree(t, r_entry);

        for (size_t i = 0; i < t->n; i++) {
                uint64_t rss;

                if (!t->entries[i].in_tree)
                        continue;
                /* Each live process adds its own time and that of the children it reaped; a dead child is
                 * thus counted once, in its parent. */
                ticks += t->entries[i].cpu_ticks;
                r = procfs_read_rss(proc_fd, t->entries[i].pid, &rss);
                if (r == -ESRCH)
                        continue;
                if (r < 0)
                        return r;
                rss_sum += rss;
        }
        *ret_cpu_usec = procfs_ticks_to_usec(ticks);
        *ret_rss_bytes = rss_sum;
        return 0;
}
