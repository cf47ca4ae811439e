/* SPDX-License-Identifier: MIT */
/* The front end's lifecycle: listeners (listen= or sockets handed over by systemd), client connection
 * bookkeeping, the worker hooks that give each routable worker its forward pool, and shutdown. */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "cleanup.h"
#include "path-util.h"
#include "fd-util.h"
#include "forward.h"
#include "frontend-manager.h"
#include "log.h"
#include "macro.h"
#include "move.h"

#define LISTEN_BACKLOG 4096
#define SWEEP_INTERVAL (60 * USEC_PER_SEC)
#define SWEEP_MAX_AGE (3600 * USEC_PER_SEC)
/* Error lines (request errors and client-caused ones) per second; the rest are counted and summed up. */
#define ERROR_LINES_PER_SECOND 20U
/* Requests waiting for a free connection to one worker. Every guest goes to the reception, so one h2
 * client with many streams can queue thousands there; each waits with a few hundred bytes of state. */
#define UPSTREAM_QUEUE_MAX 16384U

sd_event *frontend_event(Frontend *fe) {
        return fe->event;
}

const Config *frontend_config(Frontend *fe) {
        return fe->config;
}

bool frontend_shutting_down(Frontend *fe) {
        return fe->shutting_down;
}

/* ---- the error lines' rate limit ---- */

/* Appends ", N more <what>" (or " and N more" before the last one) to the summary. */
static void summary_add(char *buf, size_t size, size_t *len, unsigned n, const char *what, bool last) {
        const char *sep = *len == 0 ? "" : last ? " and " : ", ";
        int k;

        if (*len >= size)
                return;
        k = snprintf(buf + *len, size - *len, "%s%u more %s", sep, n, what);
        *len = k < 0 ? size : MIN(size, *len + (size_t) k);
}

void frontend_log_flush(Frontend *fe) {
        char summary[512], what[16];
        unsigned kinds = 0, done = 0;
        size_t len = 0;

        if (fe->log_suppressed_total == 0)
                return;
        for (size_t i = 0; i < FRONTEND_LOG_STATUSES; i++)
                kinds += fe->log_suppressed[i] > 0;
        /* statuses in order, then the lines without one */
        for (size_t i = 1; i <= FRONTEND_LOG_STATUSES; i++) {
                size_t slot = i % FRONTEND_LOG_STATUSES;
                unsigned n = fe->log_suppressed[slot];

                if (n == 0)
                        continue;
                if (slot == 0)
                        snprintf(what, sizeof what, "client error%s", n == 1 ? "" : "s");
                else
                        snprintf(what, sizeof what, "%zu%s", slot + 399, n == 1 ? "" : "s");
                summary_add(summary, sizeof summary, &len, n, what, ++done == kinds && kinds > 1);
                fe->log_suppressed[slot] = 0;
        }
        log_notice("... and %s in the last second (error lines are rate-limited to %u a second)", summary,
                   ERROR_LINES_PER_SECOND);
        fe->log_suppressed_total = 0;
}

static int on_log_flush(sd_event_source *s, uint64_t usec, void *userdata) {
        frontend_log_flush(userdata);
        return 0;
}

/* Whether one more error line may go out now; counts it by status when not. */
static bool log_admit(Frontend *fe, unsigned status) {
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (now - fe->log_window_start >= USEC_PER_SEC) {
                frontend_log_flush(fe);
                fe->log_window_start = now;
                fe->log_in_window = 0;
        }
        if (fe->log_in_window < ERROR_LINES_PER_SECOND) {
                fe->log_in_window++;
                return true;
        }
        fe->log_suppressed[status >= 400 && status <= 599 ? status - 399 : 0]++;
        /* the first line left out in this second: report the count when the second ends, whether or not
         * another line comes to roll the window over */
        if (fe->log_suppressed_total++ == 0 && fe->log_flush_timer) {
                usec_t end = fe->log_window_start + USEC_PER_SEC;

                if (sd_event_source_set_time_relative(fe->log_flush_timer, end > now ? end - now : 0) < 0 ||
                    sd_event_source_set_enabled(fe->log_flush_timer, SD_EVENT_ONESHOT) < 0)
                        log_debug("Cannot arm the error log's flush timer; the count goes out with the "
                                  "next line");
        }
        return false;
}

