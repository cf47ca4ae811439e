/* SPDX-License-Identifier: MIT */
/* bench-spawn-latency: the outside view of bench/spawn-latency.sh, with microsecond clocks.
 *
 *   bench-spawn-latency respawn RUNTIME_DIR COUNT [TIMEOUT_SEC]
 *       COUNT times: take the routable worker from RUNTIME_DIR/status.json, SIGKILL it through a pidfd,
 *       and wait (inotify on the directory; the commander renames a fresh status.json into place on every
 *       change) until status.json shows a routable worker of another name. Prints one line per round,
 *       "KILLED NEW MICROSECONDS": kill -> replacement routable, i.e. death seen on the pidfd + respawn
 *       decision + spawn -> routable. Run it against a commander with min_workers = max_workers = 1.
 *   bench-spawn-latency exec COUNT COMMAND [ARG...]
 *       Runs COMMAND COUNT times (posix_spawn + waitpid) and prints each run's wall time in microseconds;
 *       a run that fails stops it with exit status 1.
 *
 * status.json is read with a plain scan for the "name", "state" and "pid" members of each worker object,
 * which is all this needs; a file it cannot make sense of is waited past (the next rename replaces it).
 * Exit status: 0, 1 on a failed round (timeout, no routable worker), 2 on bad usage. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "macro.h"

extern char **environ;

typedef struct Routable {
        char name[32];
        long pid;
} Routable;

static long long mono_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long) ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* Reads the whole file into a NUL-terminated buffer; returns its length or -errno. */
static ssize_t read_file(int dirfd, const char *name, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        size_t n = 0;
        ssize_t k;

        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        while (n + 1 < size && (k = read(fd, buf + n, size - 1 - n)) > 0)
                n += (size_t) k;
        if (k < 0)
                return -errno;
        buf[n] = 0;
        return (ssize_t) n;
}

/* Copies the string value of "key":"..." found in [p, end) into out; returns a pointer past it or NULL. */
static const char *member_string(const char *p, const char *end, const char *key, char *out, size_t size) {
        char pat[64];
        const char *s, *q;

        snprintf(pat, sizeof pat, "\"%s\":\"", key);
        s = strstr(p, pat);
        if (!s || s >= end)
                return NULL;
        s += strlen(pat);
        q = strchr(s, '"');
        if (!q || q >= end || (size_t) (q - s) >= size)
                return NULL;
        memcpy(out, s, (size_t) (q - s));
        out[q - s] = 0;
        return q + 1;
}

/* The first routable worker not named `except` (NULL: any); returns 1 when found, 0 if none. */
static int find_routable(const char *json, const char *except, Routable *ret) {
        const char *p = strstr(json, "\"workers\":[");

        while (p) {
                const char *next, *end;
                char name[32], state[32];
                const char *pid;

                p = strstr(p, "{\"id\":");
                if (!p)
                        break;
                next = strstr(p + 1, "{\"id\":");
                end = next ? next : p + strlen(p);
                if (member_string(p, end, "name", name, sizeof name) &&
                    member_string(p, end, "state", state, sizeof state) && streq(state, "routable") &&
                    (!except || !streq(name, except))) {
                        pid = strstr(p, "\"pid\":");
                        if (pid && pid < end) {
                                snprintf(ret->name, sizeof ret->name, "%s", name);
                                ret->pid = strtol(pid + 6, NULL, 10);
                                return ret->pid > 0;
                        }
                }
                p = next;
        }
        return 0;
}

static int kill_by_pidfd(long pid) {
        _cleanup_close_ int pidfd = -EBADF;

        pidfd = (int) syscall(SYS_pidfd_open, (pid_t) pid, 0);
        if (pidfd < 0)
                return kill((pid_t) pid, SIGKILL) < 0 ? -errno : 0; /* kernels before 5.3 */
        return syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0 ? -errno : 0;
}

