/* SPDX-License-Identifier: MIT */
/* ep-channel-peer: a fake commander for the tests and the demo. It spawns COMMAND with one end of a channel
 * socketpair as ELASTIC_POOL_CHANNEL_FD, prints every frame it receives as one line of text on stdout
 * ("-" marks an absent field), and sends the move commands it reads from stdin. COMMAND's stdout goes to
 * our stderr, so stdout carries frames only. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "frame.h"
#include "log.h"
#include "macro.h"
#include "parse-util.h"
#include "time-util.h"

#define KILL_GRACE_USEC (5U * USEC_PER_SEC)
#define DRAIN_DEFAULT_MSEC 10000U

static const char *arg_listen = NULL;
static const char *arg_channel = NULL;
static const char *arg_interval = NULL;
static uint64_t arg_count = 0;
static char **arg_command = NULL;

typedef struct Peer {
        int channel_fd;
        int channel_listen_fd; /* --channel: where the sensor reconnects */
        int http_listen_fd;    /* --listen: handed to the child as fd 3 */
        int pidfd;
        int signal_fd;
        pid_t pid;
        FrameDecoder decoder;
        uint64_t reports;
        bool stdin_open;
        char line[65536];
        size_t line_len;
        uint8_t *last_blob;
        size_t last_blob_size;
        uint64_t last_move_id;
        bool have_package;
        bool terminating; /* we asked the child to stop: exit 0 once it did */
        usec_t kill_at;
} Peer;

static void help(void) {
        printf("%s [OPTIONS...] -- COMMAND [ARGS...]\n\n"
               "Fake commander: runs COMMAND with ELASTIC_POOL_CHANNEL_FD and prints each frame it sends\n"
               "as one line (\"-\" marks an absent field). COMMAND's stdout goes to our stderr.\n\n"
               "  -h --help               Show this help\n"
               "     --listen=PATH        Create a listening Unix socket, pass it as LISTEN_FDS=1 (fd 3)\n"
               "     --channel=PATH       Listen here for reconnections (sets ELASTIC_POOL_CHANNEL)\n"
               "     --interval=DURATION  Set ELASTIC_POOL_INTERVAL for COMMAND\n"
               "     --count=N            Stop COMMAND and exit after N reports\n\n"
               "Commands on stdin, one per line:\n"
               "  snapshot MOVE USER | install MOVE USER HEXBLOB | install-from-last-package USER\n"
               "  drop MOVE USER | drain [MSEC] | goodbye [REASON] | garbage | close | quit\n"
               "Exit status: COMMAND's (128+N for signal N) when it ended by itself, 0 when we ended it.\n",
               program_invocation_short_name);
}

static int parse_argv(int argc, char *argv[]) {
        enum { ARG_LISTEN = 0x100, ARG_CHANNEL, ARG_INTERVAL, ARG_COUNT };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "listen", required_argument, NULL, ARG_LISTEN },
                { "channel", required_argument, NULL, ARG_CHANNEL },
                { "interval", required_argument, NULL, ARG_INTERVAL },
                { "count", required_argument, NULL, ARG_COUNT },
                {},
        };
        int c, r;

        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 1;
                case ARG_LISTEN:
                        arg_listen = optarg;
                        break;
                case ARG_CHANNEL:
                        arg_channel = optarg;
                        break;
                case ARG_INTERVAL:
                        arg_interval = optarg;
                        break;
                case ARG_COUNT:
                        r = parse_uint64(optarg, &arg_count);
                        if (r < 0)
                                return log_error_errno(r, "Invalid --count '%s': %m", optarg);
                        break;
                default:
                        return -EINVAL;
                }
        if (optind >= argc)
                return log_error_errno(-EINVAL, "No command given");
        arg_command = argv + optind;
        return 0;
}

