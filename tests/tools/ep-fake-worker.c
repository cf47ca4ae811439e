/* SPDX-License-Identifier: MIT */
/* ep-fake-worker: a worker for the commander's tests whose readings the test dictates. It takes the
 * channel (ELASTIC_POOL_CHANNEL_FD) and the listening socket (fd 3) like any worker, says Hello, then
 * every interval sends a report whose cpu is read from a file the test writes (absent when the file
 * is empty or missing), and accepts (and closes) connections on its socket. Misbehaviours on demand:
 *
 *   --cpu-file PATH        cpu reading source (a number like 0.93; empty = absent); "%w" in PATH
 *                          stands for this worker's number (ELASTIC_POOL_WORKER)
 *   --interval DURATION    report interval (default 200ms)
 *   --no-hello             never say Hello
 *   --garbage-after N      after N reports, write undecodable bytes on the channel
 *   --oversize-after N     after N reports, announce a 1 GiB frame
 *   --silent-after N       after N reports, stop reporting (stay alive)
 *   --flood-after N        after N reports, send valid reports as fast as the channel takes them for
 *                          2 s, then write how many to FILE.flooded (FILE: the --cpu-file path)
 *   --unknown-after N      after N reports, send a 16 MiB Package of tiny unknown fields
 *   --repeated-after N     after N reports, send a Hello of 8 million packed capabilities
 *   --no-accept            never accept on the listening socket
 *   --exit-after DURATION  exit with status 3 this long after the Hello (a crash just past readiness)
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "frame.h"
#include "macro.h"
#include "parse-util.h"
#include "time-util.h"

static char cpu_path[4096];
static const char *cpu_file;
static usec_t interval = 200 * USEC_PER_MSEC;
static bool no_hello, no_accept;
static long garbage_after = -1, oversize_after = -1, silent_after = -1;
static long flood_after = -1, unknown_after = -1, repeated_after = -1;
static usec_t exit_after = USEC_INFINITY;

static int send_frame(int fd, const Frame *f) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len;
        int r;

        r = frame_encode(f, 0, &buf, &len);
        if (r < 0)
                return r;
        return loop_write(fd, buf, len);
}

static int send_hello(int fd) {
        ElasticPool__Hello h = ELASTIC_POOL__HELLO__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        const char *worker = getenv("ELASTIC_POOL_WORKER");
        uint32_t id = 0;

        if (worker)
                (void) parse_uint32(worker, &id);
        h.group = getenv("ELASTIC_POOL_GROUP");
        h.has_worker_id = true, h.worker_id = id;
        h.has_pid = true, h.pid = getpid();
        h.has_protocol_version = true, h.protocol_version = EP_PROTOCOL_VERSION;
        h.sensor_version = (char *) "fake";
        h.has_interval_usec = true, h.interval_usec = interval;
        f.body_case = ELASTIC_POOL__FRAME__BODY_HELLO;
        f.hello = &h;
        return send_frame(fd, &f);
}

static int send_report(int fd, uint64_t seq) {
        ElasticPool__OccupancyReport r = ELASTIC_POOL__OCCUPANCY_REPORT__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        char buf[64];
        double cpu;

        r.has_seq = true, r.seq = seq;
        r.has_monotonic_usec = true, r.monotonic_usec = now_usec(CLOCK_MONOTONIC);
        r.has_interval_usec = true, r.interval_usec = interval;
        if (cpu_file && read_string_at(AT_FDCWD, cpu_path, buf, sizeof buf) > 0 && parse_double(buf, &cpu) >= 0) {
                r.has_cpu = true;
                r.cpu = cpu;
                r.has_cpu_source = true;
                r.cpu_source = ELASTIC_POOL__CPU_SOURCE__CPU_SOURCE_PROCFS;
        }
        f.body_case = ELASTIC_POOL__FRAME__BODY_REPORT;
        f.report = &r;
        return send_frame(fd, &f);
}

/* A frame no encoder would make: a 4-byte length, the Frame's field `body_case` and its length, then n
 * copies of `unit` (a few bytes of wire). */
