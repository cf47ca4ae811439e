/* SPDX-License-Identifier: MIT */
/* The decision log (daemon/decision-log.c): a line written for a decision reads back to the same input,
 * parameters, rate and burst reading, and the same pure policies decide the same on it (a line from before
 * the burst path replays as with the path off); a line that is not one names what
 * is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cleanup.h"
#include "decision-log.h"
#include "macro.h"

static const PolicyParams params = {
        .reception_threshold = 0.5, .admission_threshold = 0.8, .compaction_margin = 1.5,
        .min_workers = 1, .max_workers = 4, .rps_target = 50,
};

static char *write_line_burst(DecisionDirection dir, const PolicyInput *in, const RateReading *rate,
                              const BurstReading *burst, const Decision *d) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        assert_non_null(f);
        assert_int_equal(decision_log_write(f, dir, in, &params, rate, burst, d), 0);
        assert_int_equal(fclose(f), 0);
        return buf;
}

static char *write_line(DecisionDirection dir, const PolicyInput *in, const RateReading *rate, const Decision *d) {
        return write_line_burst(dir, in, rate, NULL, d);
}

/* The burst path's spawn, and its hold, replay from the reading the line carries. */
static void test_decision_log_burst_round_trip(void **state) {
        const PolicyWorker w[] = {
                { .id = 1, .reception = true, .routable = true, .freshness = FRESHNESS_FRESH, .occupancy = 0.2 },
        };
        const PolicyInput in = { .workers = w, .n_workers = 1, .mem_available = UINT64_MAX, .now = 5000000 };
        BurstReading readings[] = {
                { .status = BURST_SUSTAINED, .culprit = -1, .since = 3400000,
                  .reason = "burst: w1 waiting 12/8 (executor queue 12) for 1.6s" },
                { .status = BURST_HELD, .culprit = 1, .since = 1000000,
                  .reason = "burst held: w1 executor queue not current for 4s" },
        };
        const DecisionKind kinds[] = { DECISION_SPAWN, DECISION_HELD };

        for (size_t i = 0; i < ELEMENTSOF(readings); i++) {
                _cleanup_free_ char *line = NULL, *error = NULL;
                DecisionEntry e;
                Decision d, again;

                policy_scale_up(&in, &params, &d);
                policy_scale_up_burst(&in, &params, &readings[i], &d);
                assert_int_equal(d.kind, kinds[i]);
                line = write_line_burst(DECIDE_SCALE_UP, &in, NULL, &readings[i], &d);
                assert_int_equal(decision_log_parse(line, &e, &error), 0);
                assert_int_equal(e.burst.status, readings[i].status);
                assert_int_equal(e.burst.culprit, readings[i].culprit);
                assert_true(e.burst.since == readings[i].since);
                assert_string_equal(e.burst.reason, readings[i].reason);
                decision_replay(&e, &e.params, &again);
                assert_int_equal(again.kind, d.kind);
                assert_int_equal(again.worker, d.worker);
                assert_string_equal(again.reason, d.reason);
                decision_entry_done(&e);
        }
}

static void test_decision_log_round_trip(void **state) {
        const PolicyWorker w[] = {
                { .id = 1, .reception = true, .routable = true, .freshness = FRESHNESS_FRESH, .occupancy = 0.1 / 3 },
                { .id = 2, .routable = true, .freshness = FRESHNESS_STALE, .since = 123456789, .occupancy = 0.7,
                  .users = 12 },
                { .id = 3, .routable = true, .freshness = FRESHNESS_MISSING, .missing = "cpu,memory", .occupancy = 0.2 },
                { .id = 4, .routable = false, .freshness = FRESHNESS_NEW },
        };
        const PolicyInput in = { .workers = w, .n_workers = ELEMENTSOF(w), .mem_available = 1ULL << 33, .now = 987654321 };
        RateReading rate = { .status = RATE_HELD, .culprit = 2, .serving = 3, .length = 30000000 };
        _cleanup_free_ char *line = NULL, *error = NULL;
        DecisionEntry e;
        Decision d, again;

        snprintf(rate.reason, sizeof rate.reason, "w2 no row for 7s \"quoted\"");
        policy_scale_up(&in, &params, &d);
        policy_scale_up_rate(&in, &params, &rate, &d);
        line = write_line(DECIDE_SCALE_UP, &in, &rate, &d);
        assert_int_equal(decision_log_parse(line, &e, &error), 0);
        assert_int_equal(e.direction, DECIDE_SCALE_UP);
        assert_int_equal(e.in.n_workers, ELEMENTSOF(w));
        assert_true(e.in.now == in.now && e.in.mem_available == in.mem_available);
        for (size_t i = 0; i < ELEMENTSOF(w); i++) {
                assert_int_equal(e.workers[i].id, w[i].id);
                assert_true(e.workers[i].occupancy == w[i].occupancy); /* exactly: 17 digits */
                assert_int_equal(e.workers[i].freshness, w[i].freshness);
                assert_true(e.workers[i].since == w[i].since);
        }
        assert_string_equal(e.workers[2].missing, "cpu,memory");
        assert_string_equal(e.rate.reason, rate.reason);
        assert_int_equal(e.burst.status, BURST_OFF); /* none written: as with the path off */
        assert_int_equal(e.decision.kind, d.kind);
        assert_string_equal(e.decision.reason, d.reason);
        /* the same code on the same input: the same decision */
        decision_replay(&e, &e.params, &again);
        assert_int_equal(again.kind, d.kind);
        assert_int_equal(again.worker, d.worker);
        assert_string_equal(again.reason, d.reason);
        decision_entry_done(&e);
}

static void test_decision_log_bad_lines(void **state) {
        static const struct { const char *line, *error; } cases[] = {
                { "not json", "not a JSON object" },
                { "{\"direction\":\"sideways\"}", "no known \"direction\"" },
                { "{\"direction\":\"compaction\",\"now\":1,\"mem_available\":2,\"workers\":[]}", "\"params\" incomplete" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *error = NULL;
                DecisionEntry e;

                assert_int_equal(decision_log_parse(cases[i].line, &e, &error), -EINVAL);
                assert_non_null(error);
                if (!strstr(error, cases[i].error))
                        fail_msg("'%s': '%s' lacks '%s'", cases[i].line, error, cases[i].error);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_decision_log_round_trip),
                cmocka_unit_test(test_decision_log_bad_lines),
                cmocka_unit_test(test_decision_log_burst_round_trip),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