void frontend_log_client_error(Frontend *fe, const char *format, ...) {
        char buf[1024];
        va_list ap;

        if (!log_admit(fe, 0))
                return;
        va_start(ap, format);
        vsnprintf(buf, sizeof buf, format, ap);
        va_end(ap);
        log_notice("%s", buf);
}

const char *request_log_fields(char *buf, size_t size, const Exchange *x, unsigned status) {
        if (status > 0)
                snprintf(buf, size, "EP_REQUEST_ID=%s\nEP_STATUS=%u", x->id, status);
        else
                snprintf(buf, size, "EP_REQUEST_ID=%s", x->id);
        return buf;
}

void frontend_log_request(Frontend *fe, const Exchange *x, unsigned status, const char *format, ...) {
        char buf[1024], extra[REQUEST_LOG_FIELDS_MAX];
        va_list ap;

        if (!log_admit(fe, status))
                return;
        va_start(ap, format);
        vsnprintf(buf, sizeof buf, format, ap);
        va_end(ap);
        log_struct(status >= 500 ? LOG_WARNING : LOG_NOTICE,
                   LOG_FIELDS(.event = status > 0 ? "request-error" : "client-error",
                              .worker = (int) x->worker, .user = x->user,
                              .extra = request_log_fields(extra, sizeof extra, x, status)),
                   "%s", buf);
}

/* ---- connections ---- */

static void maybe_drained(Frontend *fe);

void frontend_connection_register(Frontend *fe, FrontendConnection *c, const FrontendConnectionOps *ops,
                                  const struct sockaddr_storage *peer) {
        c->ops = ops;
        c->frontend = fe;
        c->peer = *peer;
        c->opened = now_usec(CLOCK_MONOTONIC);
        c->prev = NULL;
        c->next = fe->connections;
        if (fe->connections)
                fe->connections->prev = c;
        fe->connections = c;
        fe->n_connections++;
}

void frontend_connection_unregister(Frontend *fe, FrontendConnection *c) {
        if (c->prev)
                c->prev->next = c->next;
        else if (fe->connections == c)
                fe->connections = c->next;
        if (c->next)
                c->next->prev = c->prev;
        c->prev = c->next = NULL;
        if (fe->n_connections > 0)
                fe->n_connections--;
        if (fe->shutting_down)
                maybe_drained(fe);
}

/* ---- listeners ---- */

/* Accepts one connection from a listener. 1 when one was taken (or refused past max_connections), 0 when
 * none is waiting or accept() failed (logged). */
static int accept_one(Frontend *fe, int fd) {
        struct sockaddr_storage peer = {};
        socklen_t len = sizeof peer;
        int c = accept4(fd, (struct sockaddr *) &peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (c < 0) {
                if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
                        return 0;
                if (errno == EMFILE || errno == ENFILE) {
                        frontend_log_client_error(fe, "accept() failed: %s (raise LimitNOFILE=)",
                                                  strerror(errno));
                        return 0;
                }
                log_warning_errno(errno, "accept() failed: %m");
                return 0;
        }
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
static void accept_backlog(Frontend *fe) {
        struct sock_filter syn_drop[] = {
                BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 13),
                BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x12),          /* SYN | ACK */
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x02, 0, 1),    /* SYN alone: a new connection */
                BPF_STMT(BPF_RET | BPF_K, 0),
                BPF_STMT(BPF_RET | BPF_K, UINT32_MAX),
        };
        struct sock_fprog prog = { .len = ELEMENTSOF(syn_drop), .filter = syn_drop };
        unsigned n = 0;

        for (size_t i = 0; i < fe->n_listeners; i++) {
                Listener *l = &fe->listeners[i];

                if (!l->ours)
                        continue;
                if (setsockopt(l->fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) < 0)
                        log_debug_errno(errno, "Cannot stop new handshakes on %s, ignoring: %m", l->address);
                while (accept_one(fe, l->fd) > 0)
                        n++;
        }
        if (n > 0)
                log_debug("Took %u queued connections in before closing the listeners", n);
}