static int listen_unix(const char *path) {
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        if (strlen(path) >= sizeof sa.sun_path)
                return log_error_errno(-ENAMETOOLONG, "Socket path '%s' is too long", path);
        strncpy(sa.sun_path, path, sizeof sa.sun_path - 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return log_error_errno(-errno, "socket(): %m");
        (void) unlink(path);
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(fd, 128) < 0)
                return log_error_errno(-errno, "Cannot listen on '%s': %m", path);
        return TAKE_FD(fd);
}

/* ---- printing ---------------------------------------------------------------------------------------- */

static void put_u64(const char *key, bool has, uint64_t v) {
        if (has)
                printf(" %s=%llu", key, (unsigned long long) v);
        else
                printf(" %s=-", key);
}

static void put_double(const char *key, bool has, double v) {
        if (has)
                printf(" %s=%.3f", key, v);
        else
                printf(" %s=-", key);
}

static void put_part(bool has, uint64_t v, const char *sep) {
        if (has)
                printf("%llu%s", (unsigned long long) v, sep);
        else
                printf("-%s", sep);
}

static const char *cpu_source_name(bool has, ElasticPool__CpuSource s) {
        if (!has)
                return "-";
        return s == ELASTIC_POOL__CPU_SOURCE__CPU_SOURCE_CGROUP2 ? "cgroup2"
               : s == ELASTIC_POOL__CPU_SOURCE__CPU_SOURCE_PROCFS ? "procfs"
                                                                   : "unspecified";
}

static const char *memory_source_name(bool has, ElasticPool__MemorySource s) {
        if (!has)
                return "-";
        switch (s) {
        case ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP2:
                return "cgroup2";
        case ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP1:
                return "cgroup1";
        case ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_PROCFS:
                return "procfs";
        default:
                return "unspecified";
        }
}

static const char *capability_name(ElasticPool__Capability c) {
        switch (c) {
        case ELASTIC_POOL__CAPABILITY__CAPABILITY_SNAPSHOT_USERS:
                return "snapshot";
        case ELASTIC_POOL__CAPABILITY__CAPABILITY_INSTALL_USERS:
                return "install";
        case ELASTIC_POOL__CAPABILITY__CAPABILITY_DROP_USERS:
                return "drop";
        case ELASTIC_POOL__CAPABILITY__CAPABILITY_APPLICATION_FIELDS:
                return "application-fields";
        case ELASTIC_POOL__CAPABILITY__CAPABILITY_LIST_USERS:
                return "list-users";
        default:
                return "unknown";
        }
}

static void print_hello(const ElasticPool__Hello *h) {
        printf("hello group=%s", h->group ?: "-");
        put_u64("worker", h->has_worker_id, h->worker_id);
        put_u64("pid", h->has_pid, (uint64_t) h->pid);
        put_u64("protocol", h->has_protocol_version, h->protocol_version);
        printf(" sensor=%s caps=", h->sensor_version ?: "-");
        if (h->n_capabilities == 0)
                printf("-");
        for (size_t i = 0; i < h->n_capabilities; i++)
                printf("%s%s", i > 0 ? "," : "", capability_name(h->capabilities[i]));
        put_u64("interval", h->has_interval_usec, h->interval_usec);
        printf(" cgroup=%s\n", h->cgroup ?: "-");
}

