/* SPDX-License-Identifier: MIT */
/* /metrics on a Manager in memory with a fake front end: the exposition is well formed line by line
 * (every sample of a family after its HELP and TYPE, each family declared once, counters end in _total,
 * names carry elastic_pool_), labels are escaped, a value the commander does not know is left out rather
 * than exported as 0, the histogram is cumulative and ends at its count, and the counters say what the
 * fake front end measured. promtool, where installed, checks the same text. */
#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "fake-frontend.h"
#include "macro.h"
#include "manager-fixture.h"
#include "metrics.h"

#define PROMTOOL "/usr/bin/promtool"

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

static char *metrics(void) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        assert_non_null(f);
        assert_int_equal(metrics_write(&m->status, f), 0);
        assert_int_equal(fclose(f), 0);
        return buf;
}

/* w1 reports cpu and an executor, w2 no cpu (and is out of new work), w3 is starting; the front end
 * forwarded to w1 only. */
static void three_workers(void) {
        Worker *w1 = fixture_add_worker(m, WORKER_ROUTABLE), *w2 = fixture_add_worker(m, WORKER_ROUTABLE);

        (void) fixture_add_worker(m, WORKER_STARTING);
        for (int i = 0; i < 3; i++) {
                fixture_advance(5 * USEC_PER_SEC);
                fixture_report(w1, READING(.cpu = 0.5, .busy = 1, .total = 4, .memory = 1 << 20));
                fixture_report(w2, READING(.busy = 0, .total = 4));
        }
        fixture_set_users(m, w1, 2);
        fake_frontend_attach(&fe, &m->status);
        fe.known[1] = fe.known[2] = true;
        fe.traffic[1] = (WorkerTraffic) { .has_forward = true, .requests = 11, .errors = 1, .connections = 3,
                                          .busy_usec = 3020 * USEC_PER_MSEC, .inflight = 2 };
        for (int i = 0; i < 10; i++)
                latency_histogram_add(&fe.traffic[1].latency, 2 * USEC_PER_MSEC);
        latency_histogram_add(&fe.traffic[1].latency, 3 * USEC_PER_SEC);
        fe.traffic[2] = (WorkerTraffic) { .inflight = 0 }; /* known, but no forward pool yet */
        pool_set_unhealthy(&m->pool, w2, "no report for 17s"); /* health took it out of new work */
        fe.totals = (FrontendTotals) { .requests = 12, .errors = 1, .connections = 5, .h2_connections = 2,
                                       .streams = 3, .wakeups = 40, .socket_events = 900, .batch_largest = 64,
                                       .io_uring = true, .io_calls = 80, .io_ops = 1800 };
}

static bool has_line(const char *text, const char *line) {
        size_t l = strlen(line);

        for (const char *p = text; (p = strstr(p, line)); p++)
                if ((p == text || p[-1] == '\n') && p[l] == '\n')
                        return true;
        return false;
}

#define ASSERT_LINE(text, line) CHECK_EXPLAINED(has_line(text, line), "no line '%s' in:\n%s", line, text)
#define ASSERT_NO(text, part) CHECK_EXPLAINED(!strstr(text, part), "'%s' should not be in:\n%s", part, text)

/* The family a sample belongs to: a histogram's _bucket/_sum/_count belong to the histogram. */
static void family_of(const char *name, const char *declared_histograms, char *ret, size_t size) {
        static const char *const suffixes[] = { "_bucket", "_sum", "_count" };

        snprintf(ret, size, "%s", name);
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                size_t l = strlen(name), s = strlen(suffixes[i]);
                char base[256];

                if (l <= s || !streq(name + l - s, suffixes[i]))
                        continue;
                snprintf(base, sizeof base, " %.*s ", (int) (l - s), name);
                if (strstr(declared_histograms, base))
                        snprintf(ret, size, "%.*s", (int) (l - s), name);
        }
}

