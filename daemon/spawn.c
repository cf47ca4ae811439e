/* SPDX-License-Identifier: MIT */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "macro.h"

extern char **environ;

/* The child's copy of the exec-error pipe sits here, above the fds it hands to the worker. */
#define CHILD_ERROR_FD 5
/* Scratch numbers above every fd the child is handed, so no dup2() clobbers a source. */
#define HIGH_FD 64

/* The 32-bit id calls where the plain ones take 16-bit ids (i386, 32-bit Arm). */
#ifdef SYS_setresuid32
#define SYS_SETGROUPS SYS_setgroups32
#define SYS_SETRESGID SYS_setresgid32
#define SYS_SETRESUID SYS_setresuid32
#else
#define SYS_SETGROUPS SYS_setgroups
#define SYS_SETRESGID SYS_setresgid
#define SYS_SETRESUID SYS_setresuid
#endif

/* One report on the exec-error pipe: the step that failed and its errno. Written with one write() of
 * less than PIPE_BUF bytes, so the reader gets all of it or nothing. */
typedef struct SpawnErrorMessage {
        int32_t step;
        int32_t error;
} SpawnErrorMessage;

static const char *const spawn_step_table[_SPAWN_STEP_MAX] = {
        [SPAWN_STEP_CGROUP] = "cgroup",
        [SPAWN_STEP_FDS] = "fds",
        [SPAWN_STEP_SETGROUPS] = "setgroups",
        [SPAWN_STEP_SETGID] = "setgid",
        [SPAWN_STEP_SETUID] = "setuid",
        [SPAWN_STEP_CHDIR] = "chdir",
        [SPAWN_STEP_EXEC] = "exec",
};

const char *spawn_step_to_string(SpawnStep s) {
        return s >= 0 && s < _SPAWN_STEP_MAX ? spawn_step_table[s] : NULL;
}

char *spawn_env(const char *key, const char *format, ...) {
        _cleanup_free_ char *value = NULL;
        char *s;
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(&value, format, ap);
        va_end(ap);
        if (r < 0)
                return NULL;
        if (asprintf(&s, "%s=%s", key, value) < 0)
                return NULL;
        return s;
}

static bool env_overridden(const char *entry, char *const *env) {
        size_t klen = strcspn(entry, "=");

        for (char *const *e = env; e && *e; e++)
                if (strncmp(*e, entry, klen) == 0 && (*e)[klen] == '=')
                        return true;
        return false;
}

/* environ minus the keys we set, plus ours, plus a slot for LISTEN_PID (only the child knows it). */
static char **build_env(char *const *extra, char *listen_pid_slot) {
        size_t n_env = 0, n_extra = 0, k = 0;
        char **env;

        while (environ[n_env])
                n_env++;
        while (extra && extra[n_extra])
                n_extra++;
        env = calloc(n_env + n_extra + 2, sizeof(char *));
        if (!env)
                return NULL;
        for (size_t i = 0; i < n_env; i++)
                if (!env_overridden(environ[i], extra) && !startswith(environ[i], "LISTEN_PID=") &&
                    !startswith(environ[i], "LISTEN_FDS=") && !startswith(environ[i], "LISTEN_FDNAMES=") &&
                    !startswith(environ[i], "NOTIFY_SOCKET=") && !startswith(environ[i], "WATCHDOG_"))
                        env[k++] = environ[i];
        for (size_t i = 0; i < n_extra; i++)
                env[k++] = extra[i];
        env[k++] = listen_pid_slot;
        env[k] = NULL;
        return env;
}

/* Runs in the child between clone3 and exec: only async-signal-safe calls from here on. */

static _noreturn_ void child_fail_on(int fd, SpawnStep step, int error) {
        SpawnErrorMessage m = { .step = step, .error = error };

        (void) !write(fd, &m, sizeof m);
        _exit(127);
}

static _noreturn_ void child_fail(SpawnStep step, int error) {
        child_fail_on(CHILD_ERROR_FD, step, error);
}

static void child_set_death_signal(int sig, pid_t parent) {
        (void) prctl(PR_SET_PDEATHSIG, sig);
        /* the commander may have died before prctl: then the signal never comes (we were already
         * reparented) and the worker would run on unsupervised */
        if (getppid() != parent)
                _exit(127);
}

/* The worker's groups, gid and uid, then its directory: after everything that needs the commander's
 * privileges (the cgroup move) and before exec. Each id step needs the privilege the next one gives
 * up. The directory is entered as the worker's user, as systemd does: one that user cannot reach fails
 * here, named, rather than leaving the worker in a directory it cannot read (and a directory on NFS
 * with root squashing is only the user's to enter).
 *
 * System calls, not glibc's set*id(): those change every thread of the process under glibc's own lock
 * and thread list, which after a raw clone3() are a copy of the parent's, the lock perhaps held by a
 * thread the child does not have. The system calls change this one thread, which is all there is. */
