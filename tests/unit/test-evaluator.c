/* SPDX-License-Identifier: MIT */
/* INTERPRET, by tables of hand-made rows: smoothing over the last rows that carry a component, the max
 * of the components, clamping, the fallbacks, what counts as missing, and rates from forward counters. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "evaluator.h"
#include "macro.h"

#define EPS 1e-9

#define assert_near(a, b) assert_near_at((a), (b), #a, __FILE__, __LINE__)
static void assert_near_at(double a, double b, const char *what, const char *file, int line) {
        if (fabs(a - b) > EPS) {
                print_error("%s = %.12g, expected %.12g\n", what, a, b);
                _fail(file, line);
        }
}

static const EvaluatorParams defaults = {
        .memory_limit = 1000,
        .cpu_wall_cores = 1.0,
        .smoothing_rows = 6,
        .concurrency = 0,
};

/* Rows, oldest first. */
static void fill(Window *w, const Row *rows, size_t n) {
        assert_int_equal(window_init(w, 60), 0);
        for (size_t i = 0; i < n; i++)
                window_push(w, &rows[i]);
}

#define CPU(v) \
        { .has_cpu = true, .cpu = (v) }
#define MEM(v) \
        { .has_memory = true, .memory_bytes = (v) }
#define EXE(b, t) \
        { .has_executor = true, .executor_busy = (b), .executor_total = (t) }

static void test_component_to_string(void **state) {
        assert_string_equal(component_to_string(COMPONENT_MEMORY), "memory");
        assert_string_equal(component_to_string(COMPONENT_CPU), "cpu");
        assert_string_equal(component_to_string(COMPONENT_EXECUTOR), "executor");
        assert_null(component_to_string(_COMPONENT_MAX));
        assert_null(component_to_string(_COMPONENT_INVALID));
}

static void test_evaluator_evaluate_empty_window(void **state) {
        Window w;
        Occupancy o;

        fill(&w, NULL, 0);
        evaluator_evaluate(&w, &defaults, &o);
        assert_near(o.value, 0.0);
        assert_int_equal(o.bottleneck, _COMPONENT_INVALID);
        assert_int_equal(o.window_rows, 0);
        for (Component c = 0; c < _COMPONENT_MAX; c++) {
                assert_false(o.has[c]);
                assert_int_equal(o.rows[c], 0);
        }
        window_done(&w);
}

/* Only the last 6 rows count: older, busier rows are forgotten. */
static void test_evaluator_evaluate_smoothing_last_rows(void **state) {
        static const Row rows[] = {
                CPU(0.9), CPU(0.9), CPU(0.9), CPU(0.9), /* older than the smoothing window */
                CPU(0.1), CPU(0.2), CPU(0.3), CPU(0.4), CPU(0.5), CPU(0.6),
        };
        Window w;
        Occupancy o;

        fill(&w, rows, ELEMENTSOF(rows));
        evaluator_evaluate(&w, &defaults, &o);
        assert_true(o.has[COMPONENT_CPU]);
        assert_int_equal(o.rows[COMPONENT_CPU], 6);
        assert_near(o.component[COMPONENT_CPU], 0.35);
        assert_near(o.value, 0.35);
        assert_int_equal(o.bottleneck, COMPONENT_CPU);
        assert_int_equal(o.window_rows, ELEMENTSOF(rows));
        window_done(&w);
}

static void test_evaluator_evaluate_fewer_rows_than_smoothing(void **state) {
        static const Row rows[] = {CPU(0.2), CPU(0.4), CPU(0.9)};
        Window w;
        Occupancy o;

        fill(&w, rows, ELEMENTSOF(rows));
        evaluator_evaluate(&w, &defaults, &o);
        assert_int_equal(o.rows[COMPONENT_CPU], 3);
        assert_near(o.value, 0.5);
        window_done(&w);
}

