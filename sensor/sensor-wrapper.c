/* SPDX-License-Identifier: MIT */
/* elastic-pool-sensor -- COMMAND...: the sensor for a worker that does not link the library. It runs
 * COMMAND as its only child, hands it the socket-activation fds, forwards the signals a supervisor sends,
 * reports the cgroup of the scope they share (application fields absent: it cannot know them), and exits
 * with the child's status. Its sensor reconnects to ELASTIC_POOL_CHANNEL like the library's in any worker
 * (the wrapper drives it in its own loop); it cannot list the child's users, so a restarted commander
 * learns none from it. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "elastic-pool/sensor.h"
#include "log.h"
#include "macro.h"
#include "parse-util.h"
#include "time-util.h"

#define SD_LISTEN_FDS_START 3
/* sanity bound on LISTEN_FDS, far above what any unit passes */
#define LISTEN_FDS_MAX 4096U
#define EXIT_EXEC_NOT_FOUND 127
#define EXIT_EXEC_FAILED 126

static const int forwarded_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };

static usec_t arg_interval = 0;
static char **arg_command = NULL;

DEFINE_TRIVIAL_CLEANUP_FUNC(ep_sensor *, ep_sensor_free);

static void help(void) {
        printf("%s [OPTIONS...] -- COMMAND [ARGS...]\n\n"
               "Runs COMMAND as an elastic-pool worker that does not link libelastic-pool-sensor:\n"
               "reports the cgroup quantities of the scope it shares with COMMAND over\n"
               "ELASTIC_POOL_CHANNEL_FD (reconnecting to ELASTIC_POOL_CHANNEL when the commander\n"
               "restarts), passes the socket-activation fds (LISTEN_FDS) on to COMMAND,\n"
               "forwards SIGTERM, SIGINT, SIGHUP and SIGQUIT to it, and exits with its status (128+N\n"
               "when signal N killed it; 1 for an error of its own, 127/126 when COMMAND cannot run).\n\n"
               "  -h --help               Show this help\n"
               "     --version            Show the version\n"
               "     --interval=DURATION  Report interval (\"500ms\", \"5s\"; default\n"
               "                          ELASTIC_POOL_INTERVAL, else 5s)\n",
               program_invocation_short_name);
}

/* 0 to go on, 1 when done (help, version), -EINVAL on a bad command line (logged). */
static int parse_argv(int argc, char *argv[]) {
        enum { ARG_VERSION = 0x100, ARG_INTERVAL };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "interval", required_argument, NULL, ARG_INTERVAL },
                {},
        };
        int c, r;

        /* "+": options end at COMMAND, so COMMAND's own options are left to it even without "--" */
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 1;
                case ARG_VERSION:
                        printf("elastic-pool-sensor %s\n", EP_VERSION);
                        return 1;
                case ARG_INTERVAL:
                        r = parse_duration(optarg, &arg_interval);
                        if (r < 0 || arg_interval == 0)
                                return log_error_errno(r < 0 ? r : -EINVAL, "Invalid --interval '%s': %m",
                                                       optarg);
                        break;
                default:
                        return -EINVAL; /* getopt named the option already */
                }
        if (optind >= argc)
                return log_error_errno(-EINVAL, "No command given; usage: %s [--interval=DURATION] -- "
                                       "COMMAND...", program_invocation_short_name);
        arg_command = argv + optind;
        return 0;
}

/* The socket-activation fds meant for us (LISTEN_PID is ours): *ret_n of them from fd 3 on, checked to be
 * open before anything of ours can take those numbers. fds meant for another process are not passed on. */
static int listen_fds_check(unsigned *ret_n) {
        const char *pid_s = getenv("LISTEN_PID"), *fds_s = getenv("LISTEN_FDS");
        uint32_t pid, n;
        int r;

        *ret_n = 0;
        if (!pid_s || !fds_s)
                return 0;
        r = parse_uint32(pid_s, &pid);
        if (r < 0)
                return log_error_errno(r, "Invalid LISTEN_PID='%s': %m", pid_s);
        if (pid != (uint32_t) getpid()) {
                (void) unsetenv("LISTEN_PID");
                (void) unsetenv("LISTEN_FDS");
                (void) unsetenv("LISTEN_FDNAMES");
                return 0;
        }
        r = parse_uint32(fds_s, &n);
        if (r >= 0 && n > LISTEN_FDS_MAX)
                r = -ERANGE;
        if (r < 0)
                return log_error_errno(r, "Invalid LISTEN_FDS='%s': %m", fds_s);
        for (unsigned i = 0; i < n; i++)
                if (fcntl(SD_LISTEN_FDS_START + (int) i, F_GETFD) < 0)
                        return log_error_errno(-EBADF, "LISTEN_FDS=%u, but fd %u is not open", n,
                                               SD_LISTEN_FDS_START + i);
        *ret_n = n;
        return 0;
}

