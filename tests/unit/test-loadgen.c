/* SPDX-License-Identifier: MIT */
/* The load generator's pure parts: the JSON reader and what it reads (status.json, /state answers),
 * the latency histogram, the ramp profile and the idle sessions' checks, the timer heap, report lines
 * that fit their width, the summary, and the command line. */
#include <errno.h>
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "loadgen-heap.h"
#include "loadgen-json.h"
#include "loadgen-parse.h"
#include "loadgen-profile.h"
#include "loadgen-stats.h"
#include "loadgen.h"
#include "macro.h"

/* As daemon/status.c writes it (two workers, a hold, every field the loader skips). */
static const char status_json[] =
        "{\"group\":\"demo\",\"backend\":\"cgroup\",\"stopping\":false,\"workers\":["
        "{\"id\":1,\"name\":\"w1\",\"state\":\"routable\",\"reception\":true,\"pid\":18951,\"occupancy\":0."
        "5200,"
        "\"bottleneck\":\"executor\",\"components\":{\"memory\":null,\"cpu\":0.1,\"executor\":0.52},"
        "\"freshness\":\"fresh\",\"rows\":3,\"users\":37,\"inflight\":2,\"last_report_ms_ago\":20,\"cpu\":"
        "null,"
        "\"memory_bytes\":3706880,\"socket\":\"/run/x/w1.sock\",\"cgroup\":\"/elastic-pool-demo/w1\"},"
        "{\"id\":2,\"name\":\"w2\",\"state\":\"draining\",\"reception\":false,\"pid\":18999,\"occupancy\":0."
        "0100,"
        "\"bottleneck\":null,\"components\":{\"memory\":null,\"cpu\":null,\"executor\":null},"
        "\"freshness\":\"stale\",\"not_fresh_for_ms\":4000,\"missing\":\"cpu\",\"rows\":0,\"users\":0,"
        "\"inflight\":0,\"socket\":\"/run/x/w2.sock\"}],"
        "\"ledger\":{\"n\":2,\"capacity\":1.3000,\"occupied\":0.5300,\"headroom\":0.7700,\"threshold\":1."
        "2000},"
        "\"holds\":{\"scale_up\":null,\"compaction\":{\"kind\":\"compact\",\"worker\":\"w2\",\"for_ms\":17,"
        "\"reason\":\"w2 no report for 4 s\"}},"
        "\"spawn\":{\"failures\":0,\"given_up\":false,\"last_error\":\"\"},"
        "\"counters\":{\"reports\":10,\"spawns\":2,\"deaths\":0}}\n";

static void test_json_skip_value_nested(void **state) {
        const char *s = " {\"a\":[1,-2.5e3,\"x\\\"y\\u0041\",true,false,null,{\"b\":{}}],\"c\":[]} tail";
        JsonCursor c = json_cursor(s, strlen(s));

        assert_int_equal(json_skip_value(&c), 0);
        assert_int_equal(json_peek(&c), 't');
}

static void test_json_malformed(void **state) {
        static const char *const bad[] = {"{",         "{\"a\"}",   "{\"a\":}", "[1,]",       "[1 2]",
                                          "\"abc",     "\"a\x01\"", "tru",      "{\"a\":1,}", "\"\\q\"",
                                          "\"\\u12\"", "-",         "1e999"};
        JsonCursor c;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                c = json_cursor(bad[i], strlen(bad[i]));
                assert_int_equal(json_skip_value(&c), -EBADMSG);
        }
}

static void test_json_never_reads_past_end(void **state) {
        /* the bytes after n are valid JSON; the reader must not see them */
        const char *s = "{\"a\":12345}";
        JsonCursor c = json_cursor(s, 8); /* {"a":123 */
        double d;

        assert_int_equal(json_skip_value(&c), -EBADMSG);
        c = json_cursor(s + 5, 3);
        assert_int_equal(json_read_number(&c, &d), 0);
        assert_true(d == 123);
}

