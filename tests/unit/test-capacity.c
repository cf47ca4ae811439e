/* SPDX-License-Identifier: MIT */
/* The shell around the pure policies, on a Manager in memory with a test-driven clock
 * (manager-fixture.c): the PolicyInput it builds, the decisions it acts on (retire, wait for moves,
 * holds shown with their reasons, settling after a pool change), and the property that matters most:
 * the O(1) pool summary kept per report agrees with a full rebuild, so the fast path of
 * manager_check_capacity() never decides differently from the pure policies. That property is checked
 * after every report of long random sequences. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "frame.h"
#include "macro.h"
#include "manager-fixture.h"

static Manager *m;

static int setup(void **state) {
        m = fixture_manager_new();
        return 0;
}

static int teardown(void **state) {
        fixture_manager_free(m);
        m = NULL;
        return 0;
}

/* ---- the reference: the summary as policy.h defines it, from scratch ---- */

static PolicySummary reference_summary(void) {
        PolicySummary s = {};

        for (size_t i = 0; i < m->pool.n_workers; i++) {
                const Worker *w = m->pool.workers[i];
                bool routable = w->state == WORKER_ROUTABLE || w->state == WORKER_DRAINING;
                usec_t since;
                Freshness f;

                if (!worker_in_policy(w))
                        continue;
                f = capacity_freshness(&m->capacity, w, fixture_now, &since);
                s.n_policy++;
                s.n_in_flight += w->state == WORKER_STARTING || w->state == WORKER_PROBING;
                s.n_retiring += w->state == WORKER_DRAINING;
                s.n_active += w->state == WORKER_ROUTABLE;
                s.n_room += w->state == WORKER_ROUTABLE && w != m->pool.reception &&
                            (f == FRESHNESS_FRESH || f == FRESHNESS_NEW) &&
                            w->reading.occupancy.value < m->capacity.policy.admission_threshold;
                s.n_not_fresh += routable && f != FRESHNESS_FRESH;
                s.occupied += routable ? w->reading.occupancy.value : 0.0;
        }
        return s;
}

/* The summary the next check would use as it is (valid and not due for a rebuild) differs from the
 * reference: describes how into buf and returns false. */
static bool summary_agrees(char *buf, size_t size) {
        const PolicySummary *s = &m->capacity.summary;
        PolicySummary r;

        buf[0] = 0;
        if (!m->capacity.summary_valid || m->capacity.summary_generation != m->pool.generation ||
            fixture_now >= m->capacity.recheck_at)
                return true; /* the next check rebuilds it */
        r = reference_summary();
        if (s->n_policy == r.n_policy && s->n_in_flight == r.n_in_flight && s->n_retiring == r.n_retiring &&
            s->n_active == r.n_active && s->n_room == r.n_room && s->n_not_fresh == r.n_not_fresh &&
            fabs(s->occupied - r.occupied) < 1e-9)
                return true;
        snprintf(buf, size,
                 "at t=%llus: summary policy/in_flight/retiring/active/room/not_fresh = %u/%u/%u/%u/%u/%u "
                 "occupied %.4f, rebuilt %u/%u/%u/%u/%u/%u occupied %.4f (recheck_at %s)",
                 (unsigned long long) (fixture_now / USEC_PER_SEC), s->n_policy, s->n_in_flight, s->n_retiring,
                 s->n_active, s->n_room, s->n_not_fresh, s->occupied, r.n_policy, r.n_in_flight, r.n_retiring,
                 r.n_active, r.n_room, r.n_not_fresh, r.occupied,
                 m->capacity.recheck_at == USEC_INFINITY ? "infinity" : "set");
        for (size_t i = 0; i < m->pool.n_workers; i++) {
                const Worker *w = m->pool.workers[i];
                const Row *last = window_latest(&w->window);
                usec_t since;
                size_t len = strlen(buf);
                snprintf(buf + len, size - len, "; w%u %s last report %llds ago", w->id,
                         freshness_to_string(capacity_freshness(&m->capacity, w, fixture_now, &since)),
                         last ? (long long) ((fixture_now - last->received) / USEC_PER_SEC) : -1LL);
        }
        return false;
}

/* ---- what the pure policies decide on the pool as it is, with the shell's own adjustments ---- */

