/* SPDX-License-Identifier: MIT */
/* The archive: the ring keeps the last `capacity` rows in age order across wrap-arounds, and a report
 * becomes a Row without any absent field turning into a 0. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frame.h"
#include "macro.h"
#include "window.h"

static Row row_seq(uint64_t seq) {
        return (Row){.seq = seq, .received = seq * 5 * USEC_PER_SEC};
}

static void test_window_init_zero_capacity(void **state) {
        Window w;

        assert_int_equal(window_init(&w, 0), -EINVAL);
}

static void test_window_row_empty(void **state) {
        Window w;

        assert_int_equal(window_init(&w, 4), 0);
        assert_int_equal(w.count, 0);
        assert_int_equal(w.total, 0);
        assert_null(window_row(&w, 0));
        assert_null(window_latest(&w));
        window_done(&w);
        assert_null(w.rows);
        window_done(&w); /* twice is harmless */
}

static void test_window_row_ages_before_wrap(void **state) {
        Window w;

        assert_int_equal(window_init(&w, 4), 0);
        for (uint64_t s = 1; s <= 2; s++) {
                Row r = row_seq(s);
                window_push(&w, &r);
        }
        assert_int_equal(w.count, 2);
        assert_int_equal(w.total, 2);
        assert_int_equal(window_latest(&w)->seq, 2);
        assert_int_equal(window_row(&w, 0)->seq, 2);
        assert_int_equal(window_row(&w, 1)->seq, 1);
        assert_null(window_row(&w, 2));
        assert_null(window_row(&w, UINT32_MAX));
        window_done(&w);
}

static void test_window_push_wraps_around(void **state) {
        Window w;

        assert_int_equal(window_init(&w, 3), 0);
        for (uint64_t s = 1; s <= 5; s++) {
                Row r = row_seq(s);
                window_push(&w, &r);
        }
        assert_int_equal(w.count, 3);
        assert_int_equal(w.capacity, 3);
        assert_int_equal(w.total, 5);
        assert_int_equal(window_row(&w, 0)->seq, 5);
        assert_int_equal(window_row(&w, 1)->seq, 4);
        assert_int_equal(window_row(&w, 2)->seq, 3);
        assert_null(window_row(&w, 3));
        window_done(&w);
}

/* Every head position, every age: the newest is age 0, the oldest kept is age count-1. */
static void test_window_row_every_head_position(void **state) {
        Window w;

        assert_int_equal(window_init(&w, 60), 0);
        for (uint64_t s = 1; s <= 250; s++) {
                Row r = row_seq(s);
                uint32_t expect_count = (uint32_t) MIN(s, 60);

                window_push(&w, &r);
                assert_int_equal(w.count, expect_count);
                assert_int_equal(w.total, s);
                for (uint32_t age = 0; age < w.count; age++)
                        assert_int_equal(window_row(&w, age)->seq, s - age);
                assert_null(window_row(&w, w.count));
        }
        window_done(&w);
}

/* The evaluator's packed copy of each row follows its row through every wrap and a clear, absent
 * readings absent in both, the executor's ratio divided out. */
static void test_window_components_follow_rows(void **state) {
        Window w;

        assert_int_equal(window_init(&w, 7), 0);
        assert_null(window_components(&w, 0));
        for (uint64_t s = 1; s <= 30; s++) {
                Row r = row_seq(s);

                r.has_cpu = s % 3 != 0, r.cpu = (double) s / 100.0;
                r.has_memory = s % 2 == 0, r.memory_bytes = s << 20;
                /* every third total is 0: a reading of no executor, which is no executor reading */
                r.has_executor = s % 5 != 0, r.executor_busy = (uint32_t) s % 4;
                r.executor_total = (uint32_t) s % 3 * 2;
                r.has_inflight = s % 4 == 0, r.inflight = (uint32_t) s;
                window_push(&w, &r);
                if (s == 20)
                        window_clear(&w);
                for (uint32_t age = 0; age < w.count; age++) {
                        const RowComponents *c = window_components(&w, age);
                        const Row *row = window_row(&w, age);
                        RowComponents want;

                        assert_non_null(c);
                        row_components(row, &want);
                        assert_memory_equal(c, &want, sizeof want);
                        assert_int_equal(c->has_cpu, (s - age) % 3 != 0);
                        assert_int_equal(c->memory_bytes, (s - age) << 20);
                        assert_int_equal(c->has_executor, row->has_executor && row->executor_total > 0);
                        if (c->has_executor)
                                assert_true(c->executor == (double) row->executor_busy / row->executor_total);
                }
                assert_null(window_components(&w, w.count));
        }
        window_done(&w);
        assert_null(w.components);
}