/* Rows lacking cpu are skipped, and the average reaches further back to find 6 rows that have it. */
static void test_evaluator_evaluate_skips_rows_lacking_component(void **state) {
        static const Row rows[] = {
                CPU(0.9), /* 7th with cpu: beyond the average */
                CPU(0.8), CPU(0.8), MEM(100), CPU(0.2), MEM(100), CPU(0.2),
                MEM(100), CPU(0.2), MEM(100), CPU(0.2), MEM(100),
        };
        Window w;
        Occupancy o;

        fill(&w, rows, ELEMENTSOF(rows));
        evaluator_evaluate(&w, &defaults, &o);
        assert_int_equal(o.rows[COMPONENT_CPU], 6);
        assert_near(o.component[COMPONENT_CPU], (4 * 0.2 + 2 * 0.8) / 6);
        assert_int_equal(o.rows[COMPONENT_MEMORY], 5);
        assert_near(o.component[COMPONENT_MEMORY], 0.1);
        assert_near(o.value, 0.4);
        assert_int_equal(o.bottleneck, COMPONENT_CPU);
        window_done(&w);
}

/* The same window under other smoothing_rows: 1 is the latest row that has it, 0 is taken as 1. */
static void test_evaluator_evaluate_smoothing_rows_setting(void **state) {
        static const Row rows[] = {CPU(0.6), CPU(0.2), MEM(1)};
        static const struct {
                uint32_t smoothing;
                double cpu;
                uint32_t used;
        } cases[] = {{0, 0.2, 1}, {1, 0.2, 1}, {2, 0.4, 2}, {60, 0.4, 2}};

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                EvaluatorParams p = defaults;
                Window w;
                Occupancy o;

                p.smoothing_rows = cases[i].smoothing;
                fill(&w, rows, ELEMENTSOF(rows));
                evaluator_evaluate(&w, &p, &o);
                assert_int_equal(o.rows[COMPONENT_CPU], cases[i].used);
                assert_near(o.component[COMPONENT_CPU], cases[i].cpu);
                window_done(&w);
        }
}

/* Occupancy is the max of the averaged components, and the bottleneck names it. */
static void test_evaluator_evaluate_max_of_components(void **state) {
        static const struct {
                Row row;
                double value;
                Component bottleneck;
        } cases[] = {
                {{.has_memory = true,
                  .memory_bytes = 300,
                  .has_cpu = true,
                  .cpu = 0.5,
                  .has_executor = true,
                  .executor_busy = 7,
                  .executor_total = 10},
                 0.7,
                 COMPONENT_EXECUTOR},
                {{.has_memory = true,
                  .memory_bytes = 900,
                  .has_cpu = true,
                  .cpu = 0.5,
                  .has_executor = true,
                  .executor_busy = 7,
                  .executor_total = 10},
                 0.9,
                 COMPONENT_MEMORY},
                {{.has_memory = true,
                  .memory_bytes = 300,
                  .has_cpu = true,
                  .cpu = 0.95,
                  .has_executor = true,
                  .executor_busy = 7,
                  .executor_total = 10},
                 0.95,
                 COMPONENT_CPU},
                /* ties name the first in enum order */
                {{.has_memory = true, .memory_bytes = 500, .has_cpu = true, .cpu = 0.5},
                 0.5,
                 COMPONENT_MEMORY},
                {{.has_cpu = true,
                  .cpu = 0.5,
                  .has_executor = true,
                  .executor_busy = 1,
                  .executor_total = 2},
                 0.5,
                 COMPONENT_CPU},
                /* zero is a reading: a present 0 names its component */
                {{.has_cpu = true, .cpu = 0.0}, 0.0, COMPONENT_CPU},
                /* a row without components reads 0.0 with no bottleneck */
                {{.has_users = true, .users = 12}, 0.0, _COMPONENT_INVALID},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Window w;
                Occupancy o;

                fill(&w, &cases[i].row, 1);
                evaluator_evaluate(&w, &defaults, &o);
                assert_near(o.value, cases[i].value);
                assert_int_equal(o.bottleneck, cases[i].bottleneck);
                window_done(&w);
        }
}