static void signals_fill(sigset_t *set) {
        sigemptyset(set);
        for (size_t i = 0; i < ELEMENTSOF(forwarded_signals); i++)
                sigaddset(set, forwarded_signals[i]);
}

/* Runs in the forked child, up to exec. The wrapper is single-threaded, so setenv() is safe here. */
_noreturn_ static void child_exec(unsigned n_listen, const sigset_t *saved_mask, pid_t parent,
                                  int error_fd) {
        char pid[32];
        int e;

        for (unsigned i = 0; i < n_listen; i++)
                (void) fcntl(SD_LISTEN_FDS_START + (int) i, F_SETFD, 0);
        if (n_listen > 0) {
                /* sd_listen_fds() in the child checks that the fds are meant for it */
                snprintf(pid, sizeof pid, "%d", (int) getpid());
                (void) setenv("LISTEN_PID", pid, 1);
        }
        /* We are the scope's sensor: a child linking the library must not report the same scope again.
         * ep_sensor_new() took it out of our environment already; said again where the child's is made. */
        (void) unsetenv("ELASTIC_POOL_CHANNEL");
        /* if we die without forwarding anything, the worker is asked to stop rather than orphaned */
        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
                _exit(EXIT_FAILURE);
        sigprocmask(SIG_SETMASK, saved_mask, NULL);

        execvp(arg_command[0], arg_command);
        e = errno;
        (void) write(error_fd, &e, sizeof e);
        _exit(e == ENOENT ? EXIT_EXEC_NOT_FOUND : EXIT_EXEC_FAILED);
}

/* Starts COMMAND; *ret_pidfd names it from then on. 0, or the exit status to use when it cannot run. */
static int spawn(unsigned n_listen, const sigset_t *saved_mask, pid_t *ret_pid, int *ret_pidfd) {
        _cleanup_close_ int read_fd = -EBADF, write_fd = -EBADF;
        int pipe_fds[2], e = 0, pidfd;
        pid_t pid, parent = getpid();
        ssize_t n;

        /* a close-on-exec pipe: EOF means exec succeeded, 4 bytes are the errno of a failed one */
        if (pipe2(pipe_fds, O_CLOEXEC) < 0) {
                log_error_errno(-errno, "Cannot create a pipe: %m");
                return EXIT_FAILURE;
        }
        read_fd = pipe_fds[0];
        write_fd = pipe_fds[1];

        pid = fork();
        if (pid < 0) {
                log_error_errno(-errno, "Cannot fork: %m");
                return EXIT_FAILURE;
        }
        if (pid == 0)
                child_exec(n_listen, saved_mask, parent, write_fd);
        write_fd = safe_close(write_fd);

        /* race-free: an unreaped child of ours cannot be replaced by another process with its pid */
        pidfd = pidfd_open(pid, 0);
        if (pidfd < 0) {
                log_error_errno(-errno, "Cannot open a pidfd for the child (needs Linux >= 5.3): %m");
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                return EXIT_FAILURE;
        }
        while ((n = read(read_fd, &e, sizeof e)) < 0 && errno == EINTR)
                ;
        if (n == (ssize_t) sizeof e) {
                log_error_errno(-e, "Cannot execute '%s': %m", arg_command[0]);
                (void) waitpid(pid, NULL, 0);
                safe_close(pidfd);
                return e == ENOENT ? EXIT_EXEC_NOT_FOUND : EXIT_EXEC_FAILED;
        }
        *ret_pid = pid;
        *ret_pidfd = pidfd;
        return 0;
}

static void forward_signals(int signal_fd, int pidfd) {
        struct signalfd_siginfo si;

        while (read(signal_fd, &si, sizeof si) == (ssize_t) sizeof si)
                if (pidfd_send_signal(pidfd, (int) si.ssi_signo, NULL, 0) < 0 && errno != ESRCH)
                        log_warning_errno(-errno, "Cannot forward signal %s to the child: %m",
                                          strsignal((int) si.ssi_signo));
}

