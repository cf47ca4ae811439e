/* SPDX-License-Identifier: MIT */
/* libcgroup-probe: the measurements of docs/dependencies.md ("libcgroup"), for a pure cgroup v2 host (the
 * VM guest of tests/vm, where tests/vm/payload runs it as root). Prints key=value lines:
 *   - cgroup_init(): its result and its cost (each in a fresh child, since it runs once per process),
 *     beside a statfs() of /sys/fs/cgroup, the question the daemon asks instead;
 *   - the mount point it reports for memory and cpu;
 *   - cgroup_get_current_controller_path() for this process and for PID (argv[1], a worker in a scope),
 *     with and without a controller, beside the 0:: line of /proc/PID/cgroup;
 *   - a leaf with memory.max made by cgroup_create_cgroup() under a new parent: whether the parent got
 *     +memory in cgroup.subtree_control and the leaf the limit, and what it cost, beside the same done by
 *     hand (mkdir, write, mkdir, write), which is what daemon/cgroup.c does.
 * Not a unit or integration test: a tool run in the guest, its figures recorded by hand. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 21
#define ROOT "/sys/fs/cgroup"

static double now_us(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return (x > y) - (x < y);
}

static void print_stats(const char *key, double *v, int n) {
        qsort(v, n, sizeof(double), cmp_double);
        printf("%s_us=min %.1f median %.1f max %.1f (n=%d)\n", key, v[0], v[n / 2], v[n - 1], n);
}

/* cgroup_init() in a fresh child each round: its cost in microseconds through a pipe. */
static void measure_init(void) {
        double v[ROUNDS];
        int last = 0;

        for (int i = 0; i < ROUNDS; i++) {
                int p[2];

                if (pipe2(p, O_CLOEXEC) < 0)
                        exit(2);
                pid_t pid = fork();
                if (pid == 0) {
                        double t = now_us();
                        int r = cgroup_init();
                        double out[2] = { now_us() - t, r };

                        (void) !write(p[1], out, sizeof(out));
                        _exit(0);
                }
                double in[2] = { -1, -1 };
                close(p[1]);
                (void) !read(p[0], in, sizeof(in));
                close(p[0]);
                waitpid(pid, NULL, 0);
                v[i] = in[0];
                last = (int) in[1];
        }
        printf("cgroup_init=%d (%s)\n", last, last ? cgroup_strerror(last) : "ok");
        print_stats("cgroup_init", v, ROUNDS);

        bool v2 = true;
        for (int i = 0; i < ROUNDS; i++) {
                struct statfs s;
                double t = now_us();

                if (statfs(ROOT, &s) < 0 || s.f_type != CGROUP2_SUPER_MAGIC)
                        v2 = false;
                v[i] = now_us() - t;
        }
        printf("statfs_cgroup2=%s\n", v2 ? "yes" : "no");
        print_stats("statfs", v, ROUNDS);
}

static void print_proc_cgroup(pid_t pid) {
        char path[64], line[4096];
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "0::", 3) == 0)
                        printf("proc_cgroup[%d]=%s", (int) pid, line + 3);
        fclose(f);
}

static void current_path(pid_t pid) {
        const char *controllers[] = { NULL, "memory", "cpu" };

        print_proc_cgroup(pid);
        for (size_t i = 0; i < sizeof(controllers) / sizeof(controllers[0]); i++) {
                char *p = NULL;
                double t = now_us();
                int r = cgroup_get_current_controller_path(pid, controllers[i], &p);

                double us = now_us() - t;

                /* ECGOTHER (50016) means "see cgroup_get_last_errno()" */
                printf("current_path[%d,%s]=%d (%s, last errno %d) %s in %.1f us\n", (int) pid,
                       controllers[i] ? controllers[i] : "NULL", r, r ? cgroup_strerror(r) : "ok",
                       r ? cgroup_get_last_errno() : 0, p ? p : "-", us);
                free(p);
        }
}

static int read_file(const char *path, char *buf, size_t size) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        close(fd);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        buf[strcspn(buf, "\n")] = 0;
        return 0;
}