static void test_evaluator_evaluate_clamp(void **state) {
        static const struct {
                Row row;
                double cores;
                Component c;
                double expect;
        } cases[] = {
                {CPU(2.5), 1.0, COMPONENT_CPU, 1.0},        {CPU(2.5), 2.0, COMPONENT_CPU, 1.0},
                {CPU(1.5), 2.0, COMPONENT_CPU, 0.75},       {CPU(0.5), 2.0, COMPONENT_CPU, 0.25},
                {CPU(0.5), 0.0, COMPONENT_CPU, 0.5}, /* invalid wall taken as one core */
                {CPU(-0.3), 1.0, COMPONENT_CPU, 0.0},       {MEM(2500), 1.0, COMPONENT_MEMORY, 1.0},
                {EXE(12, 8), 1.0, COMPONENT_EXECUTOR, 1.0},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                EvaluatorParams p = defaults;
                Window w;
                Occupancy o;

                p.cpu_wall_cores = cases[i].cores;
                fill(&w, &cases[i].row, 1);
                evaluator_evaluate(&w, &p, &o);
                assert_true(o.has[cases[i].c]);
                assert_near(o.component[cases[i].c], cases[i].expect);
                assert_near(o.value, cases[i].expect);
                window_done(&w);
        }
}

static void test_evaluator_evaluate_memory_without_limit_ignored(void **state) {
        static const Row rows[] = {
                {.has_memory = true, .memory_bytes = 1ULL << 40, .has_cpu = true, .cpu = 0.3},
        };
        EvaluatorParams p = defaults;
        Window w;
        Occupancy o;

        p.memory_limit = 0;
        fill(&w, rows, ELEMENTSOF(rows));
        evaluator_evaluate(&w, &p, &o);
        assert_false(o.has[COMPONENT_MEMORY]);
        assert_near(o.value, 0.3);
        assert_int_equal(o.bottleneck, COMPONENT_CPU);
        window_done(&w);
}

/* total 0 measures nothing: the row has no executor component (and older rows that do are used). */
static void test_evaluator_evaluate_executor_total_zero_ignored(void **state) {
        static const Row only_zero[] = {EXE(0, 0), EXE(3, 0)};
        static const Row older_real[] = {EXE(1, 4), EXE(0, 0), EXE(3, 0)};
        Window w;
        Occupancy o;

        fill(&w, only_zero, ELEMENTSOF(only_zero));
        evaluator_evaluate(&w, &defaults, &o);
        assert_false(o.has[COMPONENT_EXECUTOR]);
        assert_int_equal(o.bottleneck, _COMPONENT_INVALID);
        window_done(&w);

        fill(&w, older_real, ELEMENTSOF(older_real));
        evaluator_evaluate(&w, &defaults, &o);
        assert_int_equal(o.rows[COMPONENT_EXECUTOR], 1);
        assert_near(o.component[COMPONENT_EXECUTOR], 0.25);
        window_done(&w);
}

/* Without an executor reading, inflight / concurrency stands in, when both are known. */
static void test_evaluator_evaluate_inflight_fallback(void **state) {
        static const struct {
                Row row;
                uint32_t concurrency;
                bool has;
                double expect;
        } cases[] = {
                {{.has_inflight = true, .inflight = 3}, 4, true, 0.75},
                {{.has_inflight = true, .inflight = 9}, 4, true, 1.0},
                {{.has_inflight = true, .inflight = 0}, 4, true, 0.0},
                {{.has_inflight = true, .inflight = 3}, 0, false, 0.0}, /* concurrency unknown */
                {{.has_inflight = false}, 4, false, 0.0},               /* inflight unknown */
                /* a real executor reading wins */
                {{.has_inflight = true,
                  .inflight = 3,
                  .has_executor = true,
                  .executor_busy = 1,
                  .executor_total = 10},
                 4,
                 true,
                 0.1},
                /* an empty executor falls back */
                {{.has_inflight = true, .inflight = 1, .has_executor = true, .executor_total = 0},
                 4,
                 true,
                 0.25},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                EvaluatorParams p = defaults;
                Window w;
                Occupancy o;

                p.concurrency = cases[i].concurrency;
                fill(&w, &cases[i].row, 1);
                evaluator_evaluate(&w, &p, &o);
                assert_int_equal(o.has[COMPONENT_EXECUTOR], cases[i].has);
                if (cases[i].has)
                        assert_near(o.component[COMPONENT_EXECUTOR], cases[i].expect);
                window_done(&w);
        }
}