static void test_json_depth_limit(void **state) {
        char s[2 * (JSON_DEPTH_MAX + 2) + 1];
        JsonCursor c;
        size_t n = JSON_DEPTH_MAX + 2;

        memset(s, '[', n);
        memset(s + n, ']', n);
        s[2 * n] = 0;
        c = json_cursor(s, 2 * n);
        assert_int_equal(json_skip_value(&c), -EBADMSG);
}

static void test_json_read_string_small_buffer(void **state) {
        const char *s = "\"abcdef\",1";
        JsonCursor c = json_cursor(s, strlen(s));
        char buf[4];

        assert_int_equal(json_read_string(&c, buf, sizeof buf), -ENOBUFS);
        assert_string_equal(buf, "abc");
        assert_int_equal(json_peek(&c), ','); /* consumed all the same */
}

static void test_pool_status_parse_commander_document(void **state) {
        PoolStatus st;

        assert_int_equal(pool_status_parse(status_json, strlen(status_json), &st), 0);
        assert_int_equal(st.n_workers, 2);
        assert_int_equal(st.n_routable, 1);
        assert_int_equal(st.n_shown, 2);
        assert_string_equal(st.workers[0].name, "w1");
        assert_true(st.workers[0].reception);
        assert_true(st.workers[0].fresh);
        assert_int_equal(st.workers[0].users, 37);
        assert_true(st.workers[0].occupancy > 0.519 && st.workers[0].occupancy < 0.521);
        assert_string_equal(st.workers[1].state, "draining");
        assert_false(st.workers[1].fresh);
        assert_string_equal(st.scale_up_hold, "");
        assert_string_equal(st.compaction_hold, "w2 no report for 4 s");
        assert_int_equal(st.spawns, 2);
        assert_false(st.stopping);
}

static int parse_status(const char *s, PoolStatus *st) {
        return pool_status_parse(s, strlen(s), st);
}

static void test_pool_status_parse_torn_or_foreign(void **state) {
        PoolStatus st;

        assert_int_equal(pool_status_parse(status_json, strlen(status_json) / 2, &st), -EBADMSG);
        assert_int_equal(parse_status("{\"group\":\"x\"}", &st), -EBADMSG); /* no workers */
        assert_int_equal(parse_status("{\"workers\":[]} x", &st), -EBADMSG);
        assert_int_equal(parse_status("{\"workers\":[{\"users\":-1}]}", &st), -EBADMSG);
        assert_int_equal(parse_status("[]", &st), -EBADMSG);
        assert_int_equal(parse_status("{\"workers\":[]}", &st), 0);
        assert_int_equal(st.n_workers, 0);
}

static void test_pool_status_parse_many_workers(void **state) {
        size_t n = POOL_STATUS_WORKERS_MAX + 6, size = 64 * n + 32, len;
        char *s = malloc(size);
        PoolStatus st;

        assert_non_null(s);
        len = (size_t) snprintf(s, size, "{\"workers\":[");
        for (size_t i = 0; i < n; i++)
                len += (size_t) snprintf(s + len, size - len, "%s{\"name\":\"w%zu\",\"state\":\"routable\"}",
                                         i ? "," : "", i + 1);
        len += (size_t) snprintf(s + len, size - len, "]}");
        assert_int_equal(pool_status_parse(s, len, &st), 0);
        assert_int_equal(st.n_workers, n);
        assert_int_equal(st.n_routable, n);
        assert_int_equal(st.n_shown, POOL_STATUS_WORKERS_MAX);
        free(s);
}

