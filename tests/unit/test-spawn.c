/* SPDX-License-Identifier: MIT */
/* spawn_worker() with real processes: the socket-activation handover (fd 3 the listening socket, fd 4
 * the channel, LISTEN_PID the child's own pid, LISTEN_FDS=1), the environment it builds (overrides, the
 * commander's own LISTEN_* and NOTIFY_SOCKET dropped), an exec failure coming back as its errno, a
 * parked child (what it holds while it waits, its clean signal state and own session) released or
 * abandoned, the parent-death signal, and every child reaped through its pidfd with waitid(P_PIDFD). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "fd-util.h"
#include "macro.h"
#include "spawn.h"

typedef struct Child {
        int listen_fd;
        int sv[2]; /* sv[0] ours, sv[1] handed to the child as fd 4 */
        SpawnResult res;
} Child;

static void child_init(Child *c) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        *c = (Child) { .listen_fd = -EBADF, .sv = { -EBADF, -EBADF } };
        c->res = (SpawnResult) { .pidfd = -EBADF, .release_fd = -EBADF, .exec_error_fd = -EBADF };
        /* a listening socket with an autobound abstract name: nothing to clean up on disk */
        c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(c->listen_fd >= 0);
        assert_int_equal(bind(c->listen_fd, (struct sockaddr *) &sa, sizeof(sa_family_t)), 0);
        assert_int_equal(listen(c->listen_fd, 16), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c->sv), 0);
}

static void child_done(Child *c) {
        safe_close(c->listen_fd);
        safe_close(c->sv[0]);
        safe_close(c->sv[1]);
        safe_close(c->res.pidfd);
        safe_close(c->res.release_fd);
        safe_close(c->res.exec_error_fd);
}

static void child_spawn(Child *c, char *const *argv, char *const *env, bool park) {
        SpawnRequest req = {
                .argv = argv,
                .env = env,
                .listen_fd = c->listen_fd,
                .channel_fd = c->sv[1],
                .cgroup_fd = -EBADF,
                .park = park,
        };

        assert_int_equal(spawn_worker(&req, &c->res), 0);
        assert_true(c->res.pid > 0);
        assert_true(c->res.pidfd >= 0);
        assert_true(c->res.exec_error_fd >= 0);
        assert_false(c->res.into_cgroup);
        assert_true(park ? c->res.release_fd >= 0 : c->res.release_fd < 0);
        /* the child holds its own copy: ours must go, or reading sv[0] never sees EOF */
        c->sv[1] = safe_close(c->sv[1]);
}

/* Reaps through the pidfd (never by pid) and returns the siginfo. */
static siginfo_t child_wait(const Child *c) {
        siginfo_t si = {};

        assert_int_equal(waitid(P_PIDFD, (id_t) c->res.pidfd, &si, WEXITED), 0);
        assert_int_equal(si.si_pid, c->res.pid);
        return si;
}

static void assert_exited(const siginfo_t *si, int status) {
        assert_int_equal(si->si_code, CLD_EXITED);
        assert_int_equal(si->si_status, status);
}

/* What the child wrote on its channel, up to EOF (every copy of its end closed). */
static char *read_channel(Child *c) {
        char *buf = calloc(1, 65536);
        size_t have = 0;

        assert_non_null(buf);
        for (;;) {
                struct pollfd p = { .fd = c->sv[0], .events = POLLIN };
                assert_int_equal(poll(&p, 1, 10000), 1);
                ssize_t n = read(c->sv[0], buf + have, 65535 - have);
                assert_true(n >= 0);
                if (n == 0)
                        break;
                have += (size_t) n;
        }
        return buf;
}

static uint64_t inode_of(int fd) {
        struct stat st;

        assert_int_equal(fstat(fd, &st), 0);
        return (uint64_t) st.st_ino;
}

static void test_spawn_worker_true(void **state) {
        char *argv[] = { (char *) "/bin/true", NULL };
        int e = -1;
        Child c;

        child_init(&c);
        child_spawn(&c, argv, NULL, false);
        siginfo_t si = child_wait(&c);
        assert_exited(&si, 0);
        /* exec succeeded: the close-on-exec pipe just ends */
        assert_int_equal(spawn_read_exec_error(c.res.exec_error_fd, &e), 0);
        assert_int_equal(e, -1);
        child_done(&c);
}

