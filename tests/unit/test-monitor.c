/* SPDX-License-Identifier: MIT */
/* The monitor: the JSON it polls says what the page draws (a worker's shown state and the hold on it, the
 * occupancy of every row of the window with gaps as null, rates and p50/p99 from the front end, standing
 * drift, the ledger and the last decision, moves), unknown values as null; the page is one document with
 * its style and script inline, no reference to anything outside it, and a Content-Security-Policy that
 * names exactly its inline style and script by hash and lets it fetch only from its own origin. */
#include <errno.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cleanup.h"
#include "fake-frontend.h"
#include "macro.h"
#include "manager-fixture.h"
#include "monitor-page.h"
#include "monitor.h"

static Manager *m;
static FakeFrontend fe;

static int setup(void **state) {
        m = fixture_manager_new();
        fe = (FakeFrontend) {};
        return 0;
}

static int teardown(void **state) {
        fixture_manager_free(m);
        m = NULL;
        return 0;
}

static json_object *document(void) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        json_object *doc;

        assert_non_null(f);
        assert_int_equal(monitor_write_json(&m->status, f), 0);
        assert_int_equal(fclose(f), 0);
        doc = json_tokener_parse(buf);
        if (!doc)
                fail_msg("not JSON: %s", buf);
        return doc;
}

static json_object *get(json_object *o, const char *key) {
        json_object *v = NULL;

        if (!json_object_object_get_ex(o, key, &v))
                fail_msg("no \"%s\" in %s", key, json_object_to_json_string(o));
        return v;
}

static bool is_null(json_object *o, const char *key) {
        return json_object_is_type(get(o, key), json_type_null);
}

static json_object *worker(json_object *doc, size_t i) {
        return json_object_array_get_idx(get(doc, "workers"), i);
}

static void test_monitor_write_json_workers(void **state) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE),
               *w3 = fixture_add_worker(m, WORKER_STARTING);
        json_object *doc, *o, *history;

        fixture_report(w1, READING(.cpu = 0.2, .busy = 1, .total = 4));
        fixture_advance(5 * USEC_PER_SEC);
        fixture_report(w1, READING()); /* a row with no component at all: a gap */
        fixture_advance(5 * USEC_PER_SEC);
        fixture_report(w1, READING(.cpu = 0.6, .busy = 3, .total = 4));
        fixture_set_users(m, w1, 4);
        w2->evacuating = true;
        pool_set_unhealthy(&m->pool, w2, "3 requests in a row unanswered");
        w2->drift.state[DRIFT_USERS] = (DriftState) { .streak = 7, .since = fixture_now - 30 * USEC_PER_SEC,
                                                      .reported = 3, .expected = 1, .sustained = true };
        m->capacity.compaction_hold = (Hold) { .active = true, .kind = DECISION_HELD, .worker = (int) w2->id,
                                               .since = fixture_now, .reason = "held: w2 no report for 17s" };

        doc = document();
        assert_int_equal(json_object_get_int(get(doc, "window_rows")), 60);
        o = worker(doc, 0);
        assert_string_equal(json_object_get_string(get(o, "shown")), "routable");
        assert_true(json_object_get_boolean(get(o, "reception")));
        assert_int_equal(json_object_get_int(get(o, "users")), 4);
        assert_string_equal(json_object_get_string(get(o, "bottleneck")), "executor");
        assert_true(is_null(get(o, "components"), "memory")); /* no limit: no memory component */
        history = get(o, "history");
        assert_int_equal(json_object_array_length(history), 3); /* oldest first */
        assert_true(json_object_get_double(json_object_array_get_idx(history, 0)) == 0.25);
        assert_true(json_object_is_type(json_object_array_get_idx(history, 1), json_type_null));
        assert_true(json_object_get_double(json_object_array_get_idx(history, 2)) == 0.75);
        /* no front end: the forward counters are unknown, not 0 */
        assert_true(is_null(o, "requests_total"));
        assert_true(is_null(o, "rps"));
        assert_true(is_null(o, "p50_ms"));
        assert_true(is_null(o, "held"));
        assert_true(is_null(o, "unhealthy"));

        o = worker(doc, 1);
        assert_string_equal(json_object_get_string(get(o, "unhealthy")), "3 requests in a row unanswered");
        assert_string_equal(json_object_get_string(get(o, "shown")), "evacuating");
        assert_string_equal(json_object_get_string(get(get(o, "held"), "decision")), "compaction");
        assert_string_equal(json_object_get_string(get(get(o, "held"), "reason")), "held: w2 no report for 17s");
        o = json_object_array_get_idx(get(o, "drift"), 0);
        assert_string_equal(json_object_get_string(get(o, "register")), "users");
        assert_int_equal(json_object_get_int(get(o, "reported")), 3);
        assert_int_equal(json_object_get_int(get(o, "expected")), 1);
        assert_int_equal(json_object_get_int(get(o, "for_ms")), 30000);

        o = worker(doc, 2);
        assert_string_equal(json_object_get_string(get(o, "shown")), "starting");
        assert_int_equal(json_object_array_length(get(o, "history")), 0);
        assert_int_equal(w3->id, 3);
        json_object_put(doc);
}

