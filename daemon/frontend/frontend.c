/* SPDX-License-Identifier: MIT */
/* The front end's lifecycle: listeners (listen= or sockets handed over by systemd), the hooks the
 * commander calls (frontend-port.h): each routable worker's forward pool, the release of held requests,
 * what the front end measured; the sweep of leaked open requests, and shutdown. */

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "frontend-internal.h"
#include "id-array.h"
#include "log.h"
#include "macro.h"
#include "path-util.h"
#include "router.h"
#include "tunnel.h"

#define LISTEN_BACKLOG 4096
#define SWEEP_INTERVAL (60 * USEC_PER_SEC)
#define SWEEP_MAX_AGE (3600 * USEC_PER_SEC)
/* Requests waiting for a free connection to one worker. Every guest goes to the reception, so one h2
 * client with many streams can queue thousands there; each waits with a few hundred bytes of state. */
#define UPSTREAM_QUEUE_MAX 16384U

/* ---- listeners ---- */

/* Whether l accepts now: not held while workers are taken back, not waiting for the first worker, not
 * paused for lack of descriptors. */
static bool listener_may_accept(const Frontend *fe, const Listener *l) {
        return !fe->listeners_held && !fe->accept_pause.paused && !(l->waited && fe->ready_timer);
}

static void listeners_update(Frontend *fe) {
        for (size_t i = 0; i < fe->n_listeners; i++)
                (void) sd_event_source_set_enabled(fe->listeners[i].io,
                                                   listener_may_accept(fe, &fe->listeners[i]) ? SD_EVENT_ON : SD_EVENT_OFF);
}

static void set_accepting(void *userdata, bool on) {
        listeners_update(userdata);
}

/* Said once per episode: while descriptors stay short, the pauses repeat without a line each. */
static void accept_pause(Frontend *fe, const char *why) {
        char detail[64];

        snprintf(detail, sizeof detail, "%u client connections open", fe->n_connections);
        accept_pause_begin(&fe->accept_pause, why, detail);
}

/* Reserved for worker connections, channels and files: a quarter of the limit, read once. */
static void compute_fd_high_water(Frontend *fe) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > INT_MAX)
                fe->fd_high_water = INT_MAX;
        else
                fe->fd_high_water = (int) (rl.rlim_cur - MAX(rl.rlim_cur / 4, (rlim_t) 16));
}

/* Accepts one connection from a listener. 1 when one was taken (or refused past max_connections), 0 when
 * none is waiting or accept() failed (logged). */
static int accept_one(Frontend *fe, int fd) {
        struct sockaddr_storage peer = {};
        socklen_t len = sizeof peer;
        int c = accept4(fd, (struct sockaddr *) &peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (c < 0) {
                if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
                        return 0;
                if (accept_error_is_shortage(errno)) {
                        accept_pause(fe, accept_shortage_why(errno));
                        return 0;
                }
                log_warning_errno(errno, "accept() failed: %m");
                return 0;
        }
        /* descriptors are numbered lowest free first: one this high means the table is nearly full, and
         * the connections already open need the rest for their worker connections */
        if (fe->fd_high_water > 0 && c >= fe->fd_high_water) {
                fe->rejected_connections++;
                safe_close(c);
                accept_pause(fe, "a quarter of the limit is kept for worker connections");
                return 0;
        }
        accept_pause_end_episode(&fe->accept_pause);
        if (fe->n_connections >= fe->config->max_connections) {
                fe->rejected_connections++;
                frontend_log_client_error(fe, "Refused a connection: max_connections=%u reached",
                                          fe->config->max_connections);
                safe_close(c);
                return 1;
        }
        if (peer.ss_family == AF_INET || peer.ss_family == AF_INET6)
                (void) setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &(int) { 1 }, sizeof(int));
        if (frontend_h1_accept(fe, c, &peer) < 0)
                frontend_log_client_error(fe, "Failed to set up a client connection");
        return 1;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Frontend *fe = userdata;

        /* bounded, so one busy listener does not starve the rest of the loop */
        for (int i = 0; i < 64; i++)
                if (accept_one(fe, fd) == 0)
                        break;
        return 0;
}