static void test_metrics_write_well_formed(void **state) {
        _cleanup_free_ char *text = NULL;
        char declared[16384] = " ", histograms[4096] = " ", current[256] = "";
        regex_t sample, help, type;
        char *save = NULL;
        unsigned samples = 0;

        three_workers();
        text = metrics();
        assert_int_equal(regcomp(&sample, "^(elastic_pool_[a-z0-9_]+)\\{group=\"test\"(,[a-z_]+=\"[^\"]*\")*\\} "
                                          "-?[0-9]+(\\.[0-9]+)?$", REG_EXTENDED), 0);
        assert_int_equal(regcomp(&help, "^# HELP (elastic_pool_[a-z0-9_]+) [A-Z].*\\.$", REG_EXTENDED), 0);
        assert_int_equal(regcomp(&type, "^# TYPE (elastic_pool_[a-z0-9_]+) (gauge|counter|histogram)$",
                                 REG_EXTENDED), 0);
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                regmatch_t g[3];
                char name[256], fam[256], key[260];

                if (regexec(&help, line, 2, g, 0) == 0) {
                        snprintf(current, sizeof current, "%.*s", (int) (g[1].rm_eo - g[1].rm_so), line + g[1].rm_so);
                        snprintf(key, sizeof key, " %s ", current);
                        CHECK_EXPLAINED(!strstr(declared, key), "%s declared twice", current);
                        strcat(declared, current);
                        strcat(declared, " ");
                        continue;
                }
                if (regexec(&type, line, 3, g, 0) == 0) {
                        snprintf(name, sizeof name, "%.*s", (int) (g[1].rm_eo - g[1].rm_so), line + g[1].rm_so);
                        CHECK_EXPLAINED(streq(name, current), "TYPE of %s after the HELP of %s", name, current);
                        if (strncmp(line + g[2].rm_so, "counter", 7) == 0)
                                CHECK_EXPLAINED(strlen(name) > 6 && streq(name + strlen(name) - 6, "_total"),
                                                "counter %s does not end in _total", name);
                        if (strncmp(line + g[2].rm_so, "histogram", 9) == 0) {
                                strcat(histograms, name);
                                strcat(histograms, " ");
                        }
                        continue;
                }
                CHECK_EXPLAINED(regexec(&sample, line, 2, g, 0) == 0, "not a sample line: '%s'", line);
                snprintf(name, sizeof name, "%.*s", (int) (g[1].rm_eo - g[1].rm_so), line + g[1].rm_so);
                family_of(name, histograms, fam, sizeof fam);
                CHECK_EXPLAINED(streq(fam, current), "sample of %s under the HELP of %s", fam, current);
                samples++;
        }
        assert_true(samples > 50);
        regfree(&sample);
        regfree(&help);
        regfree(&type);
}

