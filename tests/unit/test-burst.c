/* SPDX-License-Identifier: MIT */
/* The burst path's pure core, by tables of sampled pools: a burst sustained for burst_window is wanted
 * and a shorter spike never is; one worker with room answers for the pool; a late signal holds, never
 * reads as empty or full; a gap between samples restarts a streak; and policy_scale_up_burst() spawns
 * through scale-up's guards (max_workers, min_free_memory, a spawn in flight) or holds on the culprit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "burst.h"
#include "macro.h"
#include "policy.h"

#define MS(x) ((usec_t) (x) * USEC_PER_MSEC)
#define TICK MS(250)
#define T0 ((usec_t) 100 * USEC_PER_SEC)
#define LATE (-1)
#define MAX_TICKS 16
#define MAX_WORKERS 3

static const BurstParams params = { .window = MS(1500), .queue = 8, .gap_max = 3 * TICK };

#define assert_reason(r, needle) assert_reason_at((r), (needle), __FILE__, __LINE__)
static void assert_reason_at(const char *reason, const char *needle, const char *file, int line) {
        if (!strstr(reason, needle)) {
                print_error("reason \"%s\" lacks \"%s\"\n", reason, needle);
                _fail(file, line);
        }
}

/* One worker's sample: its executor queue `v` (LATE: not current since T0), nothing else offered. */
static BurstSample sample_of(int v) {
        BurstSample s = {};

        if (v == LATE) {
                s.availability[BURST_EXECUTOR_QUEUE] = BURST_LATE;
                s.late_since[BURST_EXECUTOR_QUEUE] = T0;
        } else {
                s.availability[BURST_EXECUTOR_QUEUE] = BURST_CURRENT;
                s.value[BURST_EXECUTOR_QUEUE] = (uint32_t) v;
        }
        return s;
}

typedef struct Scenario {
        const char *name;
        size_t n_workers;
        size_t n_ticks;
        int waiting[MAX_WORKERS][MAX_TICKS]; /* per worker, per tick (TICK apart from T0) */
        BurstStatus expect;                  /* after the last tick */
        bool ever_sustained;                 /* whether any tick read SUSTAINED */
        int culprit;                         /* expected culprit after the last tick */
        const char *reason;                  /* a part of the last reason */
} Scenario;

static const Scenario scenarios[] = {
        { "sustained 1.5s: wanted", 1, 7, { { 12, 12, 12, 12, 12, 12, 12 } }, BURST_SUSTAINED, true, -1,
          "burst: w1 waiting 12/8 (executor queue 12) for 1.5s" },
        { "1.25s: still rising", 1, 6, { { 12, 12, 12, 12, 12, 12 } }, BURST_RISING, false, -1, "for 1.2s" },
        { "a spike of 1s: nothing", 1, 12, { { 20, 30, 30, 20, 0, 0, 0, 0, 0, 0, 0, 0 } }, BURST_CALM, false, 1,
          "w1 has room: waiting 0 < burst_queue=8" },
        { "a dip under burst_queue restarts the streak", 1, 10, { { 12, 12, 12, 12, 12, 7, 12, 12, 12, 12 } },
          BURST_RISING, false, -1, "for 750ms" },
        { "exactly burst_queue is saturated", 1, 7, { { 8, 8, 8, 8, 8, 8, 8 } }, BURST_SUSTAINED, true, -1,
          "waiting 8/8" },
        { "one hot worker, one with room: placement's business", 2, 10,
          { { 40, 40, 40, 40, 40, 40, 40, 40, 40, 40 }, { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 } }, BURST_CALM, false, 2,
          "w2 has room" },
        { "both saturated, the latter for 1s: rising", 2, 10,
          { { 40, 40, 40, 40, 40, 40, 40, 40, 40, 40 }, { 0, 0, 0, 0, 0, 9, 9, 9, 9, 9 } }, BURST_RISING, false, -1,
          "burst: w1 w2 waiting 40/8 (executor queue 40), waiting 9/8 (executor queue 9) for 1s" },
        { "both saturated for 1.5s", 2, 10,
          { { 40, 40, 40, 40, 40, 40, 40, 40, 40, 40 }, { 0, 0, 0, 9, 9, 9, 9, 9, 9, 9 } }, BURST_SUSTAINED, true,
          -1, "for 1.5s" },
        { "a late signal holds, never reads as room", 2, 8,
          { { 40, 40, 40, 40, 40, 40, 40, 40 }, { LATE, LATE, LATE, LATE, LATE, LATE, LATE, LATE } }, BURST_HELD,
          false, 2, "burst held: w2 executor queue not current for 1.7s" },
        { "a late signal beside room: the room answers", 2, 4, { { 0, 0, 0, 0 }, { LATE, LATE, LATE, LATE } },
          BURST_CALM, false, 1, "w1 has room" },
        { "a late sample breaks the streak", 1, 10, { { 12, 12, 12, 12, 12, LATE, 12, 12, 12, 12 } }, BURST_RISING,
          false, -1, "for 750ms" },
};