/* Connections the kernel completed but we did not accept yet are reset by close(): to their clients they
 * were accepted, and a request may already wait in them. So at shutdown a filter goes on each listener
 * first that drops new SYNs (a connect in the gap is retransmitted a second later and then refused by the
 * kernel, as if it came after the close) but lets the ACKs of handshakes under way complete them; then
 * the queue is taken in, and those connections are served like every other one (Connection: close).
 * A socket filter on a TCP socket sees the packet from its TCP header: the flags are byte 13. Sockets
 * from systemd are left alone: systemd keeps them, and what waits in them is for our next instance. */
static unsigned listener_take_backlog(Frontend *fe, Listener *l) {
        struct sock_filter syn_drop[] = {
                BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 13),
                BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x12),          /* SYN | ACK */
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x02, 0, 1),    /* SYN alone: a new connection */
                BPF_STMT(BPF_RET | BPF_K, 0),
                BPF_STMT(BPF_RET | BPF_K, UINT32_MAX),
        };
        struct sock_fprog prog = { .len = ELEMENTSOF(syn_drop), .filter = syn_drop };
        unsigned n = 0;

        if (setsockopt(l->fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) < 0)
                log_debug_errno(errno, "Cannot stop new handshakes on %s, ignoring: %m", l->address);
        while (accept_one(fe, l->fd) > 0)
                n++;
        return n;
}

static void accept_backlog(Frontend *fe) {
        unsigned n = 0;

        for (size_t i = 0; i < fe->n_listeners; i++)
                if (fe->listeners[i].ours)
                        n += listener_take_backlog(fe, &fe->listeners[i]);
        if (n > 0)
                log_debug("Took %u queued connections in before closing the listeners", n);
}

/* A listener accepts at once, unless clients may have queued in it before we ran (waited: a socket unit's,
 * or one of ours kept across a restart), or the listeners are held while workers are taken back. */
static int add_listener(Frontend *fe, int fd, const char *address, bool ours, bool waited) {
        Listener *l;
        Listener *a = reallocarray(fe->listeners, fe->n_listeners + 1, sizeof *a);
        int r;

        if (!a)
                return -ENOMEM;
        fe->listeners = a;
        l = &a[fe->n_listeners];
        *l = (Listener) { .fd = fd, .address = strdup(address), .ours = ours, .waited = waited };
        r = sd_event_add_io(fe->event, &l->io, fd, EPOLLIN, on_accept, fe);
        if (r < 0)
                return r;
        if (waited || !listener_may_accept(fe, l)) {
                r = sd_event_source_set_enabled(l->io, SD_EVENT_OFF);
                if (r < 0)
                        return r;
        }
        fe->n_listeners++;
        return 0;
}

/* Sockets open before we were may hold clients already: the one whose connection made systemd start us,
 * those that came while our previous instance restarted. To them the service was only slow to answer,
 * so they are accepted once a worker is routable rather than told 503 at once. Bounded by spawn_timeout:
 * when no worker comes up, they get what any client gets without one, and nothing waits forever. A
 * listen= socket we bind now accepts at once: nobody could connect before, and a client arriving during
 * our start gets its 503 without waiting. */
static void listeners_start(Frontend *fe, const char *why) {
        if (!fe->ready_timer || fe->listeners_held)
                return;
        fe->ready_timer = sd_event_source_disable_unref(fe->ready_timer);
        listeners_update(fe);
        log_info("Accepting on the sockets handed over by systemd: %s", why);
}

static int on_ready_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Frontend *fe = userdata;
        char span[32];

        log_warning("No worker routable within spawn_timeout=%s; accepting on the sockets handed over by "
                    "systemd anyway (503 until one is)",
                    format_timespan(span, sizeof span, fe->config->spawn_timeout));
        listeners_start(fe, "no worker yet");
        return 0;
}

static void listeners_defer(Frontend *fe) {
        bool waited = false;
        int r;

        for (size_t i = 0; i < fe->n_listeners; i++)
                waited = waited || fe->listeners[i].waited;
        if (!waited)
                return;
        r = sd_event_add_time_relative(fe->event, &fe->ready_timer, CLOCK_MONOTONIC, fe->config->spawn_timeout,
                                       USEC_PER_MSEC, on_ready_timeout, fe);
        if (r < 0) {
                /* no bound on the wait: then no wait */
                log_warning_errno(r, "Failed to arm the first-worker timer, accepting at once: %m");
                listeners_update(fe);
        }
}

