/* SPDX-License-Identifier: MIT */
/* Where each reading comes from, in order of preference:
 *
 *   cpu     cgroup v2 cpu.stat usage_usec of the worker's own cgroup; without an own cgroup (the v2 path is
 *           the root "/", whose numbers are host-wide, or the directory cannot be opened) procfs utime +
 *           stime + cutime + cstime of this process, or of the watched pid and its descendants.
 *   memory  cgroup v2 memory.current; else cgroup v1 memory.usage_in_bytes when that v1 cgroup is the
 *           worker's alone (not "/", no child cgroups, and every pid in its cgroup.procs is this process
 *           or a descendant); else procfs: the RSS sum over the own v2 cgroup's cgroup.procs, or of this
 *           process (the watched tree for the wrapper).
 *   PSI     "some avg10" of the own v2 cgroup's cpu.pressure / memory.pressure; absent without one.
 *   load    /proc/loadavg (what getloadavg(3) reads), through a kept fd.
 *
 * The sources are chosen when the files are opened. Every CGROUP_RECHECK_TICKS ticks the reader reads
 * /proc/self/cgroup again (the process may have been moved) and re-checks that a v1 memory cgroup is
 * still ours alone. A read that fails makes that reading absent for the tick, and the source stays: a
 * memory.current that fails once must not turn into a procfs number that means something else. Only when
 * the file itself vanished (ENODEV: the cgroup was removed; ENOENT) is the cgroup resolved again on the
 * next tick, which may pick another source; cpu then restarts from a new generation.
 *
 * The layout is discovered from /proc/self/cgroup and statfs() alone, not with libcgroup: this code runs
 * inside every worker process, and libcgroup's process-global mount table (cgroup_init()) is neither
 * needed for "where am I" nor something a library should impose on the application that links it. */
#include "cgroup-reading.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "kernel-parse.h"
#include "log.h"
#include "macro.h"
#include "parse-util.h"
#include "sensor-util.h"

#define PROCS_BUF_INITIAL 4096U
#define PROCS_BUF_MAX (16U * 1024U * 1024U)

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

/* Per tick: the procfs tree scan is the expensive fallback; cpu and memory share one scan. */
typedef struct TreeUsage {
        bool done;
        int error;
        uint64_t cpu_usec, rss_bytes;
} TreeUsage;

static int open_in(int dir_fd, const char *name) {
        int fd;

        if (dir_fd < 0)
                return -EBADF;
        fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        return fd < 0 ? -errno : fd;
}