static void print_report(const ElasticPool__OccupancyReport *r) {
        const ElasticPool__Executor *e = r->executor;
        const ElasticPool__Backlog *b = r->backlog;
        const ElasticPool__Pressure *p = r->pressure;
        const ElasticPool__Load *l = r->load;

        printf("report");
        put_u64("seq", r->has_seq, r->seq);
        put_u64("t", r->has_monotonic_usec, r->monotonic_usec);
        put_u64("interval", r->has_interval_usec, r->interval_usec);
        put_double("cpu", r->has_cpu, r->cpu);
        printf(" cpu_source=%s", cpu_source_name(r->has_cpu_source, r->cpu_source));
        put_u64("memory", r->has_memory_bytes, r->memory_bytes);
        printf(" memory_source=%s", memory_source_name(r->has_memory_source, r->memory_source));
        put_double("psi_cpu", p && p->has_cpu_some_avg10, p ? p->cpu_some_avg10 : 0);
        put_double("psi_memory", p && p->has_memory_some_avg10, p ? p->memory_some_avg10 : 0);
        put_u64("users", r->has_users, r->users);
        put_u64("pages", r->has_pages, r->pages);
        put_u64("connections", r->has_connections, r->connections);
        put_u64("active", r->has_active_users, r->active_users);
        printf(" executor=");
        put_part(e && e->has_busy, e ? e->busy : 0, "/");
        put_part(e && e->has_total, e ? e->total : 0, "/");
        put_part(e && e->has_queue_depth, e ? e->queue_depth : 0, "");
        printf(" backlog=");
        put_part(b && b->has_pending, b ? b->pending : 0, "/");
        put_part(b && b->has_outbox, b ? b->outbox : 0, "");
        if (l && l->has_avg1 && l->has_avg5 && l->has_avg15)
                printf(" load=%.2f/%.2f/%.2f\n", l->avg1, l->avg5, l->avg15);
        else
                printf(" load=-\n");
}

static void print_hex(const uint8_t *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                printf("%02x", p[i]);
}

static void remember_package(Peer *peer, const ElasticPool__Package *m) {
        uint8_t *copy = malloc(MAX(m->blob.len, (size_t) 1));

        if (!copy)
                return;
        if (m->blob.len > 0)
                memcpy(copy, m->blob.data, m->blob.len);
        free(peer->last_blob);
        peer->last_blob = copy;
        peer->last_blob_size = m->blob.len;
        peer->last_move_id = m->move_id;
        peer->have_package = true;
}

/* "users more=yes|no n=N list=a,b,c" ("list=-" when empty), in the order sent */
static void print_users(const ElasticPool__Users *m) {
        printf("users more=%s n=%zu list=", m->more ? "yes" : "no", m->n_users);
        if (m->n_users == 0)
                printf("-");
        for (size_t i = 0; i < m->n_users; i++)
                printf("%s%s", i > 0 ? "," : "", m->users[i]);
        printf("\n");
}

static void print_frame(Peer *peer, const Frame *f) {
        switch (f->body_case) {
        case ELASTIC_POOL__FRAME__BODY_HELLO:
                print_hello(f->hello);
                break;
        case ELASTIC_POOL__FRAME__BODY_REPORT:
                print_report(f->report);
                peer->reports++;
                break;
        case ELASTIC_POOL__FRAME__BODY_PACKAGE:
                printf("package");
                put_u64("move", f->package->has_move_id, f->package->move_id);
                printf(" user=%s", f->package->user ?: "-");
                if (f->package->has_blob) {
                        printf(" size=%zu blob=", f->package->blob.len);
                        print_hex(f->package->blob.data, f->package->blob.len);
                        remember_package(peer, f->package);
                }
                if (f->package->error)
                        printf(" error=\"%s\"", f->package->error);
                printf("\n");
                break;
        case ELASTIC_POOL__FRAME__BODY_INSTALL_RESULT:
                printf("install-result");
                put_u64("move", f->install_result->has_move_id, f->install_result->move_id);
                printf(" user=%s ok=%s", f->install_result->user ?: "-",
                       !f->install_result->has_ok ? "-" : f->install_result->ok ? "yes" : "no");
                if (f->install_result->error)
                        printf(" error=\"%s\"", f->install_result->error);
                printf("\n");
                break;
        case ELASTIC_POOL__FRAME__BODY_GOODBYE:
                printf("goodbye reason=\"%s\"\n", f->goodbye->reason ?: "");
                break;
        case ELASTIC_POOL__FRAME__BODY_USERS:
                print_users(f->users);
                break;
        default:
                printf("unexpected frame=%s\n", frame_body_name(f));
                break;
        }
        fflush(stdout);
}

/* ---- the channel ------------------------------------------------------------------------------------- */