void frontend_hold_listeners(Frontend *fe) {
        fe->listeners_held = true;
        listeners_update(fe);
        log_info("Listeners held: clients wait in their queues until the workers taken back announced their "
                 "users");
}

void frontend_release_listeners(Frontend *fe, const char *why) {
        if (!fe->listeners_held)
                return;
        fe->listeners_held = false;
        fe->ready_timer = sd_event_source_disable_unref(fe->ready_timer);
        listeners_update(fe);
        log_info("Accepting again: %s", why);
}

/* The fd store name of a listen= socket: "listen-" and the address, its ':' (not allowed in names)
 * written as '_' (which no address has). */
static void listen_fd_name(const char *address, char *buf, size_t size) {
        snprintf(buf, size, "listen-%s", address);
        for (char *c = buf; *c; c++)
                if (*c == ':')
                        *c = '_';
}

static bool listen_fd_address(const char *name, char *buf, size_t size) {
        const char *a = startswith(name, "listen-");

        if (!a || strlen(a) >= size)
                return false;
        strcpy(buf, a);
        for (char *c = buf; *c; c++)
                if (*c == '_')
                        *c = ':';
        return true;
}

static void store_listener(const char *address, int fd) {
        char name[300];
        int r;

        listen_fd_name(address, name, sizeof name);
        r = fd_store_add(fd, name);
        if (r < 0)
                log_warning_errno(r, "Failed to keep %s in systemd's fd store (%m): a restart refuses the "
                                     "connections that arrive while it runs", address);
}

static void unstore_listener(const char *address) {
        char name[300];

        listen_fd_name(address, name, sizeof name);
        (void) fd_store_remove(name);
}

static int open_listener(Frontend *fe, const char *address) {
        struct sockaddr_storage sa;
        _cleanup_close_ int fd = -EBADF;
        socklen_t len;
        int r;

        r = config_parse_socket_address(address, false, &sa, &len);
        if (r < 0)
                return log_error_errno(r, "[frontend] listen: '%s' is not IPV4:PORT or [IPV6]:PORT", address);
        fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return log_error_errno(errno, "Failed to create a socket for %s: %m", address);
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int) { 1 }, sizeof(int));
        /* No SO_REUSEPORT until there is one front-end loop per core: with it, another commander (any
         * group, same uid) could bind this address too and silently take half of its connections. */
        if (sa.ss_family == AF_INET6)
                (void) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &(int) { 1 }, sizeof(int));
        if (bind(fd, (struct sockaddr *) &sa, len) < 0)
                return log_error_errno(errno, "Failed to listen on %s: %m", address);
        if (listen(fd, LISTEN_BACKLOG) < 0)
                return log_error_errno(errno, "Failed to listen on %s: %m", address);
        r = add_listener(fe, fd, address, true, false);
        if (r < 0)
                return r;
        store_listener(address, TAKE_FD(fd));
        log_info("Listening on %s (HTTP/1.1, h2c)", address);
        return 0;
}

static bool listen_has(const Config *c, const char *address) {
        for (char *const *a = c->listen; a && *a; a++)
                if (streq(*a, address))
                        return true;
        return false;
}

static bool listening_on(const Frontend *fe, const char *address) {
        for (size_t i = 0; i < fe->n_listeners; i++)
                if (fe->listeners[i].ours && streq_ptr(fe->listeners[i].address, address))
                        return true;
        return false;
}

/* A listen= socket of an earlier run of ours, kept in the fd store: taken back with its queue when listen=
 * still names it, dropped from the store otherwise. */
static int take_stored_socket(Frontend *fe, int fd, const char *name) {
        char address[256];
        int r;

        if (!listen_fd_address(name, address, sizeof address) || !listen_has(fe->config, address)) {
                log_info("Dropping %s from systemd's fd store: no longer in [frontend] listen", name);
                (void) fd_store_remove(name);
                safe_close(fd);
                return 0;
        }
        /* a filter an orderly shutdown left to refuse new handshakes */
        (void) setsockopt(fd, SOL_SOCKET, SO_DETACH_FILTER, NULL, 0);
        r = add_listener(fe, fd, address, true, true);
        if (r < 0)
                return r;
        log_info("Listening on %s again (kept in systemd's fd store across the restart)", address);
        return 0;
}

/* Sockets systemd passed: a socket unit's (elastic-pool@.socket) replace listen=; ours come back from the
 * fd store. Returns how many socket unit sockets there were. Each fd is taken over, also on failure. */
