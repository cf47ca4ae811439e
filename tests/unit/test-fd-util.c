/* SPDX-License-Identifier: MIT */
/* fd helpers: loop_write() through a socket whose buffer holds a fraction of what is written (a reader
 * thread drains it slowly) and into a non-blocking fd, pread_string() at the size limits (-EFBIG only
 * when more really follows) and read_string_at() relative to a directory fd. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "fd-util.h"

#define BIG (1024U * 1024U)

static char dir[] = "/tmp/test-fd-util.XXXXXX";
static int dir_fd = -EBADF;

static int setup(void **state) {
        if (!mkdtemp(dir))
                return -1;
        dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return dir_fd < 0 ? -1 : 0;
}

static int teardown(void **state) {
        char cmd[sizeof dir + 16];

        dir_fd = safe_close(dir_fd);
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *name, const void *data, size_t size) {
        _cleanup_close_ int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, data, size), 0);
}

typedef struct Reader {
        int fd;
        size_t got;
        uint32_t sum; /* position-weighted, so reordering or loss shows */
        bool ok;
} Reader;

static void *reader_main(void *arg) {
        Reader *rd = arg;
        unsigned char buf[1000]; /* small reads: the writer keeps hitting a full buffer */

        for (;;) {
                ssize_t n = read(rd->fd, buf, sizeof buf);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                for (ssize_t i = 0; i < n; i++) {
                        if (buf[i] != (unsigned char) ((rd->got + (size_t) i) * 7))
                                return NULL;
                        rd->sum += buf[i];
                }
                rd->got += (size_t) n;
                if ((rd->got / sizeof buf) % 64 == 0)
                        usleep(100);
        }
        rd->ok = true;
        return NULL;
}