static void test_evaluator_evaluate_nan_row_is_no_reading(void **state) {
        static const Row rows[] = {CPU(0.4), CPU(NAN)};
        Window w;
        Occupancy o;

        fill(&w, rows, ELEMENTSOF(rows));
        evaluator_evaluate(&w, &defaults, &o);
        assert_int_equal(o.rows[COMPONENT_CPU], 1);
        assert_near(o.value, 0.4);
        window_done(&w);
}

/* Each component's average is its own: one bottleneck over time while another fills up. */
static void test_evaluator_evaluate_components_average_independently(void **state) {
        static const Row rows[] = {
                {.has_cpu = true, .cpu = 0.9, .has_memory = true, .memory_bytes = 100},
                {.has_cpu = true, .cpu = 0.9},
                {.has_memory = true, .memory_bytes = 700},
        };
        Window w;
        Occupancy o;

        fill(&w, rows, ELEMENTSOF(rows));
        evaluator_evaluate(&w, &defaults, &o);
        assert_int_equal(o.rows[COMPONENT_CPU], 2);
        assert_int_equal(o.rows[COMPONENT_MEMORY], 2);
        assert_near(o.component[COMPONENT_CPU], 0.9);
        assert_near(o.component[COMPONENT_MEMORY], 0.4);
        assert_near(o.value, 0.9);
        assert_int_equal(o.bottleneck, COMPONENT_CPU);
        window_done(&w);
}

static void test_evaluator_row_occupancy(void **state) {
        static const struct {
                Row row;
                bool has;
                double expect;
        } cases[] = {
                {{.has_cpu = true, .cpu = 0.3, .has_memory = true, .memory_bytes = 600}, true, 0.6},
                {EXE(3, 4), true, 0.75},
                {CPU(3.0), true, 1.0},
                {CPU(0.0), true, 0.0},
                {{.has_users = true, .users = 5}, false, 0.0},
                {EXE(1, 0), false, 0.0},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                double v = -1.0;

                assert_int_equal(evaluator_row_occupancy(&cases[i].row, &defaults, &v), cases[i].has);
                if (cases[i].has)
                        assert_near(v, cases[i].expect);
                else
                        assert_near(v, -1.0); /* untouched */
        }
}

#define M_CPU (1U << COMPONENT_CPU)
#define M_MEM (1U << COMPONENT_MEMORY)
#define M_EXE (1U << COMPONENT_EXECUTOR)