static void channel_close(Peer *peer, const char *reason) {
        if (peer->channel_fd < 0)
                return;
        printf("closed reason=\"%s\"\n", reason);
        fflush(stdout);
        peer->channel_fd = safe_close(peer->channel_fd);
        frame_decoder_done(&peer->decoder);
}

static int channel_send(Peer *peer, const Frame *f) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t size, done = 0;
        int r;

        if (peer->channel_fd < 0)
                return log_error_errno(-ENOTCONN, "No channel to send on");
        r = frame_encode(f, 0, &buf, &size);
        if (r < 0)
                return log_error_errno(r, "Cannot encode frame: %m");
        while (done < size) {
                ssize_t n = send(peer->channel_fd, buf + done, size - done, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = log_error_errno(-errno, "Cannot write to the channel: %m");
                        channel_close(peer, "write failed");
                        return r;
                }
                done += (size_t) n;
        }
        return 0;
}

/* Reads what the channel has; with drain set, until nothing is left (non-blocking). */
static void channel_read(Peer *peer, bool drain) {
        uint8_t buf[65536];

        while (peer->channel_fd >= 0) {
                ssize_t n = recv(peer->channel_fd, buf, sizeof buf, drain ? MSG_DONTWAIT : 0);
                size_t off = 0;

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                channel_close(peer, strerror(errno));
                        return;
                }
                if (n == 0) {
                        channel_close(peer, frame_decoder_pending(&peer->decoder) ? "eof in a frame" : "eof");
                        return;
                }
                while (off < (size_t) n) {
                        Frame *f = NULL;
                        size_t used;
                        int r = frame_decoder_feed(&peer->decoder, buf + off, (size_t) n - off, &used, &f);

                        off += used;
                        if (r < 0) {
                                channel_close(peer, r == -EMSGSIZE ? "oversize frame" : "undecodable frame");
                                return;
                        }
                        if (r > 0) {
                                print_frame(peer, f);
                                frame_free(f);
                        }
                }
                if (!drain)
                        return;
        }
}

/* ---- commands ---------------------------------------------------------------------------------------- */

static int hex_decode(const char *s, uint8_t **ret, size_t *ret_size) {
        size_t n = strlen(s);
        _cleanup_free_ uint8_t *buf = NULL;

        if (n % 2 != 0)
                return -EINVAL;
        buf = malloc(MAX(n / 2, (size_t) 1));
        if (!buf)
                return -ENOMEM;
        for (size_t i = 0; i < n / 2; i++) {
                unsigned v;
                if (sscanf(s + 2 * i, "%2x", &v) != 1)
                        return -EINVAL;
                buf[i] = (uint8_t) v;
        }
        *ret = TAKE_PTR(buf);
        *ret_size = n / 2;
        return 0;
}

static int send_move(Peer *peer, ElasticPool__Frame__BodyCase kind, const char *move, const char *user,
                     const uint8_t *blob, size_t blob_size, bool has_blob) {
        ElasticPool__SnapshotRequest sr = ELASTIC_POOL__SNAPSHOT_REQUEST__INIT;
        ElasticPool__Install in = ELASTIC_POOL__INSTALL__INIT;
        ElasticPool__Drop d = ELASTIC_POOL__DROP__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        uint64_t move_id;

        if (!move || !user || parse_uint64(move, &move_id) < 0)
                return log_error_errno(-EINVAL, "Usage: <command> MOVE_ID USER ...");
        f.body_case = kind;
        switch (kind) {
        case ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST:
                sr.has_move_id = true, sr.move_id = move_id, sr.user = (char *) user;
                f.snapshot_request = &sr;
                break;
        case ELASTIC_POOL__FRAME__BODY_INSTALL:
                in.has_move_id = true, in.move_id = move_id, in.user = (char *) user;
                in.has_blob = has_blob;
                in.blob = (ProtobufCBinaryData) { .len = blob_size, .data = (uint8_t *) blob };
                f.install = &in;
                break;
        default:
                d.has_move_id = true, d.move_id = move_id, d.user = (char *) user;
                f.drop = &d;
                break;
        }
        return channel_send(peer, &f);
}