/* Waits until status.json names a routable worker other than `killed`, for at most timeout_usec. */
static int wait_replacement(int dirfd, int ino, const char *killed, long long deadline, Routable *ret) {
        static char json[1 << 20];
        char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

        for (;;) {
                struct pollfd pfd = {.fd = ino, .events = POLLIN};
                long long left = deadline - mono_usec();
                int r;

                if (read_file(dirfd, "status.json", json, sizeof json) > 0 &&
                    find_routable(json, killed, ret))
                        return 0;
                if (left <= 0)
                        return -ETIMEDOUT;
                r = poll(&pfd, 1, (int) MIN(left / 1000 + 1, (long long) INT_MAX));
                if (r < 0 && errno != EINTR)
                        return -errno;
                while (r > 0 && read(ino, ev, sizeof ev) > 0)
                        ; /* drained; the file is read again at the top */
        }
}

static int cmd_respawn(const char *dir, unsigned count, unsigned timeout_sec) {
        static char json[1 << 20];
        _cleanup_close_ int dirfd = -EBADF, ino = -EBADF;
        Routable cur, next;
        int r;

        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                fprintf(stderr, "bench-spawn-latency: cannot open %s: %s\n", dir, strerror(errno));
                return 1;
        }
        ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (ino < 0 || inotify_add_watch(ino, dir, IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
                fprintf(stderr, "bench-spawn-latency: inotify on %s: %s\n", dir, strerror(errno));
                return 1;
        }
        if (read_file(dirfd, "status.json", json, sizeof json) <= 0 || !find_routable(json, NULL, &cur)) {
                fprintf(stderr, "bench-spawn-latency: no routable worker in %s/status.json\n", dir);
                return 1;
        }
        for (unsigned i = 0; i < count; i++) {
                long long t0 = mono_usec();

                r = kill_by_pidfd(cur.pid);
                if (r < 0) {
                        fprintf(stderr, "bench-spawn-latency: cannot kill %s (pid %ld): %s\n", cur.name,
                                cur.pid, strerror(-r));
                        return 1;
                }
                r = wait_replacement(dirfd, ino, cur.name, t0 + (long long) timeout_sec * 1000000LL, &next);
                if (r < 0) {
                        fprintf(stderr, "bench-spawn-latency: no replacement for %s within %u s: %s\n",
                                cur.name, timeout_sec, strerror(-r));
                        return 1;
                }
                printf("%s %s %lld\n", cur.name, next.name, mono_usec() - t0);
                fflush(stdout);
                cur = next;
        }
        return 0;
}

static int cmd_exec(unsigned count, char **argv) {
        for (unsigned i = 0; i < count; i++) {
                long long t0 = mono_usec();
                pid_t pid;
                int status, r;

                r = posix_spawn(&pid, argv[0], NULL, NULL, argv, environ);
                if (r != 0) {
                        fprintf(stderr, "bench-spawn-latency: cannot run %s: %s\n", argv[0], strerror(r));
                        return 1;
                }
                while (waitpid(pid, &status, 0) < 0)
                        if (errno != EINTR)
                                return 1;
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                        fprintf(stderr, "bench-spawn-latency: %s failed (status 0x%x)\n", argv[0],
                                (unsigned) status);
                        return 1;
                }
                printf("%lld\n", mono_usec() - t0);
        }
        return 0;
}

static unsigned parse_count(const char *s) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno != 0 || *end || v == 0 || v > 100000) {
                fprintf(stderr, "bench-spawn-latency: bad count '%s'\n", s);
                exit(2);
        }
        return (unsigned) v;
}

int main(int argc, char **argv) {
        if (argc >= 4 && streq(argv[1], "respawn"))
                return cmd_respawn(argv[2], parse_count(argv[3]), argc >= 5 ? parse_count(argv[4]) : 30);
        if (argc >= 4 && streq(argv[1], "exec"))
                return cmd_exec(parse_count(argv[2]), argv + 3);
        fprintf(stderr, "usage: bench-spawn-latency respawn RUNTIME_DIR COUNT [TIMEOUT_SEC]\n"
                        "       bench-spawn-latency exec COUNT /ABSOLUTE/COMMAND [ARG...]\n");
        return 2;
}
