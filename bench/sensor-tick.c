/* SPDX-License-Identifier: MIT */
/* bench-sensor-tick: CPU time per sensor tick (read the kernel files, build the report, pack and send it
 * when a channel is attached), measured with CLOCK_PROCESS_CPUTIME_ID over many ticks.
 *
 *   bench-sensor-tick [--ticks N] [--fixture] [--channel] [--watch-self]
 *     BENCH_ROUNDS (3) rounds of N ticks, each printed with other% and steal% (bench-span.h), '!' when
 *     disturbed; the closing line has the medians of the undisturbed rounds
 *     --fixture     read a fixture tree (v2 leaf with memory.current, cpu.stat, PSI) instead of the real
 *                   files of this process: the library's own cost, without the kernel's
 *     --channel     attach a socketpair channel, so each tick also packs and writes its report (the bench
 *                   drains the other end; that read is counted too, making the figure an upper bound)
 *     --watch-self  follow this process as a watched tree (the wrapper's procfs fallback: a /proc scan)
 * Run it where it should measure: bench/sensor-tick.sh runs it in place, in a fresh cgroup v2 leaf, and
 * on a fixture. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench-span.h"
#include "cleanup.h"
#include "elastic-pool/sensor.h"
#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "parse-util.h"
#include "sensor-internal.h"
#include "time-util.h"

static uint64_t arg_ticks = 100000;
static bool arg_fixture = false;
static bool arg_channel = false;
static bool arg_watch_self = false;

static int write_file(const char *root, const char *rel, const char *content) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;

        if (asprintf(&path, "%s/%s", root, rel) < 0)
                return -ENOMEM;
        for (char *p = path + strlen(root) + 1; *p; p++)
                if (*p == '/') {
                        *p = 0;
                        (void) mkdir(path, 0755);
                        *p = '/';
                }
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        return loop_write(fd, content, strlen(content));
}

/* A v2 leaf as the library prefers it: every reading from one kept-open file. */
static int make_fixture(char *root) {
        static const char psi[] = "some avg10=0.25 avg60=0.10 avg300=0.05 total=123\n"
                                  "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        _cleanup_free_ char *proc = NULL, *cgroup = NULL, *self = NULL, *membership = NULL;
        char pid[16];
        int r;

        if (!mkdtemp(root))
                return -errno;
        snprintf(pid, sizeof pid, "%d", (int) getpid());
        if (asprintf(&proc, "%s/proc", root) < 0 || asprintf(&cgroup, "%s/cgroup", root) < 0 ||
            asprintf(&self, "%s/proc/self", root) < 0 || asprintf(&membership, "proc/%s/cgroup", pid) < 0)
                return -ENOMEM;
        r = write_file(root, membership, "0::/bench/w1\n");
        if (r < 0)
                return r;
        if (symlink(pid, self) < 0)
                return -errno;
        r = write_file(root, "proc/loadavg", "0.50 0.40 0.30 1/100 4242\n");
        r = r ?: write_file(root, "cgroup/unified/bench/w1/cpu.stat",
                            "usage_usec 123456789\nuser_usec 100000000\nsystem_usec 23456789\n");
        r = r ?: write_file(root, "cgroup/unified/bench/w1/memory.current", "52428800\n");
        r = r ?: write_file(root, "cgroup/unified/bench/w1/cpu.pressure", psi);
        r = r ?: write_file(root, "cgroup/unified/bench/w1/memory.pressure", psi);
        if (r < 0)
                return r;
        if (setenv("ELASTIC_POOL_PROC_ROOT", proc, 1) < 0 ||
            setenv("ELASTIC_POOL_CGROUP_ROOT", cgroup, 1) < 0)
                return -errno;
        return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path) < 0 ? -1 : 0;
}

static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "ticks", required_argument, NULL, 't' },
                { "fixture", no_argument, NULL, 'f' },
                { "channel", no_argument, NULL, 'c' },
                { "watch-self", no_argument, NULL, 'w' },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 't':
                        if (parse_uint64(optarg, &arg_ticks) < 0 || arg_ticks == 0)
                                return log_error_errno(-EINVAL, "Invalid --ticks '%s'", optarg);
                        break;
                case 'f':
                        arg_fixture = true;
                        break;
                case 'c':
                        arg_channel = true;
                        break;
                case 'w':
                        arg_watch_self = true;
                        break;
                default:
                        return -EINVAL;
                }
        return 0;
}