static int open_dir(const char *path) {
        int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

static bool fs_is(const char *path, long magic) {
        struct statfs s;
        return statfs(path, &s) >= 0 && s.f_type == (__fsword_t) magic;
}

static bool is_dir(const char *path) {
        struct stat st;
        return stat(path, &st) >= 0 && S_ISDIR(st.st_mode);
}

static void close_cgroup(CgroupReader *r) {
        int *fds[] = { &r->v2_fd, &r->cpu_stat_fd, &r->memory_current_fd, &r->cpu_pressure_fd,
                       &r->memory_pressure_fd, &r->procs_fd, &r->v1_usage_fd, &r->v1_procs_fd };

        for (size_t i = 0; i < ELEMENTSOF(fds); i++)
                *fds[i] = safe_close(*fds[i]);
        r->v2_path = mfree(r->v2_path);
        r->v1_memory_path = mfree(r->v1_memory_path);
        r->v1_dir = mfree(r->v1_dir);
}

/* Reads a file of unknown length (cgroup.procs) into r->buf, growing it as needed. Length or -errno. */
static ssize_t read_growing(CgroupReader *r, int fd) {
        for (;;) {
                ssize_t n;
                char *p;

                if (r->buf_size == 0 || !r->buf) {
                        r->buf = malloc(PROCS_BUF_INITIAL);
                        if (!r->buf)
                                return -ENOMEM;
                        r->buf_size = PROCS_BUF_INITIAL;
                }
                n = pread_string(fd, r->buf, r->buf_size);
                if (n != -EFBIG)
                        return n;
                if (r->buf_size >= PROCS_BUF_MAX)
                        return -EFBIG;
                p = realloc(r->buf, r->buf_size * 2);
                if (!p)
                        return -ENOMEM;
                r->buf = p;
                r->buf_size *= 2;
        }
}

static int read_u64_fd(int fd, uint64_t *ret) {
        char buf[64];
        ssize_t n;

        n = pread_string(fd, buf, sizeof buf);
        if (n < 0)
                return (int) n;
        return parse_uint64(buf, ret);
}

static int read_membership(CgroupReader *r, char **ret_v2, char **ret_v1) {
        char buf[4096];
        ssize_t n;

        *ret_v2 = *ret_v1 = NULL;
        if (r->proc_fd < 0)
                return -EBADF;
        n = read_string_at(r->proc_fd, "self/cgroup", buf, sizeof buf);
        if (n < 0)
                return (int) n;
        return parse_cgroup_membership(buf, ret_v2, ret_v1);
}

/* The cgroup v2 mount: cgroup_root itself on a unified host, cgroup_root/unified on a hybrid one. A test
 * tree is not a cgroupfs, so there "unified/" existing stands in for the hybrid layout. 0 or -ENOMEM;
 * *ret is NULL when there is no v2 hierarchy. */
static int v2_mount(const CgroupReader *r, char **ret) {
        _cleanup_free_ char *unified = NULL;

        *ret = NULL;
        if (fs_is(r->cgroup_root, CGROUP2_SUPER_MAGIC))
                return (*ret = strdup(r->cgroup_root)) ? 0 : -ENOMEM;
        if (asprintf(&unified, "%s/unified", r->cgroup_root) < 0)
                return -ENOMEM;
        if (fs_is(unified, CGROUP2_SUPER_MAGIC) || (r->cgroup_root_given && is_dir(unified))) {
                *ret = TAKE_PTR(unified);
                return 0;
        }
        if (r->cgroup_root_given)
                return (*ret = strdup(r->cgroup_root)) ? 0 : -ENOMEM;
        return 0;
}

static int open_v2(CgroupReader *r) {
        _cleanup_free_ char *mount = NULL, *path = NULL;
        int k;

        /* "/" is the root cgroup: its counters cover the whole host, not this worker */
        if (!r->v2_path || streq(r->v2_path, "/"))
                return 0;
        k = v2_mount(r, &mount);
        if (k < 0 || !mount)
                return k;
        if (asprintf(&path, "%s%s", mount, r->v2_path) < 0)
                return -ENOMEM;
        r->v2_fd = open_dir(path);
        if (r->v2_fd < 0) {
                log_debug_errno(r->v2_fd, "Cannot open cgroup %s, using procfs: %m", path);
                return 0;
        }
        r->cpu_stat_fd = open_in(r->v2_fd, "cpu.stat");
        r->memory_current_fd = open_in(r->v2_fd, "memory.current");
        r->cpu_pressure_fd = open_in(r->v2_fd, "cpu.pressure");
        r->memory_pressure_fd = open_in(r->v2_fd, "memory.pressure");
        r->procs_fd = open_in(r->v2_fd, "cgroup.procs");
        return 0;
}

static int open_v1(CgroupReader *r) {
        _cleanup_free_ char *hierarchy = NULL, *path = NULL;
        _cleanup_close_ int dir_fd = -EBADF;

        if (!r->v1_memory_path || streq(r->v1_memory_path, "/"))
                return 0;
        if (asprintf(&hierarchy, "%s/memory", r->cgroup_root) < 0)
                return -ENOMEM;
        if (!r->cgroup_root_given && !fs_is(hierarchy, CGROUP_SUPER_MAGIC))
                return 0;
        if (asprintf(&path, "%s%s", hierarchy, r->v1_memory_path) < 0)
                return -ENOMEM;
        dir_fd = open_dir(path);
        if (dir_fd < 0)
                return 0;
        r->v1_usage_fd = open_in(dir_fd, "memory.usage_in_bytes");
        r->v1_procs_fd = open_in(dir_fd, "cgroup.procs");
        r->v1_dir = TAKE_PTR(path);
        return 0;
}

/* v1 memory accounting is hierarchical: a child cgroup's processes count in our usage, yet do not show in
 * our cgroup.procs. A cgroup with children is therefore not ours alone. */
static int v1_has_children(const CgroupReader *r) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;

        d = opendir(r->v1_dir);
        if (!d)
                return -errno;
        while ((errno = 0, de = readdir(d)))
                if (de->d_type == DT_DIR && !streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        return 1;
        return errno > 0 ? -errno : 0;
}

/* Whether the v1 memory cgroup holds this process and its descendants only. 1 yes, 0 no, -errno. */
static int v1_owned(CgroupReader *r) {
        bool seen_self = false;
        const char *p;
        pid_t pid;
        ssize_t n;
        int k;

        if (r->v1_usage_fd < 0 || r->v1_procs_fd < 0)
                return 0;
        k = v1_has_children(r);
        if (k != 0)
                return k < 0 ? k : 0;
        n = read_growing(r, r->v1_procs_fd);
        if (n < 0)
                return (int) n;
        p = r->buf;
        while ((k = parse_pid_list_next(&p, &pid)) > 0) {
                if (pid == r->self_pid) {
                        seen_self = true;
                        continue;
                }
                k = procfs_pid_descends_from(r->proc_fd, pid, r->self_pid);
                if (k == -ESRCH) /* exited meanwhile: shares nothing any more */
                        continue;
                if (k <= 0)
                        return k;
        }
        if (k < 0)
                return k;
        return seen_self; /* not even listed: the path we resolved is stale */
}

static ElasticPool__MemorySource choose_memory_source(CgroupReader *r) {
        if (r->memory_current_fd >= 0)
                return ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP2;
        if (v1_owned(r) > 0)
                return ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP1;
        return ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_PROCFS;
}

static const char *memory_source_name(ElasticPool__MemorySource s) {
        switch (s) {
        case ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP2:
                return "cgroup2";
        case ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP1:
                return "cgroup1";
        default:
                return "procfs";
        }
}

/* Opens everything anew for wherever /proc/self/cgroup says we are now. 0 or -ENOMEM. */
static int resolve(CgroupReader *r) {
        int k;

        close_cgroup(r);
        r->generation++;
        r->reopen = false;
        r->ticks_to_recheck = CGROUP_RECHECK_TICKS;
        r->cpu_source = ELASTIC_POOL__CPU_SOURCE__CPU_SOURCE_PROCFS;
        r->memory_source = ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_PROCFS;

        k = read_membership(r, &r->v2_path, &r->v1_memory_path);
        if (k == -ENOMEM)
                goto retry;
        k = open_v2(r);
        if (k < 0)
                goto retry;
        k = open_v1(r);
        if (k < 0)
                goto retry;
        if (r->cpu_stat_fd >= 0)
                r->cpu_source = ELASTIC_POOL__CPU_SOURCE__CPU_SOURCE_CGROUP2;
        r->memory_source = choose_memory_source(r);
        log_debug("Sensor cgroup v2 %s (%s), v1 memory %s: cpu from %s, memory from %s", strna(r->v2_path),
                  r->v2_fd >= 0 ? "own" : "none of its own", strna(r->v1_memory_path),
                  r->cpu_source == ELASTIC_POOL__CPU_SOURCE__CPU_SOURCE_CGROUP2 ? "cgroup2" : "procfs",
                  memory_source_name(r->memory_source));
        return 0;

retry:
        r->reopen = true; /* out of memory: readings stay absent and the next tick tries again */
        return k;
}

static void recheck(CgroupReader *r) {
        _cleanup_free_ char *v2 = NULL, *v1 = NULL;

        r->ticks_to_recheck = CGROUP_RECHECK_TICKS;
        if (read_membership(r, &v2, &v1) < 0)
                return;
        if (!streq_ptr(v2, r->v2_path) || !streq_ptr(v1, r->v1_memory_path)) {
                (void) resolve(r);
                return;
        }
        /* only the v1 verdict can change in place: a foreign process joined, or left */
        if (r->memory_current_fd < 0)
                r->memory_source = choose_memory_source(r);
}

/* A file of a removed cgroup answers ENODEV, a vanished one ENOENT: resolve again. Anything else is this
 * tick's bad luck. */
static void note_cgroup_failure(CgroupReader *r, int k) {
        if (k == -ENODEV || k == -ENOENT || k == -ESTALE)
                r->reopen = true;
}

static int tree_usage(CgroupReader *r, TreeUsage *t) {
        if (!t->done) {
                t->error = procfs_tree_usage(r->proc_fd, &r->table, r->watch_pid, &t->cpu_usec,
                                             &t->rss_bytes);
                t->done = true;
        }
        return t->error;
}

static void read_cpu(CgroupReader *r, TreeUsage *tree, Readings *ret) {
        uint64_t usec = 0;
        int k;

        if (r->cpu_source == ELASTIC_POOL__CPU_SOURCE__CPU_SOURCE_CGROUP2) {
                char buf[1024];
                ssize_t n = pread_string(r->cpu_stat_fd, buf, sizeof buf);

                k = n < 0 ? (int) n : parse_cpu_stat_usage(buf, &usec);
                if (k < 0)
                        note_cgroup_failure(r, k);
        } else if (r->watch_pid > 0) {
                k = tree_usage(r, tree);
                usec = tree->cpu_usec;
        } else {
                ProcStat st;

                k = procfs_read_stat_fd(r->self_stat_fd, &st);
                if (k >= 0)
                        usec = procfs_ticks_to_usec(proc_stat_cpu_ticks(&st));
        }
        if (k < 0)
                return;
        ret->has_cpu_usage = true;
        ret->cpu_usage_usec = usec;
        ret->cpu_source = r->cpu_source;
}

static int read_memory_procfs(CgroupReader *r, TreeUsage *tree, uint64_t *ret) {
        int k;

        if (r->procs_fd >= 0) { /* an own v2 cgroup without memory.current: all of its processes */
                ssize_t n = read_growing(r, r->procs_fd);
                if (n < 0) {
                        note_cgroup_failure(r, (int) n);
                        return (int) n;
                }
                return procfs_sum_rss_pid_list(r->proc_fd, r->buf, r->self_pid, r->self_statm_fd, ret);
        }
        if (r->watch_pid > 0) {
                k = tree_usage(r, tree);
                if (k < 0)
                        return k;
                *ret = tree->rss_bytes;
                return 0;
        }
        return procfs_read_rss_fd(r->self_statm_fd, ret);
}

static void read_memory(CgroupReader *r, TreeUsage *tree, Readings *ret) {
        uint64_t v = 0;
        int k;

        switch (r->memory_source) {
        case ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP2:
                k = read_u64_fd(r->memory_current_fd, &v);
                if (k < 0)
                        note_cgroup_failure(r, k);
                break;
        case ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP1:
                k = read_u64_fd(r->v1_usage_fd, &v);
                if (k < 0)
                        note_cgroup_failure(r, k);
                break;
        default:
                k = read_memory_procfs(r, tree, &v);
                break;
        }
        if (k < 0)
                return;
        ret->has_memory = true;
        ret->memory_bytes = v;
        ret->memory_source = r->memory_source;
}

static bool read_psi(int fd, double *ret) {
        char buf[256];

        if (fd < 0 || pread_string(fd, buf, sizeof buf) < 0)
                return false;
        return parse_psi_some_avg10(buf, ret) >= 0;
}

static void read_load(CgroupReader *r, Readings *ret) {
        char buf[128];

        if (r->loadavg_fd < 0 || pread_string(r->loadavg_fd, buf, sizeof buf) < 0)
                return;
        ret->has_load = parse_loadavg(buf, ret->load) >= 0;
}

void cgroup_reader_read(CgroupReader *r, Readings *ret) {
        TreeUsage tree = {};

        if (r->reopen)
                (void) resolve(r);
        else if (--r->ticks_to_recheck == 0)
                recheck(r);

        *ret = (Readings) { .generation = r->generation };
        read_cpu(r, &tree, ret);
        read_memory(r, &tree, ret);
        if (r->v2_fd >= 0) {
                ret->has_cpu_pressure = read_psi(r->cpu_pressure_fd, &ret->cpu_some_avg10);
                ret->has_memory_pressure = read_psi(r->memory_pressure_fd, &ret->memory_some_avg10);
        }
        read_load(r, ret);
}

int cgroup_reader_init(CgroupReader *r, const char *proc_root, const char *cgroup_root,
                       bool cgroup_root_given) {
        *r = (CgroupReader) {
                .cgroup_root_given = cgroup_root_given,
                .proc_fd = -EBADF,
                .self_pid = getpid(),
                .v2_fd = -EBADF,
                .cpu_stat_fd = -EBADF,
                .memory_current_fd = -EBADF,
                .cpu_pressure_fd = -EBADF,
                .memory_pressure_fd = -EBADF,
                .procs_fd = -EBADF,
                .v1_usage_fd = -EBADF,
                .v1_procs_fd = -EBADF,
                .self_stat_fd = -EBADF,
                .self_statm_fd = -EBADF,
                .loadavg_fd = -EBADF,
        };
        r->proc_root = strdup(proc_root);
        r->cgroup_root = strdup(cgroup_root);
        if (!r->proc_root || !r->cgroup_root)
                return -ENOMEM;

        r->proc_fd = open_dir(proc_root);
        if (r->proc_fd < 0)
                log_debug_errno(r->proc_fd, "Cannot open %s, procfs readings are absent: %m", proc_root);
        /* "self" resolves to the thread group, so these cover every thread of the process */
        r->self_stat_fd = open_in(r->proc_fd, "self/stat");
        r->self_statm_fd = open_in(r->proc_fd, "self/statm");
        r->loadavg_fd = open_in(r->proc_fd, "loadavg");
        return resolve(r);
}

void cgroup_reader_done(CgroupReader *r) {
        close_cgroup(r);
        r->proc_fd = safe_close(r->proc_fd);
        r->self_stat_fd = safe_close(r->self_stat_fd);
        r->self_statm_fd = safe_close(r->self_statm_fd);
        r->loadavg_fd = safe_close(r->loadavg_fd);
        r->proc_root = mfree(r->proc_root);
        r->cgroup_root = mfree(r->cgroup_root);
        r->buf = mfree(r->buf);
        r->buf_size = 0;
        proc_table_done(&r->table);
}

void cgroup_reader_watch_pid(CgroupReader *r, pid_t pid) {
        r->watch_pid = pid;
}

const char *cgroup_reader_v2_path(const CgroupReader *r) {
        return r->v2_path;
}
