/* SPDX-License-Identifier: MIT */
/* One virtual user: log in, keep the sticky cookie, loop over /state and /work with think times in
 * between, check that /state's counter goes up by exactly one each time (stickiness), log out. With
 * --keep-sessions a user that leaves goes away instead: logged in, it only checks /state once per idle
 * check, wherever the commander moved it, and checks once more before it logs out at the close. Each
 * user owns one non-blocking keep-alive connection (edge-triggered in the loop's epoll) and one timer
 * node; its request and its response state live in the VUser, so this file never allocates. */

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "cleanup.h"
#include "loadgen.h"
#include "macro.h"

/* After a failed connect or a 5xx, wait at least this long: a user must not spin on a dead server. */
#define RETRY_MIN_USEC (100 * USEC_PER_MSEC)
/* Sticky errors described on stderr before they are only counted. */
#define STICKY_MESSAGES_MAX 10

#define COOKIE_NAME "ep_user="

static const char *const request_kind_table[_REQUEST_KIND_MAX] = {
        [REQUEST_LOGIN] = "login",
        [REQUEST_STATE] = "state",
        [REQUEST_WORK] = "work",
        [REQUEST_LOGOUT] = "logout",
};

const char *request_kind_to_string(RequestKind k) {
        return k >= 0 && k < _REQUEST_KIND_MAX ? request_kind_table[k] : NULL;
}

void vuser_init(VUser *u, Loadgen *lg, unsigned slot) {
        *u = (VUser){.lg = lg, .slot = slot, .fd = -EBADF, .phase = PHASE_IDLE};
        timer_node_init(&u->timer);
}

bool vuser_is_live(const VUser *u) {
        return (u->phase == PHASE_LOGIN || u->phase == PHASE_ACTIVE) && !u->retiring && !u->away;
}

bool vuser_is_away(const VUser *u) {
        return u->away && u->phase != PHASE_IDLE;
}

bool vuser_is_logged_in(const VUser *u) {
        return u->phase == PHASE_ACTIVE && u->cookie[0];
}

static void schedule(VUser *u, usec_t when) {
        /* the heap holds one node per user, so it is never full */
        (void) timer_heap_schedule(&u->lg->timers, &u->timer, when);
}

static void conn_close(VUser *u) {
        /* closing the only reference takes the fd out of the epoll set */
        u->fd = safe_close(u->fd);
        u->conn = CONN_CLOSED;
        u->conn_requests = 0;
}

static void go_idle(VUser *u) {
        timer_heap_cancel(&u->lg->timers, &u->timer);
        conn_close(u);
        u->phase = PHASE_IDLE;
        u->in_flight = u->retiring = u->away = u->last_check_sent = false;
        u->cookie[0] = 0;
        u->counter_known = false;
}

void vuser_abort(VUser *u) {
        go_idle(u);
}

/* ---- errors and the checks */

static void count_error(VUser *u, ErrorKind kind) {
        u->lg->stats.errors[kind]++;
}

/* The error an unexpected status stands for: 4xx and 5xx by their kind, anything else (a redirect,
 * a 204 where a body was due) is a protocol error. */
static ErrorKind status_error(unsigned status) {
        ErrorKind k = error_kind_from_status(status);

        return k >= 0 ? k : ERROR_PROTOCOL;
}

_printf_(2, 3) static void sticky_error(VUser *u, const char *fmt, ...) {
        Loadgen *lg = u->lg;
        va_list ap;

        lg->stats.sticky_errors++;
        if (lg->sticky_messages >= STICKY_MESSAGES_MAX)
                return;
        fprintf(stderr, "%s: sticky error: %s: ", PROGRAM, u->name);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        if (++lg->sticky_messages == STICKY_MESSAGES_MAX)
                fputs(" (further sticky errors are only counted)", stderr);
        fputc('\n', stderr);
}

/* ---- requests */

static RequestKind pick_request(VUser *u) {
        const Options *o = u->lg->opt;

        switch (u->phase) {
        case PHASE_LOGIN:
                return REQUEST_LOGIN;
        case PHASE_LOGOUT:
                return REQUEST_LOGOUT;
        default:
                if (u->away)
                        return REQUEST_STATE; /* an idle session: the check that keeps it used */
                return rng_below(&u->lg->rng, o->mix_state + o->mix_work) < o->mix_state ? REQUEST_STATE
                                                                                         : REQUEST_WORK;
        }
}