static void test_evaluator_missing_components(void **state) {
        static const struct {
                const char *name;
                Row rows[3]; /* oldest first */
                size_t n;
                uint64_t memory_limit;
                uint32_t concurrency;
                unsigned expect;
        } cases[] = {
                {"empty window", {}, 0, 1000, 0, 0},
                {"first report of a connection has no cpu", {MEM(1)}, 1, 1000, 0, 0},
                {"second report without cpu",
                 {{.has_memory = true, .has_cpu = true}, MEM(1)},
                 2,
                 1000,
                 0,
                 M_CPU},
                {"complete", {CPU(0.1), {.has_cpu = true, .has_memory = true}}, 2, 1000, 0, 0},
                {"memory expected with a limit", {CPU(0.1), CPU(0.1)}, 2, 1000, 0, M_MEM},
                {"memory not expected without a limit", {CPU(0.1), CPU(0.1)}, 2, 0, 0, 0},
                {"executor never reported", {CPU(0.1), CPU(0.1)}, 2, 0, 0, 0},
                {"executor stopped",
                 {{.has_cpu = true, .has_executor = true, .executor_total = 4}, CPU(0.1)},
                 2,
                 0,
                 0,
                 M_EXE},
                {"executor stopped, inflight fallback covers it",
                 {{.has_cpu = true, .has_executor = true, .executor_total = 4},
                  {.has_cpu = true, .has_inflight = true}},
                 2,
                 0,
                 4,
                 0},
                {"executor gone to total 0",
                 {{.has_cpu = true, .has_executor = true, .executor_total = 4},
                  {.has_cpu = true, .has_executor = true, .executor_total = 0}},
                 2,
                 0,
                 0,
                 M_EXE},
                {"executor back in the latest row",
                 {EXE(1, 4), CPU(0.1), {.has_cpu = true, .has_executor = true, .executor_total = 4}},
                 3,
                 0,
                 0,
                 0},
                {"everything missing",
                 {{.has_cpu = true, .has_memory = true, .has_executor = true, .executor_total = 2},
                  {.has_users = true}},
                 2,
                 1000,
                 0,
                 M_CPU | M_MEM | M_EXE},
                {"nan cpu is missing", {CPU(0.1), CPU(NAN)}, 2, 0, 0, M_CPU},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                EvaluatorParams p = defaults;
                unsigned got;
                Window w;

                p.memory_limit = cases[i].memory_limit;
                p.concurrency = cases[i].concurrency;
                fill(&w, cases[i].rows, cases[i].n);
                got = evaluator_missing_components(&w, &p);
                if (got != cases[i].expect) {
                        print_error("case '%s': mask %#x, expected %#x\n", cases[i].name, got,
                                    cases[i].expect);
                        fail();
                }
                window_done(&w);
        }
}

/* After a clear (channel reconnected), the first report again carries no cpu and that is fine. */
static void test_evaluator_missing_components_after_clear(void **state) {
        static const Row rows[] = {CPU(0.3), CPU(0.3)};
        static const Row first = MEM(1);
        EvaluatorParams p = defaults;
        Window w;

        p.memory_limit = 0;
        fill(&w, rows, ELEMENTSOF(rows));
        window_clear(&w);
        window_push(&w, &first);
        assert_int_equal(evaluator_missing_components(&w, &p), 0);
        window_push(&w, &first);
        assert_int_equal(evaluator_missing_components(&w, &p), M_CPU);
        window_done(&w);
}

#define FWD(t, req, err, busy)                                                             \
        {                                                                                  \
                .received = (t) *USEC_PER_SEC, .has_forward = true, .fwd_requests = (req), \
                .fwd_errors = (err), .fwd_busy_usec = (busy)                               \
        }

static void test_evaluator_rates(void **state) {
        static const Row rows[] = {
                {.received = 0, .has_cpu = true}, /* no counters yet: outside the span */
                FWD(5, 100, 1, 1000000),          FWD(10, 150, 1, 2000000),
                {.received = 12 * USEC_PER_SEC}, /* skipped */
                FWD(15, 300, 5, 5000000),         {.received = 20 * USEC_PER_SEC, .has_cpu = true},
        };
        Window w;
        Rates r;

        fill(&w, rows, ELEMENTSOF(rows));
        evaluator_rates(&w, &r);
        assert_true(r.valid);
        assert_int_equal(r.span, 10 * USEC_PER_SEC);
        assert_near(r.rps, 20.0);
        assert_near(r.error_rate, 0.4);
        assert_near(r.latency_avg, 4.0 / 200.0);
        window_done(&w);
}

static void test_evaluator_rates_no_requests(void **state) {
        static const Row rows[] = {FWD(5, 100, 0, 1000), FWD(10, 100, 0, 1000)};
        Window w;
        Rates r;

        fill(&w, rows, ELEMENTSOF(rows));
        evaluator_rates(&w, &r);
        assert_true(r.valid);
        assert_near(r.rps, 0.0);
        assert_near(r.latency_avg, 0.0);
        window_done(&w);
}