/* A listener of ours accepts at once; one handed over by systemd waits for listeners_start(). */
static int add_listener(Frontend *fe, int fd, const char *address, bool ours) {
        Listener *l;
        Listener *a = reallocarray(fe->listeners, fe->n_listeners + 1, sizeof *a);
        int r;

        if (!a)
                return -ENOMEM;
        fe->listeners = a;
        l = &a[fe->n_listeners];
        *l = (Listener) { .fd = fd, .address = strdup(address), .ours = ours };
        r = sd_event_add_io(fe->event, &l->io, fd, EPOLLIN, on_accept, fe);
        if (r < 0)
                return r;
        if (!ours) {
                r = sd_event_source_set_enabled(l->io, SD_EVENT_OFF);
                if (r < 0)
                        return r;
        }
        fe->n_listeners++;
        return 0;
}

/* Sockets handed over by systemd were open before we were, and clients may already wait in them: the one
 * whose connection made systemd start us, those that came while our previous instance restarted. To them
 * the service was only slow to answer, so they are accepted once a worker is routable rather than told
 * 503 at once. Bounded by spawn_timeout: when no worker comes up, they get what any client gets without
 * one, and nothing waits forever. Our own listen= sockets accept at once: nobody could connect before we
 * bound them, and a client arriving during our start gets its 503 without waiting. */
static void listeners_start(Frontend *fe, const char *why) {
        if (!fe->ready_timer)
                return;
        fe->ready_timer = sd_event_source_disable_unref(fe->ready_timer);
        for (size_t i = 0; i < fe->n_listeners; i++)
                if (!fe->listeners[i].ours)
                        (void) sd_event_source_set_enabled(fe->listeners[i].io, SD_EVENT_ON);
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
        bool handed_over = false;
        int r;

        for (size_t i = 0; i < fe->n_listeners; i++)
                handed_over = handed_over || !fe->listeners[i].ours;
        if (!handed_over)
                return;
        r = sd_event_add_time_relative(fe->event, &fe->ready_timer, CLOCK_MONOTONIC, fe->config->spawn_timeout,
                                       USEC_PER_MSEC, on_ready_timeout, fe);
        if (r < 0) {
                /* no bound on the wait: then no wait */
                log_warning_errno(r, "Failed to arm the first-worker timer, accepting at once: %m");
                for (size_t i = 0; i < fe->n_listeners; i++)
                        (void) sd_event_source_set_enabled(fe->listeners[i].io, SD_EVENT_ON);
        }
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
        r = add_listener(fe, fd, address, true);
        if (r < 0)
                return r;
        TAKE_FD(fd);
        log_info("Listening on %s (HTTP/1.1, h2c)", address);
        return 0;
}

/* Sockets from systemd (elastic-pool@.socket) replace listen=. */
static int take_systemd_sockets(Frontend *fe) {
        int n = sd_listen_fds(true), r;

        if (n <= 0)
                return n;
        for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + n; fd++) {
                char name[64];

                if (sd_is_socket(fd, AF_UNSPEC, SOCK_STREAM, 1) <= 0) {
                        log_warning("Ignoring passed fd %d: not a listening stream socket", fd);
                        continue;
                }
                r = fd_set_cloexec_nonblock(fd);
                if (r < 0)
                        return r;
                snprintf(name, sizeof name, "systemd socket fd %d", fd);
                r = add_listener(fe, fd, name, false);
                if (r < 0)
                        return r;
                log_info("Listening on %s (handed over by systemd)", name);
        }
        return (int) fe->n_listeners;
}

static int open_listeners(Frontend *fe) {
        int r;

        r = take_systemd_sockets(fe);
        if (r < 0)
                return log_error_errno(r, "Failed to take the sockets systemd passed: %m");
        if (r > 0)
                return 0;
        for (char *const *a = fe->config->listen; a && *a; a++) {
                r = open_listener(fe, *a);
                if (r < 0)
                        return r;
        }
        if (fe->n_listeners == 0)
                log_warning("No listener: [frontend] listen is empty and systemd passed no socket");
        return 0;
}

