/* SPDX-License-Identifier: MIT */
#include "test-sensor-util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "fd-util.h"
#include "macro.h"

void fixture_setup(Fixture *f) {
        _cleanup_free_ char *link = NULL;
        char tmpl[] = "/tmp/ep-sensor-fixture.XXXXXX";
        char pid_dir[32];

        assert_non_null(mkdtemp(tmpl));
        f->root = strdup(tmpl);
        assert_non_null(f->root);
        assert_true(asprintf(&f->proc, "%s/proc", f->root) > 0);
        assert_true(asprintf(&f->cgroup, "%s/cgroup", f->root) > 0);
        assert_int_equal(mkdir(f->proc, 0755), 0);
        assert_int_equal(mkdir(f->cgroup, 0755), 0);
        /* like the real thing: self is a link to our own pid's directory */
        snprintf(pid_dir, sizeof pid_dir, "%d", (int) getpid());
        assert_true(asprintf(&link, "%s/self", f->proc) > 0);
        assert_int_equal(symlink(pid_dir, link), 0);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path) < 0 ? -1 : 0;
}

void fixture_teardown(Fixture *f) {
        if (f->root)
                (void) nftw(f->root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        free(f->root);
        free(f->proc);
        free(f->cgroup);
        *f = (Fixture) {};
}

/* mkdir -p of root/rel */
void fixture_mkdir(const Fixture *f, const char *rel) {
        _cleanup_free_ char *path = NULL;

        assert_true(asprintf(&path, "%s/%s", f->root, rel) > 0);
        for (char *p = path + strlen(f->root) + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = 0;
                assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
                *p = '/';
        }
        assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

void fixture_remove(const Fixture *f, const char *rel) {
        _cleanup_free_ char *path = NULL;

        assert_true(asprintf(&path, "%s/%s", f->root, rel) > 0);
        assert_int_equal(remove(path), 0);
}

void fixture_write(const Fixture *f, const char *rel, const char *format, ...) {
        _cleanup_free_ char *path = NULL, *content = NULL, *dir = NULL;
        _cleanup_close_ int fd = -EBADF;
        va_list ap;
        char *slash;
        int n;

        dir = strdup(rel);
        assert_non_null(dir);
        slash = strrchr(dir, '/');
        if (slash) {
                *slash = 0;
                fixture_mkdir(f, dir);
        }
        va_start(ap, format);
        n = vasprintf(&content, format, ap);
        va_end(ap);
        assert_true(n >= 0);
        assert_true(asprintf(&path, "%s/%s", f->root, rel) > 0);
        /* O_TRUNC keeps the inode: a reader holding the file open sees the new content, as with a kernel
         * file that changed between two preads */
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, content, (size_t) n), 0);
}

void fixture_process(const Fixture *f, pid_t pid, pid_t ppid, uint64_t utime, uint64_t stime,
                     uint64_t cutime, uint64_t cstime, uint64_t resident_pages) {
        char rel[64];

        snprintf(rel, sizeof rel, "proc/%d/stat", (int) pid);
        /* a command name with a space and a parenthesis, as real ones can have */
        fixture_write(f, rel,
                      "%d (fake (worker) 1) S %d %d %d 0 -1 4194560 100 0 0 0 %llu %llu %llu %llu 20 0 1 0 "
                      "12345 1000000 250 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
                      (int) pid, (int) ppid, (int) pid, (int) pid, (unsigned long long) utime,
                      (unsigned long long) stime, (unsigned long long) cutime, (unsigned long long) cstime);
        snprintf(rel, sizeof rel, "proc/%d/statm", (int) pid);
        fixture_write(f, rel, "10000 %llu 100 10 0 500 0\n", (unsigned long long) resident_pages);
}

void fixture_export(const Fixture *f) {
        assert_int_equal(setenv("ELASTIC_POOL_PROC_ROOT", f->proc, 1), 0);
        assert_int_equal(setenv("ELASTIC_POOL_CGROUP_ROOT", f->cgroup, 1), 0);
}

void sensor_env_reset(void) {
        static const char *const vars[] = {
                "ELASTIC_POOL_CHANNEL_FD", "ELASTIC_POOL_CHANNEL",   "ELASTIC_POOL_GROUP",
                "ELASTIC_POOL_WORKER",     "ELASTIC_POOL_INTERVAL",  "ELASTIC_POOL_PROC_ROOT",
                "ELASTIC_POOL_CGROUP_ROOT", "ELASTIC_POOL_BURST_QUEUE",
        };

        for (size_t i = 0; i < ELEMENTSOF(vars); i++)
                (void) unsetenv(vars[i]);
}

