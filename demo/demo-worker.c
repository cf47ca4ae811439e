/* SPDX-License-Identifier: MIT */
/* elastic-pool-demo-worker: a small HTTP/1.1 keep-alive server that links the sensor. It serves on the
 * socket it is handed by socket activation (as the commander spawns it), or on --listen for manual
 * runs, and keeps per-user state that the sensor's move callbacks snapshot and install. */

#include <errno.h>
#include <arpa/inet.h>
#include <getopt.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "cleanup.h"
#include "elastic-pool/sensor.h"
#include "handlers.h"
#include "log.h"
#include "macro.h"
#include "parse-util.h"
#include "server.h"
#include "user-store.h"

#define PROGRAM "elastic-pool-demo-worker"
#define THREADS_MAX 1024
#define EXIT_USAGE 2

typedef struct Options {
        const char *listen;
        unsigned threads;
        uint64_t user_blob_size;
        uint64_t max_body_size;
        usec_t idle_timeout;
        usec_t shutdown_timeout;
        const char *package_format;
        MoveFaults faults;
        bool debug_hang;
} Options;

static void help(void) {
        printf("Usage: %s [OPTIONS]\n\n"
               "A demo HTTP/1.1 worker for elastic-pool. Serves on the socket passed by socket activation\n"
               "(LISTEN_FDS=1), or on --listen.\n\n"
               "  --listen PATH|HOST:PORT   listen on a Unix socket (a path has a '/') or TCP ([::1]:8080)\n"
               "  --threads N               executor threads (default 4, 1..%d)\n"
               "  --user-blob-size BYTES    per-user blob created at login (default 0; K, M, G suffixes)\n"
               "  --max-body-size BYTES     larger request bodies (discarded anyway) get 413 (default 16G)\n"
               "  --idle-timeout DURATION   close keep-alive connections idle this long (default 60s)\n"
               "  --shutdown-timeout DURATION  time in-flight requests get after SIGTERM (default 10s)\n"
               "  --package-format NAME     the format of its user packages, named in its Hello (default\n"
               "                            demo-user-v1); the commander moves users live only between\n"
               "                            workers of one format, and re-points them across formats\n"
               "  -h --help                 show this help\n"
               "  --version                 show the version\n\n"
               "Faults injected into live moves on purpose, for tests of the commander (default: none):\n"
               "  --install-delay DURATION  wait this long before each install (a hung target)\n"
               "  --install-error           refuse every install: InstallResult ok=false (after the delay)\n"
               "  --snapshot-delay DURATION wait this long before each snapshot (a slow source)\n"
               "The delays stall the worker's event loop: meanwhile it takes no new request, sends no\n"
               "report and handles no signal.\n\n"
               "For tests of the commander's health checks (default: off):\n"
               "  --debug-hang              enable /debug/hang?for=DURATION: the requests after it wait\n"
               "                            that long before they are handled (the sensor reports on)\n\n"
               "Endpoints: / /hello /login?user=U /logout /state /work?cpu_ms=&alloc_kb=&sleep_ms=&bytes=\n"
               "           /_monitor/state /debug/hang?for= (with --debug-hang)\n",
               PROGRAM, THREADS_MAX);
}

_printf_(1, 2) static int usage_error(const char *fmt, ...) {
        va_list ap;

        fprintf(stderr, "%s: ", PROGRAM);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\nTry '%s --help'.\n", PROGRAM);
        return -EINVAL;
}

/* "HOST:PORT", "[V6]:PORT", ":PORT" or "*:PORT" (all addresses) -> host (NULL for all) and port. */
static int split_host_port(char *s, const char **ret_host, const char **ret_port) {
        char *colon;

        if (s[0] == '[') {
                char *end = strchr(s, ']');
                if (!end || end[1] != ':')
                        return -EINVAL;
                *end = 0;
                *ret_host = s + 1;
                *ret_port = end + 2;
        } else {
                colon = strrchr(s, ':');
                if (!colon)
                        return -EINVAL;
                *colon = 0;
                *ret_host = s;
                *ret_port = colon + 1;
        }
        if (streq(*ret_host, "") || streq(*ret_host, "*"))
                *ret_host = NULL;
        return **ret_port ? 0 : -EINVAL;
}