static void pure_decisions(DecisionKind *ret_scale_up, DecisionKind *ret_compaction) {
        PolicyInput in;
        Decision d;

        capacity_policy_input(&m->capacity, &in);
        policy_scale_up(&in, &m->capacity.policy, &d);
        *ret_scale_up = d.kind;
        policy_compaction(&in, &m->capacity.policy, &d);
        /* capacity.c: a pool that changed lately settles before it compacts, and a hold on a worker
         * that has not reported yet (NEW) is a wait */
        if ((d.kind == DECISION_RETIRE || d.kind == DECISION_WAIT_MOVES) && m->pool.changed_at > 0 &&
            fixture_now - m->pool.changed_at < m->config.occupancy_interval * m->config.smoothing_rows)
                d.kind = DECISION_WAIT;
        if (d.kind == DECISION_HELD)
                for (size_t i = 0; i < in.n_workers; i++)
                        if ((int) in.workers[i].id == d.worker && in.workers[i].freshness == FRESHNESS_NEW)
                                d.kind = DECISION_WAIT;
        *ret_compaction = d.kind;
}

/* After a check that acted on nothing: what the manager last decided is what the policies decide now
 * (whether it took the fast path or went the whole way). False with the difference in buf. */
static bool decisions_agree(char *buf, size_t size) {
        DecisionKind up, down;

        buf[0] = 0;
        pure_decisions(&up, &down);
        if (m->capacity.last_scale_up == up && (up == DECISION_SPAWN || m->capacity.last_compaction == down))
                return true;
        snprintf(buf, size, "at t=%llus: the manager's last decisions scale-up=%s compaction=%s, the policies "
                 "decide scale-up=%s compaction=%s",
                 (unsigned long long) (fixture_now / USEC_PER_SEC), decision_kind_to_string(m->capacity.last_scale_up),
                 decision_kind_to_string(m->capacity.last_compaction), decision_kind_to_string(up),
                 decision_kind_to_string(down));
        return false;
}

static Worker *add_routable(unsigned users) {
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);

        fixture_set_users(m, w, users);
        return w;
}

/* ---- PolicyInput ---- */

static void test_manager_policy_input_states(void **state) {
        Worker *w[7];
        PolicyInput in;

        w[0] = add_routable(3);
        w[1] = fixture_add_worker(m, WORKER_STARTING);
        w[2] = fixture_add_worker(m, WORKER_PROBING);
        w[3] = fixture_add_worker(m, WORKER_DRAINING);
        w[4] = fixture_add_worker(m, WORKER_STOPPING);
        w[5] = fixture_add_worker(m, WORKER_DEAD);
        w[6] = add_routable(0);
        fixture_report(w[6], READING(.cpu = 0.25));
        fixture_report(w[6], READING()); /* now missing its cpu */
        fixture_advance(USEC_PER_SEC);

        capacity_policy_input(&m->capacity, &in);
        /* stopping and dead workers are out of the policies' world */
        assert_int_equal(in.n_workers, 5);
        assert_true(in.now == fixture_now);
        assert_true(in.mem_available == UINT64_MAX);
        unsigned ids[] = { 1, 2, 3, 4, 7 };
        for (size_t i = 0; i < 5; i++)
                assert_int_equal(in.workers[i].id, ids[i]); /* spawn order */

        assert_true(in.workers[0].reception && in.workers[0].routable && !in.workers[0].retiring);
        assert_int_equal(in.workers[0].users, 3);
        assert_int_equal(in.workers[0].freshness, FRESHNESS_NEW);
        assert_false(in.workers[1].routable); /* starting: a spawn in flight */
        assert_false(in.workers[2].routable);
        assert_true(in.workers[3].routable && in.workers[3].retiring);
        assert_false(in.workers[4].reception);
        assert_int_equal(in.workers[4].freshness, FRESHNESS_MISSING);
        assert_string_equal(in.workers[4].missing, "cpu");
        assert_true(in.workers[4].since == FIXTURE_T0);
        assert_float_equal(in.workers[4].occupancy, 0.25, 1e-9);
        assert_null(in.workers[0].missing);
}

static void test_manager_policy_input_grows(void **state) {
        PolicyInput in;

        for (unsigned i = 0; i < 100; i++)
                add_routable(i);
        capacity_policy_input(&m->capacity, &in);
        assert_int_equal(in.n_workers, 100);
        assert_int_equal(in.workers[99].users, 99);
        for (unsigned i = 0; i < 100; i++)
                add_routable(i);
        capacity_policy_input(&m->capacity, &in);
        assert_int_equal(in.n_workers, 200);
        assert_int_equal(in.workers[199].id, 200);
}

/* ---- decisions acted on ---- */

