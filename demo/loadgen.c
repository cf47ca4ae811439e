/* SPDX-License-Identifier: MIT */
/* elastic-pool-loadgen: virtual users that log in through the commander's front end, stay sticky,
 * loop over /state and /work of the demo worker, and log out, their number ramped up and down over a
 * run; with --keep-sessions those that leave stay logged in, idle, while the pool shrinks under them.
 * Once a second it prints the load it makes and, from the commander's status.json, the pool that
 * answers it; at the end a summary. Its exit status says whether errors stayed within bounds, so tests
 * can run it. */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cleanup.h"
#include "loadgen.h"
#include "macro.h"

#define EXIT_USAGE            2
#define CONTROL_INTERVAL_USEC (100 * USEC_PER_MSEC)
#define REPORT_INTERVAL_USEC  USEC_PER_SEC
#define EVENTS_MAX            256
#define STATUS_SIZE_MAX       (16u << 20)

/* ---- setup */

static int resolve(Loadgen *lg) {
        const Options *o = lg->opt;
        struct addrinfo hints = {.ai_flags = AI_NUMERICSERV, .ai_socktype = SOCK_STREAM}, *ai = NULL;
        int r;

        r = getaddrinfo(o->host, o->port, &hints, &ai);
        if (r != 0) {
                fprintf(stderr, "%s: cannot resolve '%s': %s\n", PROGRAM, o->host, gai_strerror(r));
                return -EADDRNOTAVAIL;
        }
        memcpy(&lg->addr, ai->ai_addr, ai->ai_addrlen);
        lg->addr_len = ai->ai_addrlen;
        freeaddrinfo(ai);
        return 0;
}

/* One socket per user plus a few of our own: raise the soft limit when the users need it. */
static void raise_fd_limit(unsigned users) {
        struct rlimit rl;
        rlim_t want = (rlim_t) users + 64;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
                return;
        rl.rlim_cur = MIN(want, rl.rlim_max);
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < want)
                fprintf(stderr, "%s: warning: %u users need %llu file descriptors, the limit is %llu\n",
                        PROGRAM, users, (unsigned long long) want, (unsigned long long) rl.rlim_cur);
}

static int setup_signals(Loadgen *lg) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &lg->signal_fd};
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        lg->signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
        if (lg->signal_fd < 0)
                return -errno;
        return RET_NERRNO(epoll_ctl(lg->epoll_fd, EPOLL_CTL_ADD, lg->signal_fd, &ev));
}

static int loadgen_init(Loadgen *lg, const Options *o) {
        int n, r;

        lg->opt = o;
        lg->epoll_fd = lg->signal_fd = -EBADF;
        r = resolve(lg);
        if (r < 0)
                return r;
        n = snprintf(lg->work_target, sizeof lg->work_target, "/work?cpu_ms=%u", o->cpu_ms);
        if (o->alloc_kb > 0)
                n += snprintf(lg->work_target + n, sizeof lg->work_target - (size_t) n, "&alloc_kb=%u",
                              o->alloc_kb);
        if (o->sleep_ms > 0)
                (void) snprintf(lg->work_target + n, sizeof lg->work_target - (size_t) n, "&sleep_ms=%u",
                                o->sleep_ms);
        loadgen_parser_settings(&lg->parser_settings);
        rng_seed(&lg->rng, o->seed ? o->seed : now_usec(CLOCK_REALTIME) ^ ((uint64_t) getpid() << 32));

        lg->n_users = o->profile.users;
        lg->users = calloc(lg->n_users, sizeof *lg->users);
        if (!lg->users)
                return -ENOMEM;
        for (unsigned i = 0; i < lg->n_users; i++)
                vuser_init(&lg->users[i], lg, i);
        r = timer_heap_init(&lg->timers, lg->n_users);
        if (r < 0)
                return r;
        raise_fd_limit(lg->n_users);
        lg->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        if (lg->epoll_fd < 0)
                return -errno;
        return setup_signals(lg);
}

static void loadgen_done(Loadgen *lg) {
        for (unsigned i = 0; lg->users && i < lg->n_users; i++)
                vuser_abort(&lg->users[i]);
        free(lg->users);
        timer_heap_done(&lg->timers);
        free(lg->status_buf);
        safe_close(lg->signal_fd);
        safe_close(lg->epoll_fd);
}

/* ---- the commander's status.json */