static int build_request(VUser *u) {
        const Options *o = u->lg->opt;
        char login[VUSER_NAME_MAX + 16];
        const char *target;
        int n;

        switch (u->request) {
        case REQUEST_LOGIN:
                (void) snprintf(login, sizeof login, "/login?user=%s", u->name);
                target = login;
                break;
        case REQUEST_STATE:
                target = "/state";
                break;
        case REQUEST_WORK:
                target = u->lg->work_target;
                break;
        default:
                target = "/logout";
        }
        n = snprintf(u->out, sizeof u->out,
                     "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: " PROGRAM "\r\n%s%s%s\r\n", target,
                     o->authority, u->cookie[0] ? "Cookie: " : "", u->cookie, u->cookie[0] ? "\r\n" : "");
        if (n < 0 || (size_t) n >= sizeof u->out)
                return -ENOBUFS;
        u->out_len = (size_t) n;
        u->out_off = 0;
        return 0;
}

static void response_reset(VUser *u) {
        http_parser_init(&u->parser, HTTP_RESPONSE);
        u->parser.data = u;
        u->got_bytes = u->complete = u->header_is_cookie = u->header_in_value = false;
        u->header_name_len = u->set_cookie_len = u->body_len = 0;
        u->set_cookie_seen = u->set_cookie_overflow = false;
}