/* A steady pool of three that neither grows nor compacts: reception 0.45, others 0.5. */
static void steady_three(Worker *w[3], uint32_t users) {
        w[0] = add_routable(users);
        w[1] = add_routable(users);
        w[2] = add_routable(users);
        fixture_report(w[0], READING(.cpu = 0.45));
        fixture_report(w[1], READING(.cpu = 0.5));
        fixture_report(w[2], READING(.cpu = 0.5));
        assert_int_equal(m->capacity.last_scale_up, DECISION_NONE);
        assert_int_equal(m->capacity.last_compaction, DECISION_NONE);
        assert_false(m->capacity.compaction_hold.active);
        assert_false(m->capacity.scale_up_hold.active);
}

static void test_manager_check_capacity_steady(void **state) {
        char why[512];
        Worker *w[3];

        steady_three(w, 1);
        for (int round = 0; round < 20; round++) {
                fixture_advance(5 * USEC_PER_SEC);
                for (int i = 0; i < 3; i++) {
                        fixture_report(w[i], READING(.cpu = i == 0 ? 0.45 : 0.5));
                        assert_true(summary_agrees(why, sizeof why));
                        assert_true(decisions_agree(why, sizeof why));
                }
        }
        assert_int_equal(m->capacity.last_scale_up, DECISION_NONE);
        assert_int_equal(m->capacity.last_compaction, DECISION_NONE);
        assert_true(m->capacity.summary_valid);
}

static void test_manager_check_capacity_holds_on_stale(void **state) {
        char why[512];
        Worker *w[3];

        steady_three(w, 1);
        /* w3 falls silent; the others keep reporting */
        for (int round = 0; round < 4; round++) {
                fixture_advance(5 * USEC_PER_SEC);
                fixture_report(w[0], READING(.cpu = 0.45));
                fixture_report(w[1], READING(.cpu = 0.5));
                assert_true(summary_agrees(why, sizeof why));
                assert_true(decisions_agree(why, sizeof why));
        }
        /* 20 s without a report: compaction is held, and says on what */
        assert_int_equal(m->capacity.last_compaction, DECISION_HELD);
        assert_true(m->capacity.compaction_hold.active);
        assert_int_equal(m->capacity.compaction_hold.kind, DECISION_HELD);
        assert_int_equal(m->capacity.compaction_hold.worker, 3);
        assert_non_null(strstr(m->capacity.compaction_hold.reason, "w3 no report for 20s"));
        /* w2 still has room: scale-up is not held on w3 */
        assert_int_equal(m->capacity.last_scale_up, DECISION_NONE);

        fixture_report(w[2], READING(.cpu = 0.5));
        assert_int_equal(m->capacity.last_compaction, DECISION_NONE);
        assert_false(m->capacity.compaction_hold.active);
}

static void test_manager_check_capacity_retires_idle(void **state) {
        Worker *w[3];
        Frame *f = NULL;
        uint8_t buf[512];
        size_t used;
        ssize_t n;
        FrameDecoder d;

        w[0] = add_routable(0);
        w[1] = add_routable(0);
        w[2] = add_routable(0);
        fixture_report(w[0], READING(.cpu = 0.05));
        fixture_report(w[1], READING(.cpu = 0.05));
        assert_int_equal(m->capacity.last_compaction, DECISION_WAIT); /* w3 has not reported: a wait, not a hold */
        fixture_report(w[2], READING(.cpu = 0.05));
        /* H = 2.1 - 0.15 > 1.5 x 0.8: the least occupied (ties: the newest) goes */
        assert_int_equal(m->capacity.last_compaction, DECISION_RETIRE);
        assert_int_equal(w[2]->state, WORKER_STOPPING); /* drained at once: nothing in flight */
        assert_string_equal(w[2]->stop_reason, "compaction");
        assert_int_equal(w[0]->state, WORKER_ROUTABLE);
        assert_int_equal(w[1]->state, WORKER_ROUTABLE);

        /* it was told over its channel */
        frame_decoder_init(&d, 0);
        n = read(fixture_peer(w[2]), buf, sizeof buf);
        assert_true(n > 0);
        assert_int_equal(frame_decoder_feed(&d, buf, (size_t) n, &used, &f), 1);
        assert_int_equal(f->body_case, ELASTIC_POOL__FRAME__BODY_DRAIN);
        assert_string_equal(f->drain->reason, "compaction");
        assert_true(f->drain->deadline_usec == fixture_now + m->config.drain_timeout);
        frame_free(f);
        frame_decoder_done(&d);
}

/* A retired worker leaves the pool when it is told to stop, not when its process ends: a report between
 * the two finds the pool settling, and does not retire a second worker on windows that have not yet seen
 * the first one's load. */