ep_sensor *commander_start(Commander *c, const char *interval) {
        ep_sensor *s = NULL;
        char buf[16];
        int pair[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
        c->fd = pair[0];
        frame_decoder_init(&c->decoder, 0);
        snprintf(buf, sizeof buf, "%d", pair[1]);
        assert_int_equal(setenv("ELASTIC_POOL_CHANNEL_FD", buf, 1), 0);
        if (interval)
                assert_int_equal(setenv("ELASTIC_POOL_INTERVAL", interval, 1), 0);
        assert_int_equal(ep_sensor_new(&s), 0);
        return s;
}

void commander_done(Commander *c) {
        c->fd = safe_close(c->fd);
        frame_decoder_done(&c->decoder);
}

static int poll_ms(usec_t deadline) {
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (deadline <= now)
                return 0;
        return (int) MIN((deadline - now) / USEC_PER_MSEC + 1, (usec_t) INT_MAX);
}

/* One round: waits for fd (the commander's end, or its listening socket) or the sensor, drives the
 * sensor. */
static void round_once(int fd, ep_sensor *s, usec_t deadline) {
        struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = -1 } };
        usec_t wake = deadline;

        if (s) {
                uint64_t t;
                p[1].fd = ep_sensor_get_fd(s);
                p[1].events = (short) ep_sensor_get_events(s);
                if (ep_sensor_get_timeout(s, &t) == 0)
                        wake = MIN(wake, t);
        }
        (void) poll(p, 2, poll_ms(wake));
        if (s)
                assert_int_equal(ep_sensor_dispatch(s), 0);
}

int commander_listen(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        assert_true(strlen(path) < sizeof sa.sun_path);
        memcpy(sa.sun_path, path, strlen(path) + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *) &sa, sizeof sa), 0);
        assert_int_equal(listen(fd, 8), 0);
        return fd;
}

bool commander_accept(Commander *c, int listen_fd, ep_sensor *s, usec_t timeout) {
        usec_t deadline = now_usec(CLOCK_MONOTONIC) + timeout;

        while (now_usec(CLOCK_MONOTONIC) < deadline) {
                int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

                if (fd >= 0) {
                        c->fd = fd;
                        frame_decoder_init(&c->decoder, 0);
                        return true;
                }
                assert_true(errno == EAGAIN || errno == EINTR);
                round_once(listen_fd, s, deadline);
        }
        return false;
}

Frame *commander_next(Commander *c, ep_sensor *s, usec_t timeout, bool *ret_eof) {
        usec_t deadline = now_usec(CLOCK_MONOTONIC) + timeout;
        uint8_t byte;

        if (ret_eof)
                *ret_eof = false;
        while (now_usec(CLOCK_MONOTONIC) < deadline) {
                /* byte by byte keeps whatever follows a frame in the socket for the next call */
                ssize_t n = recv(c->fd, &byte, 1, MSG_DONTWAIT);

                if (n == 1) {
                        Frame *f = NULL;
                        size_t used;
                        int r = frame_decoder_feed(&c->decoder, &byte, 1, &used, &f);
                        assert_true(r >= 0);
                        if (r > 0)
                                return f;
                        continue;
                }
                if (n == 0) {
                        if (ret_eof)
                                *ret_eof = true;
                        return NULL;
                }
                assert_true(errno == EAGAIN || errno == EINTR);
                round_once(c->fd, s, deadline);
        }
        return NULL;
}

Frame *commander_expect(Commander *c, ep_sensor *s, ElasticPool__Frame__BodyCase kind, usec_t timeout) {
        usec_t deadline = now_usec(CLOCK_MONOTONIC) + timeout;

        for (;;) {
                usec_t now = now_usec(CLOCK_MONOTONIC);
                Frame *f;

                assert_true(now < deadline);
                f = commander_next(c, s, deadline - now, NULL);
                assert_non_null(f);
                if (f->body_case == kind)
                        return f;
                frame_free(f);
        }
}

bool commander_wait_eof(Commander *c, ep_sensor *s, usec_t timeout) {
        usec_t deadline = now_usec(CLOCK_MONOTONIC) + timeout;

        for (;;) {
                usec_t now = now_usec(CLOCK_MONOTONIC);
                bool eof;
                Frame *f;

                if (now >= deadline)
                        return false;
                f = commander_next(c, s, deadline - now, &eof);
                if (eof)
                        return true;
                frame_free(f);
        }
}

void commander_send(Commander *c, const Frame *f) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t size;

        assert_int_equal(frame_encode(f, 0, &buf, &size), 0);
        commander_send_raw(c, buf, size);
}

void commander_send_raw(Commander *c, const void *data, size_t size) {
        assert_int_equal(send(c->fd, data, size, MSG_NOSIGNAL), (ssize_t) size);
}

bool sensor_drive_until(ep_sensor *s, bool (*cond)(void *userdata), void *userdata, usec_t timeout) {
        usec_t deadline = now_usec(CLOCK_MONOTONIC) + timeout;

        while (!cond(userdata)) {
                if (now_usec(CLOCK_MONOTONIC) >= deadline)
                        return false;
                round_once(-1, s, deadline);
        }
        return true;
}