static const char *cpu_source(const ElasticPool__OccupancyReport *r) {
        if (!r->has_cpu_source)
                return "-";
        return r->cpu_source == ELASTIC_POOL__CPU_SOURCE__CPU_SOURCE_CGROUP2 ? "cgroup2" : "procfs";
}

static const char *memory_source(const ElasticPool__OccupancyReport *r) {
        if (!r->has_memory_source)
                return "-";
        switch (r->memory_source) {
        case ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP2:
                return "cgroup2";
        case ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP1:
                return "cgroup1";
        default:
                return "procfs";
        }
}

int main(int argc, char *argv[]) {
        char root[] = "/tmp/ep-bench-fixture.XXXXXX";
        _cleanup_close_ int drain_fd = -EBADF;
        const ElasticPool__OccupancyReport *last;
        double cpu[BENCH_ROUNDS_MAX], wall[BENCH_ROUNDS_MAX], other, steal, cpu_median;
        bool disturbed[BENCH_ROUNDS_MAX];
        unsigned rounds = bench_rounds(3);
        size_t quiet, quiet_wall;
        ep_sensor *s = NULL;
        char buf[65536];
        int r;

        log_setup("bench-sensor-tick", NULL);
        if (parse_argv(argc, argv) < 0)
                return 2;
        if (arg_fixture && (r = make_fixture(root)) < 0) {
                log_error_errno(r, "Cannot create the fixture tree: %m");
                return 1;
        }
        if (arg_channel) {
                int pair[2];
                char fd[16];

                if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
                        log_error_errno(-errno, "socketpair(): %m");
                        return 1;
                }
                drain_fd = pair[0];
                snprintf(fd, sizeof fd, "%d", pair[1]);
                setenv("ELASTIC_POOL_CHANNEL_FD", fd, 1);
        }
        r = ep_sensor_new(&s);
        if (r < 0) {
                log_error_errno(r, "Cannot create the sensor: %m");
                return 1;
        }
        if (arg_watch_self)
                (void) ep_sensor_watch_pid(s, getpid());

        /* warm up: the first ticks open files, grow buffers, send the Hello */
        for (unsigned i = 0; i < 100; i++)
                (void) sensor_tick_at(s, now_usec(CLOCK_MONOTONIC));

        for (unsigned k = 0; k < rounds; k++) {
                BenchSpan span;
                usec_t cpu0 = now_usec(CLOCK_PROCESS_CPUTIME_ID), wall0 = now_usec(CLOCK_MONOTONIC);

                bench_span_begin(&span);
                for (uint64_t i = 0; i < arg_ticks; i++) {
                        /* the clock read is part of a real tick */
                        r = sensor_tick_at(s, now_usec(CLOCK_MONOTONIC));
                        if (r < 0) {
                                log_error_errno(r, "Tick failed: %m");
                                return 1;
                        }
                        if (drain_fd >= 0 && i % 256 == 0)
                                while (recv(drain_fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
                                        ;
                }
                cpu[k] = (double) (now_usec(CLOCK_PROCESS_CPUTIME_ID) - cpu0) / (double) arg_ticks;
                wall[k] = (double) (now_usec(CLOCK_MONOTONIC) - wall0) / (double) arg_ticks;
                disturbed[k] = bench_span_end(&span, &other, &steal);
                printf("  round %u: cpu_per_tick_us=%.2f wall_per_tick_us=%.2f other%%=%.1f%s steal%%=%.1f\n", k + 1,
                       cpu[k], wall[k], other, disturbed[k] ? "!" : "", steal);
        }
        cpu_median = bench_quiet_median(cpu, disturbed, rounds, &quiet);

        last = sensor_last_report(s);
        /* the medians of the undisturbed rounds (of all when none was quiet: quiet=0) */
        printf("ticks=%llu mode=%s%s%s cpu_source=%s memory_source=%s psi=%s cpu_per_tick_us=%.2f "
               "wall_per_tick_us=%.2f quiet=%zu/%u\n",
               (unsigned long long) arg_ticks, arg_fixture ? "fixture" : "real",
               arg_channel ? "+channel" : "",
               arg_watch_self ? "+watch-self" : "", cpu_source(last), memory_source(last),
               last->pressure ? "yes" : "no",
               cpu_median, bench_quiet_median(wall, disturbed, rounds, &quiet_wall), quiet, rounds);
        ep_sensor_free(s);
        if (arg_fixture)
                (void) nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
}