static int send_drain(Peer *peer, const char *msec) {
        ElasticPool__Drain d = ELASTIC_POOL__DRAIN__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        uint64_t ms = DRAIN_DEFAULT_MSEC;

        if (msec && parse_uint64(msec, &ms) < 0)
                return log_error_errno(-EINVAL, "Usage: drain [MSEC]");
        d.has_deadline_usec = true;
        d.deadline_usec = now_usec(CLOCK_MONOTONIC) + ms * USEC_PER_MSEC;
        d.reason = (char *) "ep-channel-peer";
        f.body_case = ELASTIC_POOL__FRAME__BODY_DRAIN;
        f.drain = &d;
        return channel_send(peer, &f);
}

static int send_goodbye(Peer *peer, const char *reason) {
        ElasticPool__Goodbye g = ELASTIC_POOL__GOODBYE__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;

        g.reason = (char *) (reason ?: "ep-channel-peer");
        f.body_case = ELASTIC_POOL__FRAME__BODY_GOODBYE;
        f.goodbye = &g;
        return channel_send(peer, &f);
}

static void terminate_child(Peer *peer) {
        if (peer->terminating || peer->pidfd < 0)
                return;
        peer->terminating = true;
        peer->kill_at = now_usec(CLOCK_MONOTONIC) + KILL_GRACE_USEC;
        (void) pidfd_send_signal(peer->pidfd, SIGTERM, NULL, 0);
}

static void handle_command(Peer *peer, char *line) {
        char *save = NULL, *cmd = strtok_r(line, " \t\r", &save);
        char *a = cmd ? strtok_r(NULL, " \t\r", &save) : NULL;
        char *b = a ? strtok_r(NULL, " \t\r", &save) : NULL;
        char *c = b ? strtok_r(NULL, " \t\r", &save) : NULL;

        if (!cmd)
                return;
        if (streq(cmd, "snapshot"))
                (void) send_move(peer, ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST, a, b, NULL, 0, false);
        else if (streq(cmd, "install")) {
                _cleanup_free_ uint8_t *blob = NULL;
                size_t size = 0;

                if (!c || hex_decode(c, &blob, &size) < 0)
                        log_error("Usage: install MOVE_ID USER HEXBLOB");
                else
                        (void) send_move(peer, ELASTIC_POOL__FRAME__BODY_INSTALL, a, b, blob, size, true);
        } else if (streq(cmd, "install-from-last-package")) {
                char move[32];

                if (!peer->have_package || !a) {
                        log_error("install-from-last-package USER: no package received yet");
                        return;
                }
                snprintf(move, sizeof move, "%llu", (unsigned long long) peer->last_move_id);
                (void) send_move(peer, ELASTIC_POOL__FRAME__BODY_INSTALL, move, a, peer->last_blob,
                                 peer->last_blob_size, true);
        } else if (streq(cmd, "drop"))
                (void) send_move(peer, ELASTIC_POOL__FRAME__BODY_DROP, a, b, NULL, 0, false);
        else if (streq(cmd, "drain"))
                (void) send_drain(peer, a);
        else if (streq(cmd, "goodbye"))
                (void) send_goodbye(peer, a);
        else if (streq(cmd, "garbage")) {
                /* a length prefix far over any maximum: the sensor must close the channel */
                static const uint8_t junk[] = { 0xff, 0xff, 0xff, 0xff, 0x01, 0x02 };
                if (peer->channel_fd >= 0)
                        (void) send(peer->channel_fd, junk, sizeof junk, MSG_NOSIGNAL);
        } else if (streq(cmd, "close"))
                channel_close(peer, "closed by command");
        else if (streq(cmd, "quit"))
                terminate_child(peer);
        else
                log_error("Unknown command '%s'", cmd);
}