static void test_manager_check_capacity_no_second_retire_before_death(void **state) {
        Worker *w[4];

        for (unsigned i = 0; i < ELEMENTSOF(w); i++)
                w[i] = add_routable(0);
        for (unsigned i = 0; i < ELEMENTSOF(w); i++)
                fixture_report(w[i], READING(.cpu = 0.05));
        assert_int_equal(m->capacity.last_compaction, DECISION_RETIRE);
        assert_int_equal(w[3]->state, WORKER_STOPPING); /* still alive: no death yet */

        /* H = 0.5 + 2 x 0.8 - 0.15 = 1.95 > 1.2 would retire w3 at once */
        fixture_advance(USEC_PER_SEC);
        fixture_report(w[0], READING(.cpu = 0.05));
        assert_int_equal(m->capacity.last_compaction, DECISION_WAIT);
        assert_non_null(strstr(m->capacity.compaction_hold.reason, "the pool changed"));
        assert_int_equal(w[2]->state, WORKER_ROUTABLE);
}

static void test_manager_check_capacity_waits_for_moves(void **state) {
        Worker *w[3];

        w[0] = add_routable(0);
        w[1] = add_routable(0);
        w[2] = add_routable(4);
        fixture_report(w[0], READING(.cpu = 0.05));
        fixture_report(w[1], READING(.cpu = 0.30));
        fixture_report(w[2], READING(.cpu = 0.05));
        /* the least occupied has users: they move first (re-pointed, one after the other: the fixture's
         * workers keep no state), to the worker admission picks, and then it retires */
        assert_int_equal(m->capacity.last_compaction, DECISION_WAIT_MOVES);
        assert_false(m->capacity.compaction_hold.active);
        assert_int_equal(surface_worker_users(&m->surface, w[2]->id), 0);
        assert_int_equal(surface_worker_users(&m->surface, w[1]->id), 4);
        assert_false(w[2]->evacuating);
        assert_int_equal(w[2]->state, WORKER_STOPPING);
        assert_int_equal(m->compaction.drains_done, 1);
}

static void test_manager_check_capacity_settles_after_change(void **state) {
        Worker *w[3];

        w[0] = add_routable(0);
        w[1] = add_routable(0);
        w[2] = add_routable(0);
        m->pool.changed_at = fixture_now; /* a worker just joined */
        fixture_report(w[0], READING(.cpu = 0.05));
        fixture_report(w[1], READING(.cpu = 0.05));
        fixture_report(w[2], READING(.cpu = 0.05));
        assert_int_equal(m->capacity.last_compaction, DECISION_WAIT);
        assert_non_null(strstr(m->capacity.compaction_hold.reason, "the pool changed"));
        assert_int_equal(w[2]->state, WORKER_ROUTABLE);
        /* smoothing_rows x interval later the windows have seen the new pool */
        for (unsigned i = 1; i < m->config.smoothing_rows; i++) {
                fixture_advance(m->config.occupancy_interval);
                for (int k = 0; k < 3; k++) {
                        fixture_report(w[k], READING(.cpu = 0.05));
                        assert_int_equal(m->capacity.last_compaction, DECISION_WAIT);
                }
        }
        fixture_advance(m->config.occupancy_interval);
        fixture_report(w[0], READING(.cpu = 0.05));
        assert_int_equal(m->capacity.last_compaction, DECISION_RETIRE);
        assert_int_equal(w[2]->state, WORKER_STOPPING);
}

/* In a pool of 64 or more, a report that needs the full check (here: a hold to lift) within
 * occupancy_interval/32 of the last one defers it to that moment instead of walking the pool again; in a
 * smaller pool (every test above) each check runs at once. */
static void test_manager_check_capacity_coalesces_in_large_pool(void **state) {
        const usec_t gap = m->config.occupancy_interval / 32;
        Worker *w[70];

        for (unsigned i = 0; i < ELEMENTSOF(w); i++)
                w[i] = add_routable(1);
        for (unsigned i = 0; i < ELEMENTSOF(w); i++)
                fixture_report(w[i], READING(.cpu = 0.79));
        fixture_report(w[1], READING(.cpu = 0.79)); /* the second row: cpu can go missing now */
        fixture_advance(gap); /* the warm-up's own full checks are behind */
        fixture_report(w[1], READING()); /* cpu missing: the hold comes at once, a full check */
        assert_int_equal(m->capacity.last_compaction, DECISION_HELD);
        assert_int_equal(m->capacity.compaction_hold.worker, 2);
        assert_null(m->capacity.deferred_check);

        fixture_advance(gap / 4);
        fixture_report(w[1], READING(.cpu = 0.79)); /* readable again, inside the gap: deferred */
        assert_int_equal(m->capacity.last_compaction, DECISION_HELD);
        assert_non_null(m->capacity.deferred_check);
        fixture_report(w[2], READING(.cpu = 0.79)); /* one deferred check for any number of reports */
        assert_non_null(m->capacity.deferred_check);

        fixture_advance(gap);
        capacity_check(&m->capacity); /* what the deferred check's timer calls */
        assert_int_equal(m->capacity.last_compaction, DECISION_NONE);
        assert_false(m->capacity.compaction_hold.active);
        assert_null(m->capacity.deferred_check);
}