static void test_evaluator_rates_invalid(void **state) {
        static const struct {
                const char *name;
                Row rows[3];
                size_t n;
        } cases[] = {
                {"empty", {}, 0},
                {"one row", {FWD(5, 1, 0, 0)}, 1},
                {"no counters", {{.received = 1}, {.received = 2}}, 2},
                {"no time", {FWD(5, 1, 0, 0), FWD(5, 2, 0, 0)}, 2},
                {"requests reset", {FWD(5, 100, 0, 0), FWD(10, 3, 0, 0)}, 2},
                {"errors reset", {FWD(5, 100, 9, 0), FWD(10, 200, 0, 0)}, 2},
                {"busy reset", {FWD(5, 100, 0, 50), FWD(10, 200, 0, 10)}, 2},
                /* a reset in the middle, hidden by the newest value being over the oldest */
                {"reset mid-span", {FWD(5, 100, 0, 0), FWD(10, 2, 0, 0), FWD(15, 150, 0, 0)}, 3},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Window w;
                Rates r;

                fill(&w, cases[i].rows, cases[i].n);
                evaluator_rates(&w, &r);
                if (r.valid) {
                        print_error("case '%s' is valid\n", cases[i].name);
                        fail();
                }
                assert_near(r.rps, 0.0);
                window_done(&w);
        }
}

/* ---- freshness: missing is never zero ---- */

#define SEC(x) ((usec_t) (x) * USEC_PER_SEC)

static void test_evaluator_stale_horizon(void **state) {
        static const struct {
                usec_t configured, announced;
                unsigned stale_after;
                usec_t expect;
        } cases[] = {
                { SEC(5), 0, 3, SEC(15) },                         /* nothing announced: the configured */
                { SEC(5), SEC(10), 3, SEC(30) },                   /* the slower of the two */
                { SEC(5), SEC(1), 3, SEC(15) },
                { SEC(5), UINT64_MAX / 3 + 1, 3, SEC(3600) * 3 }, /* an absurd claim is capped at an hour */
                { UINT64_MAX / 2, 0, 3, USEC_INFINITY },          /* saturates, never wraps short */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                assert_true(evaluator_stale_horizon(cases[i].configured, cases[i].announced,
                                                    cases[i].stale_after) == cases[i].expect);
}

/* Every case of evaluator_freshness(), at its borders: the judgement is a pure function of the window,
 * the reading, the channel, the horizon and now. */
static void test_evaluator_freshness(void **state) {
        static const struct {
                const char *name;
                bool channel_open;
                bool has_row;          /* one row, received at SEC(100) */
                unsigned missing_mask; /* not_fresh_since SEC(95) */
                usec_t now;
                Freshness expect;
                usec_t since;
        } cases[] = {
                { "no row, young", true, false, 0, SEC(100) + SEC(15) - 1, FRESHNESS_NEW, SEC(100) },
                { "no row, a horizon old", true, false, 0, SEC(115), FRESHNESS_STALE, SEC(100) },
                { "fresh", true, true, 0, SEC(100) + SEC(15) - 1, FRESHNESS_FRESH, 0 },
                { "stale", true, true, 0, SEC(115), FRESHNESS_STALE, SEC(100) },
                { "missing", true, true, 1U << COMPONENT_CPU, SEC(101), FRESHNESS_MISSING, SEC(95) },
                { "stale beats missing", true, true, 1U << COMPONENT_CPU, SEC(115), FRESHNESS_STALE, SEC(100) },
                { "no channel beats fresh", false, true, 0, SEC(101), FRESHNESS_NO_CHANNEL, SEC(99) },
                { "no channel beats new", false, false, 0, SEC(101), FRESHNESS_NO_CHANNEL, SEC(99) },
        };
        const Row row = { .received = SEC(100), .has_cpu = true, .cpu = 0.1 };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                FreshnessInput in = {
                        .channel_open = cases[i].channel_open,
                        .channel_closed_at = SEC(99),
                        .born = SEC(100),
                        .horizon = SEC(15),
                };
                Reading r;
                usec_t since = 12345;
                Window w;
                Freshness f;

                fill(&w, &row, cases[i].has_row ? 1 : 0);
                evaluator_reading_init(&r);
                r.missing_mask = cases[i].missing_mask;
                r.not_fresh_since = SEC(95);
                f = evaluator_freshness(&w, &r, &in, cases[i].now, &since);
                if (f != cases[i].expect || since != cases[i].since)
                        fail_msg("%s: %s since %llu, expected %s since %llu", cases[i].name, freshness_to_string(f),
                                 (unsigned long long) since, freshness_to_string(cases[i].expect),
                                 (unsigned long long) cases[i].since);
                /* a reading that can still be judged says when it stops being fresh */
                if (f == FRESHNESS_FRESH || f == FRESHNESS_NEW)
                        assert_true(evaluator_fresh_until(&w, &in) == SEC(115));
                window_done(&w);
        }
}

