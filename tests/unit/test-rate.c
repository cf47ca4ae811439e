/* SPDX-License-Identifier: MIT */
/* The sustained request rate (daemon/rate.c), a pure function over hand-made rows: the rate over a
 * window fully covered by every serving worker, and each way coverage breaks holding it with the reason
 * (a missing report, a repeated row, a row from the future, counters that go back, rows that begin late,
 * no forward counters), and each way the window restarts making it wait (an epoch: reload, serving set
 * changed, commander start; a worker serving for less than the window). Never 0 requests/s for what is
 * not measured. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "rate.h"

#define S USEC_PER_SEC
#define T0 (100000 * S) /* the window's clock starts far from 0 (an hour before it is still > 0) */
#define GAP (3 * S / 2)

typedef struct Case {
        const char *name;
        /* two workers, rows at t (s after T0) with cumulative requests; t < 0 ends the list */
        struct { double t; uint64_t requests; uint64_t seq; } rows[2][16];
        double now;          /* s after T0 */
        double length;       /* s */
        double epoch;        /* s after T0 */
        double serving[2];   /* serving since, s after T0 */
        RateStatus status;
        double per_worker;   /* RATE_OK */
        const char *reason;  /* a part of it, RATE_HELD / RATE_WAITING */
        int culprit;
} Case;

#define END { -1, 0, 0 }
/* The case's rows of worker k; requests UINT64_MAX: a row without forward counters. */
static void fill(Window *w, const Case *c, unsigned k) {
        for (unsigned i = 0; i < 16 && c->rows[k][i].t >= 0; i++) {
                Row r = { .received = T0 + (usec_t) (c->rows[k][i].t * S), .has_forward = true,
                          .fwd_requests = c->rows[k][i].requests, .seq = c->rows[k][i].seq };
                if (c->rows[k][i].requests == UINT64_MAX)
                        r.has_forward = false, r.fwd_requests = 0;
                window_push(w, &r);
        }
}

static const Case cases[] = {
        { "steady", { { {0, 0, 1}, {1, 10, 2}, {2, 20, 3}, {3, 30, 4}, {4, 40, 5}, {5, 50, 6}, END },
                      { {0.5, 0, 1}, {1.5, 30, 2}, {2.5, 60, 3}, {3.5, 90, 4}, {4.5, 120, 5}, END } },
          5, 4, 0, {0, 0}, RATE_OK, 20.0, NULL, -1 },
        { "a report did not arrive", { { {0, 0, 1}, {1, 10, 2}, {3, 30, 3}, {4, 40, 4}, {5, 50, 5}, END },
                                       { {0.5, 0, 1}, {1.5, 30, 2}, {2.5, 60, 3}, {3.5, 90, 4}, {4.5, 120, 5}, END } },
          5, 4, 0, {0, 0}, RATE_HELD, 0, "w1 no row for 2s", 1 },
        { "silent since", { { {0, 0, 1}, {1, 10, 2}, {2, 20, 3}, {3, 30, 4}, {4, 40, 5}, {5, 50, 6}, END },
                            { {0.5, 0, 1}, {1.5, 30, 2}, {2.5, 60, 3}, END } },
          5, 4, 0, {0, 0}, RATE_HELD, 0, "w2 no row for 2.5s", 2 },
        { "a repeated row", { { {0, 0, 1}, {1, 10, 2}, {2, 20, 3}, {2, 20, 3}, {3, 30, 4}, {4, 40, 5}, {5, 50, 6}, END },
                              { {0.5, 0, 1}, {1.5, 30, 2}, {2.5, 60, 3}, {3.5, 90, 4}, {4.5, 120, 5}, END } },
          5, 4, 0, {0, 0}, RATE_HELD, 0, "w1 repeated a row", 1 },
        { "a repeated sequence number", { { {0, 0, 1}, {1, 10, 2}, {2, 20, 2}, {3, 30, 4}, {4, 40, 5}, {5, 50, 6}, END },
                                          { {0.5, 0, 1}, {1.5, 30, 2}, {2.5, 60, 3}, {3.5, 90, 4}, {4.5, 120, 5}, END } },
          5, 4, 0, {0, 0}, RATE_HELD, 0, "w1 repeated a row", 1 },
        { "a row from the future", { { {0, 0, 1}, {1, 10, 2}, {2, 20, 3}, {3, 30, 4}, {4, 40, 5}, {5, 50, 6}, END },
                                     { {0.5, 0, 1}, {1.5, 30, 2}, {2.5, 60, 3}, {3.5, 90, 4}, {4.5, 120, 5}, {9, 200, 6}, END } },
          5, 4, 0, {0, 0}, RATE_HELD, 0, "w2 sent a row from the future", 2 },
        { "counters went back (a new process)", { { {0, 0, 1}, {1, 10, 2}, {2, 20, 3}, {3, 5, 4}, {4, 15, 5}, {5, 25, 6}, END },
                                                  { {0.5, 0, 1}, {1.5, 30, 2}, {2.5, 60, 3}, {3.5, 90, 4}, {4.5, 120, 5}, END } },
          5, 4, 0, {0, 0}, RATE_HELD, 0, "w1's counters went back", 1 },
        { "rows begin late", { { {0, 0, 1}, {1, 10, 2}, {2, 20, 3}, {3, 30, 4}, {4, 40, 5}, {5, 50, 6}, END },
                               { {3.5, 0, 1}, {4.5, 30, 2}, END } },
          5, 4, 0, {0, 0}, RATE_HELD, 0, "w2's rows begin", 2 },
        { "no forward counters", { { {0, 0, 1}, {1, UINT64_MAX, 2}, {2, 20, 3}, END },
                                   { {0.5, 0, 1}, {1.5, 30, 2}, END } },
          2, 1.5, 0, {0, 0}, RATE_HELD, 0, "w1 has no forward counters", 1 },
        { "restarted: reload 2 s ago", { { {0, 0, 1}, {1, 10, 2}, {2, 20, 3}, {3, 30, 4}, {4, 40, 5}, {5, 50, 6}, END },
                                         { {0.5, 0, 1}, {1.5, 30, 2}, {2.5, 60, 3}, {3.5, 90, 4}, {4.5, 120, 5}, END } },
          5, 4, 3, {0, 0}, RATE_WAITING, 0, "the window restarted 2s ago", -1 },
        { "a worker serving for less than the window", { { {0, 0, 1}, {1, 10, 2}, {2, 20, 3}, {3, 30, 4}, {4, 40, 5}, {5, 50, 6}, END },
                                                         { {3.5, 0, 1}, {4.5, 30, 2}, END } },
          5, 4, 0, {0, 3.2}, RATE_WAITING, 0, "to go", -1 },
        { "idle is a measured 0", { { {0, 7, 1}, {1, 7, 2}, {2, 7, 3}, {3, 7, 4}, {4, 7, 5}, {5, 7, 6}, END },
                                    { {0.5, 9, 1}, {1.5, 9, 2}, {2.5, 9, 3}, {3.5, 9, 4}, {4.5, 9, 5}, END } },
          5, 4, 0, {0, 0}, RATE_OK, 0.0, NULL, -1 },
};