static void test_spawn_worker_socket_activation(void **state) {
        char *argv[] = { (char *) "/bin/sh", (char *) "-c",
                         (char *) "printf '%s %s %s %s %s\\n' \"$LISTEN_PID\" $$ \"$LISTEN_FDS\" "
                                  "$(readlink /proc/$$/fd/3) $(readlink /proc/$$/fd/4) >&4",
                         NULL };
        char *env[] = { (char *) "LISTEN_FDS=1", NULL };
        _cleanup_free_ char *out = NULL;
        char expect[256];
        Child c;

        child_init(&c);
        uint64_t listen_ino = inode_of(c.listen_fd), channel_ino = inode_of(c.sv[1]);
        child_spawn(&c, argv, env, false);
        out = read_channel(&c);
        siginfo_t si = child_wait(&c);
        assert_exited(&si, 0);
        /* LISTEN_PID is the child's own pid (only the child could write it), and $$ agrees */
        snprintf(expect, sizeof expect, "%d %d 1 socket:[%llu] socket:[%llu]\n", (int) c.res.pid, (int) c.res.pid,
                 (unsigned long long) listen_ino, (unsigned long long) channel_ino);
        assert_string_equal(out, expect);
        child_done(&c);
}

/* Counts lines of out that start with prefix; the last such line's rest in *ret_value (may be NULL). */
static unsigned env_lines(const char *out, const char *prefix, char *ret_value, size_t size) {
        size_t plen = strlen(prefix);
        unsigned n = 0;

        for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                if (strncmp(l, prefix, plen) == 0) {
                        n++;
                        if (ret_value)
                                snprintf(ret_value, size, "%.*s", (int) strcspn(l + plen, "\n"), l + plen);
                }
        return n;
}

static void test_spawn_worker_environment(void **state) {
        /* env writes to stdout: point it at the channel */
        char *argv[] = { (char *) "/bin/sh", (char *) "-c", (char *) "exec /usr/bin/env >&4", NULL };
        char *env[] = { (char *) "EP_TEST_VAR=child", (char *) "EP_TEST_NEW=1", (char *) "LISTEN_FDS=1", NULL };
        _cleanup_free_ char *out = NULL;
        char v[256];
        Child c;

        /* what a commander started by systemd carries: none of it is the worker's */
        assert_int_equal(setenv("EP_TEST_VAR", "parent", 1), 0);
        assert_int_equal(setenv("EP_TEST_KEPT", "kept", 1), 0);
        assert_int_equal(setenv("LISTEN_FDS", "7", 1), 0);
        assert_int_equal(setenv("LISTEN_PID", "1", 1), 0);
        assert_int_equal(setenv("LISTEN_FDNAMES", "admin:http", 1), 0);
        assert_int_equal(setenv("NOTIFY_SOCKET", "/run/systemd/notify", 1), 0);
        assert_int_equal(setenv("WATCHDOG_USEC", "30000000", 1), 0);
        assert_int_equal(setenv("WATCHDOG_PID", "1", 1), 0);

        child_init(&c);
        child_spawn(&c, argv, env, false);
        out = read_channel(&c);
        siginfo_t si = child_wait(&c);
        assert_exited(&si, 0);

        assert_int_equal(env_lines(out, "EP_TEST_VAR=", v, sizeof v), 1);
        assert_string_equal(v, "child");
        assert_int_equal(env_lines(out, "EP_TEST_NEW=", v, sizeof v), 1);
        assert_string_equal(v, "1");
        assert_int_equal(env_lines(out, "EP_TEST_KEPT=", v, sizeof v), 1);
        assert_string_equal(v, "kept");
        assert_int_equal(env_lines(out, "LISTEN_FDS=", v, sizeof v), 1);
        assert_string_equal(v, "1");
        assert_int_equal(env_lines(out, "LISTEN_PID=", v, sizeof v), 1);
        assert_int_equal(atoi(v), (int) c.res.pid);
        assert_int_equal(env_lines(out, "LISTEN_FDNAMES=", NULL, 0), 0);
        assert_int_equal(env_lines(out, "NOTIFY_SOCKET=", NULL, 0), 0);
        assert_int_equal(env_lines(out, "WATCHDOG_", NULL, 0), 0);
        assert_int_equal(env_lines(out, "PATH=", NULL, 0), getenv("PATH") ? 1 : 0);
        child_done(&c);

        unsetenv("EP_TEST_VAR");
        unsetenv("EP_TEST_KEPT");
        unsetenv("LISTEN_FDS");
        unsetenv("LISTEN_PID");
        unsetenv("LISTEN_FDNAMES");
        unsetenv("NOTIFY_SOCKET");
        unsetenv("WATCHDOG_USEC");
        unsetenv("WATCHDOG_PID");
}

