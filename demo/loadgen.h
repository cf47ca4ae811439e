/* SPDX-License-Identifier: MIT */
#pragma once

/* elastic-pool-loadgen's shared state: the options, the loop (Loadgen) and the virtual users (VUser).
 * One thread, one epoll loop; every user owns one keep-alive connection and one timer node. Nothing
 * on the request path allocates: a user's buffers live in its VUser, reads go through the loop's one
 * read buffer. */

#include <errno.h>
#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "loadgen-heap.h"
#include "loadgen-parse.h"
#include "loadgen-profile.h"
#include "loadgen-stats.h"
#include "time-util.h"

#define PROGRAM "elastic-pool-loadgen"

/* Sizes of a user's fixed buffers. A cookie is "ep_user=" + user + expiry + signature (~80 bytes);
 * the only body we look at is /state's JSON (~60 bytes); everything else is counted and dropped. */
#define VUSER_NAME_MAX   48
#define VUSER_COOKIE_MAX 320
#define VUSER_BODY_MAX   256
#define VUSER_OUT_MAX    1024
#define VUSER_WORKER_MAX 16

typedef struct Options {
        const char *url;
        char host[256]; /* for getaddrinfo() */
        char port[8];
        char authority[300]; /* the Host header: the URL's host[:port] as written */
        Profile profile;
        usec_t think;
        unsigned mix_state, mix_work; /* weights of /state and /work in a user's loop */
        unsigned cpu_ms, alloc_kb, sleep_ms;
        usec_t timeout;
        uint64_t max_errors, max_sticky_errors, max_lost;
        const char *status_path;
        const char *summary_path;
        usec_t linger;
        bool keep_sessions; /* users that leave stay logged in, idle, until the run closes */
        usec_t idle_check;  /* mean pause between an idle session's /state checks */
        const char *user_prefix;
        uint64_t seed;
        unsigned width;
        bool quiet;
} Options;

typedef enum VUserPhase {
        PHASE_IDLE,   /* not part of the load right now */
        PHASE_LOGIN,  /* logging in (again, after its state was lost) */
        PHASE_ACTIVE, /* logged in: loops over /state and /work */
        PHASE_LOGOUT, /* its last request */
        _PHASE_MAX,
        _PHASE_INVALID = -EINVAL,
} VUserPhase;

typedef enum RequestKind {
        REQUEST_LOGIN,
        REQUEST_STATE,
        REQUEST_WORK,
        REQUEST_LOGOUT,
        _REQUEST_KIND_MAX,
        _REQUEST_KIND_INVALID = -EINVAL,
} RequestKind;

typedef enum ConnState {
        CONN_CLOSED,
        CONN_CONNECTING,
        CONN_OPEN,
} ConnState;

typedef struct Loadgen Loadgen;

typedef struct VUser {
        Loadgen *lg;
        TimerNode timer; /* think end, or the deadline of the request in flight */
        unsigned slot;
        char name[VUSER_NAME_MAX];
        VUserPhase phase;
        bool retiring; /* log out once the request in flight is answered */
        bool fresh;    /* logged in under a name never used before: its counter starts at 0 */
        bool away;     /* --keep-sessions: left the load, stays logged in; one /state per idle check */
        bool last_check_sent; /* away and retiring: the /state before the logout is sent */

        int fd;
        ConnState conn;
        unsigned conn_requests; /* answered on this connection: a reused one may have been closed idle */
        bool retried;           /* the request in flight is already the retry of a stale connection */

        RequestKind request;
        bool in_flight;
        bool idle_check; /* the request is an idle session's /state: counted apart */
        usec_t sent_at;
        char out[VUSER_OUT_MAX];
        size_t out_len, out_off;

        http_parser parser;
        bool got_bytes, complete, header_is_cookie, header_in_value;
        char header_name[16];
        size_t header_name_len;
        char set_cookie[VUSER_COOKIE_MAX]; /* a Set-Cookie value being read */
        size_t set_cookie_len;
        bool set_cookie_seen, set_cookie_overflow;
        char body[VUSER_BODY_MAX];
        size_t body_len;

        char cookie[VUSER_COOKIE_MAX]; /* "ep_user=...", sent back on every request; "" when none */
        uint64_t counter;              /* the last /state counter */
        bool counter_known;
        char worker[VUSER_WORKER_MAX]; /* the worker that answered the last /state */
} VUser;