/* s after T0; 0: long before the window (an hour-old epoch, a worker serving for long) */
static usec_t at(double s) {
        return s > 0 ? T0 + (usec_t) (s * S) : T0 - 3600 * S;
}

static void test_rate_table(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const Case *c = &cases[i];
                Window w[2];
                RateWorker rw[2];
                RateReading r;

                for (unsigned k = 0; k < 2; k++) {
                        assert_int_equal(window_init(&w[k], 32), 0);
                        fill(&w[k], c, k);
                        rw[k] = (RateWorker) { .id = k + 1, .window = &w[k], .serving_since = at(c->serving[k]) };
                }
                rate_sustained(rw, 2, at(c->now), (usec_t) (c->length * S), at(c->epoch), GAP, &r);
                if (r.status != c->status)
                        fail_msg("case '%s': status %s, want %s (%s)", c->name, rate_status_to_string(r.status),
                                 rate_status_to_string(c->status), r.reason);
                if (c->status == RATE_OK && (r.per_worker < c->per_worker - 1e-9 || r.per_worker > c->per_worker + 1e-9))
                        fail_msg("case '%s': %.3f/s per worker, want %.3f", c->name, r.per_worker, c->per_worker);
                if (c->reason && !strstr(r.reason, c->reason))
                        fail_msg("case '%s': reason '%s' lacks '%s'", c->name, r.reason, c->reason);
                if (c->status == RATE_HELD && r.culprit != c->culprit)
                        fail_msg("case '%s': culprit %d, want %d", c->name, r.culprit, c->culprit);
                for (unsigned k = 0; k < 2; k++)
                        window_done(&w[k]);
        }
}

static void test_rate_no_serving_worker(void **state) {
        RateReading r;

        rate_sustained(NULL, 0, T0, 30 * S, 0, GAP, &r);
        assert_int_equal(r.status, RATE_HELD);
        assert_string_equal(r.reason, "no serving worker");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rate_table),
                cmocka_unit_test(test_rate_no_serving_worker),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
