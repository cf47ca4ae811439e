/* SPDX-License-Identifier: MIT */
/* The commander's CPU per report when a large group reports: what happens on every OccupancyReport
 * arrival, with no real processes. Per report: decode the packed frame with the shared codec,
 * row_from_report, window_push, evaluator_evaluate, then the capacity checks the commander runs on
 * report arrival (policy_scale_up + policy_compaction over the whole pool).
 *
 * Frames are built and packed before the clock starts (packing is the sensor's cost, not the
 * commander's), several variants per worker so the windows keep moving. CPU time is read with
 * CLOCK_PROCESS_CPUTIME_ID around each loop; the stages are also timed alone to show where it goes.
 *
 *   bench-report-cost [--workers N] [--reports M] [--rows R]    (defaults 1000, 1000000, 60)
 *
 * BENCH_ROUNDS (1) rounds of every stage; each line says the other% and steal% of its own loop
 * (bench-span.h), '!' when disturbed; the closing line is the median of the undisturbed rounds. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench-span.h"
#include "evaluator.h"
#include "frame.h"
#include "macro.h"
#include "policy.h"
#include "window.h"

#define VARIANTS 8U
#define INTERVAL (5 * USEC_PER_SEC)

typedef struct Bench {
        unsigned n_workers;
        unsigned long n_reports;
        uint32_t rows;
        EvaluatorParams ep;
        PolicyParams pp;
        Window *windows;
        FrameDecoder *decoders;
        uint8_t **frames; /* [worker * VARIANTS + variant] */
        size_t *frame_sizes;
        PolicyWorker *pool;
        usec_t now;
        double checksum; /* keeps the compiler from dropping work */
        unsigned long kinds[_DECISION_KIND_MAX];
} Bench;

static usec_t cpu_now(void) {
        return now_usec(CLOCK_PROCESS_CPUTIME_ID);
}

/* Worker i's variant v: a busy-ish worker whose cpu, memory and executor move a little per tick. */
static int build_frame(Bench *b, unsigned i, unsigned v) {
        ElasticPool__OccupancyReport r;
        ElasticPool__Executor e;
        ElasticPool__Pressure ps;
        ElasticPool__Backlog bl;
        ElasticPool__Load l;
        Frame f;
        double base = i == 0 ? 0.30 : 0.55 + 0.2 * (double) (i % 10) / 10.0;

        elastic_pool__occupancy_report__init(&r);
        elastic_pool__executor__init(&e);
        elastic_pool__pressure__init(&ps);
        elastic_pool__backlog__init(&bl);
        elastic_pool__load__init(&l);
        e.has_busy = e.has_total = e.has_queue_depth = true;
        e.total = 16, e.busy = (uint32_t) (base * 16) % 17, e.queue_depth = v % 3;
        ps.has_cpu_some_avg10 = ps.has_memory_some_avg10 = true;
        ps.cpu_some_avg10 = 2.5, ps.memory_some_avg10 = 0.1;
        bl.has_pending = bl.has_outbox = true, bl.pending = v, bl.outbox = 0;
        l.has_avg1 = l.has_avg5 = l.has_avg15 = true, l.avg1 = 3.1, l.avg5 = 2.9, l.avg15 = 2.5;
        r.has_seq = true, r.seq = v;
        r.has_monotonic_usec = true, r.monotonic_usec = (uint64_t) v * INTERVAL;
        r.has_users = true, r.users = 40 + i % 7;
        r.has_pages = true, r.pages = 120;
        r.has_connections = true, r.connections = 60;
        r.has_active_users = true, r.active_users = 12;
        r.executor = &e, r.pressure = &ps, r.backlog = &bl, r.load = &l;
        r.has_cpu = true, r.cpu = base + 0.02 * ((double) v - VARIANTS / 2.0) / VARIANTS;
        r.has_cpu_source = true, r.cpu_source = ELASTIC_POOL__CPU_SOURCE__CPU_SOURCE_CGROUP2;
        r.has_memory_bytes = true, r.memory_bytes = (180ULL << 20) + ((uint64_t) v << 16);
        r.has_memory_source = true, r.memory_source = ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP2;
        r.has_interval_usec = true, r.interval_usec = INTERVAL;

        elastic_pool__frame__init(&f);
        f.body_case = ELASTIC_POOL__FRAME__BODY_REPORT, f.report = &r;
        return frame_encode(&f, FRAME_MAX_SIZE_DEFAULT, &b->frames[i * VARIANTS + v],
                            &b->frame_sizes[i * VARIANTS + v]);
}