static void child_apply_runtime(const SpawnRequest *req, pid_t parent) {
        if (req->set_identity) {
                if (syscall(SYS_SETGROUPS, req->n_groups, req->n_groups > 0 ? req->groups : NULL) < 0)
                        child_fail(SPAWN_STEP_SETGROUPS, errno);
                if (syscall(SYS_SETRESGID, req->gid, req->gid, req->gid) < 0)
                        child_fail(SPAWN_STEP_SETGID, errno);
                if (syscall(SYS_SETRESUID, req->uid, req->uid, req->uid) < 0)
                        child_fail(SPAWN_STEP_SETUID, errno);
                /* the kernel clears the parent-death signal when the credentials change */
                if (req->death_signal > 0)
                        child_set_death_signal(req->death_signal, parent);
        }
        if (req->working_directory && chdir(req->working_directory) < 0)
                child_fail(SPAWN_STEP_CHDIR, errno);
}

/* Fallback when the kernel refused CLONE_INTO_CGROUP: the child moves itself before it execs. */
static int child_enter_cgroup(int cgroup_fd) {
        int fd = openat(cgroup_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = write(fd, "0", 1);
        int e = errno;
        (void) close(fd);
        return n == 1 ? 0 : -e;
}

static _noreturn_ void child_exec(const SpawnRequest *req, pid_t parent, bool into_cgroup, int error_fd,
                                  int release_read_fd, char **env, char *listen_pid_slot) {
        sigset_t all;
        int hi_listen, hi_channel;

        /* the commander blocks signals for sd-event; a worker starts with a clean slate */
        sigemptyset(&all);
        (void) sigprocmask(SIG_SETMASK, &all, NULL);
        for (int sig = 1; sig < _NSIG; sig++)
                (void) signal(sig, SIG_DFL);
        /* its own session: a Ctrl-C on the commander's terminal is the commander's to handle (drain the
         * front end, then stop workers), not a signal every worker gets at once */
        (void) setsid();
        if (req->death_signal > 0)
                child_set_death_signal(req->death_signal, parent);
        if (req->cgroup_fd >= 0 && !into_cgroup) {
                int r = child_enter_cgroup(req->cgroup_fd);
                if (r < 0)
                        child_fail_on(error_fd, SPAWN_STEP_CGROUP, -r);
        }

        /* Move everything above the target numbers first so dup2() cannot clobber a source. */
        error_fd = fcntl(error_fd, F_DUPFD_CLOEXEC, HIGH_FD);
        if (error_fd < 0)
                _exit(127);
        hi_listen = fcntl(req->listen_fd, F_DUPFD_CLOEXEC, HIGH_FD);
        hi_channel = fcntl(req->channel_fd, F_DUPFD_CLOEXEC, HIGH_FD);
        if (release_read_fd >= 0)
                release_read_fd = fcntl(release_read_fd, F_DUPFD_CLOEXEC, HIGH_FD);
        if (dup3(error_fd, CHILD_ERROR_FD, O_CLOEXEC) < 0)
                _exit(127);
        if (hi_listen < 0 || hi_channel < 0)
                child_fail(SPAWN_STEP_FDS, EBADF);
        if (dup2(hi_listen, SPAWN_LISTEN_FD) < 0 || dup2(hi_channel, SPAWN_CHANNEL_FD) < 0)
                child_fail(SPAWN_STEP_FDS, errno);

        if (release_read_fd >= 0) {
                char c;
                ssize_t n;

                if (dup3(release_read_fd, CHILD_ERROR_FD + 1, O_CLOEXEC) < 0)
                        child_fail(SPAWN_STEP_FDS, errno);
                (void) close_range(CHILD_ERROR_FD + 2, ~0U, 0);
                do
                        n = read(CHILD_ERROR_FD + 1, &c, 1);
                while (n < 0 && errno == EINTR);
                if (n != 1) /* the commander gave up on this worker before it was placed */
                        _exit(126);
                (void) close(CHILD_ERROR_FD + 1);
        } else
                (void) close_range(CHILD_ERROR_FD + 1, ~0U, 0);

        /* last before exec: nothing after it needs the commander's privileges */
        child_apply_runtime(req, parent);

        /* "LISTEN_PID=" plus room for the number was reserved by the parent */
        {
                char digits[16];
                int n = 0;
                for (pid_t p = getpid(); p > 0 && n < 15; p /= 10)
                        digits[n++] = (char) ('0' + p % 10);
                char *out = listen_pid_slot + strlen("LISTEN_PID=");
                while (n > 0)
                        *out++ = digits[--n];
                *out = 0;
        }

        /* the commander raised its own descriptor limit for thousands of workers and clients; a worker gets
         * the limit it would have had without us (select() breaks past 1024) */
        if (req->nofile_soft > 0) {
                struct rlimit rl;
                if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && req->nofile_soft < rl.rlim_cur) {
                        rl.rlim_cur = (rlim_t) req->nofile_soft;
                        (void) setrlimit(RLIMIT_NOFILE, &rl);
                }
        }
        execvpe(req->argv[0], req->argv, env);
        child_fail(SPAWN_STEP_EXEC, errno);
}