static bool listen_address_is_valid(const char *address) {
        _cleanup_free_ char *copy = strdup(address);
        const char *host, *port;

        if (strchr(address, '/'))
                return true;
        return copy && split_host_port(copy, &host, &port) >= 0;
}

/* 1: run, 0: exit successfully (--help), -EINVAL: usage error (reported). */
static int parse_argv(int argc, char *argv[], Options *o) {
        enum {
                ARG_LISTEN = 0x100,
                ARG_THREADS,
                ARG_BLOB,
                ARG_MAX_BODY,
                ARG_IDLE,
                ARG_SHUTDOWN,
                ARG_INSTALL_DELAY,
                ARG_INSTALL_ERROR,
                ARG_SNAPSHOT_DELAY,
                ARG_PACKAGE_FORMAT,
                ARG_DEBUG_HANG,
                ARG_VERSION
        };
        static const struct option options[] = {
                { "listen", required_argument, NULL, ARG_LISTEN },
                { "threads", required_argument, NULL, ARG_THREADS },
                { "user-blob-size", required_argument, NULL, ARG_BLOB },
                { "max-body-size", required_argument, NULL, ARG_MAX_BODY },
                { "idle-timeout", required_argument, NULL, ARG_IDLE },
                { "shutdown-timeout", required_argument, NULL, ARG_SHUTDOWN },
                { "install-delay", required_argument, NULL, ARG_INSTALL_DELAY },
                { "install-error", no_argument, NULL, ARG_INSTALL_ERROR },
                { "snapshot-delay", required_argument, NULL, ARG_SNAPSHOT_DELAY },
                { "package-format", required_argument, NULL, ARG_PACKAGE_FORMAT },
                { "debug-hang", no_argument, NULL, ARG_DEBUG_HANG },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {},
        };
        uint32_t u;
        int c;

        opterr = 0; /* our own messages, naming the bad input */
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case ARG_LISTEN:
                        if (!listen_address_is_valid(optarg))
                                return usage_error(
                                        "invalid --listen '%s': a socket path (with a '/'), HOST:PORT "
                                        "or [V6]:PORT",
                                        optarg);
                        o->listen = optarg;
                        break;
                case ARG_THREADS:
                        if (parse_uint32(optarg, &u) < 0 || u < 1 || u > THREADS_MAX)
                                return usage_error("invalid --threads '%s': a number 1..%d", optarg,
                                                   THREADS_MAX);
                        o->threads = u;
                        break;
                case ARG_BLOB:
                        if (parse_size(optarg, &o->user_blob_size) < 0 || o->user_blob_size > USER_BLOB_MAX)
                                return usage_error("invalid --user-blob-size '%s': a size up to 1G", optarg);
                        break;
                case ARG_MAX_BODY:
                        if (parse_size(optarg, &o->max_body_size) < 0)
                                return usage_error("invalid --max-body-size '%s': a size such as 64M",
                                                   optarg);
                        break;
                case ARG_IDLE:
                        if (parse_duration(optarg, &o->idle_timeout) < 0 || o->idle_timeout == 0)
                                return usage_error("invalid --idle-timeout '%s': a duration such as 60s",
                                                   optarg);
                        break;
                case ARG_SHUTDOWN:
                        if (parse_duration(optarg, &o->shutdown_timeout) < 0)
                                return usage_error("invalid --shutdown-timeout '%s': a duration such as 10s",
                                                   optarg);
                        break;
                case ARG_INSTALL_DELAY:
                        if (parse_duration(optarg, &o->faults.install_delay) < 0)
                                return usage_error("invalid --install-delay '%s': a duration such as 200ms",
                                                   optarg);
                        break;
                case ARG_INSTALL_ERROR:
                        o->faults.install_error = true;
                        break;
                case ARG_SNAPSHOT_DELAY:
                        if (parse_duration(optarg, &o->faults.snapshot_delay) < 0)
                                return usage_error("invalid --snapshot-delay '%s': a duration such as 8s",
                                                   optarg);
                        break;
                case ARG_PACKAGE_FORMAT:
                        o->package_format = optarg;
                        break;
                case ARG_DEBUG_HANG:
                        o->debug_hang = true;
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("%s %s\n", PROGRAM, EP_VERSION);
                        return 0;
                case '?':
                        /* a long option without a value given one (--install-error=yes): optopt is its
                         * code, no character to print */
                        if (optopt >= ARG_LISTEN || (optopt && startswith(argv[optind - 1], "--")))
                                return usage_error("option '%s' takes no value", argv[optind - 1]);
                        if (optopt)
                                return usage_error("unknown option '-%c'", optopt);
                        return usage_error("unknown option '%s'", argv[optind - 1]);
                case ':':
                        return usage_error("option '%s' needs a value", argv[optind - 1]);
                default:
                        return usage_error("unexpected option");
                }
        if (optind < argc)
                return usage_error("unexpected argument '%s'", argv[optind]);
        if (!o->listen && sd_listen_fds(0) <= 0)
                return usage_error(
                        "no socket: pass --listen PATH|HOST:PORT or start under socket activation");
        return 1;
}