static int read_file(Loadgen *lg, const char *path, size_t *ret_len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        size_t len = 0;

        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t k;

                if (len == lg->status_cap) {
                        size_t cap = lg->status_cap ? lg->status_cap * 2 : 16384;
                        char *p;

                        if (cap > STATUS_SIZE_MAX)
                                return -EFBIG;
                        p = realloc(lg->status_buf, cap);
                        if (!p)
                                return -ENOMEM;
                        lg->status_buf = p;
                        lg->status_cap = cap;
                }
                k = read(fd, lg->status_buf + len, lg->status_cap - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                len += (size_t) k;
        }
        *ret_len = len;
        return 0;
}

/* The commander replaces the file by rename(), so a read sees one whole document or the older one. */
static void status_refresh(Loadgen *lg) {
        PoolStatus st;
        size_t len = 0;

        lg->have_status = false;
        if (!lg->opt->status_path || read_file(lg, lg->opt->status_path, &len) < 0)
                return;
        if (pool_status_parse(lg->status_buf, len, &st) < 0)
                return;
        lg->status = st;
        lg->have_status = true;
        lg->max_workers_seen = MAX(lg->max_workers_seen, st.n_routable);
        lg->shrunk = st.n_routable < lg->max_workers_seen;
        if (!lg->have_baseline) {
                lg->baseline_workers = MAX(st.n_workers, 1u);
                lg->have_baseline = true;
        }
}

/* ---- the controller: users follow the profile */

static unsigned live_users(const Loadgen *lg) {
        unsigned n = 0;

        for (unsigned i = 0; i < lg->n_users; i++)
                n += vuser_is_live(&lg->users[i]);
        return n;
}

static unsigned away_users(const Loadgen *lg) {
        unsigned n = 0;

        for (unsigned i = 0; i < lg->n_users; i++)
                n += vuser_is_away(&lg->users[i]);
        return n;
}

static unsigned busy_users(const Loadgen *lg) {
        unsigned n = 0;

        for (unsigned i = 0; i < lg->n_users; i++)
                n += lg->users[i].phase != PHASE_IDLE;
        return n;
}

/* Drops every user at once, logged in or not (the hard stop). */
static void abandon_all(Loadgen *lg, usec_t now) {
        lg->stats.abandoned += busy_users(lg);
        for (unsigned i = 0; i < lg->n_users; i++)
                vuser_abort(&lg->users[i]);
        lg->drained = true;
        lg->ended_at = now;
}

/* Every user logs out now. */
static void begin_closing(Loadgen *lg, usec_t now) {
        if (lg->closing)
                return;
        lg->closing = true;
        /* the sessions that lasted: users that left and are logged in still (not ones that never got in) */
        for (unsigned i = 0; lg->opt->keep_sessions && i < lg->n_users; i++)
                lg->stats.kept += vuser_is_away(&lg->users[i]) && vuser_is_logged_in(&lg->users[i]);
        /* the last requests and the logouts get one timeout to finish; an idle session's request in
         * flight, its last check and its logout get one each */
        lg->drain_deadline = now + (lg->opt->keep_sessions ? 3 : 1) * lg->opt->timeout + USEC_PER_SEC;
}

/* The load is over: users leave, and log out unless their sessions are kept through the linger. */
static void end_load(Loadgen *lg, usec_t now) {
        if (lg->ended)
                return;
        lg->ended = true;
        lg->ended_at = now;
        if (!lg->opt->keep_sessions)
                begin_closing(lg, now);
}

/* A user the profile no longer wants: with --keep-sessions it stays logged in until the close. */
static void drop_user(Loadgen *lg, VUser *u, usec_t now) {
        if (lg->opt->keep_sessions && !lg->closing)
                vuser_leave(u, now);
        else
                vuser_retire(u, now);
}

static void control(Loadgen *lg, usec_t now) {
        usec_t elapsed = now - lg->start;
        unsigned live = live_users(lg);

        if (elapsed >= lg->opt->profile.duration)
                end_load(lg, now);
        lg->target = lg->ended ? 0 : profile_users_at(&lg->opt->profile, elapsed);
        /* the oldest users stay longest: start from the bottom, retire from the top */
        for (unsigned i = 0; live < lg->target && i < lg->n_users; i++)
                if (lg->users[i].phase == PHASE_IDLE) {
                        vuser_start(&lg->users[i], now);
                        live++;
                }
        for (unsigned i = lg->n_users; live > lg->target && i > 0; i--)
                if (vuser_is_live(&lg->users[i - 1])) {
                        drop_user(lg, &lg->users[i - 1], now);
                        live--;
                }
        /* the idle sessions log out too (each after a last check); a no-op for those already leaving */
        for (unsigned i = 0; lg->closing && lg->opt->keep_sessions && i < lg->n_users; i++)
                vuser_retire(&lg->users[i], now);
        if (lg->closing && !lg->drained && busy_users(lg) == 0) {
                lg->drained = true;
                lg->ended_at = now;
        }
}