static void test_state_reply_parse(void **state) {
        const char *ok = "{\"user\":\"u7\",\"counter\":42,\"worker\":\"3\",\"blob_crc\":0}";
        char worker[16];
        uint64_t counter;

        assert_int_equal(state_reply_parse(ok, strlen(ok), &counter, worker, sizeof worker), 0);
        assert_int_equal(counter, 42);
        assert_string_equal(worker, "3");
        static const char *const bad[] = {"{\"user\":\"u\"}", "{\"counter\":1.5}", "{\"counter\":-1}",
                                          "no json", "{\"counter\":1"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(state_reply_parse(bad[i], strlen(bad[i]), &counter, worker, sizeof worker),
                                 -EBADMSG);
}

static void test_histogram_quantiles(void **state) {
        Histogram *h = malloc(sizeof *h);

        assert_non_null(h);
        histogram_reset(h);
        assert_int_equal(histogram_quantile(h, 0.5), 0);
        for (usec_t v = 1; v <= 1000; v++)
                histogram_add(h, v * 100); /* 100 us .. 100 ms */
        assert_int_equal(h->count, 1000);
        assert_int_equal(h->min, 100);
        assert_int_equal(h->max, 100000);
        /* within the bucket width (1/32) of the exact answer */
        assert_in_range(histogram_quantile(h, 0.50), 50000 - 1600, 50000 + 1600);
        assert_in_range(histogram_quantile(h, 0.99), 99000 - 3100, 99000 + 3100);
        assert_int_equal(histogram_quantile(h, 1.0), 100000);
        assert_int_equal(histogram_quantile(h, 0.0), 100);
        free(h);
}

static void test_histogram_small_values_exact_and_merge(void **state) {
        Histogram *a = malloc(sizeof *a), *b = malloc(sizeof *b);

        assert_non_null(a);
        assert_non_null(b);
        histogram_reset(a);
        histogram_reset(b);
        for (usec_t v = 0; v < 32; v++)
                histogram_add(v < 16 ? a : b, v);
        histogram_add(b, UINT64_MAX / 2); /* the top bucket, not out of bounds */
        histogram_merge(a, b);
        assert_int_equal(a->count, 33);
        assert_int_equal(histogram_quantile(a, 16.0 / 33), 15);
        assert_int_equal(a->min, 0);
        assert_int_equal(a->max, UINT64_MAX / 2);
        free(a);
        free(b);
}

static void test_error_kind_from_status(void **state) {
        assert_int_equal(error_kind_from_status(200), _ERROR_KIND_INVALID);
        assert_int_equal(error_kind_from_status(302), _ERROR_KIND_INVALID);
        assert_int_equal(error_kind_from_status(404), ERROR_HTTP_4XX);
        assert_int_equal(error_kind_from_status(502), ERROR_HTTP_502);
        assert_int_equal(error_kind_from_status(503), ERROR_HTTP_503);
        assert_int_equal(error_kind_from_status(504), ERROR_HTTP_504);
        assert_int_equal(error_kind_from_status(500), ERROR_HTTP_5XX);
        for (ErrorKind k = 0; k < _ERROR_KIND_MAX; k++)
                assert_non_null(error_kind_to_string(k));
}

static void test_profile_ramp(void **state) {
        Profile p = {.kind = PROFILE_RAMP, .users = 200, .duration = 60 * USEC_PER_SEC};

        assert_int_equal(profile_users_at(&p, 0), 0);
        assert_int_equal(profile_users_at(&p, 10 * USEC_PER_SEC), 100);
        assert_int_equal(profile_users_at(&p, 20 * USEC_PER_SEC), 200);
        assert_int_equal(profile_users_at(&p, 30 * USEC_PER_SEC), 200);
        assert_int_equal(profile_users_at(&p, 50 * USEC_PER_SEC), 100);
        assert_int_equal(profile_users_at(&p, 60 * USEC_PER_SEC - 1), 0);
        assert_int_equal(profile_users_at(&p, 60 * USEC_PER_SEC), 0);
        for (usec_t t = 0; t < p.duration; t += 77777)
                assert_in_range(profile_users_at(&p, t), 0, 200);
}

static void test_profile_constant_and_names(void **state) {
        Profile p = {.kind = PROFILE_CONSTANT, .users = 20, .duration = 3 * USEC_PER_SEC};

        assert_int_equal(profile_users_at(&p, 0), 20);
        assert_int_equal(profile_users_at(&p, 3 * USEC_PER_SEC - 1), 20);
        assert_int_equal(profile_users_at(&p, 3 * USEC_PER_SEC), 0);
        assert_int_equal(profile_kind_from_string("ramp"), PROFILE_RAMP);
        assert_int_equal(profile_kind_from_string("constant"), PROFILE_CONSTANT);
        assert_int_equal(profile_kind_from_string("spiky"), _PROFILE_KIND_INVALID);
}

static void test_rng_think_spread(void **state) {
        Rng r;
        usec_t lo = UINT64_MAX, hi = 0;

        rng_seed(&r, 0);
        for (int i = 0; i < 10000; i++) {
                usec_t t = rng_think(&r, 100000);
                lo = MIN(lo, t);
                hi = MAX(hi, t);
        }
        assert_in_range(lo, 50000, 51000);
        assert_in_range(hi, 149000, 150000);
        assert_int_equal(rng_think(&r, 0), 0);
        assert_int_equal(rng_below(&r, 0), 0);
}

static void test_rng_idle_check_spread(void **state) {
        enum { N = 10000, SLICES = 5 };
        const usec_t idle = 5 * USEC_PER_SEC;
        unsigned slices[SLICES] = {};
        Rng r;

        /* users that left in the same second must not check in the same second: the checks cover
         * 2.5..7.5 s evenly, each fifth of it about a fifth of them */
        rng_seed(&r, 7);
        for (int i = 0; i < N; i++) {
                usec_t t = rng_idle_check(&r, idle);

                assert_in_range(t, idle / 2, idle / 2 + idle);
                slices[MIN((t - idle / 2) * SLICES / idle, (usec_t) SLICES - 1)]++;
        }
        for (int i = 0; i < SLICES; i++)
                assert_in_range(slices[i], N / SLICES * 9 / 10, N / SLICES * 11 / 10);
}

static void test_profile_linger_is_over(void **state) {
        static const struct {
                usec_t linger, now;
                bool have_status;
                unsigned workers;
                bool over;
        } cases[] = {
                {0, 1, false, 4, true},                                 /* no linger asked */
                {25 * USEC_PER_SEC, 5 * USEC_PER_SEC, true, 4, false},  /* the pool is still large */
                {25 * USEC_PER_SEC, 5 * USEC_PER_SEC, true, 1, true},   /* back to its size at the start */
                {25 * USEC_PER_SEC, 5 * USEC_PER_SEC, false, 1, false}, /* no status: the time decides */
                {25 * USEC_PER_SEC, 25 * USEC_PER_SEC, true, 4, true},  /* time is up */
        };
        const usec_t since = 100 * USEC_PER_SEC;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                assert_int_equal(profile_linger_is_over(cases[i].linger, since, since + cases[i].now,
                                                        cases[i].have_status, cases[i].workers, 1),
                                 cases[i].over);
}

static void test_timer_heap_order_move_cancel(void **state) {
        enum { N = 200 };
        TimerNode nodes[N];
        TimerHeap h;
        Rng r;
        usec_t last = 0;

        rng_seed(&r, 42);
        assert_int_equal(timer_heap_init(&h, N), 0);
        for (int i = 0; i < N; i++) {
                timer_node_init(&nodes[i]);
                assert_int_equal(timer_heap_schedule(&h, &nodes[i], rng_below(&r, 1000000)), 0);
        }
        for (int i = 0; i < N; i += 3) /* move some earlier or later */
                assert_int_equal(timer_heap_schedule(&h, &nodes[i], rng_below(&r, 1000000)), 0);
        for (int i = 1; i < N; i += 5)
                timer_heap_cancel(&h, &nodes[i]);
        timer_heap_cancel(&h, &nodes[1]); /* twice: no-op */
        assert_int_equal(h.n, N - N / 5);
        for (TimerNode *t; (t = timer_heap_peek(&h));) {
                assert_true(t->when >= last);
                last = t->when;
                timer_heap_cancel(&h, t);
                assert_false(timer_node_scheduled(t));
        }
        timer_node_init(&nodes[0]);
        h.capacity = 0;
        assert_int_equal(timer_heap_schedule(&h, &nodes[0], 1), -ENOSPC);
        timer_heap_done(&h);
}

static PoolStatus *status_with(unsigned n) {
        PoolStatus *st = calloc(1, sizeof *st);

        assert_non_null(st);
        st->n_workers = st->n_shown = st->n_routable = n;
        for (unsigned i = 0; i < n; i++) {
                WorkerStatus *w = &st->workers[i];
                snprintf(w->name, sizeof w->name, "w%u", i + 1);
                strcpy(w->state, "routable");
                w->occupancy = 0.52;
                w->users = 37;
                w->fresh = true;
        }
        return st;
}

static void test_report_line_compresses_to_width(void **state) {
        ReportLine l = {.elapsed = 12 * USEC_PER_SEC, .live = 150, .target = 200, .rps = 812, .p99 = 23456};
        char buf[1024];
        PoolStatus *st;

        st = status_with(3);
        report_format_line(buf, sizeof buf, 160, &l, true, st);
        assert_non_null(strstr(buf, "w1 [#####.....] 0.52 u=37"));
        assert_non_null(
                strstr(buf, "  12s users  150/200  rps   812 p99   23ms err 0 sticky 0 | 3 workers  w1 ["));
        assert_non_null(strstr(buf, "| 3 workers"));
        free(st);

        st = status_with(8);
        report_format_line(buf, sizeof buf, 160, &l, true, st);
        assert_true(strlen(buf) <= 160);
        assert_non_null(strstr(buf, " w8 .52/37"));
        free(st);

        st = status_with(40);
        report_format_line(buf, sizeof buf, 160, &l, true, st);
        assert_true(strlen(buf) <= 160);
        assert_non_null(strstr(buf, "| 40 workers  occupancy min 0.52 avg 0.52 max 0.52"));
        free(st);

        report_format_line(buf, sizeof buf, 160, &l, true, NULL);
        assert_non_null(strstr(buf, "pool: no status"));
        report_format_line(buf, sizeof buf, 160, &l, false, NULL);
        assert_null(strchr(buf, '|'));
}

static void test_report_line_marks_states_and_holds(void **state) {
        ReportLine l = {};
        PoolStatus *st = status_with(2);
        char buf[1024];

        strcpy(st->workers[1].state, "starting");
        st->workers[0].fresh = false;
        strcpy(st->compaction_hold, "w1 no report for 17 s");
        report_format_line(buf, sizeof buf, 160, &l, true, st);
        assert_non_null(strstr(buf, "w1? ["));
        assert_non_null(strstr(buf, "w2 starting"));
        assert_non_null(strstr(buf, "[compaction held: w1 no report for 17 s]"));
        /* too narrow for the hold: the workers stay, the hold goes */
        report_format_line(buf, sizeof buf, 120, &l, true, st);
        assert_null(strstr(buf, "held"));
        assert_true(strlen(buf) <= 120);
        free(st);
}

static void test_report_line_shows_idle_sessions(void **state) {
        ReportLine l = {
                .elapsed = 40 * USEC_PER_SEC,
                .live = 20,
                .target = 20,
                .show_away = true,
                .away = 40,
                .p99 = USEC_INFINITY,
        };
        char buf[1024];

        report_format_line(buf, sizeof buf, 160, &l, false, NULL);
        assert_non_null(strstr(buf, "  40s users   20/20   idle 40   rps     0 p99      - err 0 sticky 0"));
        l.show_away = false;
        report_format_line(buf, sizeof buf, 160, &l, false, NULL);
        assert_null(strstr(buf, "idle"));
}

/* The summary of a run: its text, as written to a file. */
static char *summary_of(const Loadgen *lg) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        assert_non_null(f);
        report_write_summary(f, &lg->stats, 46 * USEC_PER_SEC, lg);
        assert_int_equal(fclose(f), 0);
        return text;
}