/* What window_prefetch() fetches, in every state of the ring (empty, filling, wrapped) and for more rows
 * than it holds: the next slot and the `rows` before it, each once, within the ring, in at most two runs. */
static void test_window_recent_slots_every_head(void **state) {
        uint32_t first[2], n[2];
        Window none = {}, w;

        assert_int_equal(window_recent_slots(&none, 6, first, n), 0);
        for (uint32_t cap = 1; cap <= 9; cap++) {
                assert_int_equal(window_init(&w, cap), 0);
                for (uint64_t s = 0; s <= 2 * cap + 1; s++) {
                        Row r = row_seq(s + 1);

                        for (uint32_t rows = 0; rows <= cap + 2; rows++) {
                                uint32_t back = MIN(rows, cap - 1), seen = 0, total = 0;
                                unsigned runs = window_recent_slots(&w, rows, first, n);

                                assert_in_range(runs, 1, 2);
                                for (unsigned i = 0; i < runs; i++) {
                                        assert_true(n[i] > 0 && first[i] + n[i] <= cap);
                                        for (uint32_t k = first[i]; k < first[i] + n[i]; k++) {
                                                uint32_t behind = (w.head + cap - k) % cap; /* of the next slot */
                                                assert_true(behind <= back);
                                                assert_false(seen & (1U << k)); /* each slot once */
                                                seen |= 1U << k;
                                                total++;
                                        }
                                }
                                assert_int_equal(total, back + 1);
                                assert_true(seen & (1U << w.head)); /* the next slot among them */
                                assert_int_equal(runs == 2, w.head < back);
                        }
                        window_prefetch(&w, 6); /* a hint: no fault, whatever the state */
                        window_push(&w, &r);
                }
                window_done(&w);
        }
}

static void test_window_clear_keeps_capacity(void **state) {
        Window w;
        Row r;

        assert_int_equal(window_init(&w, 3), 0);
        for (uint64_t s = 1; s <= 4; s++) {
                r = row_seq(s);
                window_push(&w, &r);
        }
        window_clear(&w);
        assert_int_equal(w.count, 0);
        assert_int_equal(w.capacity, 3);
        assert_int_equal(w.total, 4); /* rows ever pushed */
        assert_null(window_latest(&w));

        r = row_seq(9);
        window_push(&w, &r);
        assert_int_equal(w.count, 1);
        assert_int_equal(window_latest(&w)->seq, 9);
        assert_null(window_row(&w, 1));
        window_done(&w);
}

static void test_row_from_report_empty_report_all_absent(void **state) {
        ElasticPool__OccupancyReport rep;
        Row row;

        elastic_pool__occupancy_report__init(&rep);
        memset(&row, 0xa5, sizeof row); /* nothing of the old contents may survive */
        row_from_report(&row, &rep, 1234);

        assert_int_equal(row.received, 1234);
        assert_int_equal(row.seq, 0);
        assert_int_equal(row.monotonic, 0);
        assert_false(row.has_cpu);
        assert_false(row.has_memory);
        assert_false(row.has_executor);
        assert_false(row.has_executor_queue);
        assert_false(row.has_users);
        assert_false(row.has_active_users);
        assert_false(row.has_pages);
        assert_false(row.has_connections);
        assert_false(row.has_psi_cpu);
        assert_false(row.has_psi_memory);
        assert_false(row.has_backlog);
        assert_false(row.has_load);
        assert_false(row.has_inflight);
        assert_false(row.has_forward);
}