static void test_metrics_write_values(void **state) {
        _cleanup_free_ char *text = NULL;

        three_workers();
        m->relief.rounds = 3;
        m->relief.burst_rounds = 2;
        text = metrics();
        ASSERT_LINE(text, "elastic_pool_workers{group=\"test\",state=\"routable\"} 2");
        ASSERT_LINE(text, "elastic_pool_workers{group=\"test\",state=\"starting\"} 1");
        ASSERT_LINE(text, "elastic_pool_worker_component_ratio{group=\"test\",worker=\"w1\",component=\"cpu\"} 0.500000");
        /* w2 reports no cpu: absent, not 0 */
        ASSERT_NO(text, "worker=\"w2\",component=\"cpu\"");
        ASSERT_LINE(text, "elastic_pool_worker_component_ratio{group=\"test\",worker=\"w2\",component=\"executor\"} 0.000000");
        ASSERT_LINE(text, "elastic_pool_worker_memory_bytes{group=\"test\",worker=\"w1\"} 1048576");
        ASSERT_NO(text, "elastic_pool_worker_memory_bytes{group=\"test\",worker=\"w2\"}");
        ASSERT_LINE(text, "elastic_pool_worker_users{group=\"test\",worker=\"w1\"} 2");
        ASSERT_LINE(text, "elastic_pool_worker_inflight_requests{group=\"test\",worker=\"w1\"} 2");
        ASSERT_LINE(text, "elastic_pool_worker_requests_total{group=\"test\",worker=\"w1\"} 11");
        ASSERT_LINE(text, "elastic_pool_worker_errors_total{group=\"test\",worker=\"w1\"} 1");
        ASSERT_LINE(text, "elastic_pool_worker_busy_seconds_total{group=\"test\",worker=\"w1\"} 3.020000");
        ASSERT_LINE(text, "elastic_pool_worker_connections{group=\"test\",worker=\"w1\"} 3");
        /* w2 has no forward pool: its counters are unknown, not 0 */
        ASSERT_NO(text, "elastic_pool_worker_requests_total{group=\"test\",worker=\"w2\"}");
        /* the histogram: cumulative, +Inf is the count, the sum in seconds */
        ASSERT_LINE(text, "elastic_pool_worker_request_duration_seconds_bucket{group=\"test\",worker=\"w1\",le=\"0.001\"} 0");
        ASSERT_LINE(text, "elastic_pool_worker_request_duration_seconds_bucket{group=\"test\",worker=\"w1\",le=\"0.0025\"} 10");
        ASSERT_LINE(text, "elastic_pool_worker_request_duration_seconds_bucket{group=\"test\",worker=\"w1\",le=\"2.5\"} 10");
        ASSERT_LINE(text, "elastic_pool_worker_request_duration_seconds_bucket{group=\"test\",worker=\"w1\",le=\"5\"} 11");
        ASSERT_LINE(text, "elastic_pool_worker_request_duration_seconds_bucket{group=\"test\",worker=\"w1\",le=\"+Inf\"} 11");
        ASSERT_LINE(text, "elastic_pool_worker_request_duration_seconds_sum{group=\"test\",worker=\"w1\"} 3.020000");
        ASSERT_LINE(text, "elastic_pool_worker_request_duration_seconds_count{group=\"test\",worker=\"w1\"} 11");
        ASSERT_LINE(text, "elastic_pool_frontend_requests_total{group=\"test\"} 12");
        ASSERT_LINE(text, "elastic_pool_frontend_connections{group=\"test\",protocol=\"http/1.1\"} 3");
        ASSERT_LINE(text, "elastic_pool_frontend_connections{group=\"test\",protocol=\"h2c\"} 2");
        ASSERT_LINE(text, "elastic_pool_frontend_streams{group=\"test\"} 3");
        ASSERT_LINE(text, "elastic_pool_frontend_wakeups_total{group=\"test\"} 40");
        ASSERT_LINE(text, "elastic_pool_frontend_socket_events_total{group=\"test\"} 900");
        ASSERT_LINE(text, "elastic_pool_frontend_batch_largest{group=\"test\"} 64");
        ASSERT_LINE(text, "elastic_pool_frontend_io_uring{group=\"test\"} 1");
        ASSERT_LINE(text, "elastic_pool_frontend_io_ops_total{group=\"test\"} 1800");
        ASSERT_LINE(text, "elastic_pool_frontend_io_syscalls_total{group=\"test\"} 80");
        ASSERT_LINE(text, "elastic_pool_spawns_total{group=\"test\",cause=\"floor\"} 0");
        ASSERT_LINE(text, "elastic_pool_deaths_total{group=\"test\",cause=\"oom\"} 0");
        ASSERT_LINE(text, "elastic_pool_moves_total{group=\"test\",outcome=\"aborted\"} 0");
        ASSERT_LINE(text, "elastic_pool_relief_rounds_total{group=\"test\"} 3");
        ASSERT_LINE(text, "elastic_pool_relief_burst_rounds_total{group=\"test\"} 2");
        ASSERT_LINE(text, "elastic_pool_worker_drift{group=\"test\",worker=\"w1\",register=\"users\"} 0");
        ASSERT_LINE(text, "elastic_pool_worker_unhealthy{group=\"test\",worker=\"w1\"} 0");
        ASSERT_LINE(text, "elastic_pool_worker_unhealthy{group=\"test\",worker=\"w2\"} 1");
        /* w3 in flight: compaction waits, and says so */
        assert_true(m->capacity.compaction_hold.active);
        ASSERT_LINE(text, "elastic_pool_hold{group=\"test\",decision=\"compaction\"} 1");
}

/* Without a front end: no front-end family at all, and no forward counter. */
static void test_metrics_write_without_frontend(void **state) {
        _cleanup_free_ char *text = NULL;

        (void) fixture_add_worker(m, WORKER_ROUTABLE);
        text = metrics();
        ASSERT_NO(text, "elastic_pool_frontend_");
        ASSERT_NO(text, "elastic_pool_worker_requests_total{");
        ASSERT_LINE(text, "# TYPE elastic_pool_worker_requests_total counter");
}

static void test_metrics_write_escapes_group(void **state) {
        _cleanup_free_ char *text = NULL;

        m->status.group = "we\"b\\1\nx";
        text = metrics();
        ASSERT_LINE(text, "elastic_pool_reports_total{group=\"we\\\"b\\\\1\\nx\"} 0");
}

static void test_metrics_write_promtool(void **state) {
        _cleanup_free_ char *text = NULL;
        FILE *p;
        int status;

        if (access(PROMTOOL, X_OK) < 0) {
                print_message("SKIP: %s is not installed (Debian's prometheus package; scripts/bootstrap.sh)\n",
                              PROMTOOL);
                skip();
        }
        three_workers();
        text = metrics();
        p = popen(PROMTOOL " check metrics", "w");
        assert_non_null(p);
        fputs(text, p);
        status = pclose(p);
        CHECK_EXPLAINED(WIFEXITED(status) && WEXITSTATUS(status) == 0, "promtool check metrics failed on:\n%s",
                        text);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_metrics_write_well_formed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_metrics_write_values, setup, teardown),
                cmocka_unit_test_setup_teardown(test_metrics_write_without_frontend, setup, teardown),
                cmocka_unit_test_setup_teardown(test_metrics_write_escapes_group, setup, teardown),
                cmocka_unit_test_setup_teardown(test_metrics_write_promtool, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