static int conn_open(VUser *u) {
        Loadgen *lg = u->lg;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = u};
        _cleanup_close_ int fd = -EBADF;

        fd = socket(lg->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* requests are one small write each: do not let Nagle hold them back behind the last ACK */
        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
        if (connect(fd, (struct sockaddr *) &lg->addr, lg->addr_len) < 0 && errno != EINPROGRESS)
                return -errno;
        if (epoll_ctl(lg->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
                return -errno;
        u->fd = TAKE_FD(fd);
        /* even a loopback connect that completed at once reports EPOLLOUT: finish it there */
        u->conn = CONN_CONNECTING;
        u->conn_requests = 0;
        return 0;
}

static void request_failed(VUser *u, ErrorKind kind, usec_t now);
static void connection_lost(VUser *u, usec_t now);

/* Sends what is left of the request; the rest waits for EPOLLOUT. */
static void flush(VUser *u, usec_t now) {
        while (u->out_off < u->out_len) {
                ssize_t k = send(u->fd, u->out + u->out_off, u->out_len - u->out_off, MSG_NOSIGNAL);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                connection_lost(u, now);
                        return;
                }
                u->out_off += (size_t) k;
        }
}

static void request_begin(VUser *u, RequestKind kind, usec_t now, bool retry) {
        int r;

        u->request = kind;
        u->in_flight = true;
        /* a user that goes away with a request in flight: that one was still work */
        u->idle_check = u->away && kind == REQUEST_STATE;
        u->retried = retry;
        if (!retry)
                u->sent_at = now;
        response_reset(u);
        schedule(u, u->sent_at + u->lg->opt->timeout);
        if (build_request(u) < 0)
                return request_failed(u, ERROR_PROTOCOL, now);
        if (u->conn == CONN_CLOSED) {
                r = conn_open(u);
                if (r < 0)
                        return request_failed(u, ERROR_CONNECT, now);
        }
        if (u->conn == CONN_OPEN)
                flush(u, now);
}

/* What a user does once its request is over: think, then the next one (or log out, or stop). */
static void next_step(VUser *u, usec_t now, usec_t delay) {
        if (u->phase == PHASE_IDLE)
                return;
        if (u->retiring && u->phase != PHASE_LOGOUT) {
                if (!u->cookie[0])
                        return go_idle(u); /* never logged in: nothing to log out */
                if (u->away && u->phase == PHASE_ACTIVE && !u->last_check_sent) {
                        /* its state went wherever the pool moved it: one last look before it is gone */
                        u->last_check_sent = true;
                        return request_begin(u, REQUEST_STATE, now, false);
                }
                u->phase = PHASE_LOGOUT;
                delay = 0;
        }
        if (delay == 0)
                request_begin(u, pick_request(u), now, false);
        else
                schedule(u, now + delay);
}

/* The pause before the next request: a think time, or for an idle session the next check. */
static usec_t think(VUser *u) {
        if (u->away)
                return rng_idle_check(&u->lg->rng, u->lg->opt->idle_check);
        return rng_think(&u->lg->rng, u->lg->opt->think);
}

static usec_t retry_delay(VUser *u) {
        return MAX(think(u), RETRY_MIN_USEC);
}

static void request_failed(VUser *u, ErrorKind kind, usec_t now) {
        count_error(u, kind);
        u->lg->stats.requests++;
        conn_close(u);
        u->in_flight = false;
        /* the worker may or may not have counted the request: resynchronise on the next answer */
        if (u->request == REQUEST_STATE)
                u->counter_known = false;
        if (u->request == REQUEST_LOGOUT)
                return go_idle(u);
        next_step(u, now, retry_delay(u));
}

/* The peer closed or reset the connection before the response was complete. A keep-alive connection
 * the server closed while idle looks the same on the first bytes of the next request: that one request
 * is retried once on a fresh connection, as browsers do. A server that did run it and then closed
 * without answering shows up in the next /state as a counter jump: a sticky error, which it is. */
static void connection_lost(VUser *u, usec_t now) {
        bool stale = u->conn_requests > 0 && !u->got_bytes && !u->retried;

        conn_close(u);
        if (!u->in_flight)
                return;
        if (stale)
                return request_begin(u, u->request, now, true);
        request_failed(u, ERROR_RESET, now);
}

/* ---- answers */

static bool body_has(const VUser *u, const char *s) {
        return memmem(u->body, u->body_len, s, strlen(s)) != NULL;
}

static void on_login_answer(VUser *u, unsigned status, usec_t now) {
        if (status != 200 || !u->cookie[0]) {
                count_error(u, status == 200 ? ERROR_PROTOCOL : status_error(status));
                return next_step(u, now, retry_delay(u));
        }
        u->lg->stats.logins++;
        u->phase = PHASE_ACTIVE;
        /* a name never used before starts at 0; after a lost state, the next answer sets the count */
        u->counter = 0;
        u->counter_known = u->fresh;
        u->fresh = false;
        u->worker[0] = 0;
        next_step(u, now, think(u));
}

/* Checks a /state counter against the last one. Returns true when the check passed (the counter rose
 * by exactly one), false when it failed or there was nothing to check against; *ret_moved says whether
 * a passed check was answered by another worker than the last. */
static bool check_counter(VUser *u, uint64_t counter, const char *worker, bool *ret_moved) {
        bool passed = false, moved = false;

        if (u->counter_known && counter != u->counter + 1)
                sticky_error(u, "counter %llu after %llu (worker %s, before %s)",
                             (unsigned long long) counter, (unsigned long long) u->counter, worker,
                             u->worker[0] ? u->worker : "-");
        else if (u->counter_known) {
                passed = true;
                moved = u->worker[0] && !streq(worker, u->worker);
                if (moved)
                        u->lg->stats.moves++; /* a live move: another worker, the same state */
        }
        u->counter = counter;
        u->counter_known = true;
        snprintf(u->worker, sizeof u->worker, "%s", worker);
        *ret_moved = moved;
        return passed;
}

/* An idle session's check, counted apart: the summary tells how stickiness held while the pool shrank
 * under the users it kept logged in. */
static void count_idle_check(VUser *u, unsigned status, bool passed, bool moved) {
        Stats *s = &u->lg->stats;

        s->idle_checks++;
        if (status == 404)
                s->idle_lost += body_has(u, "unknown user");
        if (!passed)
                return;
        s->idle_checks_ok++;
        s->idle_checks_shrunk += u->lg->shrunk;
        s->idle_moves += moved;
}

static void on_state_answer(VUser *u, unsigned status, usec_t now) {
        char worker[VUSER_WORKER_MAX];
        bool passed = false, moved = false;
        uint64_t counter;

        if (status == 200) {
                if (state_reply_parse(u->body, u->body_len, &counter, worker, sizeof worker) < 0) {
                        count_error(u, ERROR_PROTOCOL);
                        u->counter_known = false;
                } else
                        passed = check_counter(u, counter, worker, &moved);
        }
        if (u->idle_check)
                count_idle_check(u, status, passed, moved);
        if (status == 200)
                return next_step(u, now, think(u));
        if (status == 404) {
                /* "unknown user": routed to a worker that never had us or lost us (it died and the
                 * commander placed us again); anything else: the commander forwarded no user at all */
                if (body_has(u, "unknown user"))
                        u->lg->stats.lost++;
                else
                        sticky_error(u, "answered as a guest (the commander did not forward the user)");
                u->phase = PHASE_LOGIN;
                u->counter_known = false;
                return next_step(u, now, think(u));
        }
        count_error(u, status_error(status));
        u->counter_known = false;
        next_step(u, now, status >= 500 ? retry_delay(u) : think(u));
}

static void on_answer(VUser *u, usec_t now) {
        unsigned status = u->parser.status_code;
        bool keep = http_should_keep_alive(&u->parser);
        usec_t latency = now - u->sent_at;
        Loadgen *lg = u->lg;

        lg->stats.requests++;
        histogram_add(&lg->stats.latency, latency);
        histogram_add(&lg->second, latency);
        u->in_flight = false;
        u->conn_requests++;
        if (!keep)
                conn_close(u);

        switch (u->request) {
        case REQUEST_LOGIN:
                return on_login_answer(u, status, now);
        case REQUEST_STATE:
                return on_state_answer(u, status, now);
        case REQUEST_WORK:
                if (status != 200)
                        count_error(u, status_error(status));
                return next_step(u, now, status >= 500 ? retry_delay(u) : think(u));
        default:
                if (status == 200)
                        lg->stats.logouts++;
                else
                        count_error(u, status_error(status));
                return go_idle(u);
        }
}

/* ---- http-parser callbacks: keep the ep_user cookie and a bounded prefix of the body */

static void apply_set_cookie(VUser *u) {
        const char *v = u->set_cookie, *end;
        size_t n;

        if (u->set_cookie_len < strlen(COOKIE_NAME) || strncmp(v, COOKIE_NAME, strlen(COOKIE_NAME)) != 0)
                return;
        u->set_cookie_seen = true;
        end = memchr(v, ';', u->set_cookie_len);
        n = end ? (size_t) (end - v) : u->set_cookie_len;
        while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
                n--;
        if (u->set_cookie_overflow && !end) {
                u->cookie[0] = 0; /* a truncated cookie would be a forged one */
                return;
        }
        if (n == strlen(COOKIE_NAME)) {
                u->cookie[0] = 0; /* "ep_user=; Max-Age=0": logged out */
                return;
        }
        memcpy(u->cookie, v, n);
        u->cookie[n] = 0;
}

static void header_done(VUser *u) {
        if (u->header_is_cookie)
                apply_set_cookie(u);
        u->header_is_cookie = u->header_in_value = false;
        u->header_name_len = 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len) {
        VUser *u = p->data;

        if (u->header_in_value)
                header_done(u);
        /* a name longer than the buffer is no name we look for: keep its length, not its bytes */
        if (u->header_name_len + len <= sizeof u->header_name)
                memcpy(u->header_name + u->header_name_len, at, len);
        u->header_name_len += len;
        return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len) {
        VUser *u = p->data;
        size_t room;

        if (!u->header_in_value) {
                u->header_in_value = true;
                u->header_is_cookie = u->header_name_len == strlen("Set-Cookie") &&
                                      strncasecmp(u->header_name, "Set-Cookie", strlen("Set-Cookie")) == 0;
                u->set_cookie_len = 0;
                u->set_cookie_overflow = false;
        }
        if (!u->header_is_cookie)
                return 0;
        room = sizeof u->set_cookie - 1 - u->set_cookie_len;
        if (len > room)
                u->set_cookie_overflow = true;
        memcpy(u->set_cookie + u->set_cookie_len, at, MIN(len, room));
        u->set_cookie_len += MIN(len, room);
        return 0;
}

static int on_headers_complete(http_parser *p) {
        VUser *u = p->data;

        if (u->header_in_value)
                header_done(u);
        return 0;
}

static int on_body(http_parser *p, const char *at, size_t len) {
        VUser *u = p->data;
        size_t take = MIN(len, sizeof u->body - u->body_len);

        memcpy(u->body + u->body_len, at, take);
        u->body_len += take;
        return 0;
}

static int on_message_complete(http_parser *p) {
        VUser *u = p->data;

        u->complete = true;
        /* one answer per request: anything after it is not ours to parse now */
        http_parser_pause(p, 1);
        return 0;
}

void loadgen_parser_settings(http_parser_settings *s) {
        *s = (http_parser_settings){
                .on_header_field = on_header_field,
                .on_header_value = on_header_value,
                .on_headers_complete = on_headers_complete,
                .on_body = on_body,
                .on_message_complete = on_message_complete,
        };
}

/* ---- I/O */

/* Feeds bytes to the parser; 1 when the answer is complete, 0 when more is needed, -EBADMSG. */
static int feed(VUser *u, const char *data, size_t n) {
        size_t k;

        u->got_bytes = true;
        k = http_parser_execute(&u->parser, &u->lg->parser_settings, data, n);
        if (u->complete)
                return k == n ? 1 : -EBADMSG; /* bytes past the answer: nothing was asked for them */
        return HTTP_PARSER_ERRNO(&u->parser) == HPE_OK && k == n ? 0 : -EBADMSG;
}

static void on_eof(VUser *u, usec_t now) {
        if (u->in_flight && u->got_bytes) {
                /* a body delimited by the close completes only now */
                (void) http_parser_execute(&u->parser, &u->lg->parser_settings, NULL, 0);
                if (u->complete) {
                        conn_close(u);
                        return on_answer(u, now);
                }
        }
        connection_lost(u, now);
}

static void read_all(VUser *u, usec_t now) {
        Loadgen *lg = u->lg;
        int fd = u->fd;

        while (u->fd == fd && u->conn == CONN_OPEN) {
                ssize_t n = recv(fd, lg->read_buf, sizeof lg->read_buf, 0);
                int r;

                if (n == 0)
                        return on_eof(u, now);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                connection_lost(u, now);
                        return;
                }
                if (!u->in_flight) {
                        conn_close(u); /* unasked bytes on an idle connection: start afresh */
                        return;
                }
                r = feed(u, lg->read_buf, (size_t) n);
                if (r < 0)
                        return request_failed(u, ERROR_PROTOCOL, now);
                if (r > 0)
                        on_answer(u, now);
        }
}