static int do_clone3(const SpawnRequest *req, bool into_cgroup, int *ret_pidfd, pid_t *ret_pid) {
        struct clone_args args = {
                .flags = CLONE_PIDFD | (into_cgroup ? CLONE_INTO_CGROUP : 0),
                .pidfd = (uint64_t) (uintptr_t) ret_pidfd,
                .exit_signal = SIGCHLD,
                .cgroup = into_cgroup ? (uint64_t) req->cgroup_fd : 0,
        };
        long pid;

        pid = syscall(SYS_clone3, &args, sizeof args);
        if (pid < 0)
                return -errno;
        *ret_pid = (pid_t) pid;
        return 0;
}

/* Without clone3 (Linux < 5.3, valgrind, a seccomp profile that answers ENOSYS): fork, then a pidfd for
 * our own unreaped child, which cannot be a recycled pid. */
static int do_fork(int *ret_pidfd, pid_t *ret_pid) {
        pid_t pid = fork();
        int fd;

        if (pid < 0)
                return -errno;
        if (pid == 0) {
                *ret_pid = 0;
                return 0;
        }
        fd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (fd < 0) {
                int e = errno;
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                return -e;
        }
        *ret_pidfd = fd;
        *ret_pid = pid;
        return 0;
}

int spawn_worker(const SpawnRequest *req, SpawnResult *ret) {
        _cleanup_close_ int error_read = -EBADF, error_write = -EBADF, release_read = -EBADF,
                            release_write = -EBADF;
        _cleanup_free_ char **env = NULL;
        char listen_pid_slot[32] = "LISTEN_PID=";
        int pipefd[2], pidfd = -EBADF, r;
        bool into_cgroup = req->cgroup_fd >= 0, used_fork = false;
        pid_t pid = 0, parent = getpid();

        if (!req->argv || !req->argv[0])
                return -EINVAL;
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        error_read = pipefd[0], error_write = pipefd[1];
        if (req->park) {
                if (pipe2(pipefd, O_CLOEXEC) < 0)
                        return -errno;
                release_read = pipefd[0], release_write = pipefd[1];
        }
        env = build_env(req->env, listen_pid_slot);
        if (!env)
                return -ENOMEM;

        r = do_clone3(req, into_cgroup, &pidfd, &pid);
        if (r == -ENOSYS) {
                into_cgroup = false;
                r = do_fork(&pidfd, &pid);
                if (r >= 0)
                        used_fork = true;
        } else if (r < 0 && into_cgroup && r != -ENOMEM) {
                /* CLONE_INTO_CGROUP needs Linux >= 5.7 and a cgroup the kernel accepts; the caller
                 * moves the child after birth instead (it is parked or has not exec'd yet). */
                into_cgroup = false;
                r = do_clone3(req, false, &pidfd, &pid);
        }
        if (r < 0)
                return r;
        if (pid == 0)
                child_exec(req, parent, into_cgroup, error_write, release_read, env, listen_pid_slot);

        *ret = (SpawnResult) {
                .pid = pid,
                .pidfd = pidfd,
                .release_fd = TAKE_FD(release_write),
                .exec_error_fd = TAKE_FD(error_read),
                .into_cgroup = into_cgroup,
                .used_fork = used_fork,
        };
        return 0;
}

int spawn_release(int *release_fd) {
        const char go = 'g';
        ssize_t n;

        if (*release_fd < 0)
                return 0;
        n = write(*release_fd, &go, 1);
        *release_fd = safe_close(*release_fd);
        return n == 1 ? 0 : -errno;
}

int spawn_read_exec_error(int fd, SpawnError *ret) {
        SpawnErrorMessage m;
        ssize_t n;

        n = read(fd, &m, sizeof m);
        if (n < 0)
                return errno == EAGAIN ? -EAGAIN : -errno;
        if (n == 0)
                return 0;
        /* a torn or unknown report is an I/O error of a step we cannot name, not garbage */
        if (n != sizeof m || !spawn_step_to_string(m.step))
                *ret = (SpawnError) { .step = _SPAWN_STEP_INVALID, .error = EIO };
        else
                *ret = (SpawnError) { .step = m.step, .error = m.error };
        return 1;
}