static int bench_setup(Bench *b) {
        int r;

        b->windows = calloc(b->n_workers, sizeof(Window));
        b->decoders = calloc(b->n_workers, sizeof(FrameDecoder));
        b->frames = calloc((size_t) b->n_workers * VARIANTS, sizeof(uint8_t *));
        b->frame_sizes = calloc((size_t) b->n_workers * VARIANTS, sizeof(size_t));
        b->pool = calloc(b->n_workers, sizeof(PolicyWorker));
        if (!b->windows || !b->decoders || !b->frames || !b->frame_sizes || !b->pool)
                return -ENOMEM;

        for (unsigned i = 0; i < b->n_workers; i++) {
                r = window_init(&b->windows[i], b->rows);
                if (r < 0)
                        return r;
                frame_decoder_init(&b->decoders[i], FRAME_MAX_SIZE_DEFAULT);
                for (unsigned v = 0; v < VARIANTS; v++) {
                        r = build_frame(b, i, v);
                        if (r < 0)
                                return r;
                }
                b->pool[i] = (PolicyWorker){
                        .id = i + 1,
                        .reception = i == 0,
                        .routable = true,
                        .freshness = FRESHNESS_FRESH,
                        .users = 40,
                };
        }
        return 0;
}

static void bench_free(Bench *b) {
        for (unsigned i = 0; b->windows && i < b->n_workers; i++)
                window_done(&b->windows[i]);
        for (unsigned i = 0; b->decoders && i < b->n_workers; i++)
                frame_decoder_done(&b->decoders[i]);
        for (size_t k = 0; b->frames && k < (size_t) b->n_workers * VARIANTS; k++)
                free(b->frames[k]);
        free(b->windows);
        free(b->decoders);
        free(b->frames);
        free(b->frame_sizes);
        free(b->pool);
}

static Frame *decode(Bench *b, unsigned i, unsigned v) {
        size_t size = b->frame_sizes[i * VARIANTS + v], used;
        Frame *f = NULL;

        if (frame_decoder_feed(&b->decoders[i], b->frames[i * VARIANTS + v], size, &used, &f) != 1 ||
            used != size || f->body_case != ELASTIC_POOL__FRAME__BODY_REPORT) {
                fprintf(stderr, "Failed to decode the frame of w%u\n", i + 1);
                exit(EXIT_FAILURE);
        }
        return f;
}

/* What the manager does with one decoded report of worker i. */
static void archive(Bench *b, unsigned i, const ElasticPool__OccupancyReport *rep) {
        Occupancy o;
        Row row;

        row_from_report(&row, rep, b->now);
        window_push(&b->windows[i], &row);
        evaluator_evaluate(&b->windows[i], &b->ep, &o);
        b->pool[i].occupancy = o.value;
        b->checksum += o.value;
}

static void capacity_checks(Bench *b) {
        PolicyInput in = {
                .workers = b->pool, .n_workers = b->n_workers, .mem_available = 8ULL << 30, .now = b->now};
        Decision up, down;

        policy_scale_up(&in, &b->pp, &up);
        policy_compaction(&in, &b->pp, &down);
        b->kinds[up.kind]++;
        b->kinds[down.kind]++;
        b->checksum += up.ledger.headroom + (double) down.worker;
}

/* Fills every window (untimed), so each one holds `rows` rows like a commander that has run a while. */
static void warm_up(Bench *b) {
        for (uint32_t t = 0; t < b->rows; t++)
                for (unsigned i = 0; i < b->n_workers; i++) {
                        Frame *f = decode(b, i, t % VARIANTS);

                        b->now += INTERVAL / b->n_workers;
                        archive(b, i, f->report);
                        frame_free(f);
                }
}

typedef enum Stage {
        STAGE_ALL,
        STAGE_DECODE,
        STAGE_ARCHIVE, /* row_from_report + window_push + evaluator_evaluate */
        STAGE_POLICY,
} Stage;

static double run(Bench *b, Stage stage) {
        const ElasticPool__OccupancyReport *fixed = NULL;
        Frame *keep = NULL;
        usec_t start;

        if (stage == STAGE_ARCHIVE) {
                keep = decode(b, 1, 0);
                fixed = keep->report;
        }

        start = cpu_now();
        for (unsigned long k = 0; k < b->n_reports; k++) {
                unsigned i = (unsigned) (k % b->n_workers), v = (unsigned) (k / b->n_workers % VARIANTS);
                Frame *f;

                b->now += INTERVAL / b->n_workers;
                switch (stage) {
                case STAGE_ALL:
                        f = decode(b, i, v);
                        archive(b, i, f->report);
                        frame_free(f);
                        capacity_checks(b);
                        break;
                case STAGE_DECODE:
                        f = decode(b, i, v);
                        b->checksum += (double) f->report->seq;
                        frame_free(f);
                        break;
                case STAGE_ARCHIVE:
                        archive(b, i, fixed);
                        break;
                case STAGE_POLICY:
                        capacity_checks(b);
                        break;
                }
        }
        start = cpu_now() - start;

        frame_free(keep);
        return (double) start * 1000.0 / (double) b->n_reports; /* ns per report */
}

/* run() with what else ran meanwhile: "(other% X steal% Y)" into note, '!' when disturbed. */
static double run_noted(Bench *b, Stage stage, char *note, size_t size, bool *ret_disturbed) {
        BenchSpan span;
        double ns, other, steal;
        bool d;

        bench_span_begin(&span);
        ns = run(b, stage);
        d = bench_span_end(&span, &other, &steal);
        snprintf(note, size, "(other%% %.1f%s steal%% %.1f)", other, d ? "!" : "", steal);
        if (ret_disturbed)
                *ret_disturbed = d;
        return ns;
}