/* Runs a scenario tick by tick; *ret_ever whether any tick read SUSTAINED. */
static void run(const Scenario *sc, BurstReading *ret, bool *ret_ever) {
        BurstWorker w[MAX_WORKERS];

        *ret_ever = false;
        for (size_t i = 0; i < sc->n_workers; i++)
                w[i] = (BurstWorker) { .id = (unsigned) i + 1, .track = BURST_TRACK_INIT };
        for (size_t t = 0; t < sc->n_ticks; t++) {
                usec_t now = T0 + (usec_t) t * TICK;

                for (size_t i = 0; i < sc->n_workers; i++) {
                        BurstSample s = sample_of(sc->waiting[i][t]);
                        burst_observe(&w[i].track, &s, &params, now);
                }
                burst_assess(w, sc->n_workers, &params, now, ret);
                *ret_ever = *ret_ever || ret->status == BURST_SUSTAINED;
        }
}

static void test_burst_assess_scenarios(void **state) {
        for (size_t k = 0; k < ELEMENTSOF(scenarios); k++) {
                const Scenario *sc = &scenarios[k];
                BurstReading r;
                bool ever;

                run(sc, &r, &ever);
                if (r.status != sc->expect || ever != sc->ever_sustained || r.culprit != sc->culprit) {
                        print_error("%s: %s (culprit %d, ever sustained %d): \"%s\"\n", sc->name,
                                    burst_status_to_string(r.status), r.culprit, ever, r.reason);
                        fail();
                }
                assert_reason(r.reason, sc->reason);
        }
}

static void test_burst_assess_off_and_empty(void **state) {
        BurstParams off = params;
        BurstReading r;

        off.window = 0;
        burst_assess(NULL, 0, &off, T0, &r);
        assert_int_equal(r.status, BURST_OFF);
        burst_assess(NULL, 0, &params, T0, &r);
        assert_int_equal(r.status, BURST_CALM);
        assert_reason(r.reason, "no routable worker");
}

/* A worker that became routable since the last sample has no track yet: not late, not room either. */
static void test_burst_assess_unsampled_worker(void **state) {
        BurstWorker w[2] = { { .id = 1, .track = BURST_TRACK_INIT }, { .id = 2, .track = BURST_TRACK_INIT } };
        BurstSample s = sample_of(40);
        BurstReading r;

        for (usec_t now = T0; now <= T0 + MS(2000); now += TICK)
                burst_observe(&w[0].track, &s, &params, now);
        burst_assess(w, 2, &params, T0 + MS(2000), &r);
        assert_int_equal(r.status, BURST_CALM);
        assert_int_equal(r.culprit, 2);
        assert_reason(r.reason, "w2 not sampled yet");
}

/* Samples further apart than gap_max (a stalled loop) say nothing of the time between. */
static void test_burst_observe_gap_restarts(void **state) {
        BurstTrack t = BURST_TRACK_INIT;
        BurstSample s = sample_of(12);

        burst_observe(&t, &s, &params, T0);
        burst_observe(&t, &s, &params, T0 + TICK);
        assert_int_equal(t.over_since, T0);
        burst_observe(&t, &s, &params, T0 + TICK + MS(1000));
        assert_int_equal(t.over_since, T0 + TICK + MS(1000));
}

/* One worker's own streak, from the samples it was fed: sustained only after burst_window of saturated
 * samples, never on a spike, a late signal, a stale last sample or with the path off. */
static void test_burst_track_sustained(void **state) {
        const BurstParams off = { .window = 0, .queue = 8, .gap_max = 3 * TICK };
        BurstTrack t = BURST_TRACK_INIT;
        BurstSample busy = sample_of(12), late = sample_of(LATE);
        usec_t now = T0;

        assert_false(burst_track_sustained(&t, &params, now)); /* never sampled */
        for (; now < T0 + MS(1500); now += TICK) {
                burst_observe(&t, &busy, &params, now);
                assert_false(burst_track_sustained(&t, &params, now)); /* a spike so far */
        }
        burst_observe(&t, &busy, &params, now);
        assert_true(burst_track_sustained(&t, &params, now));
        assert_false(burst_track_sustained(&t, &off, now));
        /* the loop stalled: the last sample is older than gap_max, it says nothing of now */
        assert_false(burst_track_sustained(&t, &params, now + 3 * TICK + 1));
        burst_observe(&t, &late, &params, now + TICK);
        assert_false(burst_track_sustained(&t, &params, now + TICK)); /* missing is never saturated */
}

/* The three signals add up: requests wait in one place at a time. */
static void test_burst_observe_signals_add(void **state) {
        BurstTrack t = BURST_TRACK_INIT;
        BurstSample s = {
                .availability = { BURST_CURRENT, BURST_CURRENT, BURST_CURRENT },
                .value = { 3, 2, 3 },
        };

        burst_observe(&t, &s, &params, T0);
        assert_int_equal(t.waiting, 8);
        assert_int_equal(t.over_since, T0);
        /* an absent signal is no input: the others still count */
        s.availability[BURST_FORWARD_QUEUE] = BURST_ABSENT;
        burst_observe(&t, &s, &params, T0 + TICK);
        assert_int_equal(t.waiting, 6);
        assert_int_equal(t.over_since, 0);
        assert_int_equal(t.late, -1);
}