static void test_report_write_summary_sessions(void **state) {
        Loadgen *lg = calloc(1, sizeof *lg);
        Options o;
        char *text;

        assert_non_null(lg);
        options_init(&o);
        o.status_path = "status.json";
        lg->opt = &o;
        lg->have_status = true;
        lg->max_workers_seen = 4;
        lg->status.n_routable = lg->status.n_workers = 1;
        lg->stats = (Stats){.kept = 60,
                            .idle_checks = 140,
                            .idle_checks_ok = 138,
                            .idle_checks_shrunk = 118,
                            .idle_moves = 61,
                            .idle_lost = 2};

        /* without --keep-sessions: the summary as it always was */
        text = summary_of(lg);
        assert_null(strstr(text, "sessions:"));
        assert_non_null(strstr(text, "pool: max routable workers seen 4;"));
        free(text);

        o.keep_sessions = true;
        text = summary_of(lg);
        assert_non_null(strstr(text,
                               "\nsessions: 60 users stayed logged in through the ramp-down; 140 idle "
                               "checks, 138 passed, 118 of them after the pool shrank (4 -> 1 workers); 61 "
                               "passed on another worker than the check before (moved, state intact); 2 "
                               "found the state gone\n"));
        free(text);

        lg->max_workers_seen = 1;
        lg->stats.idle_lost = 0;
        text = summary_of(lg);
        assert_non_null(strstr(text, "138 passed; the pool did not shrink (1 routable worker); 61 passed"));
        assert_null(strstr(text, "gone"));
        free(text);
        free(lg);
}