static void test_spawn_worker_path_search(void **state) {
        char *argv[] = { (char *) "true", NULL }; /* no slash: searched in $PATH like a shell would */
        Child c;

        child_init(&c);
        child_spawn(&c, argv, NULL, false);
        siginfo_t si = child_wait(&c);
        assert_exited(&si, 0);
        child_done(&c);
}

static void exec_failure(const char *path, int want_errno) {
        char *argv[] = { (char *) path, NULL };
        int e = 0;
        Child c;

        child_init(&c);
        child_spawn(&c, argv, NULL, false);
        /* blocks until the child either execs (EOF) or writes exec's errno */
        assert_int_equal(spawn_read_exec_error(c.res.exec_error_fd, &e), 1);
        assert_int_equal(e, want_errno);
        siginfo_t si = child_wait(&c);
        assert_exited(&si, 127);
        child_done(&c);
}

static void test_spawn_worker_exec_failure_enoent(void **state) {
        exec_failure("/nonexistent/elastic-pool-worker", ENOENT);
        exec_failure("elastic-pool-no-such-command-anywhere", ENOENT);
}

static void test_spawn_worker_exec_failure_eacces(void **state) {
        char path[] = "/tmp/test-spawn.XXXXXX";
        int fd = mkostemp(path, O_CLOEXEC); /* mode 0600: no execute bit, not even root may exec it */

        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, "#!/bin/sh\n", 10), 0);
        safe_close(fd);
        exec_failure(path, EACCES);
        assert_int_equal(unlink(path), 0);
}

static void test_spawn_worker_invalid(void **state) {
        SpawnRequest req = { .listen_fd = -EBADF, .channel_fd = -EBADF, .cgroup_fd = -EBADF };
        SpawnResult res;

        assert_int_equal(spawn_worker(&req, &res), -EINVAL);
        req.argv = (char *[]) { NULL };
        assert_int_equal(spawn_worker(&req, &res), -EINVAL);
}

static void test_spawn_worker_bad_fds_come_back(void **state) {
        SpawnRequest req = {
                .argv = (char *[]) { (char *) "/bin/true", NULL },
                .listen_fd = -EBADF, /* nothing to hand over: the child reports EBADF and never execs */
                .channel_fd = -EBADF,
                .cgroup_fd = -EBADF,
        };
        SpawnResult res;
        siginfo_t si = {};
        int e = 0;

        assert_int_equal(spawn_worker(&req, &res), 0);
        assert_int_equal(spawn_read_exec_error(res.exec_error_fd, &e), 1);
        assert_int_equal(e, EBADF);
        assert_int_equal(waitid(P_PIDFD, (id_t) res.pidfd, &si, WEXITED), 0);
        assert_exited(&si, 127);
        safe_close(res.pidfd);
        safe_close(res.exec_error_fd);
}

/* A /proc/PID/status line's value, e.g. "SigBlk". */
static void proc_status(pid_t pid, const char *key, char *ret, size_t size) {
        char path[64], line[256];
        size_t klen = strlen(key);
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        assert_non_null(f);
        ret[0] = 0;
        while (fgets(line, sizeof line, f))
                if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
                        snprintf(ret, size, "%s", line + klen + 1 + strspn(line + klen + 1, " \t"));
                        ret[strcspn(ret, "\n")] = 0;
                }
        fclose(f);
}