static void read_stdin(Peer *peer) {
        ssize_t n = read(STDIN_FILENO, peer->line + peer->line_len, sizeof peer->line - 1 - peer->line_len);
        char *start, *nl;

        if (n <= 0) {
                if (n < 0 && errno == EINTR)
                        return;
                peer->stdin_open = false;
                return;
        }
        peer->line_len += (size_t) n;
        peer->line[peer->line_len] = 0;
        start = peer->line;
        while ((nl = strchr(start, '\n'))) {
                *nl = 0;
                handle_command(peer, start);
                start = nl + 1;
        }
        peer->line_len -= (size_t) (start - peer->line);
        memmove(peer->line, start, peer->line_len);
        if (peer->line_len == sizeof peer->line - 1) /* a line longer than the buffer: drop it */
                peer->line_len = 0;
}

/* ---- the child --------------------------------------------------------------------------------------- */

_noreturn_ static void child_exec(Peer *peer, int channel_end, const sigset_t *saved_mask) {
        char buf[32];
        /* parked above the target numbers first, close-on-exec: only the dup2() copies reach the child */
        int ch = fcntl(channel_end, F_DUPFD_CLOEXEC, 10);
        int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

        /* our stdin carries commands, our stdout frames: the child gets neither */
        if (null_fd < 0 || ch < 0 || dup2(null_fd, STDIN_FILENO) < 0 ||
            dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
                _exit(EXIT_FAILURE);
        if (peer->http_listen_fd >= 0) {
                int l = fcntl(peer->http_listen_fd, F_DUPFD_CLOEXEC, 10);
                if (l < 0 || dup2(l, 3) < 0 || dup2(ch, 4) < 0)
                        _exit(EXIT_FAILURE);
                snprintf(buf, sizeof buf, "%d", (int) getpid());
                setenv("LISTEN_PID", buf, 1);
                setenv("LISTEN_FDS", "1", 1);
                setenv("LISTEN_FDNAMES", "http", 1);
                setenv("ELASTIC_POOL_CHANNEL_FD", "4", 1);
        } else {
                if (dup2(ch, 3) < 0)
                        _exit(EXIT_FAILURE);
                unsetenv("LISTEN_PID");
                unsetenv("LISTEN_FDS");
                unsetenv("LISTEN_FDNAMES");
                setenv("ELASTIC_POOL_CHANNEL_FD", "3", 1);
        }
        setenv("ELASTIC_POOL_GROUP", "demo", 0);
        setenv("ELASTIC_POOL_WORKER", "1", 0);
        if (arg_interval)
                setenv("ELASTIC_POOL_INTERVAL", arg_interval, 1);
        if (arg_channel)
                setenv("ELASTIC_POOL_CHANNEL", arg_channel, 1);
        sigprocmask(SIG_SETMASK, saved_mask, NULL);
        execvp(arg_command[0], arg_command);
        fprintf(stderr, "ep-channel-peer: cannot execute '%s': %m\n", arg_command[0]);
        _exit(127);
}

static int spawn(Peer *peer, const sigset_t *saved_mask) {
        int pair[2];
        pid_t pid;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                return log_error_errno(-errno, "socketpair(): %m");
        pid = fork();
        if (pid < 0)
                return log_error_errno(-errno, "fork(): %m");
        if (pid == 0)
                child_exec(peer, pair[1], saved_mask);
        safe_close(pair[1]);
        peer->channel_fd = pair[0];
        peer->pid = pid;
        peer->pidfd = pidfd_open(pid, 0);
        if (peer->pidfd < 0)
                return log_error_errno(-errno, "pidfd_open(): %m");
        return 0;
}

static int reap(Peer *peer) {
        siginfo_t si = {};

        if (waitid((idtype_t) P_PIDFD, (id_t) peer->pidfd, &si, WEXITED) < 0) {
                log_error_errno(-errno, "waitid(): %m");
                return 1;
        }
        return si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
}

static int poll_timeout(const Peer *peer) {
        usec_t now;

        if (!peer->terminating)
                return -1;
        now = now_usec(CLOCK_MONOTONIC);
        return peer->kill_at <= now ? 0 : (int) ((peer->kill_at - now) / USEC_PER_MSEC + 1);
}

/* Runs until the child is gone; returns our exit status. */
static int run(Peer *peer) {
        for (;;) {
                struct pollfd p[5] = {
                        { .fd = peer->pidfd, .events = POLLIN },
                        { .fd = peer->signal_fd, .events = POLLIN },
                        { .fd = peer->channel_fd, .events = POLLIN },
                        { .fd = peer->channel_listen_fd, .events = POLLIN },
                        { .fd = peer->stdin_open ? STDIN_FILENO : -1, .events = POLLIN },
                };
                int status;

                if (poll(p, ELEMENTSOF(p), poll_timeout(peer)) < 0 && errno != EINTR) {
                        log_error_errno(-errno, "poll(): %m");
                        return 1;
                }
                if (p[2].revents)
                        channel_read(peer, false);
                if (p[3].revents & POLLIN) {
                        int fd = accept4(peer->channel_listen_fd, NULL, NULL, SOCK_CLOEXEC);
                        if (fd >= 0) {
                                channel_close(peer, "replaced by a new connection");
                                peer->channel_fd = fd;
                                frame_decoder_init(&peer->decoder, 0);
                                printf("connected\n");
                                fflush(stdout);
                        }
                }
                if (p[4].revents)
                        read_stdin(peer);
                if (p[1].revents & POLLIN) {
                        struct signalfd_siginfo si;
                        (void) read(peer->signal_fd, &si, sizeof si);
                        terminate_child(peer);
                }
                if (arg_count > 0 && peer->reports >= arg_count)
                        terminate_child(peer);
                if (peer->terminating && now_usec(CLOCK_MONOTONIC) >= peer->kill_at)
                        (void) pidfd_send_signal(peer->pidfd, SIGKILL, NULL, 0);
                if (p[0].revents & POLLIN) {
                        channel_read(peer, true); /* the last frames (Goodbye) precede the exit */
                        status = reap(peer);
                        printf("exited status=%d\n", status);
                        fflush(stdout);
                        return peer->terminating ? 0 : status;
                }
        }
}

int main(int argc, char *argv[]) {
        Peer peer = {
                .channel_fd = -EBADF,
                .channel_listen_fd = -EBADF,
                .http_listen_fd = -EBADF,
                .pidfd = -EBADF,
                .signal_fd = -EBADF,
                .stdin_open = true,
        };
        sigset_t mask, saved;
        int r, status;

        log_setup("ep-channel-peer", NULL);
        r = parse_argv(argc, argv);
        if (r != 0)
                return r > 0 ? 0 : 2;
        setvbuf(stdout, NULL, _IOLBF, 0);
        frame_decoder_init(&peer.decoder, 0);
        if (arg_listen && (peer.http_listen_fd = listen_unix(arg_listen)) < 0)
                return 1;
        if (arg_channel && (peer.channel_listen_fd = listen_unix(arg_channel)) < 0)
                return 1;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, &saved);
        peer.signal_fd = signalfd(-1, &mask, SFD_CLOEXEC);
        if (peer.signal_fd < 0) {
                log_error_errno(-errno, "signalfd(): %m");
                return 1;
        }

        if (spawn(&peer, &saved) < 0)
                return 1;
        status = run(&peer);

        safe_close(peer.channel_fd);
        safe_close(peer.channel_listen_fd);
        safe_close(peer.http_listen_fd);
        safe_close(peer.pidfd);
        safe_close(peer.signal_fd);
        frame_decoder_done(&peer.decoder);
        free(peer.last_blob);
        if (arg_listen)
                (void) unlink(arg_listen);
        if (arg_channel)
                (void) unlink(arg_channel);
        return status;
}