static void test_format_latency(void **state) {
        char b[16];

        assert_string_equal(format_latency(b, sizeof b, 850), "850us");
        assert_string_equal(format_latency(b, sizeof b, 4100), "4.1ms");
        assert_string_equal(format_latency(b, sizeof b, 123456), "123ms");
        assert_string_equal(format_latency(b, sizeof b, 1250000), "1.25s");
}

/* Parses a NULL-terminated argument list over the defaults, as main() does. */
static int parse_args(Options *o, const char *first, ...) {
        char *argv[32] = {(char *) "elastic-pool-loadgen"};
        int argc = 1;
        va_list ap;

        options_init(o);
        va_start(ap, first);
        for (const char *a = first; a; a = va_arg(ap, const char *)) {
                assert_true(argc < (int) ELEMENTSOF(argv) - 1);
                argv[argc++] = (char *) a;
        }
        va_end(ap);
        optind = 0; /* glibc: start over, as for a new argv */
        return options_parse_argv(argc, argv, o);
}

static void test_options_parse_argv_defaults_and_values(void **state) {
        Options o;

        assert_int_equal(parse_args(&o, NULL), 1);
        assert_int_equal(o.profile.kind, PROFILE_RAMP);
        assert_int_equal(o.profile.users, 50);
        assert_string_equal(o.host, "127.0.0.1");
        assert_string_equal(o.port, "8080");
        assert_int_equal(o.linger, 0);

        assert_int_equal(parse_args(&o, "--url", "http://[::1]:8081/", "--users", "60", "--profile",
                                    "constant", "--duration", "45s", "--think", "100ms", "--mix", "3:1",
                                    "--status", "/run/s.json", "--linger", "25s", NULL),
                         1);
        assert_string_equal(o.host, "::1");
        assert_string_equal(o.port, "8081");
        assert_string_equal(o.authority, "[::1]:8081");
        assert_int_equal(o.profile.users, 60);
        assert_int_equal(o.profile.kind, PROFILE_CONSTANT);
        assert_int_equal(o.profile.duration, 45 * USEC_PER_SEC);
        assert_int_equal(o.think, 100 * USEC_PER_MSEC);
        assert_int_equal(o.mix_state, 3);
        assert_int_equal(o.mix_work, 1);
        assert_int_equal(o.linger, 25 * USEC_PER_SEC);
}