static int write_file(const char *path, const char *s) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = write(fd, s, strlen(s));
        close(fd);
        return n < 0 ? -errno : 0;
}

static void report_leaf(const char *how, const char *parent, double us) {
        char path[256], buf[256];

        snprintf(path, sizeof(path), ROOT "/%s/cgroup.subtree_control", parent);
        printf("%s_parent_subtree_control=%s\n", how, read_file(path, buf, sizeof(buf)) < 0 ? "(unreadable)" : buf);
        snprintf(path, sizeof(path), ROOT "/%s/leaf/memory.max", parent);
        printf("%s_leaf_memory_max=%s\n", how, read_file(path, buf, sizeof(buf)) < 0 ? "(missing)" : buf);
        printf("%s_create_us=%.1f\n", how, us);
}

static void leaf_libcgroup(void) {
        const char *parent = "ep-libcgroup-probe";
        struct cgroup *cg, *pcg;
        struct cgroup_controller *c;
        double t;
        int r;

        if (cgroup_init() != 0)
                return;
        t = now_us();
        cg = cgroup_new_cgroup("ep-libcgroup-probe/leaf");
        c = cg ? cgroup_add_controller(cg, "memory") : NULL;
        r = c ? cgroup_add_value_string(c, "memory.max", "67108864") : ECGFAIL;
        if (r == 0)
                r = cgroup_create_cgroup(cg, 0);
        t = now_us() - t;
        printf("libcgroup_create=%d (%s)\n", r, r ? cgroup_strerror(r) : "ok");
        report_leaf("libcgroup", parent, t);
        if (cg) {
                r = cgroup_delete_cgroup(cg, 0);
                printf("libcgroup_delete_leaf=%d (%s)\n", r, r ? cgroup_strerror(r) : "ok");
                cgroup_free(&cg);
        }
        pcg = cgroup_new_cgroup(parent);
        if (pcg && cgroup_add_controller(pcg, "memory")) {
                r = cgroup_delete_cgroup(pcg, 0);
                printf("libcgroup_delete_parent=%d (%s)\n", r, r ? cgroup_strerror(r) : "ok");
        }
        cgroup_free(&pcg);
        /* whatever it left, gone: the probe leaves nothing behind */
        (void) rmdir(ROOT "/ep-libcgroup-probe/leaf");
        (void) rmdir(ROOT "/ep-libcgroup-probe");
}

static void leaf_direct(void) {
        double t = now_us();
        int r = 0;

        if (mkdir(ROOT "/ep-direct-probe", 0755) < 0)
                r = -errno;
        if (r == 0)
                r = write_file(ROOT "/ep-direct-probe/cgroup.subtree_control", "+memory");
        if (r == 0 && mkdir(ROOT "/ep-direct-probe/leaf", 0755) < 0)
                r = -errno;
        if (r == 0)
                r = write_file(ROOT "/ep-direct-probe/leaf/memory.max", "67108864");
        t = now_us() - t;
        printf("direct_create=%d (%s)\n", r, r ? strerror(-r) : "ok");
        report_leaf("direct", "ep-direct-probe", t);
        (void) rmdir(ROOT "/ep-direct-probe/leaf");
        (void) rmdir(ROOT "/ep-direct-probe");
}

int main(int argc, char **argv) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        measure_init();
        if (cgroup_init() == 0) {
                const char *controllers[] = { "memory", "cpu", "pids" };

                for (size_t i = 0; i < 3; i++) {
                        char *mp = NULL;
                        int r = cgroup_get_subsys_mount_point(controllers[i], &mp);

                        printf("mount_point[%s]=%d %s\n", controllers[i], r, mp ? mp : "-");
                        free(mp);
                }
        }
        current_path(getpid());
        if (argc > 1)
                current_path((pid_t) atoi(argv[1]));
        struct statfs st;
        if (statfs(ROOT, &st) < 0 || st.f_type != CGROUP2_SUPER_MAGIC) {
                printf("leaves=skipped (" ROOT " is no cgroup2 mount: not a pure cgroup v2 host)\n");
                return 0;
        }
        leaf_libcgroup();
        leaf_direct();
        return 0;
}