static void close_listeners(Frontend *fe) {
        for (size_t i = 0; i < fe->n_listeners; i++) {
                fe->listeners[i].io = sd_event_source_disable_unref(fe->listeners[i].io);
                fe->listeners[i].fd = safe_close(fe->listeners[i].fd);
                free(fe->listeners[i].address);
        }
        free(fe->listeners);
        fe->listeners = NULL;
        fe->n_listeners = 0;
}

/* ---- the workers' forward pools ---- */

static Frontend *frontend_of(Manager *m) {
        return m->frontend;
}

static void on_worker_routable(Manager *m, Worker *w) {
        Frontend *fe = frontend_of(m);
        ForwardOptions o = {
                .max_connections = fe->config->upstream_connections,
                .max_queued = UPSTREAM_QUEUE_MAX,
                .response_timeout = fe->config->response_timeout,
                .idle_timeout = fe->config->idle_timeout,
                .cookie_name = COOKIE_NAME,
                .worker_id = w->id,
        };
        int r;

        if (w->forward)
                return;
        r = forward_pool_new(fe->event, w->socket_path, &o, &w->forward);
        if (r < 0) {
                log_error_errno(r, "Failed to set up forwarding to %s: %m", WORKER_NAME(w));
                return;
        }
        listeners_start(fe, "a worker is routable");
}

static void on_worker_draining(Manager *m, Worker *w) {
        if (w->forward)
                forward_pool_drain(w->forward);
}

static void on_worker_gone(Manager *m, Worker *w) {
        Frontend *fe = frontend_of(m);
        unsigned n;

        move_worker_gone(fe, w->id);
        n = surface_worker_gone(&fe->surface, w->id);
        if (n > 0)
                log_warning("%u users lived on %s, which is gone: each is placed again on its next request "
                            "(its state there is lost)", n, WORKER_NAME(w));
        /* answers what is still on it: 502 before a head, an aborted response after */
        w->forward = forward_pool_free(w->forward);
}

static void on_move_frame(Manager *m, Worker *w, const Frame *f) {
        move_on_frame(frontend_of(m), w, f);
}

void frontend_worker_traffic(Frontend *fe, const Worker *w, WorkerTraffic *ret) {
        const ForwardCounters *c = w->forward ? forward_pool_counters(w->forward) : NULL;

        *ret = (WorkerTraffic) { .inflight = surface_worker_open(&fe->surface, w->id) };
        if (!c)
                return;
        ret->has_forward = true;
        ret->requests = c->requests;
        ret->errors = c->errors;
        ret->busy_usec = c->busy_usec;
}

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
        unsigned n = surface_sweep(&fe->surface, now_usec(CLOCK_MONOTONIC), SWEEP_MAX_AGE);

        if (n > 0)
                log_warning("Swept %u open-request entries older than an hour; an exchange leaked them", n);
        /* logouts whose revoked cookies have all expired anyway */
        (void) cookie_revocations_expire(&fe->revocations, now_usec(CLOCK_REALTIME));
        (void) sd_event_source_set_time(s, usec + SWEEP_INTERVAL);
        return 0;
}