static void loop_write_through(bool nonblocking) {
        _cleanup_free_ unsigned char *data = malloc(BIG);
        int sv[2], small = 4096;
        Reader rd = {};
        pthread_t t;

        assert_non_null(data);
        for (size_t i = 0; i < BIG; i++)
                data[i] = (unsigned char) (i * 7);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
        assert_int_equal(setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
        if (nonblocking)
                assert_int_equal(fd_set_nonblock(sv[0], true), 0); /* EAGAIN → poll() → retry */
        rd.fd = sv[1];
        assert_int_equal(pthread_create(&t, NULL, reader_main, &rd), 0);

        assert_int_equal(loop_write(sv[0], data, BIG), 0);
        safe_close(sv[0]);
        assert_int_equal(pthread_join(t, NULL), 0);
        safe_close(sv[1]);
        assert_true(rd.ok);
        assert_int_equal(rd.got, BIG);
}

static void test_loop_write_small_socket_buffer(void **state) {
        loop_write_through(false);
}

static void test_loop_write_nonblocking_waits(void **state) {
        loop_write_through(true);
}

static void test_loop_write_peer_gone(void **state) {
        void (*old)(int) = signal(SIGPIPE, SIG_IGN);
        int sv[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        safe_close(sv[1]);
        assert_int_equal(loop_write(sv[0], "x", 1), -EPIPE);
        safe_close(sv[0]);
        assert_int_equal(loop_write(-1, "x", 1), -EBADF);
        assert_int_equal(loop_write(-1, "", 0), 0); /* nothing to write: nothing touched */
        signal(SIGPIPE, old);
}

static void test_pread_string_fits(void **state) {
        _cleanup_close_ int fd = -EBADF;
        char buf[8];

        write_file("seven", "1234567", 7);
        fd = openat(dir_fd, "seven", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        /* exactly size - 1 bytes: fits, and the extra probe finds EOF */
        assert_int_equal(pread_string(fd, buf, sizeof buf), 7);
        assert_string_equal(buf, "1234567");
        /* reads from offset 0 whatever the file position */
        assert_int_equal(lseek(fd, 3, SEEK_SET), 3);
        assert_int_equal(pread_string(fd, buf, sizeof buf), 7);
        assert_string_equal(buf, "1234567");
}

static void test_pread_string_efbig(void **state) {
        _cleanup_close_ int fd = -EBADF;
        char buf[16];

        write_file("eight", "12345678", 8);
        fd = openat(dir_fd, "eight", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(pread_string(fd, buf, 8), -EFBIG);
        /* room for the NUL alone: a non-empty file does not fit (it used to read as empty) */
        assert_int_equal(pread_string(fd, buf, 1), -EFBIG);
        assert_int_equal(pread_string(fd, buf, 9), 8);
        assert_string_equal(buf, "12345678");
}

static void test_pread_string_empty_and_errors(void **state) {
        _cleanup_close_ int fd = -EBADF;
        char buf[8] = "garbage";
        int p[2];

        write_file("empty", "", 0);
        fd = openat(dir_fd, "empty", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(pread_string(fd, buf, sizeof buf), 0);
        assert_string_equal(buf, "");
        assert_int_equal(pread_string(fd, buf, 0), -EINVAL);
        assert_int_equal(pread_string(fd, buf, 1), 0); /* room for the NUL alone: an empty file fits */
        assert_int_equal(pread_string(-1, buf, sizeof buf), -EBADF);

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(pread_string(p[0], buf, sizeof buf), -ESPIPE);
        safe_close(p[0]);
        safe_close(p[1]);
}

static void test_read_string_at(void **state) {
        char buf[64], path[sizeof dir + 32];

        assert_int_equal(mkdirat(dir_fd, "sub", 0755), 0);
        write_file("sub/memory.current", "104857600\n", 10);
        assert_int_equal(read_string_at(dir_fd, "sub/memory.current", buf, sizeof buf), 10);
        assert_string_equal(buf, "104857600\n");
        assert_int_equal(read_string_at(dir_fd, "sub/missing", buf, sizeof buf), -ENOENT);
        assert_int_equal(read_string_at(dir_fd, "sub", buf, sizeof buf), -EISDIR);
        assert_int_equal(read_string_at(dir_fd, "sub/memory.current", buf, 5), -EFBIG);

        snprintf(path, sizeof path, "%s/sub/memory.current", dir);
        assert_int_equal(read_string_at(AT_FDCWD, path, buf, sizeof buf), 10);
        assert_int_equal(read_string_at(-1, "relative", buf, sizeof buf), -EBADF);
}

static void test_fd_set_cloexec_nonblock(void **state) {
        int p[2];

        assert_int_equal(pipe2(p, 0), 0);
        assert_false(fcntl(p[0], F_GETFD) & FD_CLOEXEC);
        assert_int_equal(fd_set_cloexec_nonblock(p[0]), 0);
        assert_true(fcntl(p[0], F_GETFD) & FD_CLOEXEC);
        assert_true(fcntl(p[0], F_GETFL) & O_NONBLOCK);
        assert_int_equal(fd_set_nonblock(p[0], false), 0);
        assert_false(fcntl(p[0], F_GETFL) & O_NONBLOCK);
        assert_true(fcntl(p[0], F_GETFD) & FD_CLOEXEC);
        safe_close(p[0]);
        safe_close(p[1]);
        assert_int_equal(fd_set_nonblock(-1, true), -EBADF);
        assert_int_equal(fd_set_cloexec_nonblock(-1), -EBADF);
}

static void test_fd_raise_nofile_to_hard(void **state) {
        unsigned long long old, now;
        struct rlimit rl, low;

        assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
        if (rl.rlim_max < 64)
                skip();
        low = (struct rlimit) { .rlim_cur = 32, .rlim_max = rl.rlim_max };
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
        assert_int_equal(fd_raise_nofile(&old, &now), 0);
        assert_int_equal(old, 32);
        assert_int_equal(now, rl.rlim_max);
        /* already there: nothing to do, nothing fails */
        assert_int_equal(fd_raise_nofile(&old, &now), 0);
        assert_int_equal(old, rl.rlim_max);
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_loop_write_small_socket_buffer),
                cmocka_unit_test(test_loop_write_nonblocking_waits),
                cmocka_unit_test(test_loop_write_peer_gone),
                cmocka_unit_test(test_fd_raise_nofile_to_hard),
                cmocka_unit_test(test_pread_string_fits),
                cmocka_unit_test(test_pread_string_efbig),
                cmocka_unit_test(test_pread_string_empty_and_errors),
                cmocka_unit_test(test_read_string_at),
                cmocka_unit_test(test_fd_set_cloexec_nonblock),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