struct Loadgen {
        const Options *opt;
        int epoll_fd, signal_fd;
        struct sockaddr_storage addr;
        socklen_t addr_len;
        http_parser_settings parser_settings;

        VUser *users;
        unsigned n_users;
        uint64_t serial; /* names u1, u2, ... : every activation logs in a user never seen before */
        TimerHeap timers;
        Rng rng;
        char work_target[128];

        usec_t start, ended_at, drain_deadline, next_control, next_report;
        unsigned target;
        unsigned signals;
        bool ended;   /* the profile is over (or interrupted): users leave */
        bool closing; /* every user logs out: with the end, or with --keep-sessions after lingering */
        bool drained; /* every user is idle again */

        Stats stats;
        Histogram second; /* latencies of the current report interval */
        uint64_t prev_requests, sticky_messages;

        char read_buf[64 * 1024];

        /* the commander's view, from --status */
        char *status_buf;
        size_t status_cap;
        PoolStatus status;
        bool have_status, have_baseline;
        unsigned baseline_workers, max_workers_seen;
        bool shrunk; /* fewer routable workers now than at the peak */
};

/* loadgen-options.c: the command line. */
/* The defaults: 50 users on a 60 s ramp against http://127.0.0.1:8080, and so on (see --help). */
void options_init(Options *o);
/* Parses argv over the defaults in o. 1: run, 0: exit successfully (--help, --version printed),
 * -EINVAL: a usage error (reported on stderr, naming the option and the bad value), -ENOMEM. */
int options_parse_argv(int argc, char *argv[], Options *o);

/* loadgen-vuser.c: one virtual user's life. */
void vuser_init(VUser *u, Loadgen *lg, unsigned slot);
/* Logs a new user in (an idle slot joins the load). */
void vuser_start(VUser *u, usec_t now);
/* Asks the user to leave: it logs out after the request in flight, at once when thinking; one that is
 * away checks /state a last time first. */
void vuser_retire(VUser *u, usec_t now);
/* Asks the user to leave but stay logged in (--keep-sessions): it stops working and, from the end of
 * the request in flight, sends one /state per idle check until it is retired. */
void vuser_leave(VUser *u, usec_t now);
/* Closes the connection and forgets the user without logging out (hard stop). */
void vuser_abort(VUser *u);
void vuser_on_timer(VUser *u, usec_t now);
void vuser_on_io(VUser *u, uint32_t events, usec_t now);
/* True for a user that counts as live (logging in or logged in, not leaving, not away). */
bool vuser_is_live(const VUser *u);
/* True for a user that left the load but is still logged in (or logging in again after a lost state). */
bool vuser_is_away(const VUser *u);
/* True for a user logged in now: its login answered, with a cookie, and no logout sent. */
bool vuser_is_logged_in(const VUser *u);

const char *request_kind_to_string(RequestKind k);
/* The http-parser callbacks of every user's response parser. */
void loadgen_parser_settings(http_parser_settings *s);

/* loadgen-report.c: the line once a second and the summary at the end. */
typedef struct ReportLine {
        usec_t elapsed;
        unsigned live, target;
        bool show_away; /* --keep-sessions: the idle sessions follow the users */
        unsigned away;
        double rps;
        usec_t p99; /* of the answers in the last interval; USEC_INFINITY when there were none */
        uint64_t errors, sticky_errors;
} ReportLine;

/* Formats one report line (no newline) in at most `width` columns (the worker part is compressed
 * step by step to fit). With show_pool, the pool follows: status, or "no status" when it is NULL (the
 * file could not be read). Returns buf. */
char *report_format_line(char *buf, size_t size, unsigned width, const ReportLine *line, bool show_pool,
                         const PoolStatus *status);
/* Writes the summary (several lines, the first starting with "summary:"). */
void report_write_summary(FILE *f, const Stats *s, usec_t elapsed, const Loadgen *lg);
/* "850us", "4.1ms", "123ms", "1.25s" into buf (at least 16 bytes); returns buf. */
char *format_latency(char *buf, size_t size, usec_t v);