int frontend_new(Manager *m, const FrontendOptions *o, Frontend **ret) {
        _cleanup_free_ char *key_error = NULL;
        Frontend *fe;
        int r;

        fe = calloc(1, sizeof *fe);
        if (!fe)
                return log_oom();
        fe->manager = m;
        fe->event = m->event;
        fe->config = &m->config;
        surface_init(&fe->surface);
        cookie_revocations_init(&fe->revocations, fe->config->max_revoked_users);
        /* cookies of ours are stamped after this; one stamped before it was issued by an earlier run */
        fe->cookie_epoch = cookie_stamp(&fe->revocations, now_usec(CLOCK_REALTIME));
        fe->cookie_age_max = fe->config->cookie_max_age;
        if (getrandom(fe->prng, sizeof fe->prng, 0) != sizeof fe->prng || (fe->prng[0] | fe->prng[1]) == 0)
                fe->prng[0] = now_usec(CLOCK_REALTIME), fe->prng[1] = (uint64_t) getpid() | 1;

        r = frontend_state_dir(m->group, o->state_dir, &fe->state_dir);
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
        r = load_trusted(fe);
        if (r < 0)
                goto fail;
        r = open_listeners(fe);
        if (r < 0)
                goto fail;
        listeners_defer(fe);
        r = sd_event_add_time_relative(fe->event, &fe->sweep_timer, CLOCK_MONOTONIC, SWEEP_INTERVAL,
                                       USEC_PER_SEC, on_sweep, fe);
        if (r < 0)
                goto fail;
        (void) sd_event_source_set_enabled(fe->sweep_timer, SD_EVENT_ON);
        r = sd_event_add_time_relative(fe->event, &fe->log_flush_timer, CLOCK_MONOTONIC, USEC_PER_SEC,
                                       100 * USEC_PER_MSEC, on_log_flush, fe);
        if (r < 0)
                goto fail;
        (void) sd_event_source_set_enabled(fe->log_flush_timer, SD_EVENT_OFF);

        m->frontend = fe;
        m->on_worker_routable = on_worker_routable;
        m->on_worker_draining = on_worker_draining;
        m->on_worker_gone = on_worker_gone;
        m->on_move_frame = on_move_frame;
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
        move_free_all(fe);
        if (fe->manager) {
                for (size_t i = 0; i < fe->manager->pool.n_workers; i++)
                        fe->manager->pool.workers[i]->forward =
                                forward_pool_free(fe->manager->pool.workers[i]->forward);
                if (fe->manager->frontend == fe)
                        fe->manager->frontend = NULL;
        }
        surface_done(&fe->surface);
        cookie_revocations_done(&fe->revocations);
        /* what the rate limit left out is reported, not lost with us */
        frontend_log_flush(fe);
        fe->log_flush_timer = sd_event_source_disable_unref(fe->log_flush_timer);
        fe->shutdown_deadline = sd_event_source_disable_unref(fe->shutdown_deadline);
        fe->sweep_timer = sd_event_source_disable_unref(fe->sweep_timer);
        fe->ready_timer = sd_event_source_disable_unref(fe->ready_timer);
        free(fe->trusted);
        free(fe->state_dir);
        free(fe);
        return NULL;
}

static void maybe_drained(Frontend *fe) {
        void (*cb)(Frontend *fe) = fe->on_drained;

        if (fe->n_connections > 0 || !cb)
                return;
        fe->on_drained = NULL;
        fe->shutdown_deadline = sd_event_source_disable_unref(fe->shutdown_deadline);
        log_info("Front end drained: every client connection closed");
        cb(fe);
}

static int on_shutdown_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        Frontend *fe = userdata;
        char span[32];

        log_warning("%u client connections still open at shutdown_timeout=%s; closing them", fe->n_connections,
                    format_timespan(span, sizeof span, fe->config->shutdown_timeout));
        while (fe->connections)
                fe->connections->ops->close(fe->connections);
        maybe_drained(fe);
        return 0;
}

void frontend_begin_shutdown(Frontend *fe, void (*on_drained)(Frontend *fe)) {
        if (fe->shutting_down)
                return;
        fe->shutting_down = true;
        fe->on_drained = on_drained;
        /* stop accepting first: whatever connects from now on is refused by the kernel, not dropped by us;
         * what the kernel already completed is ours (accepted with shutting_down set: told at once) */
        accept_backlog(fe);
        fe->ready_timer = sd_event_source_disable_unref(fe->ready_timer);
        close_listeners(fe);
        log_info("Front end shutting down: %u client connections finish what they sent", fe->n_connections);
        for (FrontendConnection *c = fe->connections, *next; c; c = next) {
                next = c->next;
                c->ops->shutdown(c);
        }
        if (sd_event_add_time_relative(fe->event, &fe->shutdown_deadline, CLOCK_MONOTONIC,
                                       fe->config->shutdown_timeout, USEC_PER_MSEC, on_shutdown_deadline, fe) < 0)
                on_shutdown_deadline(NULL, 0, fe);
        maybe_drained(fe);
}