/* interpret: the occupancy, what is missing and since when, the names formatted only when the mask
 * changes. */
static void test_evaluator_interpret(void **state) {
        const Row rows[] = { CPU(0.2), { .has_executor = true, .executor_busy = 1, .executor_total = 4 },
                             CPU(0.4) };
        Reading r;
        Window w;

        assert_int_equal(window_init(&w, 60), 0);
        evaluator_reading_init(&r);
        assert_int_equal(r.occupancy.bottleneck, _COMPONENT_INVALID);

        window_push(&w, &rows[0]);
        evaluator_interpret(&w, &defaults, SEC(1), &r);
        assert_int_equal(r.missing_mask, 1U << COMPONENT_MEMORY); /* a limit is configured */
        assert_string_equal(r.missing_names, "memory");
        assert_true(r.not_fresh_since == SEC(1));

        window_push(&w, &rows[1]);
        evaluator_interpret(&w, &defaults, SEC(2), &r);
        assert_int_equal(r.missing_mask, (1U << COMPONENT_MEMORY) | (1U << COMPONENT_CPU));
        assert_string_equal(r.missing_names, "memory,cpu");
        assert_true(r.not_fresh_since == SEC(1)); /* still missing: since stays where it began */

        window_push(&w, &rows[2]);
        evaluator_interpret(&w, &defaults, SEC(3), &r);
        assert_int_equal(r.missing_mask, (1U << COMPONENT_MEMORY) | (1U << COMPONENT_EXECUTOR));
        assert_string_equal(r.missing_names, "memory,executor");
        assert_near(r.occupancy.value, 0.3);
        window_done(&w);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_component_to_string),
                cmocka_unit_test(test_evaluator_evaluate_empty_window),
                cmocka_unit_test(test_evaluator_evaluate_smoothing_last_rows),
                cmocka_unit_test(test_evaluator_evaluate_fewer_rows_than_smoothing),
                cmocka_unit_test(test_evaluator_evaluate_skips_rows_lacking_component),
                cmocka_unit_test(test_evaluator_evaluate_smoothing_rows_setting),
                cmocka_unit_test(test_evaluator_evaluate_max_of_components),
                cmocka_unit_test(test_evaluator_evaluate_clamp),
                cmocka_unit_test(test_evaluator_evaluate_memory_without_limit_ignored),
                cmocka_unit_test(test_evaluator_evaluate_executor_total_zero_ignored),
                cmocka_unit_test(test_evaluator_evaluate_inflight_fallback),
                cmocka_unit_test(test_evaluator_evaluate_nan_row_is_no_reading),
                cmocka_unit_test(test_evaluator_evaluate_components_average_independently),
                cmocka_unit_test(test_evaluator_row_occupancy),
                cmocka_unit_test(test_evaluator_missing_components),
                cmocka_unit_test(test_evaluator_missing_components_after_clear),
                cmocka_unit_test(test_evaluator_rates),
                cmocka_unit_test(test_evaluator_rates_no_requests),
                cmocka_unit_test(test_evaluator_rates_invalid),
                cmocka_unit_test(test_evaluator_stale_horizon),
                cmocka_unit_test(test_evaluator_freshness),
                cmocka_unit_test(test_evaluator_interpret),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