/* ---- the line once a second */

static void report(Loadgen *lg, usec_t now, usec_t interval) {
        char line[1024];
        ReportLine l = {
                .elapsed = now - lg->start,
                .live = live_users(lg),
                .target = lg->target,
                .show_away = lg->opt->keep_sessions,
                .away = away_users(lg),
                .rps = (double) (lg->stats.requests - lg->prev_requests) * USEC_PER_SEC /
                       (double) MAX(interval, 1u),
                .p99 = lg->second.count > 0 ? histogram_quantile(&lg->second, 0.99) : USEC_INFINITY,
                .errors = stats_errors_total(&lg->stats),
                .sticky_errors = lg->stats.sticky_errors,
        };

        status_refresh(lg);
        lg->prev_requests = lg->stats.requests;
        histogram_reset(&lg->second);
        if (lg->opt->quiet)
                return;
        report_format_line(line, sizeof line, lg->opt->width, &l, lg->opt->status_path != NULL,
                           lg->have_status ? &lg->status : NULL);
        puts(line);
        fflush(stdout);
}

/* ---- the loop */

static void on_signal(Loadgen *lg, usec_t now) {
        struct signalfd_siginfo si;

        while (read(lg->signal_fd, &si, sizeof si) == (ssize_t) sizeof si) {
                if (++lg->signals == 1) {
                        fprintf(stderr, "%s: %s: logging every user out (again to stop at once)\n", PROGRAM,
                                strsignal((int) si.ssi_signo));
                        end_load(lg, now);
                        begin_closing(lg, now);
                        continue;
                }
                abandon_all(lg, now);
        }
}

static void run_timers(Loadgen *lg, usec_t now) {
        TimerNode *t;

        while ((t = timer_heap_peek(&lg->timers)) && t->when <= now) {
                VUser *u = (VUser *) ((char *) t - offsetof(VUser, timer));

                timer_heap_cancel(&lg->timers, t);
                vuser_on_timer(u, now);
        }
}

static bool linger_is_over(const Loadgen *lg, usec_t now) {
        return profile_linger_is_over(lg->opt->linger, lg->ended_at, now, lg->have_status,
                                      lg->status.n_workers, lg->baseline_workers);
}

/* True once the run is over: every user is gone (or the drain deadline passed) and, with --linger,
 * the pool is back to its size at the start or the linger time is up. With --keep-sessions the users
 * linger logged in, and log out only then. */
static bool finished(Loadgen *lg, usec_t now) {
        if (!lg->ended)
                return false;
        if (!lg->closing) {
                if (linger_is_over(lg, now))
                        begin_closing(lg, now);
                return false;
        }
        if (!lg->drained) {
                if (now < lg->drain_deadline)
                        return false;
                fprintf(stderr, "%s: %u users still busy at the drain deadline, dropping them\n", PROGRAM,
                        busy_users(lg));
                abandon_all(lg, now);
        }
        /* kept sessions lingered before they closed */
        if (lg->signals > 0 || lg->opt->keep_sessions)
                return true;
        return linger_is_over(lg, now);
}