static void test_row_from_report_full_report_all_present(void **state) {
        ElasticPool__OccupancyReport rep;
        ElasticPool__Executor e;
        ElasticPool__Pressure p;
        ElasticPool__Backlog b;
        ElasticPool__Load l;
        Row row;

        elastic_pool__occupancy_report__init(&rep);
        elastic_pool__executor__init(&e);
        elastic_pool__pressure__init(&p);
        elastic_pool__backlog__init(&b);
        elastic_pool__load__init(&l);
        e.has_busy = e.has_total = e.has_queue_depth = true, e.busy = 3, e.total = 8, e.queue_depth = 2;
        p.has_cpu_some_avg10 = p.has_memory_some_avg10 = true, p.cpu_some_avg10 = 1.5,
        p.memory_some_avg10 = 0.25;
        b.has_pending = b.has_outbox = true, b.pending = 11, b.outbox = 12;
        l.has_avg1 = true, l.avg1 = 0.5;
        rep.has_seq = true, rep.seq = 99;
        rep.has_monotonic_usec = true, rep.monotonic_usec = 123456789;
        rep.has_users = true, rep.users = 10;
        rep.has_pages = true, rep.pages = 20;
        rep.has_connections = true, rep.connections = 30;
        rep.has_active_users = true, rep.active_users = 4;
        rep.executor = &e, rep.pressure = &p, rep.backlog = &b, rep.load = &l;
        rep.has_cpu = true, rep.cpu = 0.75;
        rep.has_memory_bytes = true, rep.memory_bytes = 1ULL << 33;
        rep.has_memory_source = true, rep.memory_source = ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP2;

        row_from_report(&row, &rep, 555);
        assert_int_equal(row.seq, 99);
        assert_int_equal(row.monotonic, 123456789);
        assert_int_equal(row.received, 555);
        assert_true(row.has_cpu);
        assert_true(row.cpu == 0.75);
        assert_true(row.has_memory);
        assert_int_equal(row.memory_bytes, 1ULL << 33);
        assert_int_equal(row.memory_source, ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP2);
        assert_true(row.has_executor);
        assert_int_equal(row.executor_busy, 3);
        assert_int_equal(row.executor_total, 8);
        assert_true(row.has_executor_queue);
        assert_int_equal(row.executor_queue, 2);
        assert_true(row.has_users && row.users == 10);
        assert_true(row.has_pages && row.pages == 20);
        assert_true(row.has_connections && row.connections == 30);
        assert_true(row.has_active_users && row.active_users == 4);
        assert_true(row.has_psi_cpu && row.psi_cpu == 1.5);
        assert_true(row.has_psi_memory && row.psi_memory == 0.25);
        assert_true(row.has_backlog && row.backlog_pending == 11 && row.backlog_outbox == 12);
        assert_true(row.has_load && row.load1 == 0.5);
        assert_false(row.has_inflight);
        assert_false(row.has_forward);
}

/* Zero is a reading: present zeros stay present. */
static void test_row_from_report_zero_is_present(void **state) {
        ElasticPool__OccupancyReport rep;
        ElasticPool__Executor e;
        Row row;

        elastic_pool__occupancy_report__init(&rep);
        elastic_pool__executor__init(&e);
        e.has_busy = e.has_total = true;
        rep.executor = &e;
        rep.has_cpu = true, rep.cpu = 0.0;
        rep.has_memory_bytes = true, rep.memory_bytes = 0;
        rep.has_users = true, rep.users = 0;

        row_from_report(&row, &rep, 1);
        assert_true(row.has_cpu);
        assert_true(row.has_memory);
        assert_int_equal(row.memory_source, ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_UNSPECIFIED);
        assert_true(row.has_executor);
        assert_int_equal(row.executor_total, 0);
        assert_false(row.has_executor_queue);
        assert_true(row.has_users);
}

/* Submessages that are present but partial: half a reading is no reading, each flag on its own. */
static void test_row_from_report_partial_submessages(void **state) {
        static const struct {
                bool busy, total, queue;
                bool expect_executor, expect_queue;
        } executor_cases[] = {
                {false, false, false, false, false}, {true, false, false, false, false},
                {false, true, false, false, false},  {true, true, false, true, false},
                {false, false, true, false, true},   {true, true, true, true, true},
        };
        static const struct {
                bool pending, outbox, expect;
        } backlog_cases[] = {
                {false, false, false},
                {true, false, false},
                {false, true, false},
                {true, true, true},
        };

        for (size_t i = 0; i < ELEMENTSOF(executor_cases); i++) {
                ElasticPool__OccupancyReport rep;
                ElasticPool__Executor e;
                Row row;

                elastic_pool__occupancy_report__init(&rep);
                elastic_pool__executor__init(&e);
                e.has_busy = executor_cases[i].busy, e.busy = 1;
                e.has_total = executor_cases[i].total, e.total = 4;
                e.has_queue_depth = executor_cases[i].queue, e.queue_depth = 7;
                rep.executor = &e;
                row_from_report(&row, &rep, 1);
                assert_int_equal(row.has_executor, executor_cases[i].expect_executor);
                assert_int_equal(row.has_executor_queue, executor_cases[i].expect_queue);
        }

        for (size_t i = 0; i < ELEMENTSOF(backlog_cases); i++) {
                ElasticPool__OccupancyReport rep;
                ElasticPool__Backlog b;
                Row row;

                elastic_pool__occupancy_report__init(&rep);
                elastic_pool__backlog__init(&b);
                b.has_pending = backlog_cases[i].pending, b.pending = 5;
                b.has_outbox = backlog_cases[i].outbox, b.outbox = 6;
                rep.backlog = &b;
                row_from_report(&row, &rep, 1);
                assert_int_equal(row.has_backlog, backlog_cases[i].expect);
        }

        {
                ElasticPool__OccupancyReport rep;
                ElasticPool__Pressure p;
                ElasticPool__Load l;
                Row row;

                elastic_pool__occupancy_report__init(&rep);
                elastic_pool__pressure__init(&p);
                elastic_pool__load__init(&l);
                p.has_memory_some_avg10 = true, p.memory_some_avg10 = 3.0;
                l.has_avg5 = true, l.avg5 = 1.0; /* avg1 absent: the Row keeps avg1 only */
                rep.pressure = &p, rep.load = &l;
                row_from_report(&row, &rep, 1);
                assert_false(row.has_psi_cpu);
                assert_true(row.has_psi_memory);
                assert_false(row.has_load);
        }
}