static int send_repeated(int fd, int body_case, const uint8_t *prefix, size_t prefix_len, const uint8_t *unit,
                         size_t unit_len, size_t n) {
        size_t body = prefix_len + unit_len * n, inner, size = 0;
        _cleanup_free_ uint8_t *buf = NULL;
        uint8_t *p;

        inner = 1 + 5 + body;
        buf = malloc(4 + inner);
        if (!buf)
                return -ENOMEM;
        p = buf + 4;
        p[size++] = (uint8_t) (body_case << 3 | 2);
        for (size_t v = body; ; v >>= 7) {
                p[size++] = (uint8_t) (v >= 0x80 ? (v & 0x7f) | 0x80 : v);
                if (v < 0x80)
                        break;
        }
        if (prefix_len > 0)
                memcpy(p + size, prefix, prefix_len);
        size += prefix_len;
        for (size_t i = 0; i < n; i++, size += unit_len)
                memcpy(p + size, unit, unit_len);
        buf[0] = (uint8_t) (size >> 24), buf[1] = (uint8_t) (size >> 16);
        buf[2] = (uint8_t) (size >> 8), buf[3] = (uint8_t) size;
        return loop_write(fd, buf, 4 + size);
}

/* What took a commander to 484 MB before frames were counted: 16 MiB of unknown field 99 = 0. */
static void send_unknown_fields(int fd) {
        static const uint8_t field[] = { 0x98, 0x06, 0x00 };
        (void) send_repeated(fd, ELASTIC_POOL__FRAME__BODY_PACKAGE, NULL, 0, field, sizeof field,
                             (FRAME_MAX_SIZE_DEFAULT - 16) / sizeof field);
}

/* 8 million repeated entries: capabilities, packed (field 6, one byte each). */
static void send_repeated_entries(int fd) {
        static const uint8_t one = 3;
        uint8_t prefix[6] = { 6 << 3 | 2 };
        size_t n = 8U * 1000U * 1000U, k = 1;

        for (size_t v = n; ; v >>= 7) {
                prefix[k++] = (uint8_t) (v >= 0x80 ? (v & 0x7f) | 0x80 : v);
                if (v < 0x80)
                        break;
        }
        (void) send_repeated(fd, ELASTIC_POOL__FRAME__BODY_HELLO, prefix, k, &one, 1, n);
}

static void flood(int fd, uint64_t *seq) {
        usec_t end = now_usec(CLOCK_MONOTONIC) + 2 * USEC_PER_SEC;
        uint64_t sent = 0;
        char path[4200];
        FILE *f;

        while (now_usec(CLOCK_MONOTONIC) < end && send_report(fd, ++*seq) >= 0)
                sent++;
        snprintf(path, sizeof path, "%s.flooded", cpu_path);
        f = fopen(path, "we");
        if (f) {
                fprintf(f, "%llu\n", (unsigned long long) sent);
                fclose(f);
        }
}

static int parse_args(int argc, char *argv[]) {
        enum {
                ARG_CPU_FILE = 0x100,
                ARG_INTERVAL,
                ARG_NO_HELLO,
                ARG_GARBAGE,
                ARG_OVERSIZE,
                ARG_SILENT,
                ARG_NO_ACCEPT,
                ARG_EXIT_AFTER,
                ARG_FLOOD,
                ARG_UNKNOWN,
                ARG_REPEATED,
        };
        static const struct option options[] = {
                { "cpu-file", required_argument, NULL, ARG_CPU_FILE },
                { "interval", required_argument, NULL, ARG_INTERVAL },
                { "no-hello", no_argument, NULL, ARG_NO_HELLO },
                { "garbage-after", required_argument, NULL, ARG_GARBAGE },
                { "oversize-after", required_argument, NULL, ARG_OVERSIZE },
                { "silent-after", required_argument, NULL, ARG_SILENT },
                { "no-accept", no_argument, NULL, ARG_NO_ACCEPT },
                { "exit-after", required_argument, NULL, ARG_EXIT_AFTER },
                { "flood-after", required_argument, NULL, ARG_FLOOD },
                { "unknown-after", required_argument, NULL, ARG_UNKNOWN },
                { "repeated-after", required_argument, NULL, ARG_REPEATED },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case ARG_CPU_FILE:
                        cpu_file = optarg;
                        break;
                case ARG_INTERVAL:
                        if (parse_duration(optarg, &interval) < 0 || interval == 0) {
                                fprintf(stderr, "ep-fake-worker: --interval: bad duration '%s'\n", optarg);
                                return -EINVAL;
                        }
                        break;
                case ARG_NO_HELLO:
                        no_hello = true;
                        break;
                case ARG_GARBAGE:
                        garbage_after = atol(optarg);
                        break;
                case ARG_OVERSIZE:
                        oversize_after = atol(optarg);
                        break;
                case ARG_SILENT:
                        silent_after = atol(optarg);
                        break;
                case ARG_FLOOD:
                        flood_after = atol(optarg);
                        break;
                case ARG_UNKNOWN:
                        unknown_after = atol(optarg);
                        break;
                case ARG_REPEATED:
                        repeated_after = atol(optarg);
                        break;
                case ARG_NO_ACCEPT:
                        no_accept = true;
                        break;
                case ARG_EXIT_AFTER:
                        if (parse_duration(optarg, &exit_after) < 0) {
                                fprintf(stderr, "ep-fake-worker: --exit-after: bad duration '%s'\n", optarg);
                                return -EINVAL;
                        }
                        break;
                default:
                        return -EINVAL;
                }
        return 0;
}

