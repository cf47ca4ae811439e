/* SPDX-License-Identifier: MIT */
/* spawn_worker() with real processes: the socket-activation handover (fd 3 the listening socket, fd 4
 * the channel, LISTEN_PID the child's own pid, LISTEN_FDS=1), the environment it builds (overrides, the
 * commander's own LISTEN_* and NOTIFY_SOCKET dropped), an exec failure coming back as its errno, a
 * parked child (what it holds while it waits, its clean signal state and own session) released or
 * abandoned, the parent-death signal, and every child reaped through its pidfd with waitid(P_PIDFD).
 * The worker's runtime: its working directory (entered as its own user), its uid, gid and groups (as
 * nobody, when run as root), and each step that fails on the way to exec reported as that step with
 * its errno (cgroup, fds, setgroups, setgid, setuid, chdir, exec). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
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
#include <sys/resource.h>
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
        SpawnError e = { .step = -1, .error = -1 };
        Child c;

        child_init(&c);
        child_spawn(&c, argv, NULL, false);
        siginfo_t si = child_wait(&c);
        assert_exited(&si, 0);
        /* exec succeeded: the close-on-exec pipe just ends */
        assert_int_equal(spawn_read_exec_error(c.res.exec_error_fd, &e), 0);
        assert_int_equal(e.error, -1);
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
        SpawnError e = {};
        Child c;

        child_init(&c);
        child_spawn(&c, argv, NULL, false);
        /* blocks until the child either execs (EOF) or writes exec's errno */
        assert_int_equal(spawn_read_exec_error(c.res.exec_error_fd, &e), 1);
        assert_int_equal(e.step, SPAWN_STEP_EXEC);
        assert_int_equal(e.error, want_errno);
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
        SpawnError e = {};

        assert_int_equal(spawn_worker(&req, &res), 0);
        assert_int_equal(spawn_read_exec_error(res.exec_error_fd, &e), 1);
        assert_int_equal(e.step, SPAWN_STEP_FDS);
        assert_int_equal(e.error, EBADF);
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
        SpawnError e = {};
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
        SpawnError e = {};
        int fd;

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
        assert_int_equal(e.step, SPAWN_STEP_CGROUP);
        assert_int_equal(e.error, ENOENT);
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

static void nobody_ids(uid_t *ret_uid, gid_t *ret_gid);