/* Rates over the window and p50/p99 over the last minute, from the front end's counters as the
 * capacity shell took them with each report. */
static void test_monitor_write_json_traffic(void **state) {
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);
        WorkerTraffic *t = &fe.traffic[1];
        json_object *doc, *o;

        fake_frontend_attach(&fe, &m->status);
        fe.known[1] = true;
        t->has_forward = true;
        for (unsigned s = 0; s < 7; s++) {
                /* 100 requests a report, 2 ms each but two of 3 s: the p99 is a slow one */
                for (unsigned i = 0; i < 100; i++) {
                        t->requests++;
                        latency_histogram_add(&t->latency, i < 2 ? 3 * USEC_PER_SEC : 2 * USEC_PER_MSEC);
                }
                t->errors += 1;
                fixture_report(w, READING(.cpu = 0.1));
                fixture_advance(10 * USEC_PER_SEC);
        }
        fe.totals = (FrontendTotals) { .requests = 700, .connections = 4, .h2_connections = 1, .streams = 2 };
        doc = document();
        o = worker(doc, 0);
        assert_int_equal(json_object_get_int(get(o, "requests_total")), 700);
        assert_int_equal(json_object_get_int(get(o, "errors_total")), 7);
        assert_true(json_object_get_double(get(o, "rps")) == 10.0);     /* 600 requests over 60 s */
        assert_true(json_object_get_double(get(o, "errors_per_s")) == 0.1);
        CHECK_EXPLAINED(json_object_get_double(get(o, "p50_ms")) > 1 && json_object_get_double(get(o, "p50_ms")) <= 2.5,
                        "p50 %s", json_object_to_json_string(o));
        CHECK_EXPLAINED(json_object_get_double(get(o, "p99_ms")) > 2500 && json_object_get_double(get(o, "p99_ms")) <= 5000,
                        "p99 %s", json_object_to_json_string(o));
        assert_int_equal(json_object_get_int(get(o, "latency_requests")), 600);
        assert_int_equal(json_object_get_int(get(get(doc, "frontend"), "h2_connections")), 1);
        json_object_put(doc);
}

static void test_monitor_write_json_decisions_and_moves(void **state) {
        json_object *doc, *o;

        (void) fixture_add_worker(m, WORKER_ROUTABLE);
        (void) fixture_add_worker(m, WORKER_ROUTABLE);
        m->capacity.last_decision = (DecisionRecord) { .set = true, .kind = DECISION_RETIRE, .worker = 2,
                                                       .at = fixture_now - 2 * USEC_PER_SEC,
                                                       .what = "Compaction: retiring a worker",
                                                       .reason = "H=1.3 > 1.2",
                                                       .ledger = { .n = 2, .capacity = 1.3 } };
        m->moves.recent[0] = (MoveRecord) { .id = 9, .user = "ann", .from = 2, .to = 1, .switched = true,
                                            .bytes = 40, .pause = 12 * USEC_PER_MSEC, .ended = fixture_now,
                                            .outcome = "done" };
        m->moves.n_recent = 1;
        m->moves.recent_head = 1;
        m->moves.next_id = 9;
        m->moves.done = 1;
        doc = document();
        o = get(doc, "ledger");
        assert_int_equal(json_object_get_int(get(o, "n")), 2);
        assert_true(json_object_get_double(get(o, "capacity")) == 1.3);
        assert_true(json_object_get_double(get(o, "margin")) == 1.5);
        o = get(doc, "last_decision");
        assert_string_equal(json_object_get_string(get(o, "kind")), "retire");
        assert_string_equal(json_object_get_string(get(o, "reason")), "H=1.3 > 1.2");
        assert_int_equal(json_object_get_int(get(o, "ago_ms")), 2000);
        o = json_object_array_get_idx(get(get(doc, "moves"), "recent"), 0);
        assert_string_equal(json_object_get_string(get(o, "user")), "ann");
        assert_string_equal(json_object_get_string(get(o, "outcome")), "done");
        assert_int_equal(json_object_get_int(get(o, "pause_ms")), 12);
        assert_int_equal(json_object_array_length(get(get(doc, "moves"), "in_progress")), 0);
        assert_true(is_null(doc, "frontend"));
        assert_true(is_null(doc, "drain"));
        json_object_put(doc);
}