static int take_passed_sockets(Frontend *fe, const FrontendOptions *o) {
        int n_units = 0, r = 0;

        for (size_t i = 0; i < o->n_fds; i++) {
                int fd = o->fds[i];
                const char *name = o->fd_names ? o->fd_names[i] : NULL;
                char label[64];

                if (r < 0 || sd_is_socket(fd, AF_UNSPEC, SOCK_STREAM, 1) <= 0) {
                        if (r >= 0)
                                log_warning("Ignoring passed fd %d (%s): not a listening stream socket", fd,
                                            strna(name));
                        safe_close(fd);
                        continue;
                }
                r = fd_set_cloexec_nonblock(fd);
                if (r < 0) {
                        safe_close(fd);
                        continue;
                }
                if (name && startswith(name, "listen-")) {
                        r = take_stored_socket(fe, fd, name);
                        continue;
                }
                snprintf(label, sizeof label, "systemd socket fd %d", fd);
                r = add_listener(fe, fd, label, false, true);
                if (r < 0) {
                        safe_close(fd);
                        continue;
                }
                n_units++;
                log_info("Listening on %s (handed over by systemd)", label);
        }
        return r < 0 ? r : n_units;
}

static int open_listeners(Frontend *fe, const FrontendOptions *o) {
        int r;

        r = take_passed_sockets(fe, o);
        if (r < 0)
                return log_error_errno(r, "Failed to take the sockets systemd passed: %m");
        if (r > 0)
                return 0;
        for (char *const *a = fe->config->listen; a && *a; a++) {
                if (listening_on(fe, *a))
                        continue;
                r = open_listener(fe, *a);
                if (r < 0)
                        return r;
        }
        if (fe->n_listeners == 0)
                log_warning("No listener: [frontend] listen is empty and systemd passed no socket");
        return 0;
}

static void listener_close(Listener *l) {
        l->io = sd_event_source_disable_unref(l->io);
        l->fd = safe_close(l->fd);
        l->address = mfree(l->address);
}

static void close_listeners(Frontend *fe) {
        for (size_t i = 0; i < fe->n_listeners; i++)
                listener_close(&fe->listeners[i]);
        free(fe->listeners);
        fe->listeners = NULL;
        fe->n_listeners = 0;
}

/* A listen= address gone from the configuration: what its queue holds is served, then it closes. */
static void listener_retire(Frontend *fe, size_t i) {
        Listener *l = &fe->listeners[i];
        unsigned n = listener_take_backlog(fe, l);

        log_info("No longer listening on %s (reload)%s", l->address, n > 0 ? "; its queue taken in" : "");
        unstore_listener(l->address);
        listener_close(l);
        memmove(l, l + 1, (fe->n_listeners - i - 1) * sizeof *l);
        fe->n_listeners--;
}

/* listen= as the reloaded configuration says it: addresses that left close, new ones open, the others
 * are not touched (their queues and connections go on). Sockets handed over by systemd replace listen=,
 * so with those nothing changes. 0, or the first failure to open a new address (logged; the others were
 * still tried). */
static int reload_listeners(Frontend *fe) {
        int r = 0;

        for (size_t i = 0; i < fe->n_listeners; i++)
                if (!fe->listeners[i].ours) {
                        log_info("Listeners handed over by systemd: listen= is not used, nothing to reload");
                        return 0;
                }
        for (size_t i = fe->n_listeners; i > 0; i--)
                if (!listen_has(fe->config, fe->listeners[i - 1].address))
                        listener_retire(fe, i - 1);
        for (char *const *a = fe->config->listen; a && *a; a++) {
                int k;

                if (listening_on(fe, *a))
                        continue;
                k = open_listener(fe, *a);
                if (k < 0 && r == 0)
                        r = k;
        }
        return r;
}


/* ---- the hooks the commander calls ---- */