static void death_signal_case(bool as_nobody) {
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
                SpawnError e;
                Child c;

                child_init(&c);
                SpawnRequest req = { .argv = argv, .listen_fd = c.listen_fd, .channel_fd = c.sv[1],
                                     .cgroup_fd = -EBADF, .death_signal = SIGKILL };
                if (as_nobody) {
                        nobody_ids(&req.uid, &req.gid);
                        req.set_identity = true;
                }
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

static void test_spawn_worker_death_signal(void **state) {
        death_signal_case(false);
}

/* ---- the worker's runtime: working directory, identity, and each failing step named ---- */

/* A directory for a worker to run in, of the given mode; removed by the caller with rmdir(). */
static void make_dir(char *path, mode_t mode) {
        assert_non_null(mkdtemp(path));
        assert_int_equal(chmod(path, mode), 0);
}

/* Spawns argv with req's runtime settings and returns what it wrote on its channel. */
static char *run_with(SpawnRequest *req, char *const *argv, char *const *env, siginfo_t *ret_si) {
        SpawnError e = {};
        char *out;
        Child c;

        child_init(&c);
        req->argv = argv;
        req->env = env;
        req->listen_fd = c.listen_fd;
        req->channel_fd = c.sv[1];
        req->cgroup_fd = -EBADF;
        assert_int_equal(spawn_worker(req, &c.res), 0);
        c.sv[1] = safe_close(c.sv[1]);
        out = read_channel(&c);
        assert_int_equal(spawn_read_exec_error(c.res.exec_error_fd, &e), 0);
        *ret_si = child_wait(&c);
        child_done(&c);
        return out;
}

static void test_spawn_worker_working_directory_and_environment(void **state) {
        char dir[] = "/tmp/test-spawn-wd.XXXXXX", want[128];
        char *argv[] = { (char *) "/bin/sh", (char *) "-c", (char *) "pwd -P >&4; echo \"$APP_ENV\" >&4",
                         NULL };
        char *env[] = { (char *) "APP_ENV=production", NULL };
        SpawnRequest req = { .working_directory = dir };
        _cleanup_free_ char *out = NULL;
        siginfo_t si;

        make_dir(dir, 0755);
        out = run_with(&req, argv, env, &si);
        assert_exited(&si, 0);
        snprintf(want, sizeof want, "%s\nproduction\n", dir);
        assert_string_equal(out, want);
        assert_int_equal(rmdir(dir), 0);
}

/* The commander's raised descriptor limit is not the worker's: it gets the soft limit asked for. */
static void test_spawn_worker_nofile_soft(void **state) {
        char *argv[] = { (char *) "/bin/sh", (char *) "-c", (char *) "ulimit -Sn >&4", NULL };
        SpawnRequest req = { .nofile_soft = 256 };
        _cleanup_free_ char *out = NULL;
        struct rlimit rl;
        siginfo_t si;

        assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
        if (rl.rlim_cur <= 256) {
                print_message("skipped: the soft descriptor limit (%llu) leaves no room to lower it for the "
                              "worker\n", (unsigned long long) rl.rlim_cur);
                skip();
        }
        out = run_with(&req, argv, NULL, &si);
        assert_exited(&si, 0);
        assert_string_equal(out, "256\n");
}

/* nobody's ids, the ones a worker of user=nobody gets. */
static void nobody_ids(uid_t *ret_uid, gid_t *ret_gid) {
        struct passwd *pw = getpwnam("nobody");

        assert_non_null(pw);
        *ret_uid = pw->pw_uid;
        *ret_gid = pw->pw_gid;
}

static void test_spawn_worker_identity(void **state) {
        char dir[] = "/tmp/test-spawn-id.XXXXXX", want[256];
        char *argv[] = { (char *) "/bin/sh", (char *) "-c",
                         (char *) "grep -E '^(Uid|Gid|Groups):' /proc/self/status >&4; pwd -P >&4", NULL };
        _cleanup_free_ char *out = NULL;
        gid_t groups[1];
        siginfo_t si;
        uid_t uid;
        gid_t gid;

        if (geteuid() != 0)
                skip();
        nobody_ids(&uid, &gid);
        groups[0] = gid;
        make_dir(dir, 0755);
        SpawnRequest req = { .working_directory = dir, .set_identity = true, .uid = uid, .gid = gid,
                             .groups = groups, .n_groups = 1 };
        out = run_with(&req, argv, NULL, &si);
        assert_exited(&si, 0);
        /* real, effective, saved and filesystem ids all switched: nothing left to regain root with */
        snprintf(want, sizeof want, "Uid:\t%u\t%u\t%u\t%u\nGid:\t%u\t%u\t%u\t%u\nGroups:\t%u \n%s\n", uid,
                 uid, uid, uid, gid, gid, gid, gid, gid, dir);
        assert_string_equal(out, want);

        /* no supplementary groups at all: none of ours either */
        free(out);
        req.n_groups = 0;
        out = run_with(&req, argv, NULL, &si);
        snprintf(want, sizeof want, "Uid:\t%u\t%u\t%u\t%u\nGid:\t%u\t%u\t%u\t%u\nGroups:\t \n%s\n", uid,
                 uid, uid, uid, gid, gid, gid, gid, dir);
        assert_string_equal(out, want);
        assert_int_equal(rmdir(dir), 0);
}

/* Spawns /bin/true with req's runtime settings and returns the failed step it reports. */
static SpawnError failed_step(SpawnRequest req) {
        char *argv[] = { (char *) "/bin/true", NULL };
        SpawnError e = {};
        Child c;

        child_init(&c);
        req.argv = argv;
        req.listen_fd = c.listen_fd;
        req.channel_fd = c.sv[1];
        req.cgroup_fd = -EBADF;
        assert_int_equal(spawn_worker(&req, &c.res), 0);
        assert_int_equal(spawn_read_exec_error(c.res.exec_error_fd, &e), 1);
        siginfo_t si = child_wait(&c);
        assert_exited(&si, 127);
        child_done(&c);
        return e;
}

static void test_spawn_worker_chdir_fails(void **state) {
        SpawnError e = failed_step((SpawnRequest) { .working_directory = "/nonexistent/test-spawn" });

        assert_int_equal(e.step, SPAWN_STEP_CHDIR);
        assert_int_equal(e.error, ENOENT);
        e = failed_step((SpawnRequest) { .working_directory = "/dev/null" });
        assert_int_equal(e.step, SPAWN_STEP_CHDIR);
        assert_int_equal(e.error, ENOTDIR);
}

/* A directory only root may enter: the worker changes into it as its own user, so that fails. */
static void test_spawn_worker_chdir_as_the_worker(void **state) {
        char dir[] = "/tmp/test-spawn-closed.XXXXXX";
        gid_t groups[1];
        uid_t uid;
        gid_t gid;

        if (geteuid() != 0)
                skip();
        nobody_ids(&uid, &gid);
        groups[0] = gid;
        make_dir(dir, 0700);
        SpawnRequest req = { .working_directory = dir, .set_identity = true, .uid = uid, .gid = gid,
                             .groups = groups, .n_groups = 1 };
        SpawnError e = failed_step(req);
        assert_int_equal(e.step, SPAWN_STEP_CHDIR);
        assert_int_equal(e.error, EACCES);
        assert_int_equal(rmdir(dir), 0);
}

/* Runs failed_step() in a helper process that is not what the test is: one that became nobody (no
 * privilege to switch), or root of a user namespace where only id 0 is mapped (any other id is
 * EINVAL). */
typedef enum HelperMode { HELPER_AS_NOBODY, HELPER_IN_USERNS } HelperMode;

typedef struct HelperResult {
        int setup; /* 0, or -errno of the helper's own setup */
        SpawnError e;
} HelperResult;

static _noreturn_ void helper_main(HelperMode mode, uid_t uid, gid_t gid, int ready_fd, int go_fd,
                                   int result_fd) {
        HelperResult out = {};
        gid_t groups[1] = { 0 };
        char *argv[] = { (char *) "/bin/true", NULL };
        int sv[2], r = 0;
        uid_t nobody;
        gid_t nogroup;
        char go;

        if (mode == HELPER_AS_NOBODY) {
                nobody_ids(&nobody, &nogroup);
                if (setgroups(0, NULL) < 0 || setresgid(nogroup, nogroup, nogroup) < 0 ||
                    setresuid(nobody, nobody, nobody) < 0)
                        r = -errno;
        } else {
                r = unshare(CLONE_NEWUSER) < 0 ? -errno : 0;
                /* the test, outside, writes our maps */
                if (write(ready_fd, &r, sizeof r) != sizeof r || (r == 0 && read(go_fd, &go, 1) != 1))
                        _exit(1);
        }
        out.setup = r;
        if (r == 0 && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
                SpawnRequest req = { .argv = argv, .listen_fd = sv[0], .channel_fd = sv[1],
                                     .cgroup_fd = -EBADF, .set_identity = true, .uid = uid, .gid = gid,
                                     .groups = groups, .n_groups = 1 };
                SpawnResult res;
                siginfo_t si;

                if (spawn_worker(&req, &res) < 0 || spawn_read_exec_error(res.exec_error_fd, &out.e) != 1 ||
                    waitid(P_PIDFD, (id_t) res.pidfd, &si, WEXITED) < 0)
                        out.setup = -EIO;
        }
        _exit(write(result_fd, &out, sizeof out) == sizeof out ? 0 : 1);
}

static void write_map(pid_t pid, const char *which) {
        char path[64];
        _cleanup_close_ int fd = -EBADF;

        snprintf(path, sizeof path, "/proc/%d/%s", (int) pid, which);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "0 0 1\n", 6), 6);
}