static int listen_unix(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, strlen(path) + 1);
        /* A socket left behind by an earlier run would make bind() fail; anything else we leave alone. */
        if (lstat(path, &st) >= 0 && S_ISSOCK(st.st_mode))
                (void) unlink(path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(fd, SOMAXCONN) < 0)
                return -errno;
        return TAKE_FD(fd);
}

static int listen_tcp(const char *address) {
        struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM };
        _cleanup_free_ char *copy = strdup(address);
        struct addrinfo *ai = NULL;
        const char *host, *port;
        int r, fd = -EBADF;

        if (!copy)
                return -ENOMEM;
        if (split_host_port(copy, &host, &port) < 0)
                return -EINVAL;
        r = getaddrinfo(host, port, &hints, &ai);
        if (r != 0)
                return r == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;
        r = -EADDRNOTAVAIL;
        for (struct addrinfo *a = ai; a; a = a->ai_next) {
                fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
                if (fd < 0) {
                        r = -errno;
                        continue;
                }
                (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int) { 1 }, sizeof(int));
                if (bind(fd, a->ai_addr, a->ai_addrlen) >= 0 && listen(fd, SOMAXCONN) >= 0)
                        break;
                r = -errno;
                fd = safe_close(fd);
        }
        freeaddrinfo(ai);
        return fd >= 0 ? fd : r;
}

/* The socket handed over by socket activation: exactly one, a listening stream socket. */
static int listen_activated(void) {
        int n = sd_listen_fds(1);

        if (n < 0)
                return log_error_errno(n, "Failed to read the socket-activation environment: %m");
        if (n == 0)
                return log_error_errno(
                        EINVAL, "No socket: pass --listen PATH|HOST:PORT or start under socket activation");
        if (n > 1)
                return log_error_errno(EINVAL, "Got %d sockets by socket activation, expected one", n);
        if (sd_is_socket(SD_LISTEN_FDS_START, AF_UNSPEC, SOCK_STREAM, 1) <= 0)
                return log_error_errno(EINVAL,
                                       "The socket passed as fd %d is not a listening stream socket",
                                       SD_LISTEN_FDS_START);
        return SD_LISTEN_FDS_START;
}

static int open_listener(const Options *o) {
        int fd;

        if (!o->listen)
                return listen_activated();
        fd = strchr(o->listen, '/') ? listen_unix(o->listen) : listen_tcp(o->listen);
        if (fd < 0)
                return log_error_errno(fd, "Failed to listen on '%s': %m", o->listen);
        return fd;
}

