/* SPDX-License-Identifier: MIT */
#include "server.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "http-conn.h"
#include "log.h"
#include "macro.h"

#define ACCEPT_BURST 64
#define SWEEP_INTERVAL_USEC USEC_PER_SEC
#define STOP_SWEEP_INTERVAL_USEC (100 * USEC_PER_MSEC)
/* After the hard stop (requests cut short, sockets shut down), how long the owners get to close. */
#define HARD_STOP_GRACE_USEC (2 * USEC_PER_SEC)
#define CONN_EVENTS (EPOLLIN | EPOLLRDHUP | EPOLLONESHOT)

struct Server {
        App *app;
        ServerConfig config;

        int epoll_fd, listen_fd, signal_fd, wake_fd;
        bool listen_is_tcp, accept_paused;
        int sensor_fd; /* as registered in epoll_fd, or -1 */

        Executor *executor;
        ConnScratch **scratch; /* one per executor thread */

        pthread_mutex_t conns_lock;
        Connection *conns;

        atomic_bool stopping;
        bool hard_stopped;
        usec_t stop_deadline, next_sweep;
};

/* epoll data of the loop's own fds: the address of the field that holds the fd. */
#define IS_TAG(s, ptr, field) ((ptr) == (void *) &(s)->field)

static int epoll_add(Server *s, int fd, uint32_t events, void *data) {
        struct epoll_event ev = { .events = events, .data.ptr = data };

        return RET_NERRNO(epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev));
}

static void sync_sensor_counts(Server *s) {
        ep_sensor_set_connections(s->app->sensor, atomic_load(&s->app->connections));
        ep_sensor_set_users(s->app->sensor, (uint32_t) user_store_count(s->app->users));
}

/* ---- connections: accept (loop), hand-over (loop -> executor), re-arm or close (executor) */

static void conn_link(Server *s, Connection *c) {
        pthread_mutex_lock(&s->conns_lock);
        c->prev = NULL;
        c->next = s->conns;
        if (s->conns)
                s->conns->prev = c;
        s->conns = c;
        pthread_mutex_unlock(&s->conns_lock);
        atomic_fetch_add(&s->app->connections, 1);
}

/* Unlinked before the fd closes: the sweep, which shutdown()s fds under the lock, can then never hit
 * an fd number that was already reused. */
static void conn_close(Server *s, Connection *c) {
        pthread_mutex_lock(&s->conns_lock);
        if (c->prev)
                c->prev->next = c->next;
        else
                s->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        pthread_mutex_unlock(&s->conns_lock);
        connection_free(c);
        atomic_fetch_sub(&s->app->connections, 1);
        if (atomic_load(&s->stopping))
                (void) eventfd_write(s->wake_fd, 1); /* the loop waits for the last one */
}

/* Hands the connection back to epoll; the executor must not touch it afterwards. */
static int conn_arm(Server *s, Connection *c, int op) {
        struct epoll_event ev = { .events = CONN_EVENTS, .data.ptr = c };

        atomic_store(&c->armed_partial, c->in_message);
        atomic_store(&c->armed_since, now_usec(CLOCK_MONOTONIC));
        return RET_NERRNO(epoll_ctl(s->epoll_fd, op, c->fd, &ev));
}

static void on_job(ExecutorJob *job, void *thread_data, void *userdata) {
        Server *s = userdata;
        Connection *c = (Connection *) job; /* job is the first member */
        bool keep;

        ep_sensor_request_begin(s->app->sensor);
        atomic_fetch_add_explicit(&s->app->busy, 1, memory_order_relaxed);
        keep = connection_process(c, s->app, thread_data, atomic_load(&s->stopping));
        atomic_fetch_sub_explicit(&s->app->busy, 1, memory_order_relaxed);
        ep_sensor_request_end(s->app->sensor);
        if (keep && conn_arm(s, c, EPOLL_CTL_MOD) >= 0)
                return;
        conn_close(s, c);
}

