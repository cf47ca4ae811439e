/* SPDX-License-Identifier: MIT */
/* The channel socket sensors reconnect to (daemon/channel-listener.c), with a real sd-event loop and real
 * connections from this process: the owner's handler sees the peer's pid, uid and cgroup v2 path as the
 * kernel gives them; a peer it refuses is closed at once and counted; a socket inherited from systemd's
 * fd store is used as it is, without binding the path again; an orderly end removes the path, a crash's
 * leftover file is replaced on the next start. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

#include "cgroup.h"
#include "channel-listener.h"
#include "cleanup.h"
#include "fd-shortage.h"
#include "fd-util.h"
#include "macro.h"

static sd_event *event;
static char dir[] = "/tmp/ep-test-channel-listener.XXXXXX";
static char path[128];

typedef struct Seen {
        unsigned calls;
        pid_t pid;
        uid_t uid;
        char cgroup[512];
        bool has_cgroup;
        bool refuse;
        int taken_fd;
} Seen;

static int on_peer(int fd, const ChannelPeer *peer, const char **why, void *userdata) {
        Seen *s = userdata;

        s->calls++;
        s->pid = peer->pid;
        s->uid = peer->uid;
        s->has_cgroup = peer->cgroup != NULL;
        if (peer->cgroup)
                snprintf(s->cgroup, sizeof s->cgroup, "%s", peer->cgroup);
        if (s->refuse) {
                *why = "the test refuses it";
                return -EPERM;
        }
        s->taken_fd = fd;
        return 0;
}

static int setup(void **state) {
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/channel.sock", dir);
        assert_int_equal(sd_event_new(&event), 0);
        return 0;
}

static int teardown(void **state) {
        (void) unlink(path);
        (void) rmdir(dir);
        event = sd_event_unref(event);
        memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
        return 0;
}

static int connect_to(const char *p) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        strcpy(sa.sun_path, p);
        assert_int_equal(connect(fd, (struct sockaddr *) &sa, sizeof sa), 0);
        return fd;
}

/* Runs the loop until the handler was called n times (or a second passed). */
static void run_until(const Seen *s, unsigned n) {
        for (unsigned i = 0; i < 100 && s->calls < n; i++)
                assert_true(sd_event_run(event, 10 * 1000) >= 0);
        assert_int_equal(s->calls, n);
}

static void test_channel_listener_peer_credentials(void **state) {
        _cleanup_free_ char *own = NULL;
        Seen seen = { .taken_fd = -1 };
        ChannelListener *l;
        int fd;

        assert_int_equal(channel_listener_new(event, path, -EBADF, on_peer, &seen, &l), 0);
        assert_string_equal(channel_listener_path(l), path);
        fd = connect_to(path);
        run_until(&seen, 1);
        assert_int_equal(seen.pid, getpid());
        assert_int_equal(seen.uid, getuid());
        if (cgroup_pid_path(0, &own) >= 0) {
                assert_true(seen.has_cgroup);
                assert_string_equal(seen.cgroup, own);
        }
        /* taken: the connection stays open, and it is the same socket */
        assert_true(seen.taken_fd >= 0);
        assert_int_equal(write(seen.taken_fd, "x", 1), 1);
        char c;
        assert_int_equal(read(fd, &c, 1), 1);
        assert_int_equal(channel_listener_refused(l), 0);
        safe_close(seen.taken_fd);
        safe_close(fd);
        channel_listener_free(l, true);
        assert_int_equal(access(path, F_OK), -1); /* an orderly end: nobody will reconnect */
}

static void test_channel_listener_refuses(void **state) {
        Seen seen = { .refuse = true, .taken_fd = -1 };
        ChannelListener *l;
        char c;
        int fd;

        assert_int_equal(channel_listener_new(event, path, -EBADF, on_peer, &seen, &l), 0);
        fd = connect_to(path);
        run_until(&seen, 1);
        /* closed by the listener: the peer reads EOF, nothing else */
        assert_int_equal(read(fd, &c, 1), 0);
        assert_int_equal(channel_listener_refused(l), 1);
        safe_close(fd);
        channel_listener_free(l, false);
        assert_int_equal(access(path, F_OK), 0); /* not an orderly end: the path stays for the next run */
}

/* A file left by a commander that crashed is replaced; a socket from the fd store is used as it is. */
static void test_channel_listener_leftover_and_inherited(void **state) {
        Seen seen = { .taken_fd = -1 };
        ChannelListener *l, *again;
        int fd, kept;
        struct stat before, after;

        assert_int_equal(channel_listener_new(event, path, -EBADF, on_peer, &seen, &l), 0);
        kept = fcntl(channel_listener_fd(l), F_DUPFD_CLOEXEC, 3);
        assert_true(kept >= 0);
        channel_listener_free(l, false);
        /* the "restart": our copy plays the fd store's */
        assert_int_equal(stat(path, &before), 0);
        assert_int_equal(channel_listener_new(event, path, kept, on_peer, &seen, &again), 0);
        assert_int_equal(stat(path, &after), 0);
        assert_int_equal(before.st_ino, after.st_ino); /* not bound again */
        fd = connect_to(path);
        run_until(&seen, 1);
        safe_close(seen.taken_fd);
        safe_close(fd);
        channel_listener_free(again, false);
        /* nobody listens behind the file now: a new start replaces it */
        assert_int_equal(channel_listener_new(event, path, -EBADF, on_peer, &seen, &l), 0);
        fd = connect_to(path);
        run_until(&seen, 2);
        safe_close(seen.taken_fd);
        safe_close(fd);
        channel_listener_free(l, true);
}

/* A flood of refused peers: every one closed and counted, the journal hears a handful a second. */
static void test_channel_listener_refusals_flood(void **state) {
        Seen seen = { .refuse = true, .taken_fd = -1 };
        ChannelListener *l;
        int fds[40];

        assert_int_equal(channel_listener_new(event, path, -EBADF, on_peer, &seen, &l), 0);
        for (size_t i = 0; i < ELEMENTSOF(fds); i++)
                fds[i] = connect_to(path);
        run_until(&seen, ELEMENTSOF(fds));
        assert_int_equal(channel_listener_refused(l), ELEMENTSOF(fds));
        for (size_t i = 0; i < ELEMENTSOF(fds); i++) {
                char c;
                assert_int_equal(read(fds[i], &c, 1), 0);
                safe_close(fds[i]);
        }
        channel_listener_free(l, true);
}

/* Out of descriptors: accepting pauses (no spin, the peer waits in the queue) and resumes by itself. */
static void test_channel_listener_out_of_descriptors(void **state) {
        Seen seen = { .taken_fd = -1 };
        struct rlimit old;
        ChannelListener *l;
        int fd;

        assert_int_equal(channel_listener_new(event, path, -EBADF, on_peer, &seen, &l), 0);
        fd = connect_to(path);
        fd_shortage_begin(&old);
        for (unsigned i = 0; i < 5; i++)
                assert_true(sd_event_run(event, 10 * 1000) >= 0);
        assert_int_equal(seen.calls, 0);
        fd_shortage_end(&old);
        /* the pause ends on its own: the peer that waited is taken */
        run_until(&seen, 1);
        safe_close(seen.taken_fd);
        safe_close(fd);
        channel_listener_free(l, true);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_channel_listener_peer_credentials, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_listener_refuses, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_listener_leftover_and_inherited, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_listener_refusals_flood, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_listener_out_of_descriptors, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