static void test_manager_check_capacity_refused_spawn(void **state) {
        Worker *w[3];

        steady_three(w, 1);
        /* everyone full: a spawn is wanted, but spawning gave up, so it is refused and says why */
        for (int i = 0; i < 7; i++) {
                fixture_advance(5 * USEC_PER_SEC);
                fixture_report(w[0], READING(.cpu = 0.95));
                fixture_report(w[1], READING(.cpu = 0.95));
                fixture_report(w[2], READING(.cpu = 0.95));
        }
        assert_int_equal(m->capacity.last_scale_up, DECISION_SPAWN);
        assert_true(m->capacity.scale_up_hold.active);
        assert_int_equal(m->capacity.scale_up_hold.kind, DECISION_REFUSED);
        assert_non_null(strstr(m->capacity.scale_up_hold.reason, "spawning stopped"));
        assert_int_equal(m->pool.n_workers, 3);
        /* kept for the monitor: the last journaled decision, its reason and ledger */
        assert_true(m->capacity.last_decision.set);
        assert_int_equal(m->capacity.last_decision.kind, DECISION_REFUSED);
        assert_string_equal(m->capacity.last_decision.what, "scale-up refused");
        assert_string_equal(m->capacity.last_decision.reason, m->capacity.scale_up_hold.reason);
        assert_int_equal(m->capacity.last_decision.ledger.n, 3);
        /* a spawn that never began is counted under no cause */
        for (PoolSpawnCause c = 0; c < _POOL_SPAWN_CAUSE_MAX; c++)
                assert_int_equal(m->pool.spawns_by_cause[c], 0);
}

/* All three workers at cpu for one interval's reports. */
static void three_at(Worker *w[3], double cpu) {
        fixture_advance(5 * USEC_PER_SEC);
        for (int i = 0; i < 3; i++)
                fixture_report(w[i], READING(.cpu = cpu));
}

/* At max_workers under load near the threshold the refusal comes and goes with the readings. The status
 * shows each change; the journal one episode: its beginning, and its end once the refusal stayed away
 * for the smoothing window. A refusal after that is a new episode, journaled again. */
static void test_manager_check_capacity_refusal_flapping_is_one_episode(void **state) {
        usec_t window = m->config.occupancy_interval * m->config.smoothing_rows;
        Worker *w[3];

        m->config.max_workers = 3;
        capacity_setup_parameters(&m->capacity);
        steady_three(w, 1);
        for (int i = 0; i < 7 && !m->capacity.scale_up_hold.active; i++)
                three_at(w, 0.95);
        assert_true(m->capacity.scale_up_hold.active);
        assert_int_equal(m->capacity.scale_up_hold.kind, DECISION_REFUSED);
        assert_non_null(strstr(m->capacity.scale_up_hold.reason, "max_workers=3 reached"));
        assert_true(m->capacity.last_decision.set); /* journaled */
        assert_true(m->capacity.scale_up_hold.episode.open);

        for (int flap = 1; flap <= 3; flap++) {
                m->capacity.last_decision.set = false; /* set again only by a journaled decision */
                for (int i = 0; i < 7 && m->capacity.scale_up_hold.active; i++)
                        three_at(w, 0.3);
                assert_false(m->capacity.scale_up_hold.active); /* the status surfaces: no hold */
                assert_true(m->capacity.scale_up_hold.episode.open);
                for (int i = 0; i < 7 && !m->capacity.scale_up_hold.active; i++)
                        three_at(w, 0.95);
                assert_true(m->capacity.scale_up_hold.active);
                assert_false(m->capacity.last_decision.set); /* back within the window: not journaled */
                assert_int_equal(m->capacity.scale_up_hold.episode.returns, flap);
        }

        /* clear for the whole window: the episode ends (its line says how often it came back) */
        for (usec_t quiet = 0; quiet <= window + 5 * USEC_PER_SEC; quiet += 5 * USEC_PER_SEC)
                three_at(w, 0.3);
        assert_false(m->capacity.scale_up_hold.active);
        assert_false(m->capacity.scale_up_hold.episode.open);
        for (int i = 0; i < 7 && !m->capacity.scale_up_hold.active; i++)
                three_at(w, 0.95);
        assert_true(m->capacity.scale_up_hold.active);
        assert_true(m->capacity.last_decision.set); /* a new episode, journaled */
        assert_int_equal(m->capacity.scale_up_hold.episode.returns, 0);
}