static void test_options_parse_argv_usage_errors(void **state) {
        /* each alone: --linger without --status is one too */
        static const char *const bad[][3] = {
                {"--users", "0"},
                {"--url", "https://x"},
                {"--mix", "0:0"},
                {"--profile", "spiky"},
                {"--linger", "5s"},
                {"--width", "59"},
                {"--user-prefix", "a b"},
                {"--duration", "0"},
                {"--bogus"},
                {"--users"},
        };
        Options o;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(parse_args(&o, bad[i][0], bad[i][1], NULL), -EINVAL);
}

static void test_options_parse_argv_keep_sessions(void **state) {
        Options o;

        assert_int_equal(parse_args(&o, NULL), 1);
        assert_false(o.keep_sessions);
        assert_int_equal(o.idle_check, 5 * USEC_PER_SEC);

        assert_int_equal(parse_args(&o, "--keep-sessions", NULL), 1);
        assert_true(o.keep_sessions);
        assert_int_equal(o.idle_check, 5 * USEC_PER_SEC);

        assert_int_equal(parse_args(&o, "--idle-check", "750ms", "--keep-sessions", NULL), 1);
        assert_true(o.keep_sessions);
        assert_int_equal(o.idle_check, 750 * USEC_PER_MSEC);

        assert_int_equal(parse_args(&o, "--idle-check", "2s", NULL), -EINVAL); /* without --keep-sessions */
        assert_int_equal(parse_args(&o, "--keep-sessions", "--idle-check", "0", NULL), -EINVAL);
        assert_int_equal(parse_args(&o, "--keep-sessions", "--idle-check", "11min", NULL), -EINVAL);
        assert_int_equal(parse_args(&o, "--keep-sessions", "--idle-check", "soon", NULL), -EINVAL);
        assert_int_equal(parse_args(&o, "--keep-sessions=yes", NULL), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_json_skip_value_nested),
                cmocka_unit_test(test_json_malformed),
                cmocka_unit_test(test_json_never_reads_past_end),
                cmocka_unit_test(test_json_depth_limit),
                cmocka_unit_test(test_json_read_string_small_buffer),
                cmocka_unit_test(test_pool_status_parse_commander_document),
                cmocka_unit_test(test_pool_status_parse_torn_or_foreign),
                cmocka_unit_test(test_pool_status_parse_many_workers),
                cmocka_unit_test(test_state_reply_parse),
                cmocka_unit_test(test_histogram_quantiles),
                cmocka_unit_test(test_histogram_small_values_exact_and_merge),
                cmocka_unit_test(test_error_kind_from_status),
                cmocka_unit_test(test_profile_ramp),
                cmocka_unit_test(test_profile_constant_and_names),
                cmocka_unit_test(test_rng_think_spread),
                cmocka_unit_test(test_rng_idle_check_spread),
                cmocka_unit_test(test_profile_linger_is_over),
                cmocka_unit_test(test_timer_heap_order_move_cancel),
                cmocka_unit_test(test_report_line_compresses_to_width),
                cmocka_unit_test(test_report_line_marks_states_and_holds),
                cmocka_unit_test(test_report_line_shows_idle_sessions),
                cmocka_unit_test(test_report_write_summary_sessions),
                cmocka_unit_test(test_format_latency),
                cmocka_unit_test(test_options_parse_argv_defaults_and_values),
                cmocka_unit_test(test_options_parse_argv_usage_errors),
                cmocka_unit_test(test_options_parse_argv_keep_sessions),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
