/* SPDX-License-Identifier: MIT */
/* DECIDE, by tables of hand-made pools: scale-up and its guards, the capacity ledger on the seed's
 * example, compaction and its holds, placement and admission; and on every pool of every table, the
 * fast path the capacity shell takes (the pool summary proving "nothing to do") agrees with them. Reasons are checked for the worker names
 * and numbers a reader needs to replay a journal line by hand. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "policy.h"

#define EPS  1e-9
#define S(x) ((usec_t) (x) *USEC_PER_SEC)
#define NOW  S(100)

#define assert_near(a, b) assert_near_at((a), (b), #a, __FILE__, __LINE__)
static void assert_near_at(double a, double b, const char *what, const char *file, int line) {
        if (fabs(a - b) > EPS) {
                print_error("%s = %.12g, expected %.12g\n", what, a, b);
                _fail(file, line);
        }
}

#define assert_reason(d, needle) assert_reason_at((d), (needle), __FILE__, __LINE__)
static void assert_reason_at(const Decision *d, const char *needle, const char *file, int line) {
        if (!strstr(d->reason, needle)) {
                print_error("reason \"%s\" lacks \"%s\"\n", d->reason, needle);
                _fail(file, line);
        }
}

#define assert_kind(d, k) assert_kind_at((d), (k), __FILE__, __LINE__)
static void assert_kind_at(const Decision *d, DecisionKind k, const char *file, int line) {
        if (d->kind != k) {
                print_error("decision %s (\"%s\"), expected %s\n", decision_kind_to_string(d->kind),
                            d->reason, decision_kind_to_string(k));
                _fail(file, line);
        }
}

/* The reception, a routable fresh worker, and the other states a worker can be in. */
#define RECEPTION(i, occ) \
        { .id = (i), .reception = true, .routable = true, .freshness = FRESHNESS_FRESH, .occupancy = (occ) }
#define FRESH(i, occ) \
        { .id = (i), .routable = true, .freshness = FRESHNESS_FRESH, .occupancy = (occ) }
#define USERS(i, occ, u) \
        { .id = (i), .routable = true, .freshness = FRESHNESS_FRESH, .occupancy = (occ), .users = (u) }
#define NEWW(i) \
        { .id = (i), .routable = true, .freshness = FRESHNESS_NEW, .since = S(97) }
#define STALE(i, occ) \
        { .id = (i), .routable = true, .freshness = FRESHNESS_STALE, .since = S(83), .occupancy = (occ) }
#define MISSING(i, occ)                                                                      \
        {                                                                                    \
                .id = (i), .routable = true, .freshness = FRESHNESS_MISSING, .since = S(90), \
                .missing = "cpu,memory", .occupancy = (occ)                                  \
        }
#define NOCHAN(i) \
        { .id = (i), .routable = true, .freshness = FRESHNESS_NO_CHANNEL, .since = S(88) }
#define INFLIGHT(i) \
        { .id = (i), .routable = false, .freshness = FRESHNESS_NEW, .since = S(99) }
#define RETIRING(i, occ) \
        { .id = (i), .routable = true, .retiring = true, .freshness = FRESHNESS_FRESH, .occupancy = (occ) }

static const PolicyParams defaults = {
        .reception_threshold = 0.5,
        .admission_threshold = 0.8,
        .compaction_margin = 1.5,
        .min_workers = 1,
        .max_workers = 0,
        .min_free_memory = 0,
};

static PolicyInput input(const PolicyWorker *w, size_t n) {
        return (PolicyInput){.workers = w, .n_workers = n, .mem_available = UINT64_MAX, .now = NOW};
}
#define INPUT(arr) input((arr), ELEMENTSOF(arr))

/* The policies, with their fast path checked on every pool of every table: when the summary of the pool
 * says "surely none" (what the capacity shell then skips the walk for), the policy must decide NONE. */
static void check_fast_path(const PolicyInput *in, const PolicyParams *p, bool surely_none, const Decision *d,
                            const char *which) {
        if (surely_none && d->kind != DECISION_NONE)
                fail_msg("the summary says %s surely decides none, the policy decides %s (\"%s\")", which,
                         decision_kind_to_string(d->kind), d->reason);
}

static void decide_scale_up(const PolicyInput *in, const PolicyParams *p, Decision *ret) {
        PolicySummary s;

        policy_scale_up(in, p, ret);
        policy_summarize(in, p, &s);
        check_fast_path(in, p, policy_scale_up_surely_none(&s, p), ret, "scale-up");
}

static void decide_compaction(const PolicyInput *in, const PolicyParams *p, Decision *ret) {
        PolicySummary s;

        policy_compaction(in, p, ret);
        policy_summarize(in, p, &s);
        check_fast_path(in, p, policy_compaction_surely_none(&s, p), ret, "compaction");
}

static void test_freshness_to_string(void **state) {
        assert_string_equal(freshness_to_string(FRESHNESS_FRESH), "fresh");
        assert_string_equal(freshness_to_string(FRESHNESS_NEW), "new");
        assert_string_equal(freshness_to_string(FRESHNESS_STALE), "stale");
        assert_string_equal(freshness_to_string(FRESHNESS_MISSING), "missing");
        assert_string_equal(freshness_to_string(FRESHNESS_NO_CHANNEL), "no-channel");
        assert_null(freshness_to_string(_FRESHNESS_MAX));
        assert_null(freshness_to_string(_FRESHNESS_INVALID));
}

static void test_decision_kind_to_string(void **state) {
        static const char *const names[] = {"none", "spawn",   "retire", "wait-moves",
                                            "wait", "refused", "held"};

        assert_int_equal(ELEMENTSOF(names), _DECISION_KIND_MAX);
        for (DecisionKind k = 0; k < _DECISION_KIND_MAX; k++)
                assert_string_equal(decision_kind_to_string(k), names[k]);
        assert_null(decision_kind_to_string(_DECISION_KIND_MAX));
        assert_null(decision_kind_to_string(_DECISION_KIND_INVALID));
}

/* ---- scale-up ---- */