static void on_worker_routable(void *userdata, unsigned worker, const char *socket_path) {
        Frontend *fe = userdata;
        ForwardOptions o = {
                .max_connections = fe->config->upstream_connections,
                .max_queued = UPSTREAM_QUEUE_MAX,
                .client_share = fe->config->client_worker_share,
                .response_timeout = fe->config->response_timeout,
                .idle_timeout = fe->config->idle_timeout,
                .cookie_name = COOKIE_NAME,
                .worker_id = worker,
        };
        int r;

        if (frontend_forward_pool(fe, worker))
                return;
        r = ID_ARRAY_ENSURE(fe->forward, fe->forward_slots, worker);
        if (r >= 0)
                r = forward_pool_new(fe->batch, socket_path, &o, &fe->forward[worker]);
        if (r < 0) {
                log_error_errno(r, "Failed to set up forwarding to w%u: %m", worker);
                return;
        }
        listeners_start(fe, "a worker is routable");
}

static void on_worker_draining(void *userdata, unsigned worker) {
        ForwardPool *p = frontend_forward_pool(userdata, worker);

        if (p)
                forward_pool_drain(p);
        tunnels_worker_draining(userdata, worker);
}

static void on_worker_gone(void *userdata, unsigned worker) {
        Frontend *fe = userdata;

        /* answers what is still on it: 502 before a head, an aborted response after */
        if (worker < fe->forward_slots)
                fe->forward[worker] = forward_pool_free(fe->forward[worker]);
}

static unsigned held_requests(void *userdata, const char *user) {
        HeldQueue *q = strmap_get(&((Frontend *) userdata)->held, user);

        return q ? q->n : 0;
}

static void release_held(void *userdata, const char *user) {
        router_release_held(userdata, user);
}

static bool worker_traffic(void *userdata, unsigned worker, WorkerTraffic *ret) {
        Frontend *fe = userdata;
        ForwardPool *p = frontend_forward_pool(fe, worker);
        const ForwardCounters *c = p ? forward_pool_counters(p) : NULL;

        *ret = (WorkerTraffic) { .inflight = open_requests_worker(&fe->open, worker) };
        if (!c)
                return true;
        ret->has_forward = true;
        ret->requests = c->requests;
        ret->errors = c->errors;
        ret->busy_usec = c->busy_usec;
        ret->connections = c->connections;
        ret->latency = c->latency;
        ret->answers = c->answers;
        ret->unanswered = c->unanswered;
        ret->queued = forward_pool_queued(p);
        return true;
}

static void totals(void *userdata, FrontendTotals *ret) {
        Frontend *fe = userdata;
        IoBatchStats b = io_batch_get_stats(fe->batch);

        *ret = (FrontendTotals) {
                .requests = fe->requests,
                .errors = fe->errors,
                .connections = fe->n_connections,
                .h2_connections = frontend_connections_speaking(fe, "h2c"),
                .streams = fe->exchanges_open,
                .wakeups = b.wakeups,
                .socket_events = b.events,
                .batch_largest = b.largest,
                .io_uring = io_batch_uring(fe->batch),
                .io_uring_error = fe->io_uring_error,
                .io_calls = b.io_calls,
                .io_ops = b.io_ops,
        };
}

static void user_moving(void *userdata, const char *user) {
        tunnels_end_user(userdata, user, "its user moves");
}

const FrontendHooks frontend_hooks = {
        .worker_routable = on_worker_routable,
        .worker_draining = on_worker_draining,
        .worker_gone = on_worker_gone,
        .held_requests = held_requests,
        .release_held = release_held,
        .worker_traffic = worker_traffic,
        .totals = totals,
        .user_moving = user_moving,
};

/* ---- lifecycle ---- */

int frontend_state_dir(const char *group, const char *override, char **ret) {
        return service_dir(override, "STATE_DIRECTORY", "/var/lib", "XDG_STATE_HOME", ".local/state", group, ret);
}

static int load_trusted(Frontend *fe) {
        size_t n = 0;

        for (char **t = fe->config->trusted_proxies; t && *t; t++)
                n++;
        if (n == 0)
                return 0;
        fe->trusted = calloc(n, sizeof *fe->trusted);
        if (!fe->trusted)
                return -ENOMEM;
        for (char **t = fe->config->trusted_proxies; t && *t; t++) {
                if (streq(*t, CONFIG_TRUSTED_UNIX))
                        fe->trust_unix = true;
                else if (config_parse_ip_prefix(*t, &fe->trusted[fe->n_trusted]) >= 0)
                        fe->n_trusted++;
        }
        return 0;
}