/* Logs where we serve; with "HOST:0" or socket activation that is the only place the port shows. */
static void log_listening(int fd) {
        struct sockaddr_storage sa;
        socklen_t l = sizeof sa;
        char host[INET6_ADDRSTRLEN] = "?";

        if (getsockname(fd, (struct sockaddr *) &sa, &l) < 0)
                return (void) log_info("Serving on fd %d", fd);
        if (sa.ss_family == AF_UNIX)
                return (void) log_info("Listening on %s", ((struct sockaddr_un *) &sa)->sun_path);
        if (sa.ss_family == AF_INET) {
                struct sockaddr_in *in = (struct sockaddr_in *) &sa;
                inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
                return (void) log_info("Listening on %s:%u", host, (unsigned) ntohs(in->sin_port));
        }
        if (sa.ss_family == AF_INET6) {
                struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &sa;
                inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
                return (void) log_info("Listening on [%s]:%u", host, (unsigned) ntohs(in6->sin6_port));
        }
        log_info("Serving on fd %d (address family %d)", fd, sa.ss_family);
}

static void on_drain(void *userdata, uint64_t deadline_usec) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        char buf[32];

        /* The commander stops routing to us and sends SIGTERM after the window; nothing to do before. */
        log_info("Asked to drain, deadline in %s",
                 format_timespan(buf, sizeof buf, deadline_usec > now ? deadline_usec - now : 0));
}

static int run(const Options *o) {
        _cleanup_(user_store_freep) UserStore *users = NULL;
        ep_sensor *sensor = NULL;
        Server *server = NULL;
        App app;
        int fd, r;

        fd = open_listener(o);
        if (fd < 0)
                return fd;
        log_listening(fd);
        r = user_store_new(o->user_blob_size, &users);
        if (r < 0) {
                safe_close(fd);
                return log_error_errno(r, "Failed to create the user store: %m");
        }
        r = ep_sensor_new(&sensor);
        if (r < 0) {
                safe_close(fd);
                return log_error_errno(r, "Failed to create the sensor: %m");
        }
        r = app_init(&app, users, sensor, o->threads, o->max_body_size);
        if (r < 0) {
                safe_close(fd);
                ep_sensor_free(sensor);
                return log_error_errno(r, "Failed to set up: %m");
        }
        app.faults = o->faults;
        app.debug_hang = o->debug_hang;
        (void) ep_sensor_set_user_callbacks(sensor, &app_user_callbacks, &app);
        r = ep_sensor_set_package_format(sensor, o->package_format);
        if (r < 0)
                log_warning_errno(r, "Invalid --package-format '%s' (%m); the Hello names none", o->package_format);
        ep_sensor_set_drain_callback(sensor, on_drain, &app);

        r = server_new(fd, &app, &(ServerConfig) { .threads = o->threads,
                                                   .idle_timeout = o->idle_timeout,
                                                   .shutdown_timeout = o->shutdown_timeout },
                       &server);
        if (r < 0)
                log_error_errno(r, "Failed to start the server: %m");
        else
                r = server_run(server);
        server = server_free(server);
        if (o->listen && strchr(o->listen, '/'))
                (void) unlink(o->listen);
        ep_sensor_goodbye(sensor, r < 0 ? "failure" : "shutdown");
        ep_sensor_free(sensor);
        app_done(&app);
        if (r >= 0)
                log_info("Stopped");
        return r;
}

int main(int argc, char *argv[]) {
        Options o = {
                .threads = 4,
                .max_body_size = REQUEST_BODY_MAX_DEFAULT,
                .idle_timeout = 60 * USEC_PER_SEC,
                .shutdown_timeout = 10 * USEC_PER_SEC,
                .package_format = "demo-user-v1",
        };
        int r;

        log_setup(PROGRAM, getenv("ELASTIC_POOL_GROUP"));
        r = parse_argv(argc, argv, &o);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        /* Writes use MSG_NOSIGNAL; this covers the sensor's and anything else's. */
        (void) signal(SIGPIPE, SIG_IGN);
        r = run(&o);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