static void on_conn_event(Server *s, Connection *c) {
        /* An exchange, not a store: reading what conn_arm() stored orders the last executor's writes to
         * the connection before the next one's. The kernel orders them already (epoll_ctl, epoll_wait);
         * this says so in the memory model, where the thread sanitizer can see it. */
        (void) atomic_exchange(&c->armed_since, 0);
        ep_sensor_request_queued(s->app->sensor);
        executor_submit(s->executor, &c->job);
}

static void accept_pause(Server *s, bool pause) {
        struct epoll_event ev = { .events = pause ? 0 : EPOLLIN, .data.ptr = &s->listen_fd };

        if (s->listen_fd < 0 || s->accept_paused == pause)
                return;
        if (epoll_ctl(s->epoll_fd, EPOLL_CTL_MOD, s->listen_fd, &ev) < 0)
                return (void) log_warning_errno(errno, "Failed to %s accepting: %m",
                                                pause ? "pause" : "resume");
        s->accept_paused = pause;
}

static int accept_one(Server *s) {
        Connection *c;
        int fd, r;

        fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (s->listen_is_tcp)
                /* Answers are written whole; Nagle would only hold back the second of two. */
                (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int) { 1 }, sizeof(int));
        r = connection_new(fd, &c);
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        conn_link(s, c);
        r = conn_arm(s, c, EPOLL_CTL_ADD);
        if (r < 0) {
                conn_close(s, c);
                return r;
        }
        return 0;
}

static void on_listen_event(Server *s) {
        for (unsigned i = 0; i < ACCEPT_BURST; i++) {
                int r = accept_one(s);

                if (r >= 0 || r == -EINTR || r == -ECONNABORTED || r == -EPROTO)
                        continue;
                if (r == -EAGAIN)
                        break;
                /* Out of fds or memory: a level-triggered listener would spin; resume at the next sweep. */
                log_warning_errno(r, "Failed to accept a connection, pausing accepting for a second: %m");
                accept_pause(s, true);
                break;
        }
        ep_sensor_set_connections(s->app->sensor, atomic_load(&s->app->connections));
}

/* Ends, through shutdown(), the connections waiting in epoll that should not wait any longer: idle past
 * the timeout; idle at all while stopping; every one after the hard stop. */
static void sweep(Server *s, usec_t now) {
        bool stopping = atomic_load(&s->stopping);

        pthread_mutex_lock(&s->conns_lock);
        for (Connection *c = s->conns; c; c = c->next) {
                usec_t since = atomic_load(&c->armed_since);

                if (s->hard_stopped)
                        (void) shutdown(c->fd, SHUT_RDWR);
                else if (since == 0)
                        continue; /* an executor has it */
                else if (stopping && !atomic_load(&c->armed_partial))
                        (void) shutdown(c->fd, SHUT_RD);
                else if (since < now && now - since >= s->config.idle_timeout)
                        (void) shutdown(c->fd, SHUT_RD); /* EOF for its owner; SHUT_RD still lets a raced
                                                            request be answered */
        }
        pthread_mutex_unlock(&s->conns_lock);
        accept_pause(s, false);
        s->next_sweep = now + (stopping ? STOP_SWEEP_INTERVAL_USEC : SWEEP_INTERVAL_USEC);
}

/* ---- stopping */

static void stop_begin(Server *s, const char *why) {
        char buf[32];
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (atomic_load(&s->stopping)) {
                log_info("%s again, cutting in-flight requests short", why);
                s->stop_deadline = now;
                return;
        }
        atomic_store(&s->stopping, true);
        s->stop_deadline = now + s->config.shutdown_timeout;
        if (s->listen_fd >= 0) {
                (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, s->listen_fd, NULL);
                s->listen_fd = safe_close(s->listen_fd);
        }
        log_info("%s, stopping: %u connection(s) open, in-flight requests get up to %s", why,
                 atomic_load(&s->app->connections),
                 format_timespan(buf, sizeof buf, s->config.shutdown_timeout));
        sweep(s, now);
}