/* 0 with *ret, or -errno when the helper could not become what mode asks (no user namespaces here). */
static int helper_failed_step(HelperMode mode, uid_t uid, gid_t gid, SpawnError *ret) {
        int ready[2], go[2], result[2], setup = 0;
        HelperResult out = {};
        siginfo_t si = {};
        pid_t pid;

        assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
        assert_int_equal(pipe2(go, O_CLOEXEC), 0);
        assert_int_equal(pipe2(result, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                helper_main(mode, uid, gid, ready[1], go[0], result[1]);
        safe_close(ready[1]);
        safe_close(go[0]);
        safe_close(result[1]);
        if (mode == HELPER_IN_USERNS) {
                assert_int_equal(read(ready[0], &setup, sizeof setup), sizeof setup);
                if (setup == 0) {
                        /* as root outside, we may map without denying setgroups() inside */
                        write_map(pid, "uid_map");
                        write_map(pid, "gid_map");
                        assert_int_equal(write(go[1], "g", 1), 1);
                }
        }
        if (setup == 0)
                assert_int_equal(read(result[0], &out, sizeof out), sizeof out);
        else
                out.setup = setup;
        assert_int_equal(waitid(P_PID, (id_t) pid, &si, WEXITED), 0);
        safe_close(ready[0]);
        safe_close(go[1]);
        safe_close(result[0]);
        *ret = out.e;
        return out.setup;
}

static void test_spawn_worker_identity_steps_fail(void **state) {
        SpawnError e;
        int r;

        if (geteuid() != 0)
                skip(); /* the helpers become nobody, or map root of a user namespace */

        /* without CAP_SETGID: the first identity step, setgroups() */
        assert_int_equal(helper_failed_step(HELPER_AS_NOBODY, 0, 0, &e), 0);
        assert_int_equal(e.step, SPAWN_STEP_SETGROUPS);
        assert_int_equal(e.error, EPERM);

        /* ids the kernel cannot map: each step fails as itself, the ones before it done */
        r = helper_failed_step(HELPER_IN_USERNS, 0, 4242, &e);
        if (r < 0) {
                print_message("no user namespace here (%s): setgid and setuid failures not checked\n",
                              strerror(-r));
                return;
        }
        assert_int_equal(e.step, SPAWN_STEP_SETGID);
        assert_int_equal(e.error, EINVAL);
        assert_int_equal(helper_failed_step(HELPER_IN_USERNS, 4242, 0, &e), 0);
        assert_int_equal(e.step, SPAWN_STEP_SETUID);
        assert_int_equal(e.error, EINVAL);
}

/* A worker that switched its ids still dies with the commander: the kernel clears the parent-death
 * signal on a change of credentials, and the child sets it again. */
static void test_spawn_worker_death_signal_after_identity(void **state) {
        if (geteuid() != 0)
                skip();
        death_signal_case(true);
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
        int32_t unknown[2] = { _SPAWN_STEP_MAX, EPERM };
        SpawnError e = {};
        int p[2];

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(write(p[1], "xyz", 3), 3); /* a torn report is an I/O error, not garbage */
        safe_close(p[1]);
        assert_int_equal(spawn_read_exec_error(p[0], &e), 1);
        assert_int_equal(e.step, _SPAWN_STEP_INVALID);
        assert_int_equal(e.error, EIO);
        safe_close(p[0]);

        /* so is a step this commander does not know */
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(write(p[1], unknown, sizeof unknown), sizeof unknown);
        safe_close(p[1]);
        assert_int_equal(spawn_read_exec_error(p[0], &e), 1);
        assert_int_equal(e.step, _SPAWN_STEP_INVALID);
        assert_int_equal(e.error, EIO);
        safe_close(p[0]);
        assert_int_equal(spawn_read_exec_error(-1, &e), -EBADF);

        assert_string_equal(spawn_step_to_string(SPAWN_STEP_CHDIR), "chdir");
        assert_null(spawn_step_to_string(_SPAWN_STEP_MAX));
        assert_null(spawn_step_to_string(_SPAWN_STEP_INVALID));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_spawn_worker_true),
                cmocka_unit_test(test_spawn_worker_nofile_soft),
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
                cmocka_unit_test(test_spawn_worker_working_directory_and_environment),
                cmocka_unit_test(test_spawn_worker_identity),
                cmocka_unit_test(test_spawn_worker_chdir_fails),
                cmocka_unit_test(test_spawn_worker_chdir_as_the_worker),
                cmocka_unit_test(test_spawn_worker_identity_steps_fail),
                cmocka_unit_test(test_spawn_worker_death_signal_after_identity),
                cmocka_unit_test(test_spawn_env_formats),
                cmocka_unit_test(test_spawn_read_exec_error_short),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