static int on_sweep(sd_event_source *s, uint64_t usec, void *userdata) {
        Frontend *fe = userdata;
        /* the clock now, not the (coarse) time the timer was due: requests that began in between
         * would otherwise look older than an hour */
        unsigned n = router_sweep(fe, now_usec(CLOCK_MONOTONIC), SWEEP_MAX_AGE);

        if (n > 0)
                log_warning("Swept %u open-request entries older than an hour; an exchange leaked them", n);
        /* logouts whose revoked cookies have all expired anyway */
        (void) cookie_revocations_expire(&fe->revocations, now_usec(CLOCK_REALTIME));
        (void) sd_event_source_set_time(s, usec + SWEEP_INTERVAL);
        return 0;
}

/* [frontend] io_uring=, at start and at every reload: the batch's socket reads and writes go through
 * io_uring, or take one system call each. */
static void apply_io_uring(Frontend *fe) {
        int r;

        if (!fe->config->io_uring) {
                if (io_batch_uring(fe->batch))
                        log_info("Front end: io_uring=no, socket reads and writes take one system call each now");
                io_batch_stop_uring(fe->batch);
                fe->io_uring_error = 0;
                return;
        }
        if (io_batch_uring(fe->batch))
                return;
        r = io_batch_start_uring(fe->batch);
        if (r < 0 && r != fe->io_uring_error)
                log_notice_errno(r, "Front end: the kernel gives no io_uring (%m)%s; socket reads and writes take "
                                 "one system call each",
                                 r == -EPERM ? ", a seccomp filter or kernel.io_uring_disabled refuses it" : "");
        else if (r >= 0)
                log_info("Front end: socket reads and writes go to the kernel in batches, through io_uring");
        fe->io_uring_error = MIN(r, 0);
}

int frontend_reload(Frontend *fe) {
        free(fe->trusted);
        fe->trusted = NULL;
        fe->n_trusted = 0;
        fe->trust_unix = false;
        if (load_trusted(fe) < 0)
                return log_oom();
        /* a revocation must outlive the longest-lived cookie ever given, the old ones included */
        fe->cookie_age_max = MAX(fe->cookie_age_max, fe->config->cookie_max_age);
        apply_io_uring(fe);
        return reload_listeners(fe);
}

int frontend_new(const FrontendOptions *o, Frontend **ret) {
        _cleanup_free_ char *key_error = NULL;
        Frontend *fe;
        int r;

        fe = calloc(1, sizeof *fe);
        if (!fe)
                return log_oom();
        fe->event = o->event;
        fe->config = o->config;
        fe->commander = o->commander;
        fe->commander_userdata = o->commander_userdata;
        open_requests_init(&fe->open);
        strmap_init(&fe->held);
        fe->tunnel_request_ended = tunnels_request_ended;
        cookie_revocations_init(&fe->revocations, fe->config->max_revoked_users);
        /* cookies of ours are stamped after this; one stamped before it was issued by an earlier run */
        fe->cookie_epoch = cookie_stamp(&fe->revocations, now_usec(CLOCK_REALTIME));
        fe->cookie_age_max = fe->config->cookie_max_age;
        if (getrandom(fe->prng, sizeof fe->prng, 0) != sizeof fe->prng || (fe->prng[0] | fe->prng[1]) == 0)
                fe->prng[0] = now_usec(CLOCK_REALTIME), fe->prng[1] = (uint64_t) getpid() | 1;

        r = accept_pause_init(&fe->accept_pause, fe->event, "the front end's listeners", set_accepting, fe);
        if (r < 0) {
                log_error_errno(r, "Failed to make the accept pause timer: %m");
                goto fail;
        }
        r = io_batch_new(fe->event, &fe->batch);
        if (r < 0) {
                log_error_errno(r, "Failed to set up the front end's socket set: %m");
                goto fail;
        }
        apply_io_uring(fe);
        r = frontend_state_dir(o->group, o->state_dir, &fe->state_dir);
        if (r < 0) {
                log_error_errno(r, "No state directory for the cookie key: pass --state-dir");
                goto fail;
        }
        r = mkdir_parents(fe->state_dir, 0700);
        if (r < 0) {
                log_error_errno(r, "Failed to create the state directory %s for the cookie key: %m",
                                fe->state_dir);
                goto fail;
        }
        r = cookie_key_load(fe->state_dir, &fe->cookie_key, &key_error);
        if (r < 0) {
                if (key_error)
                        log_error("Refusing to start without a cookie key: %s", key_error);
                else
                        log_error_errno(r, "Failed to load or create the cookie key in %s: %m",
                                        fe->state_dir);
                goto fail;
        }
        /* a state directory may be shared: a cookie of another group is no cookie here */
        r = cookie_key_bind(&fe->cookie_key, strempty(o->group));
        if (r < 0) {
                log_error_errno(r, "Failed to derive group %s's cookie key: %m", strempty(o->group));
                goto fail;
        }
        r = load_trusted(fe);
        if (r < 0)
                goto fail;
        compute_fd_high_water(fe);
        r = open_listeners(fe, o);
        if (r < 0)
                goto fail;
        listeners_defer(fe);
        r = sd_event_add_time_relative(fe->event, &fe->sweep_timer, CLOCK_MONOTONIC, SWEEP_INTERVAL,
                                       USEC_PER_SEC, on_sweep, fe);
        if (r < 0)
                goto fail;
        (void) sd_event_source_set_enabled(fe->sweep_timer, SD_EVENT_ON);
        r = frontend_trim_start(fe);
        if (r < 0)
                goto fail;
        r = error_log_init(fe);
        if (r < 0)
                goto fail;
        *ret = fe;
        return 0;
fail:
        frontend_free(fe);
        return r;
}