/* A report's row as the capacity shell takes it, with the users register. */
static void take_users_row(Worker *w, uint32_t users) {
        Row row = { .received = fixture_now, .has_cpu = true, .cpu = 0.1, .has_users = true, .users = users };

        capacity_take_row(&m->capacity, w, &row);
}

/* The drift sentinels run on every report: the worker's users against the surface's, sustained after
 * smoothing_rows reports in a row (at least 3), over once they agree; a report without the register
 * changes nothing. */
static void test_manager_take_row_drift(void **state) {
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);
        unsigned sustain = capacity_drift_sustain(&m->capacity);

        assert_int_equal(sustain, 6); /* the default smoothing_rows */
        fixture_set_users(m, w, 2);
        for (unsigned i = 0; i < 10; i++) {
                fixture_advance(5 * USEC_PER_SEC);
                take_users_row(w, 2);
        }
        assert_false(drift_any(&w->drift));
        /* a user logged in around the front end: the worker holds 3, the commander placed 2 */
        for (unsigned i = 1; i <= sustain; i++) {
                fixture_advance(5 * USEC_PER_SEC);
                take_users_row(w, 3);
                assert_int_equal(w->drift.state[DRIFT_USERS].sustained, i == sustain);
        }
        assert_int_equal(w->drift.state[DRIFT_USERS].reported, 3);
        assert_int_equal(w->drift.state[DRIFT_USERS].expected, 2);
        assert_int_equal(w->drift.state[DRIFT_USERS].since, fixture_now - (sustain - 1) * 5 * USEC_PER_SEC);
        /* without a front end the connections register has no commander side: never compared */
        assert_false(w->drift.state[DRIFT_CONNECTIONS].sustained);
        assert_int_equal(w->drift.state[DRIFT_CONNECTIONS].streak, 0);
        /* the commander learns of the user: over */
        fixture_set_users(m, w, 3);
        fixture_advance(5 * USEC_PER_SEC);
        take_users_row(w, 3);
        assert_false(drift_any(&w->drift));
}

static void test_manager_check_capacity_stopping_does_nothing(void **state) {
        Worker *w = add_routable(0);

        m->pool.stopping = true;
        fixture_report(w, READING(.cpu = 0.99));
        assert_int_equal(m->capacity.last_scale_up, DECISION_NONE);
        assert_false(m->capacity.summary_valid); /* not even rebuilt */
}

/* ---- the fast path never decides differently from the pure policies ---- */

static uint64_t rng_state;

static uint64_t rng(void) {
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * 0x2545f4914f6cdd1dULL;
}

static double uniform(double lo, double hi) {
        return lo + (hi - lo) * (double) (rng() >> 11) / (double) (1ULL << 53);
}

typedef struct Sequence {
        unsigned workers;
        unsigned steps;
        bool missing_reports;   /* some reports lack cpu */
        bool mixed_intervals;   /* some sensors announce a slower interval */
} Sequence;

/* Runs a random sequence of reports and silences. After each report: when the summary is still to be
 * used, it equals the rebuilt one; when the check acted on nothing, the manager's decisions are the
 * policies'. Returns false with the first difference in buf. */