static void print_kinds(const Bench *b) {
        for (DecisionKind k = 0; k < _DECISION_KIND_MAX; k++)
                if (b->kinds[k] > 0)
                        printf(" %s=%lu", decision_kind_to_string(k), b->kinds[k]);
        printf("\n");
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {{"workers", required_argument, NULL, 'w'},
                                                {"reports", required_argument, NULL, 'n'},
                                                {"rows", required_argument, NULL, 'r'},
                                                {}};
        Bench b = {
                .n_workers = 1000,
                .n_reports = 1000000,
                .rows = 60,
                .ep = {.memory_limit = 512ULL << 20,
                       .cpu_wall_cores = 1.0,
                       .smoothing_rows = 6,
                       .concurrency = 16},
                .pp = {.reception_threshold = 0.5,
                       .admission_threshold = 0.8,
                       .compaction_margin = 1.5,
                       .min_workers = 1,
                       .max_workers = 0,
                       .min_free_memory = 256ULL << 20},
        };
        double all[BENCH_ROUNDS_MAX], dec, arc, pol, pol_wait, median;
        bool disturbed[BENCH_ROUNDS_MAX];
        unsigned rounds = bench_rounds(1);
        char n_all[64], n_dec[64], n_arc[64], n_pol[64];
        size_t quiet;
        int c, r;

        while ((c = getopt_long(argc, argv, "w:n:r:", options, NULL)) >= 0)
                switch (c) {
                case 'w':
                        b.n_workers = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'n':
                        b.n_reports = strtoul(optarg, NULL, 10);
                        break;
                case 'r':
                        b.rows = (uint32_t) strtoul(optarg, NULL, 10);
                        break;
                default:
                        return EXIT_FAILURE;
                }
        if (b.n_workers < 2 || b.n_reports == 0 || b.rows == 0) {
                fprintf(stderr, "--workers >= 2, --reports > 0, --rows > 0\n");
                return EXIT_FAILURE;
        }

        r = bench_setup(&b);
        if (r < 0) {
                fprintf(stderr, "Failed to set up: %s\n", strerror(-r));
                bench_free(&b);
                return EXIT_FAILURE;
        }
        warm_up(&b);

        printf("workers=%u reports=%lu rows=%u frame=%zu bytes\n", b.n_workers, b.n_reports, b.rows,
               b.frame_sizes[1]);

        /* The pool as it is: every worker fresh, the ledger far over its margin, so compaction picks a
         * worker (with users: WAIT_MOVES) and writes its reason on every report. */
        (void) run(&b, STAGE_ALL); /* once untimed: page faults, caches, clocks */
        for (unsigned k = 0; k < rounds; k++) {
                if (rounds > 1)
                        printf("round %u:\n", k + 1);
                b.pool[b.n_workers - 1].retiring = false;
                memset(b.kinds, 0, sizeof b.kinds);
                all[k] = run_noted(&b, STAGE_ALL, n_all, sizeof n_all, &disturbed[k]);
                printf("per report, all stages:            %8.1f ns  %s  decisions:", all[k], n_all);
                print_kinds(&b);
                dec = run_noted(&b, STAGE_DECODE, n_dec, sizeof n_dec, NULL);
                arc = run_noted(&b, STAGE_ARCHIVE, n_arc, sizeof n_arc, NULL);
                memset(b.kinds, 0, sizeof b.kinds);
                pol = run_noted(&b, STAGE_POLICY, n_pol, sizeof n_pol, NULL);
                printf("  decode + frame_free:             %8.1f ns  %s\n", dec, n_dec);
                printf("  row_from_report + push + evaluate:%7.1f ns  %s\n", arc, n_arc);
                printf("  scale_up + compaction (%u):    %8.1f ns  %s  decisions:", b.n_workers, pol, n_pol);
                print_kinds(&b);

                /* The same with a worker retiring (the usual state right after a compaction): both policies
                 * still walk the pool, compaction answers WAIT with a short reason. */
                b.pool[b.n_workers - 1].retiring = true;
                memset(b.kinds, 0, sizeof b.kinds);
                pol_wait = run_noted(&b, STAGE_POLICY, n_pol, sizeof n_pol, NULL);
                printf("  scale_up + compaction, 1 retiring:%7.1f ns  %s  decisions:", pol_wait, n_pol);
                print_kinds(&b);
        }

        median = bench_quiet_median(all, disturbed, rounds, &quiet);
        printf("all stages: %.1f ns per report, the median of %zu undisturbed round(s) of %u%s\n", median, quiet,
               rounds, quiet == 0 ? " (every round disturbed: the median of all; rerun)" : "");
        printf("goal <= 2000 ns per report: %s (checksum %g)\n", median <= 2000.0 ? "met" : "NOT met",
               b.checksum);
        bench_free(&b);
        return EXIT_SUCCESS;
}