static void test_policy_scale_up_group_of_one(void **state) {
        static const struct {
                double occupancy;
                DecisionKind expect;
                const char *reason;
        } cases[] = {
                {0.0, DECISION_NONE, "w1 at 0.000 < reception_threshold=0.500"},
                {0.49, DECISION_NONE, "w1 at 0.490 < reception_threshold=0.500"},
                {0.5, DECISION_SPAWN, "w1 at 0.500 >= reception_threshold=0.500"},
                {0.93, DECISION_SPAWN, "w1 at 0.930 >= reception_threshold=0.500"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                PolicyWorker w[] = {RECEPTION(1, cases[i].occupancy)};
                PolicyInput in = INPUT(w);
                Decision d;

                decide_scale_up(&in, &defaults, &d);
                assert_kind(&d, cases[i].expect);
                assert_reason(&d, cases[i].reason);
                assert_int_equal(d.worker, -1);
                assert_int_equal(d.ledger.n, 1);
                assert_near(d.ledger.capacity, 0.5);
        }
}

/* A group of one counts non-retiring workers: the reception with a retiring peer is alone. */
static void test_policy_scale_up_group_of_one_with_retiring(void **state) {
        const PolicyWorker w[] = {RECEPTION(1, 0.7), RETIRING(2, 0.1)};
        PolicyInput in = INPUT(w);
        Decision d;

        decide_scale_up(&in, &defaults, &d);
        assert_kind(&d, DECISION_SPAWN);
        assert_reason(&d, "sole worker w1 at 0.700");
}

static void test_policy_scale_up_min_workers_floor(void **state) {
        PolicyParams p = defaults;
        Decision d;

        p.min_workers = 3;
        {
                /* floor first, whatever the readings say */
                const PolicyWorker w[] = {RECEPTION(1, 0.0), STALE(2, 0.0)};
                PolicyInput in = INPUT(w);

                decide_scale_up(&in, &p, &d);
                assert_kind(&d, DECISION_SPAWN);
                assert_reason(&d, "2 workers (2 routable, 0 in flight) under min_workers=3");
        }
        {
                /* a spawn in flight counts toward the floor, a retiring worker does not */
                const PolicyWorker w[] = {RECEPTION(1, 0.0), INFLIGHT(2), RETIRING(3, 0.0)};
                PolicyInput in = INPUT(w);

                decide_scale_up(&in, &p, &d);
                assert_kind(&d, DECISION_SPAWN);
                assert_reason(&d, "2 workers (1 routable, 1 in flight) under min_workers=3");
        }
        {
                /* the floor reached with one in flight: wait for it */
                const PolicyWorker w[] = {RECEPTION(1, 0.0), FRESH(2, 0.1), INFLIGHT(3)};
                PolicyInput in = INPUT(w);

                decide_scale_up(&in, &p, &d);
                assert_kind(&d, DECISION_WAIT);
        }
        {
                /* an empty group */
                PolicyInput in = input(NULL, 0);

                decide_scale_up(&in, &defaults, &d);
                assert_kind(&d, DECISION_SPAWN);
                assert_reason(&d, "0 workers (0 routable, 0 in flight) under min_workers=1");
                assert_int_equal(d.ledger.n, 0);
                assert_near(d.ledger.capacity, 0.0);
        }
}

static void test_policy_scale_up_spawn_in_flight_waits(void **state) {
        const PolicyWorker w[] = {RECEPTION(1, 0.95), FRESH(2, 0.9), INFLIGHT(3)};
        PolicyInput in = INPUT(w);
        Decision d;

        decide_scale_up(&in, &defaults, &d);
        assert_kind(&d, DECISION_WAIT);
        assert_int_equal(d.worker, 3);
        assert_reason(&d, "w3 spawn in flight");
}

static void test_policy_scale_up_max_workers_refused(void **state) {
        const PolicyWorker w[] = {RECEPTION(1, 0.6), FRESH(2, 0.85), FRESH(3, 0.9)};
        const PolicyWorker with_retiring[] = {RECEPTION(1, 0.6), FRESH(2, 0.85), RETIRING(3, 0.2)};
        PolicyParams p = defaults;
        PolicyInput in = INPUT(w);
        Decision d;

        p.max_workers = 3;
        decide_scale_up(&in, &p, &d);
        assert_kind(&d, DECISION_REFUSED);
        assert_reason(&d, "max_workers=3 reached");
        assert_reason(&d, "w2 0.850 w3 0.900");

        p.max_workers = 4;
        decide_scale_up(&in, &p, &d);
        assert_kind(&d, DECISION_SPAWN);

        /* a retiring worker is on its way out: it does not hold a place under max_workers */
        p.max_workers = 3;
        in = INPUT(with_retiring);
        decide_scale_up(&in, &p, &d);
        assert_kind(&d, DECISION_SPAWN);
}

static void test_policy_scale_up_memory_refused(void **state) {
        const PolicyWorker w[] = {RECEPTION(1, 0.7)};
        PolicyParams p = defaults;
        PolicyInput in = INPUT(w);
        Decision d;

        p.min_free_memory = 256ULL << 20;
        in.mem_available = 100ULL << 20;
        decide_scale_up(&in, &p, &d);
        assert_kind(&d, DECISION_REFUSED);
        assert_reason(&d, "MemAvailable=104857600 < min_free_memory=268435456");
        assert_reason(&d, "w1 at 0.700");

        in.mem_available = 256ULL << 20; /* exactly the minimum is enough */
        decide_scale_up(&in, &p, &d);
        assert_kind(&d, DECISION_SPAWN);

        in.mem_available = UINT64_MAX; /* unknown: no check */
        decide_scale_up(&in, &p, &d);
        assert_kind(&d, DECISION_SPAWN);

        /* the floor is refused the same way */
        in = input(NULL, 0);
        in.mem_available = 1;
        decide_scale_up(&in, &p, &d);
        assert_kind(&d, DECISION_REFUSED);
        assert_reason(&d, "under min_workers=1");
}

static void test_policy_scale_up_larger_group(void **state) {
        static const struct {
                const char *name;
                PolicyWorker w[4];
                size_t n;
                DecisionKind expect;
                const char *reason;
        } cases[] = {
                {"room on w3",
                 {RECEPTION(1, 0.9), FRESH(2, 0.85), FRESH(3, 0.4)},
                 3,
                 DECISION_NONE,
                 "w3 has room: 0.400 < admission_threshold=0.800"},
                {"least occupied room named",
                 {RECEPTION(1, 0.9), FRESH(2, 0.6), FRESH(3, 0.4), FRESH(4, 0.7)},
                 4,
                 DECISION_NONE,
                 "w3 has room"},
                {"all full",
                 {RECEPTION(1, 0.1), FRESH(2, 0.85), FRESH(3, 0.8)},
                 3,
                 DECISION_SPAWN,
                 "no worker under admission_threshold=0.800: w2 0.850 w3 0.800"},
                {"a new worker has room",
                 {RECEPTION(1, 0.9), FRESH(2, 0.85), NEWW(3)},
                 3,
                 DECISION_NONE,
                 "w3 has room: 0.000"},
                {"the reception does not count as room",
                 {RECEPTION(1, 0.0), FRESH(2, 0.95)},
                 2,
                 DECISION_SPAWN,
                 "w2 0.950"},
                /* room on a fresh worker answers whatever the stale one reads */
                {"room beside a stale worker",
                 {RECEPTION(1, 0.9), STALE(2, 0.0), FRESH(3, 0.3)},
                 3,
                 DECISION_NONE,
                 "w3 has room"},
                /* a stale reception plays no part in a larger group */
                {"stale reception ignored",
                 {{.id = 1, .reception = true, .routable = true, .freshness = FRESHNESS_STALE},
                  FRESH(2, 0.9)},
                 2,
                 DECISION_SPAWN,
                 "w2 0.900"},
                /* retiring workers are no room */
                {"retiring is no room",
                 {RECEPTION(1, 0.2), FRESH(2, 0.9), RETIRING(3, 0.1)},
                 3,
                 DECISION_SPAWN,
                 "w2 0.900"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                PolicyInput in = input(cases[i].w, cases[i].n);
                Decision d;

                decide_scale_up(&in, &defaults, &d);
                if (d.kind != cases[i].expect || !strstr(d.reason, cases[i].reason)) {
                        print_error("case '%s': %s \"%s\", expected %s \"%s\"\n", cases[i].name,
                                    decision_kind_to_string(d.kind), d.reason,
                                    decision_kind_to_string(cases[i].expect), cases[i].reason);
                        fail();
                }
        }
}

/* Without fresh room, a stale worker can be counted neither as having room nor as full: held. */
static void test_policy_scale_up_held_on_stale(void **state) {
        static const struct {
                const char *name;
                PolicyWorker w[4];
                size_t n;
                int culprit;
                usec_t since;
                const char *reason;
        } cases[] = {
                {"stale",
                 {RECEPTION(1, 0.2), FRESH(2, 0.9), STALE(3, 0.1)},
                 3,
                 3,
                 S(83),
                 "held: w3 no report for 17s"},
                {"missing",
                 {RECEPTION(1, 0.2), MISSING(2, 0.1), FRESH(3, 0.95)},
                 3,
                 2,
                 S(90),
                 "held: w2 report lacks cpu,memory for 10s"},
                {"no channel",
                 {RECEPTION(1, 0.2), NOCHAN(4), FRESH(3, 0.95)},
                 3,
                 4,
                 S(88),
                 "held: w4 channel closed 12s ago"},
                {"first of two named",
                 {RECEPTION(1, 0.2), STALE(2, 0.1), NOCHAN(3)},
                 3,
                 2,
                 S(83),
                 "held: w2 no report for 17s (2 unjudgeable"},
                {"sole worker stale",
                 {{.id = 1,
                   .reception = true,
                   .routable = true,
                   .freshness = FRESHNESS_STALE,
                   .since = S(40)}},
                 1,
                 1,
                 S(40),
                 "held: w1 no report for 1min 0s"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                PolicyInput in = input(cases[i].w, cases[i].n);
                Decision d;

                decide_scale_up(&in, &defaults, &d);
                if (d.kind != DECISION_HELD || d.worker != cases[i].culprit || d.since != cases[i].since ||
                    !strstr(d.reason, cases[i].reason)) {
                        print_error("case '%s': %s w%d since %llu \"%s\"\n", cases[i].name,
                                    decision_kind_to_string(d.kind), d.worker, (unsigned long long) d.since,
                                    d.reason);
                        fail();
                }
        }
}

/* The reason never overflows, even listing a thousand full workers. */
static void test_policy_scale_up_reason_truncated(void **state) {
        PolicyWorker w[1000];
        PolicyInput in;
        Decision d;

        for (size_t i = 0; i < ELEMENTSOF(w); i++)
                w[i] = (PolicyWorker) FRESH((unsigned) i + 1, 0.9);
        w[0].reception = true;
        in = INPUT(w);
        decide_scale_up(&in, &defaults, &d);
        assert_kind(&d, DECISION_SPAWN);
        assert_true(strlen(d.reason) < sizeof d.reason);
        assert_reason(&d, "w2 0.900 w3 0.900");
        assert_string_equal(d.reason + strlen(d.reason) - 3, "...");
}

/* ---- the capacity ledger ---- */

/* The seed's example: 4 workers, C = 2.9; O = 2.3 leaves nothing to do, O = 1.5 compacts. */
static void test_policy_ledger_seed_example(void **state) {
        const PolicyWorker busy[] = {RECEPTION(1, 0.4), FRESH(2, 0.7), FRESH(3, 0.6), FRESH(4, 0.6)};
        const PolicyWorker idle[] = {RECEPTION(1, 0.1), FRESH(2, 0.5), FRESH(3, 0.4), FRESH(4, 0.5)};
        PolicyInput in = INPUT(busy);
        Ledger l;

        policy_ledger(&in, &defaults, &l);
        assert_int_equal(l.n, 4);
        assert_near(l.capacity, 2.9);
        assert_near(l.occupied, 2.3);
        assert_near(l.headroom, 0.6);
        assert_near(l.threshold, 1.2);
        assert_false(l.headroom > l.threshold);

        in = INPUT(idle);
        policy_ledger(&in, &defaults, &l);
        assert_near(l.capacity, 2.9);
        assert_near(l.occupied, 1.5);
        assert_near(l.headroom, 1.4);
        assert_true(l.headroom > l.threshold);
}

/* After retiring one, its users land on the survivors: n drops, O does not, H stays > 0.4. */
static void test_policy_ledger_after_retire(void **state) {
        const PolicyWorker retiring[] = {RECEPTION(1, 0.1), FRESH(2, 0.5), RETIRING(3, 0.4), FRESH(4, 0.5)};
        const PolicyWorker moved[] = {RECEPTION(1, 0.1), FRESH(2, 0.7), FRESH(4, 0.7)};
        PolicyInput in = INPUT(retiring);
        Ledger l;

        policy_ledger(&in, &defaults, &l);
        assert_int_equal(l.n, 3);
        assert_near(l.capacity, 2.1);
        assert_near(l.occupied, 1.5);
        assert_near(l.headroom, 0.6);
        assert_true(l.headroom > (defaults.compaction_margin - 1) * defaults.admission_threshold);

        in = INPUT(moved);
        policy_ledger(&in, &defaults, &l);
        assert_int_equal(l.n, 3);
        assert_near(l.headroom, 0.6);
        assert_true(l.headroom > 0.4);
        assert_false(l.headroom > l.threshold); /* no second compaction: no flapping */
}

/* Workers in flight are not in the ledger: no reading, no capacity yet. */
static void test_policy_ledger_ignores_in_flight(void **state) {
        const PolicyWorker w[] = {RECEPTION(1, 0.3), INFLIGHT(2)};
        PolicyInput in = INPUT(w);
        Ledger l;

        policy_ledger(&in, &defaults, &l);
        assert_int_equal(l.n, 1);
        assert_near(l.capacity, 0.5);
        assert_near(l.occupied, 0.3);
}

/* ---- compaction ---- */

static void test_policy_compaction_seed_example(void **state) {
        const PolicyWorker busy[] = {RECEPTION(1, 0.4), FRESH(2, 0.7), FRESH(3, 0.6), FRESH(4, 0.6)};
        const PolicyWorker idle[] = {RECEPTION(1, 0.1), FRESH(2, 0.5), FRESH(3, 0.4), FRESH(4, 0.5)};
        const PolicyWorker after[] = {RECEPTION(1, 0.1), FRESH(2, 0.7), FRESH(4, 0.7)};
        PolicyInput in = INPUT(busy);
        Decision d;

        decide_compaction(&in, &defaults, &d);
        assert_kind(&d, DECISION_NONE);
        assert_int_equal(d.worker, -1);
        assert_reason(&d, "H=0.600 <= 1.200 (C=2.900 O=2.300 n=4 margin=1.50)");
        assert_near(d.ledger.capacity, 2.9);

        /* the reception (0.1) is the least occupied, and never the one compacted */
        in = INPUT(idle);
        decide_compaction(&in, &defaults, &d);
        assert_kind(&d, DECISION_RETIRE);
        assert_int_equal(d.worker, 3);
        assert_reason(&d, "retire w3 (occupancy 0.400, no users): H=1.400 > 1.200 (C=2.900 O=1.500 n=4");
        assert_near(d.ledger.headroom, 1.4);

        in = INPUT(after);
        decide_compaction(&in, &defaults, &d);
        assert_kind(&d, DECISION_NONE);
        assert_near(d.ledger.headroom, 0.6);
}

static void test_policy_compaction_with_users_waits_for_moves(void **state) {
        const PolicyWorker w[] = {RECEPTION(1, 0.1), USERS(2, 0.5, 2), USERS(3, 0.4, 4), USERS(4, 0.5, 1)};
        PolicyInput in = INPUT(w);
        Decision d;

        decide_compaction(&in, &defaults, &d);
        assert_kind(&d, DECISION_WAIT_MOVES);
        assert_int_equal(d.worker, 3);
        assert_reason(&d, "w3 has 4 users: they move off it first");
        assert_reason(&d, "H=1.400 > 1.200");
}

/* A drain under way (w3 retiring, its users moving): it goes on while the survivors stay under their
 * thresholds (H > 0; it began with H > (margin - 1) x admission = 0.4); it stops on load that rose, a
 * growing pool, the min_workers floor, or a drained worker that is gone; it is held on any reading not
 * fresh. */
static void test_policy_drain_check(void **state) {
        static const struct {
                const char *name;
                PolicyWorker w[4];
                size_t n;
                uint32_t min_workers;
                DecisionKind kind;
                const char *reason;
        } cases[] = {
                { "survivors keep room", { RECEPTION(1, 0.1), FRESH(2, 0.3), RETIRING(3, 0.2) }, 3, 1,
                  DECISION_WAIT_MOVES, "w3 drains: without it H=0.700 > 0" },
                { "in the band", { RECEPTION(1, 0.4), FRESH(2, 0.5), RETIRING(3, 0.1) }, 3, 1,
                  DECISION_WAIT_MOVES, "without it H=0.300 > 0" },
                { "the load rose", { RECEPTION(1, 0.5), FRESH(2, 0.75), RETIRING(3, 0.1) }, 3, 1,
                  DECISION_NONE, "the load rose: without w3 H=-0.050 <= 0" },
                { "a spawn in flight", { RECEPTION(1, 0.1), FRESH(2, 0.1), RETIRING(3, 0.1), INFLIGHT(4) },
                  4, 1, DECISION_NONE, "the pool grows: w4 spawn in flight" },
                { "a stale survivor", { RECEPTION(1, 0.1), STALE(2, 0.1), RETIRING(3, 0.1) }, 3, 1,
                  DECISION_HELD, "held: w2" },
                { "the drained worker's own reading",
                  { RECEPTION(1, 0.1), FRESH(2, 0.1),
                    { .id = 3, .routable = true, .retiring = true, .freshness = FRESHNESS_MISSING,
                      .since = S(90), .missing = "cpu" } },
                  3, 1, DECISION_HELD, "held: w3" },
                { "under the floor", { RECEPTION(1, 0.1), FRESH(2, 0.1), RETIRING(3, 0.1) }, 3, 3,
                  DECISION_NONE, "under min_workers=3" },
                { "gone", { RECEPTION(1, 0.1), FRESH(2, 0.1) }, 2, 1, DECISION_NONE,
                  "w3 cannot be drained" },
                { "onto the reception alone", { RECEPTION(1, 0.05), RETIRING(3, 0.0) }, 2, 1,
                  DECISION_WAIT_MOVES, "H=0.450 > 0" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                PolicyParams p = defaults;
                PolicyInput in = input(cases[i].w, cases[i].n);
                Decision d;

                p.min_workers = cases[i].min_workers;
                policy_drain_check(&in, &p, 3, &d);
                if (d.kind != cases[i].kind || !strstr(d.reason, cases[i].reason))
                        fail_msg("%s: %s \"%s\", want %s \"%s\"", cases[i].name,
                                 decision_kind_to_string(d.kind), d.reason,
                                 decision_kind_to_string(cases[i].kind), cases[i].reason);
        }
}

/* A drain's target is admission's pick, but not the worker the next compaction takes while the
 * survivors' ledger still calls for one and another worker has room: users do not hop from drain to
 * drain. */
static void test_policy_drain_target(void **state) {
        const PolicyWorker more[] = {RECEPTION(1, 0.05), FRESH(2, 0.1), FRESH(3, 0.3), RETIRING(4, 0.0),
                                     FRESH(5, 0.2)};
        const PolicyWorker last[] = {RECEPTION(1, 0.05), FRESH(2, 0.1), FRESH(3, 0.81), RETIRING(4, 0.0)};
        const PolicyWorker settled[] = {RECEPTION(1, 0.4), FRESH(2, 0.3), FRESH(3, 0.6), RETIRING(4, 0.0)};
        PolicyParams p = defaults;
        PolicyInput in = INPUT(more);
        bool over = true;

        /* C = 2.9, O = 0.65: another compaction follows, of w2 (the least occupied): w5 instead */
        assert_int_equal(in.workers[policy_drain_target(&in, &p, &over)].id, 5);
        assert_false(over);
        /* the next victim is the only one with room: it is still the target */
        p.compaction_margin = 1.0;
        in = INPUT(last);
        assert_int_equal(in.workers[policy_drain_target(&in, &p, &over)].id, 2);
        assert_false(over);
        /* no further compaction on the ledger (H = 0.6): admission's pick, the least occupied */
        p = defaults;
        in = INPUT(settled);
        assert_int_equal(in.workers[policy_drain_target(&in, &p, &over)].id, 2);
}

/* The ledger's promise, on random pools: whatever compaction picks is never the reception, and once
 * that worker is gone and its load sits on the survivors (O unchanged, one worker fewer), H stays over
 * (margin - 1) x admission_threshold = 0.4: the survivors never come out of it short of room. The drain
 * check agrees with the pick (it would go on). */
static void test_policy_compaction_ledger_property(void **state) {
        uint64_t x = 0x2545f4914f6cdd1dULL;
        unsigned picked = 0;

        for (unsigned round = 0; round < 20000; round++) {
                PolicyWorker w[12], after[12];
                size_t n, k = 0;
                PolicyParams p = defaults;
                PolicyInput in;
                Decision d, check;
                Ledger l;

                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                n = 1 + x % ELEMENTSOF(w);
                p.min_workers = 1 + (uint32_t) ((x >> 8) % 3);
                for (size_t i = 0; i < n; i++) {
                        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                        w[i] = (PolicyWorker) { .id = (unsigned) i + 1, .reception = i == 0,
                                                .routable = true,
                                                .freshness = FRESHNESS_FRESH,
                                                .occupancy = (double) (x % 1001) / 1000.0,
                                                .users = (uint32_t) ((x >> 16) % 3) };
                }
                in = input(w, n);
                policy_compaction(&in, &p, &d);
                if (d.kind != DECISION_RETIRE && d.kind != DECISION_WAIT_MOVES)
                        continue;
                picked++;
                assert_true(d.worker > 1); /* never the reception (w1) */
                assert_true(n > p.min_workers);

                /* the drain's view: the picked worker retiring */
                for (size_t i = 0; i < n; i++) {
                        after[i] = w[i];
                        after[i].retiring = (int) w[i].id == d.worker;
                }
                in = input(after, n);
                policy_drain_check(&in, &p, (unsigned) d.worker, &check);
                assert_int_equal(check.kind, DECISION_WAIT_MOVES);

                /* done: the worker gone, its load on the survivors */
                double moved = 0;
                for (size_t i = 0; i < n; i++)
                        if ((int) w[i].id == d.worker)
                                moved = w[i].occupancy;
                for (size_t i = 0; i < n; i++)
                        if ((int) w[i].id != d.worker)
                                after[k++] = w[i];
                after[k - 1].occupancy += moved;
                in = input(after, k);
                policy_ledger(&in, &p, &l);
                if (!(l.headroom > 0.4 - EPS))
                        fail_msg("round %u: %zu workers, compaction of w%d leaves H=%.4f", round, n,
                                 d.worker, l.headroom);
        }
        assert_true(picked > 1000); /* the property was put to the test */
}

/* Ties go to the newest; the reception is never picked even when it alone is idle. */
static void test_policy_compaction_picks_least_occupied(void **state) {
        const PolicyWorker tie[] = {RECEPTION(1, 0.0), FRESH(2, 0.1), FRESH(3, 0.1), FRESH(4, 0.2)};
        const PolicyWorker only_reception_idle[] = {RECEPTION(1, 0.0), FRESH(2, 0.3), FRESH(3, 0.35)};
        PolicyInput in = INPUT(tie);
        Decision d;

        decide_compaction(&in, &defaults, &d);
        assert_kind(&d, DECISION_RETIRE);
        assert_int_equal(d.worker, 3);

        in = INPUT(only_reception_idle);
        decide_compaction(&in, &defaults, &d);
        assert_kind(&d, DECISION_RETIRE);
        assert_int_equal(d.worker, 2);
}

static void test_policy_compaction_held_when_not_fresh(void **state) {
        static const struct {
                const char *name;
                PolicyWorker w[4];
                int culprit;
                const char *reason;
        } cases[] = {
                {"stale",
                 {RECEPTION(1, 0.1), FRESH(2, 0.1), STALE(3, 0.0), FRESH(4, 0.1)},
                 3,
                 "held: w3 no report for 17s"},
                {"missing",
                 {RECEPTION(1, 0.1), MISSING(2, 0.0), FRESH(3, 0.1), FRESH(4, 0.1)},
                 2,
                 "held: w2 report lacks cpu,memory for 10s"},
                {"new has not reported",
                 {RECEPTION(1, 0.1), FRESH(2, 0.1), FRESH(3, 0.1), NEWW(4)},
                 4,
                 "held: w4 has not reported yet (routable for 3s)"},
                {"no channel",
                 {RECEPTION(1, 0.1), FRESH(2, 0.1), NOCHAN(3), FRESH(4, 0.1)},
                 3,
                 "held: w3 channel closed 12s ago"},
                {"the reception counts too",
                 {{.id = 1,
                   .reception = true,
                   .routable = true,
                   .freshness = FRESHNESS_STALE,
                   .since = S(83)},
                  FRESH(2, 0.1),
                  FRESH(3, 0.1),
                  FRESH(4, 0.1)},
                 1,
                 "held: w1 no report for 17s"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                PolicyInput in = input(cases[i].w, 4);
                Decision d;

                decide_compaction(&in, &defaults, &d);
                if (d.kind != DECISION_HELD || d.worker != cases[i].culprit ||
                    !strstr(d.reason, cases[i].reason)) {
                        print_error("case '%s': %s w%d \"%s\"\n", cases[i].name,
                                    decision_kind_to_string(d.kind), d.worker, d.reason);
                        fail();
                }
                assert_int_equal(d.ledger.n, 4); /* the ledger is filled even when held */
        }
}

static void test_policy_compaction_waits_while_retiring_or_spawning(void **state) {
        const PolicyWorker retiring[] = {RECEPTION(1, 0.0), FRESH(2, 0.0), FRESH(3, 0.0), RETIRING(4, 0.0)};
        const PolicyWorker spawning[] = {RECEPTION(1, 0.0), FRESH(2, 0.0), FRESH(3, 0.0), INFLIGHT(4)};
        PolicyInput in = INPUT(retiring);
        Decision d;

        decide_compaction(&in, &defaults, &d);
        assert_kind(&d, DECISION_WAIT);
        assert_int_equal(d.worker, 4);
        assert_reason(&d, "w4 is retiring");

        in = INPUT(spawning);
        decide_compaction(&in, &defaults, &d);
        assert_kind(&d, DECISION_WAIT);
        assert_reason(&d, "w4 spawn in flight");
}

static void test_policy_compaction_min_workers_floor(void **state) {
        const PolicyWorker w[] = {RECEPTION(1, 0.0), FRESH(2, 0.0), FRESH(3, 0.0)};
        const PolicyWorker sole[] = {RECEPTION(1, 0.0)};
        PolicyParams p = defaults;
        PolicyInput in = INPUT(w);
        Decision d;

        p.min_workers = 3;
        decide_compaction(&in, &p, &d);
        assert_kind(&d, DECISION_NONE);
        assert_reason(&d, "n=3 at min_workers=3");
        assert_true(d.ledger.headroom > d.ledger.threshold);

        p.min_workers = 2;
        decide_compaction(&in, &p, &d);
        assert_kind(&d, DECISION_RETIRE);
        assert_int_equal(d.worker, 3);

        in = INPUT(sole);
        decide_compaction(&in, &defaults, &d);
        assert_kind(&d, DECISION_NONE);
}

/* ---- placement and admission ---- */

static void test_policy_place_reception_keeps_under_threshold(void **state) {
        const PolicyWorker w[] = {RECEPTION(1, 0.49), FRESH(2, 0.2)};
        PolicyInput in = INPUT(w);
        bool over = true;

        assert_int_equal(policy_place(&in, &defaults, 0, &over), 0);
        assert_false(over);
}

static void test_policy_place_reception_passes_over_threshold(void **state) {
        const PolicyWorker w[] = {RECEPTION(1, 0.5), FRESH(2, 0.6), FRESH(3, 0.3)};
        PolicyInput in = INPUT(w);
        bool over = true;

        assert_int_equal(policy_place(&in, &defaults, 0, &over), 2);
        assert_false(over);
}

/* A saturated worker (the burst path sees requests queue for it now) keeps no new user and admits none
 * while another has room, whatever its smoothed occupancy says; with no other, the fallbacks stand. */
static void test_policy_place_saturated_passes_on(void **state) {
        PolicyWorker w[] = {RECEPTION(1, 0.1), FRESH(2, 0.1), FRESH(3, 0.3)};
        PolicyInput in = INPUT(w);
        bool over = true;

        w[0].saturated = true;
        assert_int_equal(policy_place(&in, &defaults, 0, &over), 1);
        assert_false(over);
        w[1].saturated = true;
        assert_int_equal(policy_place(&in, &defaults, 0, &over), 2);
        assert_false(over);
        w[2].saturated = true; /* all saturated: the last one, over (the burst path grows the pool) */
        assert_int_equal(policy_place(&in, &defaults, 0, &over), 2);
        assert_true(over);
        /* the sole worker keeps, saturated or not */
        in.n_workers = 1;
        assert_int_equal(policy_place(&in, &defaults, 0, &over), 0);
        assert_false(over);
}

static void test_policy_place_sole_worker_keeps(void **state) {
        const PolicyWorker w[] = {RECEPTION(1, 0.99)};
        const PolicyWorker stale[] = {
                {.id = 1, .reception = true, .routable = true, .freshness = FRESHNESS_STALE}};
        const PolicyWorker with_others[] = {RECEPTION(1, 0.99), INFLIGHT(2), RETIRING(3, 0.0)};
        PolicyInput in = INPUT(w);
        bool over = true;

        assert_int_equal(policy_place(&in, &defaults, 0, &over), 0);
        assert_false(over);
        in = INPUT(stale);
        assert_int_equal(policy_place(&in, &defaults, 0, &over), 0);
        in = INPUT(with_others);
        assert_int_equal(policy_place(&in, &defaults, 0, &over), 0);
        /* a user logging in on the retiring worker lands on the sole one */
        assert_int_equal(policy_place(&in, &defaults, 2, &over), 0);
}

static void test_policy_place_kept_users_stay(void **state) {
        const PolicyWorker w[] = {RECEPTION(1, 0.1), FRESH(2, 0.95), FRESH(3, 0.1)};
        PolicyInput in = INPUT(w);
        bool over = true;

        assert_int_equal(policy_place(&in, &defaults, 1, &over), 1);
        assert_false(over);
        assert_int_equal(policy_place(&in, &defaults, 1, NULL), 1);
}

/* A user on a worker that takes no more users is placed reception-first. */
static void test_policy_place_from_retiring(void **state) {
        const PolicyWorker w[] = {RECEPTION(1, 0.1), RETIRING(2, 0.3), FRESH(3, 0.2)};
        const PolicyWorker busy_reception[] = {RECEPTION(1, 0.7), RETIRING(2, 0.3), FRESH(3, 0.2)};
        PolicyInput in = INPUT(w);

        assert_int_equal(policy_place(&in, &defaults, 1, NULL), 0);
        in = INPUT(busy_reception);
        assert_int_equal(policy_place(&in, &defaults, 1, NULL), 2);
}

/* A reception whose reading is unknown could be full: it passes the user on. */
static void test_policy_place_stale_reception_passes(void **state) {
        const PolicyWorker w[] = {
                {.id = 1, .reception = true, .routable = true, .freshness = FRESHNESS_STALE}, FRESH(2, 0.3)};
        const PolicyWorker new_reception[] = {
                {.id = 1, .reception = true, .routable = true, .freshness = FRESHNESS_NEW}, FRESH(2, 0.3)};
        PolicyInput in = INPUT(w);

        assert_int_equal(policy_place(&in, &defaults, 0, NULL), 1);
        in = INPUT(new_reception);
        assert_int_equal(policy_place(&in, &defaults, 0, NULL), 0); /* NEW reads 0.0 and admits */
}

static void test_policy_place_errors(void **state) {
        const PolicyWorker none_routable[] = {INFLIGHT(1), RETIRING(2, 0.1)};
        PolicyInput in = INPUT(none_routable);

        assert_int_equal(policy_place(&in, &defaults, 0, NULL), -ENOENT);
        assert_int_equal(policy_place(&in, &defaults, 2, NULL), -EINVAL);
        in = input(NULL, 0);
        assert_int_equal(policy_place(&in, &defaults, 0, NULL), -EINVAL);
}

static void test_policy_admit_min_under_threshold(void **state) {
        const PolicyWorker w[] = {RECEPTION(1, 0.0), FRESH(2, 0.6), FRESH(3, 0.3), FRESH(4, 0.9),
                                  FRESH(5, 0.3)};
        PolicyInput in = INPUT(w);
        bool over = true;

        assert_int_equal(policy_admit(&in, &defaults, &over), 2); /* the first of the tied minimum */
        assert_false(over);
}

static void test_policy_admit_none_under_takes_last(void **state) {
        const PolicyWorker w[] = {RECEPTION(1, 0.0), FRESH(2, 0.85), FRESH(3, 0.8), FRESH(4, 0.95),
                                  RETIRING(5, 0.1)};
        PolicyInput in = INPUT(w);
        bool over = false;

        assert_int_equal(policy_admit(&in, &defaults, &over), 3);
        assert_true(over);
}

static void test_policy_admit_skips_stale(void **state) {
        static const struct {
                const char *name;
                PolicyWorker w[4];
                size_t n;
                int expect;
                bool over;
        } cases[] = {
                {"stale idle skipped", {RECEPTION(1, 0.0), STALE(2, 0.0), FRESH(3, 0.5)}, 3, 2, false},
                {"missing skipped", {RECEPTION(1, 0.0), MISSING(2, 0.0), FRESH(3, 0.5)}, 3, 2, false},
                {"no channel skipped", {RECEPTION(1, 0.0), FRESH(2, 0.5), NOCHAN(3)}, 3, 1, false},
                {"new admits", {RECEPTION(1, 0.0), FRESH(2, 0.5), NEWW(3)}, 3, 2, false},
                {"a full fresh one beats a stale one",
                 {RECEPTION(1, 0.0), FRESH(2, 0.9), STALE(3, 0.0)},
                 3,
                 1,
                 true},
                {"only stale: the reception", {RECEPTION(1, 0.7), STALE(2, 0.0), NOCHAN(3)}, 3, 0, true},
                {"only stale, no reception: the last stale",
                 {{.id = 1, .reception = true, .routable = true, .retiring = true},
                  STALE(2, 0.0),
                  NOCHAN(3)},
                 3,
                 2,
                 true},
                {"reception alone", {RECEPTION(1, 0.2)}, 1, 0, true},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                PolicyInput in = input(cases[i].w, cases[i].n);
                bool over = !cases[i].over;
                int r;

                r = policy_admit(&in, &defaults, &over);
                if (r != cases[i].expect || over != cases[i].over) {
                        print_error("case '%s': %d over=%d, expected %d over=%d\n", cases[i].name, r, over,
                                    cases[i].expect, cases[i].over);
                        fail();
                }
        }
}

static void test_policy_admit_no_routable(void **state) {
        const PolicyWorker w[] = {INFLIGHT(1), RETIRING(2, 0.0)};
        PolicyInput in = INPUT(w);
        bool over = false;

        assert_int_equal(policy_admit(&in, &defaults, &over), -ENOENT);
        in = input(NULL, 0);
        assert_int_equal(policy_admit(&in, &defaults, NULL), -ENOENT);
}

/* ---- the fast path: what the summary proves ---- */

static void test_policy_fast_path_proves_a_steady_pool(void **state) {
        static const struct {
                const char *name;
                PolicyWorker w[4];
                size_t n;
                bool scale_up_none, compaction_none;
        } cases[] = {
                /* C = 2.1, O = 1.4, H = 0.7 < 1.2: nothing to do, and the summary shows it */
                { "steady", { RECEPTION(1, 0.3), FRESH(2, 0.5), FRESH(3, 0.6) }, 3, true, true },
                /* no room anywhere: scale-up must ask the policy (it spawns) */
                { "full", { RECEPTION(1, 0.3), FRESH(2, 0.9), FRESH(3, 0.85) }, 3, false, true },
                /* a stale worker: neither can be proven */
                { "stale", { RECEPTION(1, 0.3), FRESH(2, 0.5), STALE(3, 0.6) }, 3, true, false },
                /* H = 2.1 - 0.9 = 1.2: at the threshold, within rounding: ask the policy */
                { "at the threshold", { RECEPTION(1, 0.3), FRESH(2, 0.3), FRESH(3, 0.3) }, 3, true, false },
                /* a retire or a spawn under way: WAIT, never proven none */
                { "retiring", { RECEPTION(1, 0.3), FRESH(2, 0.5), RETIRING(3, 0.1) }, 3, true, false },
                { "in flight", { RECEPTION(1, 0.3), FRESH(2, 0.5), INFLIGHT(3) }, 3, false, false },
                /* the sole worker: scale-up is its occupancy against the reception threshold */
                { "sole", { RECEPTION(1, 0.1) }, 1, false, true },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                PolicyInput in = input(cases[i].w, cases[i].n);
                PolicySummary s;
                Decision d;

                policy_summarize(&in, &defaults, &s);
                if (policy_scale_up_surely_none(&s, &defaults) != cases[i].scale_up_none ||
                    policy_compaction_surely_none(&s, &defaults) != cases[i].compaction_none)
                        fail_msg("%s: surely none: scale-up %d, compaction %d; expected %d, %d", cases[i].name,
                                 policy_scale_up_surely_none(&s, &defaults),
                                 policy_compaction_surely_none(&s, &defaults), cases[i].scale_up_none,
                                 cases[i].compaction_none);
                /* and where it proves none, the policies agree */
                decide_scale_up(&in, &defaults, &d);
                decide_compaction(&in, &defaults, &d);
        }
}

/* The ledger of the summary is the policies' ledger: one formula. */
static void test_policy_ledger_of_matches_policy_ledger(void **state) {
        const PolicyWorker w[] = { RECEPTION(1, 0.4), FRESH(2, 0.2), FRESH(3, 0.1), RETIRING(4, 0.3), INFLIGHT(5) };
        PolicyInput in = INPUT(w);
        PolicySummary s;
        Ledger a, b;

        policy_ledger(&in, &defaults, &a);
        policy_summarize(&in, &defaults, &s);
        policy_ledger_of(s.n_active, s.occupied, &defaults, &b);
        assert_int_equal(a.n, 3);
        assert_int_equal(b.n, a.n);
        assert_near(b.capacity, a.capacity);
        assert_near(b.occupied, a.occupied);
        assert_near(b.occupied, 1.0); /* the retiring worker's load stays in O */
        assert_near(b.headroom, a.headroom);
        assert_near(b.threshold, a.threshold);
}

/* Request-rate scaling on top of occupancy: growth when either asks, shrinking only when both allow; a
 * rate not available holds (never read as low traffic), a window that restarted waits. */
static RateReading rate(RateStatus status, double total, unsigned serving, int culprit, const char *reason) {
        RateReading r = { .status = status, .total = total, .per_worker = serving ? total / serving : 0,
                          .serving = serving, .culprit = culprit, .length = S(30) };

        snprintf(r.reason, sizeof r.reason, "%s", reason ? reason : "");
        return r;
}

static void test_policy_rate_scale_up(void **state) {
        const PolicyWorker pool[] = { RECEPTION(1, 0.1), FRESH(2, 0.1) };
        PolicyInput in = INPUT(pool);
        PolicyParams p = defaults;
        RateReading r;
        Decision d;

        p.rps_target = 50;
        /* occupancy sees room; 120/s over 2 workers is 60/s each: over the target, a spawn */
        policy_scale_up(&in, &p, &d);
        assert_kind(&d, DECISION_NONE);
        r = rate(RATE_OK, 120, 2, -1, NULL);
        policy_scale_up_rate(&in, &p, &r, &d);
        assert_kind(&d, DECISION_SPAWN);
        assert_reason(&d, "rps 60.0/s per worker over 30s (2 serving) > rps_target=50");
        /* through the same guards */
        p.max_workers = 2;
        policy_scale_up(&in, &p, &d);
        policy_scale_up_rate(&in, &p, &r, &d);
        assert_kind(&d, DECISION_REFUSED);
        assert_reason(&d, "max_workers=2 reached; wanted: rps 60.0/s");
        p.max_workers = 0;
        /* at or under the target: nothing */
        policy_scale_up(&in, &p, &d);
        r = rate(RATE_OK, 100, 2, -1, NULL);
        policy_scale_up_rate(&in, &p, &r, &d);
        assert_kind(&d, DECISION_NONE);
        /* not available: held on its culprit, with the reason */
        r = rate(RATE_HELD, 0, 2, 2, "w2 no row for 7s");
        policy_scale_up_rate(&in, &p, &r, &d);
        assert_kind(&d, DECISION_HELD);
        assert_int_equal(d.worker, 2);
        assert_reason(&d, "rps held: w2 no row for 7s");
        /* a window that restarted waits: nothing is late */
        policy_scale_up(&in, &p, &d);
        r = rate(RATE_WAITING, 0, 2, -1, "the window restarted 3s ago");
        policy_scale_up_rate(&in, &p, &r, &d);
        assert_kind(&d, DECISION_NONE);
        /* off: occupancy alone */
        p.rps_target = 0;
        r = rate(RATE_HELD, 0, 2, 2, "w2 no row for 7s");
        policy_scale_up_rate(&in, &p, &r, &d);
        assert_kind(&d, DECISION_NONE);
}

static void test_policy_rate_compaction(void **state) {
        const PolicyWorker pool[] = { RECEPTION(1, 0.05), FRESH(2, 0.05), FRESH(3, 0.02) };
        PolicyInput in = INPUT(pool);
        PolicyParams p = defaults;
        RateReading r;
        Decision d;

        p.rps_target = 50;
        /* occupancy would retire w3; 90/s on 2 survivors is 45/s each > 40 (0.8 x 50): not allowed */
        policy_compaction(&in, &p, &d);
        assert_kind(&d, DECISION_RETIRE);
        r = rate(RATE_OK, 90, 3, -1, NULL);
        policy_compaction_rate(&in, &p, &r, &d);
        assert_kind(&d, DECISION_NONE);
        assert_reason(&d, "rps 90.0/s on 3 workers would be 45.0/s each on 2 > 40.0");
        /* 60/s: 30/s each after: both allow */
        policy_compaction(&in, &p, &d);
        r = rate(RATE_OK, 60, 3, -1, NULL);
        policy_compaction_rate(&in, &p, &r, &d);
        assert_kind(&d, DECISION_RETIRE);
        assert_int_equal(d.worker, 3);
        /* not available: held, the pool does not shrink on a missing measurement */
        policy_compaction(&in, &p, &d);
        r = rate(RATE_HELD, 0, 3, 2, "w2 no row for 7s");
        policy_compaction_rate(&in, &p, &r, &d);
        assert_kind(&d, DECISION_HELD);
        assert_reason(&d, "rps held: w2 no row for 7s");
        /* restarted: waits */
        policy_compaction(&in, &p, &d);
        r = rate(RATE_WAITING, 0, 3, -1, "the window restarted 3s ago");
        policy_compaction_rate(&in, &p, &r, &d);
        assert_kind(&d, DECISION_NONE);
        assert_reason(&d, "rps: the window restarted 3s ago");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_freshness_to_string),
                cmocka_unit_test(test_policy_drain_check),
                cmocka_unit_test(test_policy_drain_target),
                cmocka_unit_test(test_policy_compaction_ledger_property),
                cmocka_unit_test(test_decision_kind_to_string),
                cmocka_unit_test(test_policy_scale_up_group_of_one),
                cmocka_unit_test(test_policy_rate_scale_up),
                cmocka_unit_test(test_policy_rate_compaction),
                cmocka_unit_test(test_policy_scale_up_group_of_one_with_retiring),
                cmocka_unit_test(test_policy_scale_up_min_workers_floor),
                cmocka_unit_test(test_policy_scale_up_spawn_in_flight_waits),
                cmocka_unit_test(test_policy_scale_up_max_workers_refused),
                cmocka_unit_test(test_policy_scale_up_memory_refused),
                cmocka_unit_test(test_policy_scale_up_larger_group),
                cmocka_unit_test(test_policy_scale_up_held_on_stale),
                cmocka_unit_test(test_policy_scale_up_reason_truncated),
                cmocka_unit_test(test_policy_ledger_seed_example),
                cmocka_unit_test(test_policy_ledger_after_retire),
                cmocka_unit_test(test_policy_ledger_ignores_in_flight),
                cmocka_unit_test(test_policy_compaction_seed_example),
                cmocka_unit_test(test_policy_compaction_with_users_waits_for_moves),
                cmocka_unit_test(test_policy_compaction_picks_least_occupied),
                cmocka_unit_test(test_policy_compaction_held_when_not_fresh),
                cmocka_unit_test(test_policy_compaction_waits_while_retiring_or_spawning),
                cmocka_unit_test(test_policy_compaction_min_workers_floor),
                cmocka_unit_test(test_policy_place_reception_keeps_under_threshold),
                cmocka_unit_test(test_policy_place_reception_passes_over_threshold),
                cmocka_unit_test(test_policy_place_saturated_passes_on),
                cmocka_unit_test(test_policy_place_sole_worker_keeps),
                cmocka_unit_test(test_policy_place_kept_users_stay),
                cmocka_unit_test(test_policy_place_from_retiring),
                cmocka_unit_test(test_policy_place_stale_reception_passes),
                cmocka_unit_test(test_policy_place_errors),
                cmocka_unit_test(test_policy_admit_min_under_threshold),
                cmocka_unit_test(test_policy_admit_none_under_takes_last),
                cmocka_unit_test(test_policy_admit_skips_stale),
                cmocka_unit_test(test_policy_admit_no_routable),
                cmocka_unit_test(test_policy_fast_path_proves_a_steady_pool),
                cmocka_unit_test(test_policy_ledger_of_matches_policy_ledger),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