/* ---- the page ---- */

/* The text between open and close (exclusive); exactly one such element. */
static char *element(const char *html, const char *open, const char *close) {
        const char *a = strstr(html, open), *b;

        assert_non_null(a);
        assert_null(strstr(a + 1, open));
        a += strlen(open);
        b = strstr(a, close);
        assert_non_null(b);
        return strndup(a, (size_t) (b - a));
}

static void expect_hash(const char *csp, const char *directive, const char *text) {
        unsigned char digest[32];
        unsigned n = 0;
        char b64[64], want[128];

        assert_int_equal(EVP_Digest(text, strlen(text), digest, &n, EVP_sha256(), NULL), 1);
        assert_int_equal(EVP_EncodeBlock((unsigned char *) b64, digest, 32), 44);
        snprintf(want, sizeof want, "%s 'sha256-%s';", directive, b64);
        CHECK_EXPLAINED(strstr(csp, want), "'%s' is not in the policy %s", want, csp);
}

static void test_monitor_page_csp_names_inline_code(void **state) {
        _cleanup_free_ char *style = NULL, *script = NULL;
        MonitorPage p;

        assert_int_equal(monitor_page_init(&p), 0);
        assert_int_equal(strlen(p.html), p.html_len);
        assert_null(strstr(p.html, "<!--style-->"));
        assert_null(strstr(p.html, "<!--script-->"));
        style = element(p.html, "<style>", "</style>");
        script = element(p.html, "<script>", "</script>");
        expect_hash(p.csp, "style-src", style);
        expect_hash(p.csp, "script-src", script);
        assert_true(startswith(p.csp, "default-src 'none'; "));
        assert_non_null(strstr(p.csp, "; connect-src 'self'; "));
        assert_null(strstr(p.csp, "unsafe"));
        assert_null(strstr(p.csp, "http"));
        assert_null(strstr(p.csp, "*"));
        monitor_page_done(&p);
        monitor_page_done(&p); /* twice is harmless */
}

static unsigned count_matches(const char *text, const char *pattern) {
        regex_t re;
        regmatch_t g;
        unsigned n = 0;

        assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_ICASE), 0);
        for (const char *p = text; regexec(&re, p, 1, &g, 0) == 0; p += g.rm_eo)
                n++;
        regfree(&re);
        return n;
}

/* Nothing the browser would load from elsewhere: no element with a source, no stylesheet or import, no
 * absolute URL but the SVG namespace, and the script fetches only the two documents, by path. */
static void test_monitor_page_self_contained(void **state) {
        _cleanup_free_ char *script = NULL;
        MonitorPage p;

        assert_int_equal(monitor_page_init(&p), 0);
        assert_int_equal(count_matches(p.html, "(src|href|action|srcset|poster|data)[[:space:]]*="), 0);
        assert_int_equal(count_matches(p.html, "<(link|img|iframe|object|embed|base|form|audio|video|source)[[:space:]>]"), 0);
        assert_int_equal(count_matches(p.html, "@import|url\\("), 0);
        assert_int_equal(count_matches(p.html, "[a-z]+://"), 1);
        assert_non_null(strstr(p.html, "\"http://www.w3.org/2000/svg\""));
        assert_int_equal(count_matches(p.html, "[^:]//[a-z0-9.-]+\\.[a-z]{2,}"), 0); /* scheme-relative */
        script = element(p.html, "<script>", "</script>");
        /* every request goes through getJSON(), with a literal path of the admin listener */
        assert_int_equal(count_matches(script, "fetch\\("), 1);
        assert_int_equal(count_matches(script, "getJSON\\(\"/_commander/(monitor\\.json|population)\"\\)"), 2);
        assert_int_equal(count_matches(script, "getJSON\\("), 3); /* the two calls and the definition */
        assert_int_equal(count_matches(script, "XMLHttpRequest|WebSocket|EventSource|sendBeacon|importScripts|"
                                               "innerHTML|outerHTML|insertAdjacentHTML|document\\.write|eval\\("),
                         0);
        monitor_page_done(&p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_monitor_write_json_workers, setup, teardown),
                cmocka_unit_test_setup_teardown(test_monitor_write_json_traffic, setup, teardown),
                cmocka_unit_test_setup_teardown(test_monitor_write_json_decisions_and_moves, setup, teardown),
                cmocka_unit_test(test_monitor_page_csp_names_inline_code),
                cmocka_unit_test(test_monitor_page_self_contained),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
