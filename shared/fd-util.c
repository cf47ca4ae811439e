/* SPDX-License-Identifier: MIT */
#include "fd-util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "cleanup.h"

int loop_write(int fd, const void *buf, size_t size) {
        const char *p = buf;

        while (size > 0) {
                ssize_t n = write(fd, p, size);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN) {
                                struct pollfd pfd = { .fd = fd, .events = POLLOUT };
                                if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
                                        return -errno;
                                continue;
                        }
                        return -errno;
                }
                p += n;
                size -= (size_t) n;
        }
        return 0;
}

ssize_t pread_string(int fd, char *buf, size_t size) {
        size_t done = 0;

        if (size == 0)
                return -EINVAL;
        for (;;) {
                ssize_t n;

                if (done == size - 1) {
                        char c;
                        /* a full buffer is only an error when there really is more (checked before the
                         * first read too: with size 1 there is no room for even one byte) */
                        n = pread(fd, &c, 1, (off_t) done);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0)
                                return -errno;
                        if (n > 0)
                                return -EFBIG;
                        break;
                }
                n = pread(fd, buf + done, size - 1 - done, (off_t) done);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                done += (size_t) n;
                /* Regular files and the kernel's cgroup and proc files fill a read as far as they can, so
                 * a short one was the end: no second pread() to see 0 (half the system calls of a sensor
                 * tick). */
                if (done < size - 1)
                        break;
        }
        buf[done] = 0;
        return (ssize_t) done;
}

ssize_t read_string_at(int dir_fd, const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;

        fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return pread_string(fd, buf, size);
}

int fd_set_nonblock(int fd, bool nonblock) {
        int flags = fcntl(fd, F_GETFL);

        if (flags < 0)
                return -errno;
        flags = nonblock ? flags | O_NONBLOCK : flags & ~O_NONBLOCK;
        return fcntl(fd, F_SETFL, flags) < 0 ? -errno : 0;
}

int fd_set_cloexec_nonblock(int fd) {
        int flags = fcntl(fd, F_GETFD);

        if (flags < 0 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0)
                return -errno;
        return fd_set_nonblock(fd, true);
}

int fd_store_add(int fd, const char *name) {
        char msg[300];

        if (snprintf(msg, sizeof msg, "FDSTORE=1\nFDNAME=%s", name) >= (int) sizeof msg)
                return -ENAMETOOLONG;
        return sd_pid_notify_with_fds(0, false, msg, &fd, 1);
}

int fd_store_remove(const char *name) {
        return sd_notifyf(false, "FDSTOREREMOVE=1\nFDNAME=%s", name);
}

/* The soft limit before fd_raise_nofile() raised it: what children get back. 0 until then. */
static unsigned long long nofile_original;

unsigned long long fd_nofile_original_soft(void) {
        return nofile_original;
}

int fd_raise_nofile(unsigned long long *ret_old_soft, unsigned long long *ret_now) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return -errno;
        if (nofile_original == 0)
                nofile_original = rl.rlim_cur;
        if (ret_old_soft)
                *ret_old_soft = rl.rlim_cur;
        *ret_now = rl.rlim_cur;
        if (rl.rlim_cur >= rl.rlim_max)
                return 0;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                return -errno;
        *ret_now = rl.rlim_cur;
        return 0;
}