static int wait_timeout_ms(const Loadgen *lg, usec_t now) {
        TimerNode *t = timer_heap_peek(&lg->timers);
        usec_t next = MIN(lg->next_control, lg->next_report);

        if (t)
                next = MIN(next, t->when);
        if (next <= now)
                return 0;
        return (int) MIN((next - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC, (usec_t) INT_MAX);
}

static void dispatch(Loadgen *lg, int timeout_ms) {
        struct epoll_event events[EVENTS_MAX];
        int n;

        n = epoll_wait(lg->epoll_fd, events, EVENTS_MAX, timeout_ms);
        for (int i = 0; i < n; i++) {
                usec_t now = now_usec(CLOCK_MONOTONIC);

                if (events[i].data.ptr == &lg->signal_fd)
                        on_signal(lg, now);
                else
                        vuser_on_io(events[i].data.ptr, events[i].events, now);
        }
}

static int run(Loadgen *lg) {
        usec_t now = now_usec(CLOCK_MONOTONIC), last_report;

        lg->start = last_report = now;
        lg->next_control = now;
        lg->next_report = now + REPORT_INTERVAL_USEC;
        status_refresh(lg);
        for (;;) {
                now = now_usec(CLOCK_MONOTONIC);
                if (now >= lg->next_control) {
                        control(lg, now);
                        lg->next_control = MAX(lg->next_control + CONTROL_INTERVAL_USEC, now + 1);
                }
                if (now >= lg->next_report) {
                        report(lg, now, now - last_report);
                        last_report = now;
                        lg->next_report = MAX(lg->next_report + REPORT_INTERVAL_USEC, now + 1);
                }
                if (finished(lg, now))
                        return 0;
                run_timers(lg, now);
                dispatch(lg, wait_timeout_ms(lg, now_usec(CLOCK_MONOTONIC)));
        }
}

static int write_summary(Loadgen *lg, usec_t elapsed) {
        _cleanup_fclose_ FILE *f = NULL;

        if (!lg->opt->summary_path) {
                report_write_summary(stdout, &lg->stats, elapsed, lg);
                return 0;
        }
        f = fopen(lg->opt->summary_path, "we");
        if (!f)
                return -errno;
        report_write_summary(f, &lg->stats, elapsed, lg);
        return ferror(f) ? -EIO : 0;
}

static int verdict(const Loadgen *lg) {
        uint64_t errors = stats_errors_total(&lg->stats);
        int rc = EXIT_SUCCESS;

        if (errors > lg->opt->max_errors) {
                fprintf(stderr, "%s: %llu errors, more than --max-errors=%llu\n", PROGRAM,
                        (unsigned long long) errors, (unsigned long long) lg->opt->max_errors);
                rc = EXIT_FAILURE;
        }
        if (lg->stats.sticky_errors > lg->opt->max_sticky_errors) {
                fprintf(stderr, "%s: %llu sticky errors, more than --max-sticky-errors=%llu\n", PROGRAM,
                        (unsigned long long) lg->stats.sticky_errors,
                        (unsigned long long) lg->opt->max_sticky_errors);
                rc = EXIT_FAILURE;
        }
        if (lg->stats.lost > lg->opt->max_lost) {
                fprintf(stderr, "%s: %llu users lost their state, more than --max-lost=%llu\n", PROGRAM,
                        (unsigned long long) lg->stats.lost, (unsigned long long) lg->opt->max_lost);
                rc = EXIT_FAILURE;
        }
        return rc;
}

int main(int argc, char *argv[]) {
        Options o;
        Loadgen *lg;
        int r;

        options_init(&o);
        r = options_parse_argv(argc, argv, &o);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        (void) signal(SIGPIPE, SIG_IGN);

        /* the loop's state holds a 64 KiB read buffer: on the heap, not the stack */
        lg = calloc(1, sizeof *lg);
        if (!lg) {
                fprintf(stderr, "%s: out of memory\n", PROGRAM);
                return EXIT_FAILURE;
        }
        r = loadgen_init(lg, &o);
        if (r < 0) {
                if (r != -EADDRNOTAVAIL)
                        fprintf(stderr, "%s: failed to set up: %s\n", PROGRAM, strerror(-r));
                loadgen_done(lg);
                free(lg);
                return EXIT_FAILURE;
        }
        if (!o.quiet) {
                printf("%s: %u users (%s over %llus), think %llums, mix state:work %u:%u, /work cpu_ms=%u "
                       "-> %s\n",
                       PROGRAM, o.profile.users, profile_kind_to_string(o.profile.kind),
                       (unsigned long long) (o.profile.duration / USEC_PER_SEC),
                       (unsigned long long) (o.think / USEC_PER_MSEC), o.mix_state, o.mix_work, o.cpu_ms,
                       o.url);
                if (o.keep_sessions)
                        printf("%s: sessions kept: users that leave stay logged in, one /state every ~%gs, "
                               "until the run closes\n",
                               PROGRAM, (double) o.idle_check / USEC_PER_SEC);
        }
        r = run(lg);
        r = write_summary(lg, now_usec(CLOCK_MONOTONIC) - lg->start);
        if (r < 0)
                fprintf(stderr, "%s: failed to write the summary to %s: %s\n", PROGRAM, o.summary_path,
                        strerror(-r));
        r = r < 0 ? EXIT_FAILURE : verdict(lg);
        loadgen_done(lg);
        free(lg);
        return r;
}