static void on_signal_event(Server *s) {
        struct signalfd_siginfo si;
        ssize_t n = read(s->signal_fd, &si, sizeof si);

        if (n != (ssize_t) sizeof si)
                return;
        stop_begin(s, si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
}

/* True when the loop is done: every connection closed, or the hard stop's grace ran out. */
static bool stop_check(Server *s, usec_t now) {
        unsigned n = atomic_load(&s->app->connections);

        if (!atomic_load(&s->stopping))
                return false;
        if (n == 0)
                return true;
        if (!s->hard_stopped && now >= s->stop_deadline) {
                log_warning("Shutdown timeout: cutting %u connection(s) short", n);
                s->hard_stopped = true;
                app_hard_stop(s->app);
                sweep(s, now);
        }
        if (s->hard_stopped && now >= s->stop_deadline + HARD_STOP_GRACE_USEC) {
                log_error("%u connection(s) still busy after the hard stop, exiting anyway", n);
                return true;
        }
        return false;
}

/* ---- the sensor in our loop */

static uint32_t poll_to_epoll(int events) {
        return (events & POLLIN ? EPOLLIN : 0) | (events & POLLOUT ? EPOLLOUT : 0);
}

/* The sensor changes its fd (reconnect) and its events (frames queued) only inside its own calls, so
 * this runs after each dispatch. A closed fd left epoll by itself: never EPOLL_CTL_DEL an old number,
 * which may belong to a connection by now. */
static void sensor_watch(Server *s) {
        int fd = ep_sensor_get_fd(s->app->sensor);
        struct epoll_event ev = { .data.ptr = &s->sensor_fd };

        if (fd < 0) {
                s->sensor_fd = -1;
                return;
        }
        ev.events = poll_to_epoll(ep_sensor_get_events(s->app->sensor));
        if (epoll_ctl(s->epoll_fd, EPOLL_CTL_MOD, fd, &ev) < 0 &&
            (errno != ENOENT || epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0)) {
                log_debug_errno(errno, "Failed to watch the sensor's fd %d, relying on its timeout: %m", fd);
                s->sensor_fd = -1;
                return;
        }
        s->sensor_fd = fd;
}

static void sensor_dispatch(Server *s) {
        int r;

        sync_sensor_counts(s); /* a report built now carries current counts */
        r = ep_sensor_dispatch(s->app->sensor);
        if (r < 0)
                log_warning_errno(r, "Sensor dispatch failed, continuing: %m");
        sync_sensor_counts(s); /* move callbacks may have changed the users */
        sensor_watch(s);
}

static usec_t sensor_due(Server *s) {
        uint64_t t;

        return ep_sensor_get_timeout(s->app->sensor, &t) < 0 ? USEC_INFINITY : t;
}

/* ---- the loop */

static int wait_msec(Server *s, usec_t now) {
        usec_t next = MIN(s->next_sweep, sensor_due(s));

        if (atomic_load(&s->stopping))
                next = MIN(next, s->stop_deadline + (s->hard_stopped ? HARD_STOP_GRACE_USEC : 0));
        if (next <= now)
                return 0;
        return (int) MIN((next - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC, (usec_t) INT_MAX);
}

int server_run(Server *s) {
        struct epoll_event events[64];

        log_info("Serving with %u executor thread(s)", s->config.threads);
        sync_sensor_counts(s);
        sensor_dispatch(s); /* the Hello goes out now, not at the first timeout */
        s->next_sweep = now_usec(CLOCK_MONOTONIC) + SWEEP_INTERVAL_USEC;

        for (;;) {
                bool sensor_ready = false;
                usec_t now = now_usec(CLOCK_MONOTONIC);
                int n;

                if (stop_check(s, now))
                        return 0;
                n = epoll_wait(s->epoll_fd, events, ELEMENTSOF(events), wait_msec(s, now));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return log_error_errno(errno, "epoll_wait() failed: %m");
                }
                for (int i = 0; i < n; i++) {
                        void *p = events[i].data.ptr;

                        if (IS_TAG(s, p, listen_fd))
                                on_listen_event(s);
                        else if (IS_TAG(s, p, signal_fd))
                                on_signal_event(s);
                        else if (IS_TAG(s, p, wake_fd))
                                (void) eventfd_read(s->wake_fd, &(eventfd_t) { 0 });
                        else if (IS_TAG(s, p, sensor_fd))
                                sensor_ready = true;
                        else
                                on_conn_event(s, p);
                }
                now = now_usec(CLOCK_MONOTONIC);
                if (sensor_ready || now >= sensor_due(s))
                        sensor_dispatch(s);
                if (now >= s->next_sweep)
                        sweep(s, now);
        }
}

/* ---- setup */

static bool fd_is_inet(int fd) {
        struct sockaddr_storage sa;
        socklen_t l = sizeof sa;

        if (getsockname(fd, (struct sockaddr *) &sa, &l) < 0)
                return false;
        return sa.ss_family == AF_INET || sa.ss_family == AF_INET6;
}

static int setup_fds(Server *s) {
        sigset_t mask;
        int r;

        s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        if (s->epoll_fd < 0)
                return -errno;
        s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->wake_fd < 0)
                return -errno;

        /* Blocked here, before the executor threads exist, so that they inherit the mask. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        r = pthread_sigmask(SIG_BLOCK, &mask, NULL);
        if (r != 0)
                return -r;
        s->signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (s->signal_fd < 0)
                return -errno;

        r = fd_set_nonblock(s->listen_fd, true);
        if (r < 0)
                return r;
        s->listen_is_tcp = fd_is_inet(s->listen_fd);
        r = epoll_add(s, s->listen_fd, EPOLLIN, &s->listen_fd);
        if (r < 0)
                return r;
        r = epoll_add(s, s->signal_fd, EPOLLIN, &s->signal_fd);
        if (r < 0)
                return r;
        return epoll_add(s, s->wake_fd, EPOLLIN, &s->wake_fd);
}

static int setup_executor(Server *s) {
        s->scratch = calloc(s->config.threads, sizeof(ConnScratch *));
        if (!s->scratch)
                return -ENOMEM;
        for (unsigned i = 0; i < s->config.threads; i++) {
                s->scratch[i] = malloc(sizeof(ConnScratch));
                if (!s->scratch[i])
                        return -ENOMEM;
        }
        return executor_new(s->config.threads, (void *const *) s->scratch, on_job, s, &s->executor);
}

int server_new(int listen_fd, App *app, const ServerConfig *config, Server **ret) {
        Server *s;
        int r;

        s = calloc(1, sizeof *s);
        if (!s) {
                safe_close(listen_fd);
                return -ENOMEM;
        }
        *s = (Server) {
                .app = app,
                .config = *config,
                .epoll_fd = -EBADF,
                .listen_fd = listen_fd,
                .signal_fd = -EBADF,
                .wake_fd = -EBADF,
                .sensor_fd = -1,
        };
        pthread_mutex_init(&s->conns_lock, NULL);

        r = setup_fds(s);
        if (r >= 0)
                r = setup_executor(s);
        if (r < 0) {
                server_free(s);
                return r;
        }
        ep_sensor_set_executor_total(app->sensor, config->threads);
        *ret = s;
        return 0;
}

Server *server_free(Server *s) {
        if (!s)
                return NULL;
        /* Joining runs what is still queued: those jobs close their connections through conn_close(). */
        s->executor = executor_free(s->executor);
        while (s->conns) {
                Connection *c = s->conns;
                s->conns = c->next;
                connection_free(c);
                atomic_fetch_sub(&s->app->connections, 1);
        }
        if (s->scratch)
                for (unsigned i = 0; i < s->config.threads; i++)
                        free(s->scratch[i]);
        free(s->scratch);
        safe_close(s->listen_fd);
        safe_close(s->signal_fd);
        safe_close(s->wake_fd);
        safe_close(s->epoll_fd);
        pthread_mutex_destroy(&s->conns_lock);
        free(s);
        return NULL;
}