static bool random_sequence(const Sequence *q, uint64_t seed, char *buf, size_t size) {
        double level[16];
        unsigned silent_until[16] = {}; /* step before which a worker does not report */
        Worker *w[16];

        assert_true(q->workers <= ELEMENTSOF(w));
        rng_state = seed;
        for (unsigned i = 0; i < q->workers; i++) {
                w[i] = add_routable(1 + (unsigned) (rng() % 5)); /* users: compaction waits for moves */
                level[i] = uniform(0.3, 0.9);
                if (q->mixed_intervals && i % 3 == 2)
                        fixture_hello(w[i], 12 * USEC_PER_SEC, EP_PROTOCOL_VERSION);
        }
        for (unsigned step = 0; step < q->steps; step++) {
                unsigned i = (unsigned) (rng() % q->workers);
                uint64_t x = rng();
                WorkerState before[16];
                bool evacuating[16];
                unsigned users[16];

                /* time passes: mostly a second or two, sometimes long enough for readings to go stale */
                if (x % 50 == 0)
                        fixture_advance((usec_t) uniform(10, 40) * USEC_PER_SEC);
                else
                        fixture_advance((usec_t) (uniform(0.1, 2.0) * (double) USEC_PER_SEC));
                if (x % 97 == 1)
                        silent_until[i] = step + 20 + (unsigned) (rng() % 40);
                if (x % 13 == 2)
                        level[i] = uniform(0.0, 1.0); /* a new regime for this worker */
                if (step < silent_until[i])
                        continue;

                for (unsigned k = 0; k < q->workers; k++) {
                        before[k] = w[k]->state;
                        evacuating[k] = w[k]->evacuating;
                        users[k] = surface_worker_users(&m->surface, w[k]->id);
                }
                double noise = uniform(-0.05, 0.05); /* CLAMP() evaluates its argument more than once */
                double cpu = CLAMP(level[i] + noise, 0.0, 1.0);
                if (q->missing_reports && x % 11 == 3)
                        fixture_report(w[i], READING());
                else
                        fixture_report(w[i], READING(.cpu = cpu));

                if (!summary_agrees(buf, size))
                        return false;
                bool acted = false;
                /* a drain that began, moved users or stopped acted too */
                for (unsigned k = 0; k < q->workers; k++)
                        acted = acted || w[k]->state != before[k] || w[k]->evacuating != evacuating[k] ||
                                surface_worker_users(&m->surface, w[k]->id) != users[k];
                /* only a report of a worker that serves checks capacity (a retired one still reports) */
                bool checked = before[i] == WORKER_ROUTABLE || before[i] == WORKER_DRAINING;
                if (checked && !acted && !decisions_agree(buf, size))
                        return false;
        }
        return true;
}

static void test_manager_check_capacity_fast_path_agrees(void **state) {
        static const uint64_t seeds[] = { 0x9e3779b97f4a7c15ULL, 12345, 0xdeadbeefcafeULL, 77 };
        char why[512];

        /* complete reports, one interval: the pool summary must never lead the fast path astray */
        for (size_t s = 0; s < ELEMENTSOF(seeds); s++) {
                fixture_manager_free(m);
                m = fixture_manager_new();
                Sequence q = { .workers = 2 + (unsigned) s * 2, .steps = 20000 };
                if (!random_sequence(&q, seeds[s], why, sizeof why))
                        fail_msg("seed %llu, %u workers: %s", (unsigned long long) seeds[s], q.workers, why);
        }
}

static void test_manager_check_capacity_fast_path_agrees_missing_and_intervals(void **state) {
        static const uint64_t seeds[] = { 0x9e3779b97f4a7c15ULL, 12345, 0xdeadbeefcafeULL, 77 };
        char why[512] = "";
        bool ok = true;
        size_t s;

        /* readings that go missing and sensors on a slower interval: the same property */
        for (s = 0; s < ELEMENTSOF(seeds) && ok; s++) {
                fixture_manager_free(m);
                m = fixture_manager_new();
                Sequence q = { .workers = 3 + (unsigned) s, .steps = 20000, .missing_reports = true,
                               .mixed_intervals = true };
                ok = random_sequence(&q, seeds[s], why, sizeof why);
        }
        CHECK_EXPLAINED(ok, "the pool summary and the pure policies disagree; first difference with seed #%zu: %s",
                        s - 1, why);
}

/* The case behind the random one: a rebuild while no worker is FRESH or NEW leaves recheck_at at
 * infinity; workers that report afterwards are accounted FRESH, and the moment they go stale again must
 * be folded into recheck_at, or the summary would count them fresh (and as room) forever. */
