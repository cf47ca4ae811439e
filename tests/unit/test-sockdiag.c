/* SPDX-License-Identifier: MIT */
/* NETLINK_SOCK_DIAG against a real listening Unix socket: the kernel's accept-queue count goes 0 → 1
 * after a connect → 0 after the accept, the backlog limit is the one listen() set, and an inode that is
 * no socket (or no longer one) is -ENOENT; one dump answers for many sockets at once (the burst path's
 * sample), a socket that is gone or not listening not found. Skipped when the kernel offers no sock_diag for AF_UNIX. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "sockdiag.h"

static SockDiag *diag;

static int listener(int backlog, uint64_t *ret_ino) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct stat st;
        int fd;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *) &sa, sizeof(sa_family_t)), 0); /* autobind */
        assert_int_equal(listen(fd, backlog), 0);
        assert_int_equal(fstat(fd, &st), 0);
        *ret_ino = (uint64_t) st.st_ino;
        return fd;
}

static int connect_to(int listen_fd) {
        struct sockaddr_un sa;
        socklen_t len = sizeof sa;
        int fd;

        assert_int_equal(getsockname(listen_fd, (struct sockaddr *) &sa, &len), 0);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(connect(fd, (struct sockaddr *) &sa, len), 0);
        return fd;
}

static void test_sock_diag_unix_backlog_counts_queue(void **state) {
        uint64_t ino;
        uint32_t queued = 99, limit = 0;
        int l = listener(128, &ino), c1, c2, a;

        assert_int_equal(sock_diag_unix_backlog(diag, ino, &queued, &limit), 0);
        assert_int_equal(queued, 0);
        assert_int_equal(limit, 128);

        c1 = connect_to(l);
        assert_int_equal(sock_diag_unix_backlog(diag, ino, &queued, NULL), 0);
        assert_int_equal(queued, 1);
        c2 = connect_to(l);
        assert_int_equal(sock_diag_unix_backlog(diag, ino, &queued, NULL), 0);
        assert_int_equal(queued, 2);

        a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        assert_true(a >= 0);
        assert_int_equal(sock_diag_unix_backlog(diag, ino, &queued, NULL), 0);
        assert_int_equal(queued, 1);
        safe_close(a);
        a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        assert_true(a >= 0);
        assert_int_equal(sock_diag_unix_backlog(diag, ino, NULL, NULL), 0); /* outputs optional */
        assert_int_equal(sock_diag_unix_backlog(diag, ino, &queued, &limit), 0);
        assert_int_equal(queued, 0);
        assert_int_equal(limit, 128);

        safe_close(a);
        safe_close(c1);
        safe_close(c2);
        safe_close(l);
}

static void test_sock_diag_unix_backlog_many_queries(void **state) {
        uint64_t ino;
        uint32_t queued;
        int l = listener(16, &ino), c = connect_to(l);

        /* one answer per request: nothing stale is left to be read as the next answer */
        for (int i = 0; i < 200; i++) {
                assert_int_equal(sock_diag_unix_backlog(diag, ino, &queued, NULL), 0);
                assert_int_equal(queued, 1);
        }
        safe_close(c);
        safe_close(l);
}

static void test_sock_diag_unix_backlog_unknown_inode(void **state) {
        uint32_t queued = 7;
        uint64_t ino;
        int l = listener(8, &ino);
        char path[] = "/tmp/test-sockdiag.XXXXXX";
        struct stat st;
        int fd = mkostemp(path, O_CLOEXEC);

        /* a file's inode is no socket */
        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &st), 0);
        assert_int_equal(unlink(path), 0);
        safe_close(fd);
        assert_int_equal(sock_diag_unix_backlog(diag, (uint64_t) st.st_ino, &queued, NULL), -ENOENT);
        assert_int_equal(queued, 7);

        /* a socket that is gone */
        safe_close(l);
        assert_int_equal(sock_diag_unix_backlog(diag, ino, &queued, NULL), -ENOENT);
        /* and the session still works afterwards */
        l = listener(8, &ino);
        assert_int_equal(sock_diag_unix_backlog(diag, ino, &queued, NULL), 0);
        assert_int_equal(queued, 0);
        safe_close(l);
}

static void test_sock_diag_unix_backlogs_one_dump(void **state) {
        uint64_t inos[4];
        uint32_t queued[4];
        bool found[4];
        int l1 = listener(16, &inos[0]), l2 = listener(16, &inos[1]), l3 = listener(16, &inos[2]), c[3];
        int plain = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct stat st;

        /* an unbound, unlistening socket is in no listening dump */
        assert_true(plain >= 0);
        assert_int_equal(fstat(plain, &st), 0);
        inos[3] = (uint64_t) st.st_ino;
        c[0] = connect_to(l1);
        c[1] = connect_to(l1);
        c[2] = connect_to(l3);
        /* out of order on purpose: the answer goes by index */
        assert_int_equal(sock_diag_unix_backlogs(diag, inos, 4, queued, found), 0);
        assert_true(found[0] && found[1] && found[2]);
        assert_false(found[3]);
        assert_int_equal(queued[0], 2);
        assert_int_equal(queued[1], 0);
        assert_int_equal(queued[2], 1);
        assert_int_equal(queued[3], 0);

        /* a socket closed since is not found; the others still are */
        close(l2);
        assert_int_equal(sock_diag_unix_backlogs(diag, inos, 3, queued, found), 0);
        assert_true(found[0] && !found[1] && found[2]);
        assert_int_equal(sock_diag_unix_backlogs(diag, inos, 0, queued, found), 0);

        for (size_t i = 0; i < 3; i++)
                close(c[i]);
        close(l1);
        close(l3);
        close(plain);
}

static void test_sock_diag_free_null(void **state) {
        assert_null(sock_diag_free(NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sock_diag_unix_backlog_counts_queue),
                cmocka_unit_test(test_sock_diag_unix_backlog_many_queries),
                cmocka_unit_test(test_sock_diag_unix_backlog_unknown_inode),
                cmocka_unit_test(test_sock_diag_unix_backlogs_one_dump),
                cmocka_unit_test(test_sock_diag_free_null),
        };
        uint64_t ino;
        int r, l;

        r = sock_diag_new(&diag);
        if (r < 0) {
                printf("SKIP: NETLINK_SOCK_DIAG unavailable here: %s\n", strerror(-r));
                return 77;
        }
        /* the unix_diag module may be missing even where netlink works */
        l = listener(1, &ino);
        r = sock_diag_unix_backlog(diag, ino, NULL, NULL);
        close(l);
        if (r < 0) {
                printf("SKIP: no sock_diag for AF_UNIX sockets (unix_diag module?): %s\n", strerror(-r));
                diag = sock_diag_free(diag);
                return 77;
        }
        r = cmocka_run_group_tests(tests, NULL, NULL);
        diag = sock_diag_free(diag);
        return r;
}