/* ---- policy_scale_up_burst(): the spawn through scale-up's guards ---- */

#define FRESH(i, occ) { .id = (i), .routable = true, .freshness = FRESHNESS_FRESH, .occupancy = (occ) }

static const PolicyParams policy = {
        .reception_threshold = 0.5, .admission_threshold = 0.8, .compaction_margin = 1.5, .min_workers = 1,
};

static BurstReading reading(BurstStatus status, int culprit, const char *reason) {
        BurstReading b = { .status = status, .culprit = culprit, .since = T0 };

        snprintf(b.reason, sizeof b.reason, "%s", reason);
        return b;
}

static void test_policy_scale_up_burst(void **state) {
        PolicyWorker one[] = { { .id = 1, .reception = true, .routable = true, .freshness = FRESHNESS_FRESH,
                                 .occupancy = 0.2 } };
        PolicyWorker in_flight[] = { FRESH(1, 0.2), { .id = 2, .routable = false, .freshness = FRESHNESS_NEW } };
        PolicyInput in = { .workers = one, .n_workers = 1, .mem_available = UINT64_MAX, .now = T0 };
        BurstReading sustained = reading(BURST_SUSTAINED, -1, "burst: w1 waiting 12/8 (executor queue 12) for 1.5s");
        PolicyParams capped = policy, memory = policy;
        Decision d;

        /* the smoothed window reads room (0.2 < 0.5): the burst path alone wants the worker */
        policy_scale_up(&in, &policy, &d);
        assert_int_equal(d.kind, DECISION_NONE);
        policy_scale_up_burst(&in, &policy, &sustained, &d);
        assert_int_equal(d.kind, DECISION_SPAWN);
        assert_reason(d.reason, "burst: w1 waiting 12/8");

        /* max_workers reached: refused, saying what was wanted */
        capped.max_workers = 1;
        policy_scale_up(&in, &capped, &d);
        policy_scale_up_burst(&in, &capped, &sustained, &d);
        assert_int_equal(d.kind, DECISION_REFUSED);
        assert_reason(d.reason, "max_workers=1 reached; wanted: burst: w1");

        /* min_free_memory */
        memory.min_free_memory = 1 << 30;
        in.mem_available = 1 << 20;
        policy_scale_up(&in, &memory, &d);
        policy_scale_up_burst(&in, &memory, &sustained, &d);
        assert_int_equal(d.kind, DECISION_REFUSED);
        assert_reason(d.reason, "min_free_memory");
        in.mem_available = UINT64_MAX;

        /* rising, calm or off: nothing */
        for (BurstStatus s = BURST_OFF; s <= BURST_RISING; s++) {
                BurstReading b = reading(s, -1, "x");
                policy_scale_up(&in, &policy, &d);
                policy_scale_up_burst(&in, &policy, &b, &d);
                assert_int_equal(d.kind, DECISION_NONE);
        }

        /* held: the decision holds on the culprit, since its last current reading */
        BurstReading held = reading(BURST_HELD, 1, "burst held: w1 executor queue not current for 7s");
        policy_scale_up(&in, &policy, &d);
        policy_scale_up_burst(&in, &policy, &held, &d);
        assert_int_equal(d.kind, DECISION_HELD);
        assert_int_equal(d.worker, 1);
        assert_int_equal(d.since, T0);
        assert_reason(d.reason, "burst held: w1");

        /* a spawn in flight: one at a time, the burst waits with everything else */
        in.workers = in_flight;
        in.n_workers = 2;
        policy_scale_up(&in, &policy, &d);
        assert_int_equal(d.kind, DECISION_WAIT);
        policy_scale_up_burst(&in, &policy, &sustained, &d);
        assert_int_equal(d.kind, DECISION_WAIT);
}

static void test_burst_status_strings(void **state) {
        for (BurstStatus s = 0; s < _BURST_STATUS_MAX; s++)
                assert_int_equal(burst_status_from_string(burst_status_to_string(s)), s);
        assert_int_equal(burst_status_from_string("bogus"), _BURST_STATUS_INVALID);
        assert_null(burst_signal_to_string(_BURST_SIGNAL_MAX));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_burst_assess_scenarios),
                cmocka_unit_test(test_burst_assess_off_and_empty),
                cmocka_unit_test(test_burst_assess_unsampled_worker),
                cmocka_unit_test(test_burst_observe_gap_restarts),
                cmocka_unit_test(test_burst_observe_signals_add),
                cmocka_unit_test(test_burst_track_sustained),
                cmocka_unit_test(test_policy_scale_up_burst),
                cmocka_unit_test(test_burst_status_strings),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