static int poll_timeout_ms(uint64_t deadline) {
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (deadline <= now)
                return 0;
        if (deadline == USEC_INFINITY || deadline - now >= (usec_t) INT_MAX * USEC_PER_MSEC)
                return -1;
        return (int) ((deadline - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC);
}

/* Drives the sensor until the child exits. 0 or -errno. */
static int run(ep_sensor *s, int pidfd, int signal_fd) {
        bool warned = false;

        for (;;) {
                struct pollfd p[3] = {
                        { .fd = pidfd, .events = POLLIN },
                        { .fd = signal_fd, .events = POLLIN },
                        { .fd = ep_sensor_get_fd(s), .events = (short) ep_sensor_get_events(s) },
                };
                uint64_t deadline = USEC_INFINITY;
                int r;

                (void) ep_sensor_get_timeout(s, &deadline);
                if (poll(p, ELEMENTSOF(p), poll_timeout_ms(deadline)) < 0) {
                        if (errno == EINTR)
                                continue;
                        return log_error_errno(-errno, "poll() failed: %m");
                }
                if (p[1].revents & POLLIN)
                        forward_signals(signal_fd, pidfd);
                if (p[0].revents & POLLIN)
                        return 0;
                r = ep_sensor_dispatch(s);
                if (r < 0 && !warned) {
                        log_warning_errno(r, "Sensor dispatch failed, carrying on: %m");
                        warned = true;
                }
        }
}

/* Reaps the child; its exit status, or 128 + the signal that killed it, as a shell reports it. */
static int reap(int pidfd, char *reason, size_t size) {
        siginfo_t si = {};

        if (waitid((idtype_t) P_PIDFD, (id_t) pidfd, &si, WEXITED) < 0) {
                log_error_errno(-errno, "Cannot reap the child: %m");
                snprintf(reason, size, "child lost");
                return EXIT_FAILURE;
        }
        if (si.si_code == CLD_EXITED) {
                snprintf(reason, size, "child exited with status %d", si.si_status);
                return si.si_status;
        }
        snprintf(reason, size, "child killed by signal SIG%s", strna(sigabbrev_np(si.si_status)));
        return 128 + si.si_status;
}

int main(int argc, char *argv[]) {
        _cleanup_(ep_sensor_freep) ep_sensor *s = NULL;
        _cleanup_close_ int signal_fd = -EBADF, pidfd = -EBADF;
        sigset_t forwarded, saved;
        unsigned n_listen;
        char reason[128];
        pid_t pid = 0;
        int r, status;

        log_setup("elastic-pool-sensor", getenv("ELASTIC_POOL_GROUP"));
        r = parse_argv(argc, argv);
        if (r != 0)
                return r > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
        /* first, before any fd of ours can land on a number in the LISTEN_FDS range */
        r = listen_fds_check(&n_listen);
        if (r < 0)
                return EXIT_FAILURE;

        /* blocked from the start: a SIGTERM that arrives while we set up is forwarded, not fatal */
        signals_fill(&forwarded);
        sigprocmask(SIG_BLOCK, &forwarded, &saved);
        signal_fd = signalfd(-1, &forwarded, SFD_CLOEXEC | SFD_NONBLOCK);
        if (signal_fd < 0) {
                log_error_errno(-errno, "Cannot create a signalfd: %m");
                return EXIT_FAILURE;
        }

        r = ep_sensor_new(&s);
        if (r < 0) {
                log_error_errno(r, "Cannot start the sensor: %m");
                return EXIT_FAILURE;
        }
        if (arg_interval > 0)
                (void) ep_sensor_set_interval(s, arg_interval);
        if (ep_sensor_get_fd(s) >= SD_LISTEN_FDS_START &&
            ep_sensor_get_fd(s) < SD_LISTEN_FDS_START + (int) n_listen) {
                log_error_errno(-EBADF, "ELASTIC_POOL_CHANNEL_FD=%d lies among the LISTEN_FDS fds",
                                ep_sensor_get_fd(s));
                return EXIT_FAILURE;
        }

        status = spawn(n_listen, &saved, &pid, &pidfd);
        if (status != 0)
                return status;
        (void) ep_sensor_watch_pid(s, pid);
        log_debug("Started '%s' as pid %d", arg_command[0], (int) pid);

        r = run(s, pidfd, signal_fd);
        if (r < 0) {
                (void) pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
                status = EXIT_FAILURE;
                (void) reap(pidfd, reason, sizeof reason);
        } else
                status = reap(pidfd, reason, sizeof reason);
        ep_sensor_goodbye(s, reason);
        return status;
}
