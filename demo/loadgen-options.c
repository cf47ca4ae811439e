/* SPDX-License-Identifier: MIT */
/* elastic-pool-loadgen's command line: the defaults, --help, and the options checked one by one, each
 * bad value reported with the option's name and what it takes. Apart from loadgen.c so that the unit
 * tests link it. */

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "loadgen.h"
#include "macro.h"
#include "parse-util.h"

#define USERS_MAX  100000
#define PREFIX_MAX 24
/* An idle session checks at least this often: sparse, but still a session that is used */
#define IDLE_CHECK_MAX_USEC (600 * USEC_PER_SEC)

static void help(void) {
        printf("Usage: %s [OPTIONS]\n\n"
               "Virtual users against elastic-pool's front end and the demo worker: each logs in\n"
               "(/login?user=uN), sends its sticky cookie back, loops over /state and /work with think\n"
               "times, checks that /state's counter rises by exactly one per call (stickiness), and logs\n"
               "out. One line a second; a summary at the end.\n\n"
               "  --url URL              the front end (default http://127.0.0.1:8080)\n"
               "  --users N              peak number of users logged in at once (default 50)\n"
               "  --profile ramp|constant  ramp: 0 -> N over the first third of the run, hold, back to 0\n"
               "                         over the last third; constant: N all along (default ramp)\n"
               "  --duration DURATION    length of the run (default 60s)\n"
               "  --think DURATION       mean pause between a user's requests, spread over 0.5x..1.5x\n"
               "                         (default 100ms)\n"
               "  --mix STATE:WORK       weights of /state and /work in a user's loop (default 1:1)\n"
               "  --cpu-ms N             CPU each /work burns on the worker (default 10)\n"
               "  --alloc-kb N           memory each /work holds while it runs (default 0)\n"
               "  --sleep-ms N           time each /work sleeps (default 0)\n"
               "  --timeout DURATION     a request not answered by then is an error (default 10s)\n"
               "  --status PATH          the commander's status.json: show the pool on every line\n"
               "  --linger DURATION      after the last user left, keep reporting up to this long, until\n"
               "                         the pool is back to its size at the start (needs --status)\n"
               "  --keep-sessions        users that leave (the ramp-down, the end of the run) stop working\n"
               "                         but stay logged in: idle sessions, each sending one /state every\n"
               "                         --idle-check, through --linger; then each checks /state a last\n"
               "                         time and logs out\n"
               "  --idle-check DURATION  mean pause between an idle session's /state checks, spread over\n"
               "                         0.5x..1.5x (default 5s; needs --keep-sessions)\n"
               "  --max-errors N         exit 1 when more requests than this fail (default 0)\n"
               "  --max-sticky-errors N  exit 1 when more stickiness checks than this fail (default 0)\n"
               "  --max-lost N           exit 1 when more users than this lose their state (default: any\n"
               "                         number; a worker that dies takes its users' state along)\n"
               "  --summary-file PATH    write the summary there instead of stdout\n"
               "  --user-prefix P        user names are P1, P2, ... (default u)\n"
               "  --seed N               seed of the think times and the mix (default: from the clock)\n"
               "  --width N              columns of a report line (default 160)\n"
               "  --quiet                no report lines, only the summary\n"
               "  -h --help              show this help\n"
               "     --version           show the version\n\n"
               "Errors are failed requests: connection refused or reset, timeouts, 4xx and 5xx answers\n"
               "the load did not ask for. A sticky error is a /state counter that jumped or restarted. A\n"
               "lost state (the worker answered \"unknown user\", as after it died) is counted apart and\n"
               "the user logs in again. An idle session's check counts the same: its counter must rise by\n"
               "exactly one across every move of the user to another worker. Ctrl-C logs every user out\n"
               "and prints the summary; a second one stops at once.\n\n"
               "Exit status: 0 within bounds, 1 too many errors or a failure, 2 a usage error.\n",
               PROGRAM);
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

/* ---- option values */

/* "http://HOST[:PORT][/]", HOST a name, an IPv4 address or [IPv6]. */
static int parse_url(const char *url, Options *o) {
        const char *p = startswith(url, "http://"), *end, *colon;
        size_t n, hl;

        if (!p)
                return -EPROTONOSUPPORT;
        n = strcspn(p, "/?#");
        end = p + n;
        if (n == 0 || n >= sizeof o->authority || (*end && !streq(end, "/")))
                return -EINVAL;
        memcpy(o->authority, p, n);
        o->authority[n] = 0;
        if (o->authority[0] == '[') {
                const char *close = strchr(o->authority, ']');
                if (!close || (close[1] && close[1] != ':'))
                        return -EINVAL;
                hl = (size_t) (close - o->authority - 1);
                memcpy(o->host, o->authority + 1, hl);
                colon = close[1] ? close + 1 : NULL;
        } else {
                colon = strchr(o->authority, ':');
                hl = colon ? (size_t) (colon - o->authority) : n;
                memcpy(o->host, o->authority, hl);
        }
        o->host[hl] = 0;
        if (hl == 0)
                return -EINVAL;
        if (colon) {
                uint32_t port;
                if (parse_uint32(colon + 1, &port) < 0 || port < 1 || port > 65535)
                        return -EINVAL;
                snprintf(o->port, sizeof o->port, "%u", port);
        } else
                snprintf(o->port, sizeof o->port, "80");
        return 0;
}

static int parse_mix(const char *s, Options *o) {
        _cleanup_free_ char *copy = strdup(s);
        char *colon;
        uint32_t a, b;

        if (!copy)
                return -ENOMEM;
        colon = strchr(copy, ':');
        if (!colon)
                return -EINVAL;
        *colon = 0;
        if (parse_uint32(copy, &a) < 0 || parse_uint32(colon + 1, &b) < 0 || a > 1000 || b > 1000 ||
            a + b == 0)
                return -EINVAL;
        o->mix_state = a;
        o->mix_work = b;
        return 0;
}

static bool prefix_is_valid(const char *s) {
        size_t n = strlen(s);

        /* the demo worker's user names: [A-Za-z0-9._@-]{1,128}, digits appended */
        return n > 0 && n <= PREFIX_MAX &&
               strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._@-") == n;
}

static int parse_bounded(const char *s, uint64_t max, unsigned *ret) {
        uint64_t v;

        if (parse_uint64(s, &v) < 0 || v > max)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

int options_parse_argv(int argc, char *argv[], Options *o) {
        enum {
                ARG_URL = 0x100,
                ARG_USERS,
                ARG_PROFILE,
                ARG_DURATION,
                ARG_THINK,
                ARG_MIX,
                ARG_CPU_MS,
                ARG_ALLOC_KB,
                ARG_SLEEP_MS,
                ARG_TIMEOUT,
                ARG_STATUS,
                ARG_LINGER,
                ARG_KEEP_SESSIONS,
                ARG_IDLE_CHECK,
                ARG_MAX_ERRORS,
                ARG_MAX_STICKY,
                ARG_MAX_LOST,
                ARG_SUMMARY_FILE,
                ARG_USER_PREFIX,
                ARG_SEED,
                ARG_WIDTH,
                ARG_QUIET,
                ARG_VERSION,
        };
        static const struct option options[] = {
                {"url", required_argument, NULL, ARG_URL},
                {"users", required_argument, NULL, ARG_USERS},
                {"profile", required_argument, NULL, ARG_PROFILE},
                {"duration", required_argument, NULL, ARG_DURATION},
                {"think", required_argument, NULL, ARG_THINK},
                {"mix", required_argument, NULL, ARG_MIX},
                {"cpu-ms", required_argument, NULL, ARG_CPU_MS},
                {"alloc-kb", required_argument, NULL, ARG_ALLOC_KB},
                {"sleep-ms", required_argument, NULL, ARG_SLEEP_MS},
                {"timeout", required_argument, NULL, ARG_TIMEOUT},
                {"status", required_argument, NULL, ARG_STATUS},
                {"linger", required_argument, NULL, ARG_LINGER},
                {"keep-sessions", no_argument, NULL, ARG_KEEP_SESSIONS},
                {"idle-check", required_argument, NULL, ARG_IDLE_CHECK},
                {"max-errors", required_argument, NULL, ARG_MAX_ERRORS},
                {"max-sticky-errors", required_argument, NULL, ARG_MAX_STICKY},
                {"max-lost", required_argument, NULL, ARG_MAX_LOST},
                {"summary-file", required_argument, NULL, ARG_SUMMARY_FILE},
                {"user-prefix", required_argument, NULL, ARG_USER_PREFIX},
                {"seed", required_argument, NULL, ARG_SEED},
                {"width", required_argument, NULL, ARG_WIDTH},
                {"quiet", no_argument, NULL, ARG_QUIET},
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, ARG_VERSION},
                {},
        };
        bool idle_check_set = false;
        int c, r;

        opterr = 0; /* our own messages, naming the bad input */
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case ARG_URL:
                        r = parse_url(optarg, o);
                        if (r == -EPROTONOSUPPORT)
                                return usage_error("invalid --url '%s': only http:// is supported", optarg);
                        if (r < 0)
                                return usage_error("invalid --url '%s': expected http://HOST[:PORT] "
                                                   "(no path, PORT 1..65535)",
                                                   optarg);
                        o->url = optarg;
                        break;
                case ARG_USERS:
                        if (parse_bounded(optarg, USERS_MAX, &o->profile.users) < 0 || o->profile.users == 0)
                                return usage_error("invalid --users '%s': a number 1..%d", optarg,
                                                   USERS_MAX);
                        break;
                case ARG_PROFILE:
                        o->profile.kind = profile_kind_from_string(optarg);
                        if (o->profile.kind < 0)
                                return usage_error("invalid --profile '%s': ramp or constant", optarg);
                        break;
                case ARG_DURATION:
                        if (parse_duration(optarg, &o->profile.duration) < 0 || o->profile.duration == 0)
                                return usage_error("invalid --duration '%s': a duration such as 60s",
                                                   optarg);
                        break;
                case ARG_THINK:
                        if (parse_duration(optarg, &o->think) < 0 || o->think > 60 * USEC_PER_SEC)
                                return usage_error(
                                        "invalid --think '%s': a duration up to 60s, such as 50ms", optarg);
                        break;
                case ARG_MIX:
                        r = parse_mix(optarg, o);
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0)
                                return usage_error(
                                        "invalid --mix '%s': STATE:WORK weights 0..1000, not both 0",
                                        optarg);
                        break;
                case ARG_CPU_MS:
                        if (parse_bounded(optarg, 60000, &o->cpu_ms) < 0)
                                return usage_error("invalid --cpu-ms '%s': a number 0..60000", optarg);
                        break;
                case ARG_ALLOC_KB:
                        if (parse_bounded(optarg, 4194304, &o->alloc_kb) < 0)
                                return usage_error("invalid --alloc-kb '%s': a number 0..4194304", optarg);
                        break;
                case ARG_SLEEP_MS:
                        if (parse_bounded(optarg, 600000, &o->sleep_ms) < 0)
                                return usage_error("invalid --sleep-ms '%s': a number 0..600000", optarg);
                        break;
                case ARG_TIMEOUT:
                        if (parse_duration(optarg, &o->timeout) < 0 || o->timeout == 0)
                                return usage_error("invalid --timeout '%s': a duration such as 10s", optarg);
                        break;
                case ARG_STATUS:
                        o->status_path = optarg;
                        break;
                case ARG_LINGER:
                        if (parse_duration(optarg, &o->linger) < 0)
                                return usage_error("invalid --linger '%s': a duration such as 15s", optarg);
                        break;
                case ARG_KEEP_SESSIONS:
                        o->keep_sessions = true;
                        break;
                case ARG_IDLE_CHECK:
                        if (parse_duration(optarg, &o->idle_check) < 0 || o->idle_check == 0 ||
                            o->idle_check > IDLE_CHECK_MAX_USEC)
                                return usage_error(
                                        "invalid --idle-check '%s': a duration up to 10min, such as 5s",
                                        optarg);
                        idle_check_set = true;
                        break;
                case ARG_MAX_ERRORS:
                        if (parse_uint64(optarg, &o->max_errors) < 0)
                                return usage_error("invalid --max-errors '%s': a number", optarg);
                        break;
                case ARG_MAX_STICKY:
                        if (parse_uint64(optarg, &o->max_sticky_errors) < 0)
                                return usage_error("invalid --max-sticky-errors '%s': a number", optarg);
                        break;
                case ARG_MAX_LOST:
                        if (parse_uint64(optarg, &o->max_lost) < 0)
                                return usage_error("invalid --max-lost '%s': a number", optarg);
                        break;
                case ARG_SUMMARY_FILE:
                        o->summary_path = optarg;
                        break;
                case ARG_USER_PREFIX:
                        if (!prefix_is_valid(optarg))
                                return usage_error(
                                        "invalid --user-prefix '%s': 1..%d of A-Z a-z 0-9 . _ @ -", optarg,
                                        PREFIX_MAX);
                        o->user_prefix = optarg;
                        break;
                case ARG_SEED:
                        if (parse_uint64(optarg, &o->seed) < 0)
                                return usage_error("invalid --seed '%s': a number", optarg);
                        break;
                case ARG_WIDTH:
                        if (parse_bounded(optarg, 1000, &o->width) < 0 || o->width < 60)
                                return usage_error("invalid --width '%s': a number 60..1000", optarg);
                        break;
                case ARG_QUIET:
                        o->quiet = true;
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("%s %s\n", PROGRAM, EP_VERSION);
                        return 0;
                case '?':
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
        if (o->linger > 0 && !o->status_path)
                return usage_error("--linger needs --status: it waits for the pool to shrink");
        if (idle_check_set && !o->keep_sessions)
                return usage_error("--idle-check needs --keep-sessions: only idle sessions check");
        return 1;
}

void options_init(Options *o) {
        *o = (Options){
                .profile = {.kind = PROFILE_RAMP, .users = 50, .duration = 60 * USEC_PER_SEC},
                .think = 100 * USEC_PER_MSEC,
                .mix_state = 1,
                .mix_work = 1,
                .cpu_ms = 10,
                .timeout = 10 * USEC_PER_SEC,
                .max_lost = UINT64_MAX,
                .user_prefix = "u",
                .width = 160,
                .idle_check = 5 * USEC_PER_SEC,
        };
        o->url = "http://127.0.0.1:8080";
        (void) parse_url(o->url, o);
}