int main(int argc, char *argv[]) {
        const char *e = getenv("ELASTIC_POOL_CHANNEL_FD");
        uint64_t seq = 0;
        uint32_t fd = 0;
        usec_t next, exit_at;
        int chan;

        if (parse_args(argc, argv) < 0)
                return 2;
        if (cpu_file) {
                const char *w = strstr(cpu_file, "%w"), *id = getenv("ELASTIC_POOL_WORKER");
                if (w)
                        snprintf(cpu_path, sizeof cpu_path, "%.*s%s%s", (int) (w - cpu_file), cpu_file, id ? id : "0",
                                 w + 2);
                else
                        snprintf(cpu_path, sizeof cpu_path, "%s", cpu_file);
        }
        if (!e || parse_uint32(e, &fd) < 0) {
                fprintf(stderr, "ep-fake-worker: ELASTIC_POOL_CHANNEL_FD is not set\n");
                return 2;
        }
        chan = (int) fd;
        signal(SIGPIPE, SIG_IGN);
        if (!no_hello && send_hello(chan) < 0)
                return 1;
        next = now_usec(CLOCK_MONOTONIC);
        exit_at = exit_after == USEC_INFINITY ? USEC_INFINITY : next + exit_after;
        for (;;) {
                struct pollfd p[2] = {
                        { .fd = no_accept ? -1 : 3, .events = POLLIN },
                        { .fd = chan, .events = POLLIN },
                };
                usec_t now = now_usec(CLOCK_MONOTONIC), wake = MIN(next, exit_at);
                int timeout = now >= wake ? 0 : (int) ((wake - now) / USEC_PER_MSEC) + 1;

                if (poll(p, 2, timeout) < 0 && errno != EINTR)
                        return 1;
                if (now_usec(CLOCK_MONOTONIC) >= exit_at)
                        return 3;
                if (p[0].revents & POLLIN) {
                        int c = accept4(3, NULL, NULL, SOCK_CLOEXEC);
                        if (c >= 0)
                                close(c);
                }
                if (p[1].revents & (POLLIN | POLLHUP)) {
                        char buf[4096];
                        ssize_t n = read(chan, buf, sizeof buf);
                        if (n <= 0) /* the commander closed our channel: stay up without it */
                                chan = -1;
                }
                if (now_usec(CLOCK_MONOTONIC) < next || no_hello || chan < 0)
                        continue;
                next += interval;
                if (silent_after >= 0 && (long) seq >= silent_after)
                        continue;
                if (garbage_after >= 0 && (long) seq == garbage_after) {
                        static const uint8_t junk[] = { 0, 0, 0, 8, 0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa, 0xf9, 0xf8 };
                        (void) loop_write(chan, junk, sizeof junk);
                        seq++;
                        continue;
                }
                if (oversize_after >= 0 && (long) seq == oversize_after) {
                        static const uint8_t big[] = { 0x40, 0, 0, 0, 0x0a };
                        (void) loop_write(chan, big, sizeof big);
                        seq++;
                        continue;
                }
                if (flood_after >= 0 && (long) seq == flood_after) {
                        flood(chan, &seq);
                        continue;
                }
                if (unknown_after >= 0 && (long) seq == unknown_after) {
                        send_unknown_fields(chan);
                        seq++;
                        continue;
                }
                if (repeated_after >= 0 && (long) seq == repeated_after) {
                        send_repeated_entries(chan);
                        seq++;
                        continue;
                }
                if (send_report(chan, ++seq) < 0)
                        chan = -1;
        }
}