static bool fd_cloexec_in(pid_t pid, int fd) {
        char path[64], line[128];
        unsigned long flags = 0;
        FILE *f;

        snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", (int) pid, fd);
        f = fopen(path, "re");
        assert_non_null(f);
        while (fgets(line, sizeof line, f))
                if (sscanf(line, "flags: %lo", &flags) == 1)
                        break;
        fclose(f);
        return flags & O_CLOEXEC;
}

/* The highest fd pid holds. */
static int max_fd_of(pid_t pid) {
        char path[64];
        struct dirent *de;
        int max = -1;
        DIR *d;

        snprintf(path, sizeof path, "/proc/%d/fd", (int) pid);
        d = opendir(path);
        assert_non_null(d);
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        max = MAX(max, atoi(de->d_name));
        closedir(d);
        return max;
}

/* Waits (bounded) until the parked child sits in its read() of the release pipe: asleep, with the
 * release pipe at fd 6 and the scratch copies above it closed. */
static void wait_parked(pid_t pid) {
        char state[64];

        for (int i = 0; i < 5000; i++) {
                proc_status(pid, "State", state, sizeof state);
                if (state[0] == 'S' && max_fd_of(pid) == 6)
                        return;
                usleep(1000);
        }
        fail_msg("child %d never parked", (int) pid);
}

static void test_spawn_worker_parked_child(void **state) {
        char *argv[] = { (char *) "/bin/sh", (char *) "-c", (char *) "exit 7", NULL };
        sigset_t block, saved;
        void (*old_usr2)(int);
        char v[64];
        int e = 0;
        Child c;

        /* the commander's signal state: blocked for sd-event, one ignored */
        sigemptyset(&block);
        sigaddset(&block, SIGTERM);
        sigaddset(&block, SIGCHLD);
        sigaddset(&block, SIGUSR1);
        assert_int_equal(sigprocmask(SIG_BLOCK, &block, &saved), 0);
        old_usr2 = signal(SIGUSR2, SIG_IGN);

        child_init(&c);
        uint64_t listen_ino = inode_of(c.listen_fd);
        child_spawn(&c, argv, NULL, true);
        assert_int_equal(sigprocmask(SIG_SETMASK, &saved, NULL), 0);
        signal(SIGUSR2, old_usr2);
        wait_parked(c.res.pid);

        /* parked before exec: nothing on the exec-error pipe yet */
        assert_int_equal(fd_set_nonblock(c.res.exec_error_fd, true), 0);
        assert_int_equal(spawn_read_exec_error(c.res.exec_error_fd, &e), -EAGAIN);
        assert_int_equal(fd_set_nonblock(c.res.exec_error_fd, false), 0);

        /* a clean slate: no blocked or ignored signal, a session of its own */
        proc_status(c.res.pid, "SigBlk", v, sizeof v);
        assert_string_equal(v, "0000000000000000");
        proc_status(c.res.pid, "SigIgn", v, sizeof v);
        assert_string_equal(v, "0000000000000000");
        assert_int_equal(getsid(c.res.pid), c.res.pid);
        assert_int_equal(getpgid(c.res.pid), c.res.pid);

        /* what it holds while parked: fds 3 and 4 (kept across exec), the exec-error pipe at 5 and the
         * release pipe at 6 (both close-on-exec), nothing else above stderr */
        {
                char path[64], link[64] = "";

                snprintf(path, sizeof path, "/proc/%d/fd/3", (int) c.res.pid);
                assert_true(readlink(path, link, sizeof link - 1) > 0);
                snprintf(v, sizeof v, "socket:[%llu]", (unsigned long long) listen_ino);
                assert_string_equal(link, v);
                assert_false(fd_cloexec_in(c.res.pid, 3));
                assert_false(fd_cloexec_in(c.res.pid, 4));
                assert_true(fd_cloexec_in(c.res.pid, 5));
                assert_true(fd_cloexec_in(c.res.pid, 6));
                assert_int_equal(max_fd_of(c.res.pid), 6);
        }

        assert_int_equal(spawn_release(&c.res.release_fd), 0);
        assert_true(c.res.release_fd < 0);
        assert_int_equal(spawn_release(&c.res.release_fd), 0); /* released already: nothing to do */
        assert_int_equal(spawn_read_exec_error(c.res.exec_error_fd, &e), 0);
        siginfo_t si = child_wait(&c);
        assert_exited(&si, 7);
        child_done(&c);
}