static void test_row_from_report_non_finite_is_absent(void **state) {
        static const double bad[] = {NAN, INFINITY, -INFINITY};

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                ElasticPool__OccupancyReport rep;
                ElasticPool__Pressure p;
                ElasticPool__Load l;
                Row row;

                elastic_pool__occupancy_report__init(&rep);
                elastic_pool__pressure__init(&p);
                elastic_pool__load__init(&l);
                rep.has_cpu = true, rep.cpu = bad[i];
                p.has_cpu_some_avg10 = p.has_memory_some_avg10 = true;
                p.cpu_some_avg10 = p.memory_some_avg10 = bad[i];
                l.has_avg1 = true, l.avg1 = bad[i];
                rep.pressure = &p, rep.load = &l;
                row_from_report(&row, &rep, 1);
                assert_false(row.has_cpu);
                assert_false(row.has_psi_cpu);
                assert_false(row.has_psi_memory);
                assert_false(row.has_load);
        }
}

/* Through the wire: a sensor's first report (no cpu, no executor) encoded, decoded, archived. */
static void test_row_from_report_decoded_frame(void **state) {
        ElasticPool__OccupancyReport rep;
        ElasticPool__Executor e;
        FrameDecoder d;
        Frame f, *out = NULL;
        uint8_t *buf = NULL;
        size_t size, used;
        Row row;

        elastic_pool__occupancy_report__init(&rep);
        elastic_pool__executor__init(&e);
        e.has_queue_depth = true, e.queue_depth = 0; /* executor present, busy/total absent */
        rep.executor = &e;
        rep.has_seq = true, rep.seq = 1;
        rep.has_memory_bytes = true, rep.memory_bytes = 4096;
        elastic_pool__frame__init(&f);
        f.body_case = ELASTIC_POOL__FRAME__BODY_REPORT, f.report = &rep;

        assert_int_equal(frame_encode(&f, FRAME_MAX_SIZE_DEFAULT, &buf, &size), 0);
        frame_decoder_init(&d, FRAME_MAX_SIZE_DEFAULT);
        assert_int_equal(frame_decoder_feed(&d, buf, size, &used, &out), 1);
        assert_int_equal(used, size);
        assert_int_equal(out->body_case, ELASTIC_POOL__FRAME__BODY_REPORT);

        row_from_report(&row, out->report, 42);
        assert_int_equal(row.seq, 1);
        assert_false(row.has_cpu);
        assert_true(row.has_memory && row.memory_bytes == 4096);
        assert_false(row.has_executor);
        assert_true(row.has_executor_queue && row.executor_queue == 0);
        assert_false(row.has_pages);
        assert_false(row.has_backlog);
        assert_false(row.has_psi_cpu);

        frame_free(out);
        frame_decoder_done(&d);
        free(buf);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_window_init_zero_capacity),
                cmocka_unit_test(test_window_row_empty),
                cmocka_unit_test(test_window_row_ages_before_wrap),
                cmocka_unit_test(test_window_push_wraps_around),
                cmocka_unit_test(test_window_row_every_head_position),
                cmocka_unit_test(test_window_components_follow_rows),
                cmocka_unit_test(test_window_recent_slots_every_head),
                cmocka_unit_test(test_window_clear_keeps_capacity),
                cmocka_unit_test(test_row_from_report_empty_report_all_absent),
                cmocka_unit_test(test_row_from_report_full_report_all_present),
                cmocka_unit_test(test_row_from_report_zero_is_present),
                cmocka_unit_test(test_row_from_report_partial_submessages),
                cmocka_unit_test(test_row_from_report_non_finite_is_absent),
                cmocka_unit_test(test_row_from_report_decoded_frame),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