static void test_manager_summary_recheck_after_missing(void **state) {
        char why_summary[512], why_decision[512];
        Worker *w[3];
        bool summary_ok, decisions_ok;

        steady_three(w, 1);
        /* everyone silent past the horizon, then w1's report lacks its cpu: no FRESH worker at the
         * rebuild this report triggers */
        fixture_advance(20 * USEC_PER_SEC);
        fixture_report(w[0], READING());
        assert_int_equal(m->capacity.last_compaction, DECISION_HELD);
        assert_true(m->capacity.summary_valid);
        /* everyone reports again, complete */
        fixture_advance(USEC_PER_SEC);
        fixture_report(w[1], READING(.cpu = 0.5));
        fixture_advance(USEC_PER_SEC);
        fixture_report(w[0], READING(.cpu = 0.45));
        fixture_advance(USEC_PER_SEC);
        fixture_report(w[2], READING(.cpu = 0.5));
        assert_int_equal(m->capacity.last_compaction, DECISION_NONE);
        assert_int_equal(m->capacity.last_scale_up, DECISION_NONE);
        /* w2 and w3 fall silent; w1 reports 20 s later */
        fixture_advance(20 * USEC_PER_SEC);
        fixture_report(w[0], READING(.cpu = 0.45));

        summary_ok = summary_agrees(why_summary, sizeof why_summary);
        decisions_ok = decisions_agree(why_decision, sizeof why_decision);
        CHECK_EXPLAINED(summary_ok && decisions_ok,
                        "a worker that was stale or incomplete before its report must bring its new stale "
                        "deadline into recheck_at (manager_summary_account), even after a rebuild that had no "
                        "fresh worker; %s; %s (w2 and w3 have been silent for 7 s and 5 s: the hold \"w2 no "
                        "report\" must show)",
                        why_summary, why_decision);
}

/* A Hello that shortens a worker's interval shortens its stale horizon: the summary, built on the old,
 * later recheck_at, must not survive it. */
static void test_manager_summary_hello_shortens_horizon(void **state) {
        char why_summary[512], why_decision[512];
        Worker *w[3];
        bool summary_ok, decisions_ok;

        w[0] = add_routable(1);
        w[1] = add_routable(1);
        w[2] = add_routable(1);
        for (int i = 0; i < 3; i++)
                fixture_hello(w[i], 60 * USEC_PER_SEC, EP_PROTOCOL_VERSION); /* horizon 180 s */
        fixture_report(w[0], READING(.cpu = 0.45));
        fixture_report(w[1], READING(.cpu = 0.5));
        fixture_report(w[2], READING(.cpu = 0.5));
        assert_int_equal(m->capacity.last_compaction, DECISION_NONE);
        /* w2's sensor reconnects at 5 s (horizon 15 s) and then says nothing */
        fixture_advance(10 * USEC_PER_SEC);
        fixture_hello(w[1], 5 * USEC_PER_SEC, EP_PROTOCOL_VERSION);
        fixture_advance(10 * USEC_PER_SEC);
        fixture_report(w[0], READING(.cpu = 0.45));
        usec_t since;
        assert_int_equal(capacity_freshness(&m->capacity, w[1], fixture_now, &since), FRESHNESS_STALE);

        summary_ok = summary_agrees(why_summary, sizeof why_summary);
        decisions_ok = decisions_agree(why_decision, sizeof why_decision);
        CHECK_EXPLAINED(summary_ok && decisions_ok,
                        "a Hello that changes sensor_interval (a reconnecting sensor) changes the worker's stale "
                        "horizon, so it must invalidate the pool summary; %s; %s",
                        why_summary, why_decision);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_manager_policy_input_states, setup, teardown),
                cmocka_unit_test_setup_teardown(test_manager_policy_input_grows, setup, teardown),
                cmocka_unit_test_setup_teardown(test_manager_check_capacity_steady, setup, teardown),
                cmocka_unit_test_setup_teardown(test_manager_check_capacity_holds_on_stale, setup, teardown),
                cmocka_unit_test_setup_teardown(test_manager_check_capacity_retires_idle, setup, teardown),
                cmocka_unit_test_setup_teardown(test_manager_check_capacity_no_second_retire_before_death, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_manager_check_capacity_waits_for_moves, setup, teardown),
                cmocka_unit_test_setup_teardown(test_manager_check_capacity_settles_after_change, setup, teardown),
                cmocka_unit_test_setup_teardown(test_manager_check_capacity_coalesces_in_large_pool, setup, teardown),
                cmocka_unit_test_setup_teardown(test_manager_check_capacity_refused_spawn, setup, teardown),
                cmocka_unit_test_setup_teardown(test_manager_check_capacity_refusal_flapping_is_one_episode, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_manager_check_capacity_stopping_does_nothing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_manager_take_row_drift, setup, teardown),
                cmocka_unit_test_setup_teardown(test_manager_check_capacity_fast_path_agrees, setup, teardown),
                cmocka_unit_test_setup_teardown(test_manager_check_capacity_fast_path_agrees_missing_and_intervals,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(test_manager_summary_recheck_after_missing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_manager_summary_hello_shortens_horizon, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