static void test_spawn_worker_parked_child_abandoned(void **state) {
        char *argv[] = { (char *) "/bin/true", NULL };
        Child c;

        child_init(&c);
        child_spawn(&c, argv, NULL, true);
        /* the commander gave up on it before placement: the child sees EOF and never execs */
        c.res.release_fd = safe_close(c.res.release_fd);
        siginfo_t si = child_wait(&c);
        assert_exited(&si, 126);
        child_done(&c);
}

static void test_spawn_worker_signal_state_after_exec(void **state) {
        char *argv[] = { (char *) "/bin/sh", (char *) "-c",
                         (char *) "exec grep -E '^Sig(Blk|Ign):' /proc/self/status >&4", NULL };
        _cleanup_free_ char *out = NULL;
        sigset_t block, saved;
        void (*old_usr2)(int), (*old_pipe)(int);
        Child c;

        sigemptyset(&block);
        sigaddset(&block, SIGTERM);
        sigaddset(&block, SIGINT);
        sigaddset(&block, SIGHUP);
        assert_int_equal(sigprocmask(SIG_BLOCK, &block, &saved), 0);
        old_usr2 = signal(SIGUSR2, SIG_IGN);
        old_pipe = signal(SIGPIPE, SIG_IGN); /* the commander ignores SIGPIPE; its workers must not */

        child_init(&c);
        child_spawn(&c, argv, NULL, false);
        assert_int_equal(sigprocmask(SIG_SETMASK, &saved, NULL), 0);
        signal(SIGUSR2, old_usr2);
        signal(SIGPIPE, old_pipe);
        out = read_channel(&c);
        siginfo_t si = child_wait(&c);
        assert_exited(&si, 0);
        assert_string_equal(out, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
        child_done(&c);
}

static void test_spawn_worker_plain_dir_as_cgroup(void **state) {
        char dir[] = "/tmp/test-spawn-cg.XXXXXX", path[64];
        char *argv[] = { (char *) "/bin/true", NULL };
        _cleanup_close_ int dfd = -EBADF;
        SpawnResult res;
        siginfo_t si = {};
        int e = 0, fd;

        assert_non_null(mkdtemp(dir));
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        Child c;
        child_init(&c);
        SpawnRequest req = { .argv = argv, .listen_fd = c.listen_fd, .channel_fd = c.sv[1], .cgroup_fd = dfd };

        /* no cgroup: the kernel refuses CLONE_INTO_CGROUP, the child tries to move itself, and the
         * missing cgroup.procs comes back as the child's error, before any exec */
        assert_int_equal(spawn_worker(&req, &res), 0);
        assert_false(res.into_cgroup);
        assert_int_equal(spawn_read_exec_error(res.exec_error_fd, &e), 1);
        assert_int_equal(e, ENOENT);
        assert_int_equal(waitid(P_PIDFD, (id_t) res.pidfd, &si, WEXITED), 0);
        assert_exited(&si, 127);
        safe_close(res.pidfd);
        safe_close(res.exec_error_fd);

        /* with a cgroup.procs to write, the fallback move "succeeds" and the child execs */
        fd = openat(dfd, "cgroup.procs", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        safe_close(fd);
        assert_int_equal(spawn_worker(&req, &res), 0);
        assert_int_equal(spawn_read_exec_error(res.exec_error_fd, &e), 0);
        assert_int_equal(waitid(P_PIDFD, (id_t) res.pidfd, &si, WEXITED), 0);
        assert_exited(&si, 0);
        assert_int_equal(read_string_at(dfd, "cgroup.procs", path, sizeof path), 1);
        assert_string_equal(path, "0");
        safe_close(res.pidfd);
        safe_close(res.exec_error_fd);
        child_done(&c);

        assert_int_equal(unlinkat(dfd, "cgroup.procs", 0), 0);
        assert_int_equal(rmdir(dir), 0);
}

static void test_spawn_worker_death_signal(void **state) {
        int p[2], pidfd;
        pid_t middle, worker = 0;
        siginfo_t si = {};

        /* we adopt the orphan, so its death can be reaped (and told apart) here */
        assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        middle = fork();
        assert_true(middle >= 0);
        if (middle == 0) {
                /* a commander that spawns a worker with death_signal and dies */
                char *argv[] = { (char *) "/bin/sleep", (char *) "60", NULL };
                SpawnResult res;
                int e;
                Child c;

                child_init(&c);
                SpawnRequest req = { .argv = argv, .listen_fd = c.listen_fd, .channel_fd = c.sv[1],
                                     .cgroup_fd = -EBADF, .death_signal = SIGKILL };
                if (spawn_worker(&req, &res) < 0 || spawn_read_exec_error(res.exec_error_fd, &e) != 0)
                        _exit(1);
                /* exec happened, so PR_SET_PDEATHSIG is in place */
                if (write(p[1], &res.pid, sizeof res.pid) != sizeof res.pid)
                        _exit(1);
                _exit(0);
        }
        safe_close(p[1]);
        assert_int_equal(read(p[0], &worker, sizeof worker), sizeof worker);
        safe_close(p[0]);
        assert_int_equal(waitid(P_PID, (id_t) middle, &si, WEXITED), 0);
        assert_exited(&si, 0);

        pidfd = pidfd_open(worker, 0);
        if (pidfd >= 0) {
                assert_int_equal(waitid(P_PIDFD, (id_t) pidfd, &si, WEXITED), 0);
                safe_close(pidfd);
        } else {
                assert_int_equal(errno, ESRCH); /* gone already, not reaped yet: pidfd_open() refuses */
                assert_int_equal(waitid(P_PID, (id_t) worker, &si, WEXITED), 0);
        }
        assert_int_equal(si.si_code, CLD_KILLED);
        assert_int_equal(si.si_status, SIGKILL);
        assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
}

static void test_spawn_env_formats(void **state) {
        _cleanup_free_ char *a = spawn_env("ELASTIC_POOL_WORKER", "%u", 17U);
        _cleanup_free_ char *b = spawn_env("ELASTIC_POOL_GROUP", "%s", "web");
        _cleanup_free_ char *c = spawn_env("EMPTY", "%s", "");

        assert_string_equal(a, "ELASTIC_POOL_WORKER=17");
        assert_string_equal(b, "ELASTIC_POOL_GROUP=web");
        assert_string_equal(c, "EMPTY=");
}

static void test_spawn_read_exec_error_short(void **state) {
        int p[2], e = 0;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(write(p[1], "xy", 2), 2); /* a torn errno is an I/O error, not garbage */
        safe_close(p[1]);
        assert_int_equal(spawn_read_exec_error(p[0], &e), 1);
        assert_int_equal(e, EIO);
        safe_close(p[0]);
        assert_int_equal(spawn_read_exec_error(-1, &e), -EBADF);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_spawn_worker_true),
                cmocka_unit_test(test_spawn_worker_socket_activation),
                cmocka_unit_test(test_spawn_worker_environment),
                cmocka_unit_test(test_spawn_worker_path_search),
                cmocka_unit_test(test_spawn_worker_exec_failure_enoent),
                cmocka_unit_test(test_spawn_worker_exec_failure_eacces),
                cmocka_unit_test(test_spawn_worker_invalid),
                cmocka_unit_test(test_spawn_worker_bad_fds_come_back),
                cmocka_unit_test(test_spawn_worker_parked_child),
                cmocka_unit_test(test_spawn_worker_parked_child_abandoned),
                cmocka_unit_test(test_spawn_worker_signal_state_after_exec),
                cmocka_unit_test(test_spawn_worker_plain_dir_as_cgroup),
                cmocka_unit_test(test_spawn_worker_death_signal),
                cmocka_unit_test(test_spawn_env_formats),
                cmocka_unit_test(test_spawn_read_exec_error_short),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