Frontend *frontend_free(Frontend *fe) {
        if (!fe)
                return NULL;
        while (fe->connections)
                fe->connections->ops->close(fe->connections);
        close_listeners(fe);
        for (unsigned i = 0; i < fe->forward_slots; i++)
                fe->forward[i] = forward_pool_free(fe->forward[i]);
        free(fe->forward);
        free(fe->tunnels_draining);
        /* every exchange is gone with its connection, the held ones with their queues */
        assert(strmap_size(&fe->held) == 0);
        strmap_done(&fe->held);
        open_requests_done(&fe->open);
        cookie_revocations_done(&fe->revocations);
        error_log_done(fe);
        fe->shutdown_deadline = sd_event_source_disable_unref(fe->shutdown_deadline);
        fe->sweep_timer = sd_event_source_disable_unref(fe->sweep_timer);
        fe->trim_timer = sd_event_source_disable_unref(fe->trim_timer);
        fe->ready_timer = sd_event_source_disable_unref(fe->ready_timer);
        accept_pause_done(&fe->accept_pause);
        /* last: the connections and pools above released their sources into it */
        fe->batch = io_batch_unref(fe->batch);
        free(fe->trusted);
        free(fe->state_dir);
        free(fe);
        return NULL;
}

static int on_shutdown_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        Frontend *fe = userdata;
        char span[32];

        log_warning("%u client connections still open at shutdown_timeout=%s; closing them", fe->n_connections,
                    format_timespan(span, sizeof span, fe->config->shutdown_timeout));
        while (fe->connections)
                fe->connections->ops->close(fe->connections);
        frontend_maybe_drained(fe);
        return 0;
}

void frontend_begin_shutdown(Frontend *fe, void (*on_drained)(void *userdata), void *userdata) {
        if (fe->shutting_down)
                return;
        fe->shutting_down = true;
        fe->on_drained = on_drained;
        fe->on_drained_userdata = userdata;
        /* stop accepting first: whatever connects from now on is refused by the kernel, not dropped by us;
         * what the kernel already completed is ours (accepted with shutting_down set: told at once) */
        accept_backlog(fe);
        fe->ready_timer = sd_event_source_disable_unref(fe->ready_timer);
        /* out of the fd store too: systemd's copy would keep taking handshakes nobody will serve */
        for (size_t i = 0; i < fe->n_listeners; i++)
                if (fe->listeners[i].ours)
                        unstore_listener(fe->listeners[i].address);
        close_listeners(fe);
        log_info("Front end shutting down: %u client connections finish what they sent", fe->n_connections);
        tunnels_end_all(fe, "the commander shuts down");
        for (FrontendConnection *c = fe->connections, *next; c; c = next) {
                next = c->next;
                c->ops->shutdown(c);
        }
        if (sd_event_add_time_relative(fe->event, &fe->shutdown_deadline, CLOCK_MONOTONIC,
                                       fe->config->shutdown_timeout, USEC_PER_MSEC, on_shutdown_deadline, fe) < 0)
                on_shutdown_deadline(NULL, 0, fe);
        frontend_maybe_drained(fe);
}