static bool finish_connect(VUser *u, usec_t now) {
        int error = 0;
        socklen_t l = sizeof error;

        if (getsockopt(u->fd, SOL_SOCKET, SO_ERROR, &error, &l) < 0)
                error = errno;
        if (error != 0) {
                request_failed(u, ERROR_CONNECT, now);
                return false;
        }
        u->conn = CONN_OPEN;
        return true;
}

void vuser_on_io(VUser *u, uint32_t events, usec_t now) {
        if (u->conn == CONN_CONNECTING) {
                if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
                        return;
                if (!finish_connect(u, now))
                        return;
        }
        if (u->conn == CONN_OPEN && u->in_flight && u->out_off < u->out_len)
                flush(u, now);
        if (u->conn == CONN_OPEN && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
                read_all(u, now);
}

void vuser_on_timer(VUser *u, usec_t now) {
        if (u->in_flight)
                return request_failed(u, ERROR_TIMEOUT, now);
        if (u->phase != PHASE_IDLE)
                request_begin(u, pick_request(u), now, false);
}

/* ---- the controller's side */

void vuser_start(VUser *u, usec_t now) {
        Loadgen *lg = u->lg;

        (void) snprintf(u->name, sizeof u->name, "%s%llu", lg->opt->user_prefix,
                        (unsigned long long) ++lg->serial);
        u->phase = PHASE_LOGIN;
        u->fresh = true;
        u->retiring = u->away = u->last_check_sent = false;
        u->cookie[0] = 0;
        u->counter_known = false;
        u->worker[0] = 0;
        request_begin(u, REQUEST_LOGIN, now, false);
}

void vuser_retire(VUser *u, usec_t now) {
        if (u->phase == PHASE_IDLE || u->retiring || u->phase == PHASE_LOGOUT)
                return;
        u->retiring = true;
        if (!u->in_flight)
                next_step(u, now, 0);
}

void vuser_leave(VUser *u, usec_t now) {
        if (u->phase == PHASE_IDLE || u->retiring || u->phase == PHASE_LOGOUT || u->away)
                return;
        u->away = true;
        /* a thinking user would send its next request when its think time ends: an idle session waits
         * for its first check instead (one logging in again keeps its retry time) */
        if (!u->in_flight && u->phase == PHASE_ACTIVE)
                schedule(u, now + think(u));
}
