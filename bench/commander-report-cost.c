/* SPDX-License-Identifier: MIT */
/* bench-commander-report-cost: the commander's CPU per report when 1 000 workers report, through the
 * real report path: the frame decoded by the channel codec, archived in the worker's window, evaluated,
 * and the capacity checks (scale-up and compaction) that run on every report. The workers are Worker
 * objects of a real Manager with open channels, but no processes: their reports are synthesised.
 *
 *   bench-commander-report-cost [WORKERS [REPORTS [held]]]
 *
 * REPORTS (1 000 000) per round, BENCH_ROUNDS (5) rounds: each printed with other% and steal%
 * (bench-span.h), '!' when disturbed; the headline is the median of the undisturbed rounds.
 *
 * steady (default: 1 000 workers, 1 000 000 reports): every worker near the admission threshold, so
 * neither scale-up nor compaction acts, which is what a busy pool spends its reports on.
 *
 * held: once the windows are warm, worker w2's reports lose their cpu reading, so compaction is held on
 * w2 (missing is never zero) for the whole run: the state a pool stays in for as long as one sensor
 * cannot read. The summary cannot prove "nothing to do" there; the hold is seen to stand from w2's own
 * share instead of a walk over the pool.
 *
 * Reports come back to back; the one state that depends on time between reports (full checks
 * coalesced in large pools, capacity.c) is not what either measures. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench-span.h"
#include "cleanup.h"
#include "frame.h"
#include "log.h"
#include "manager.h"
#include "pool.h"

#define VARIANTS 16

typedef struct Packed {
        uint8_t *data;
        size_t size;
} Packed;

static void pack_report(unsigned k, bool without_cpu, Packed *ret) {
        ElasticPool__OccupancyReport r = ELASTIC_POOL__OCCUPANCY_REPORT__INIT;
        ElasticPool__Executor e = ELASTIC_POOL__EXECUTOR__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;

        r.has_seq = true, r.seq = 1000 + k;
        r.has_monotonic_usec = true, r.monotonic_usec = now_usec(CLOCK_MONOTONIC);
        /* 0.7988 .. 0.7999: everyone busy, nobody over admission_threshold=0.8, and the ledger's
         * headroom (C - O = 0.5 + 999 x 0.8 - ~799.35) under 1.5 x 0.8: nothing to compact */
        r.has_cpu = !without_cpu, r.cpu = 0.7988 + 0.00007 * (double) k;
        r.has_cpu_source = true, r.cpu_source = ELASTIC_POOL__CPU_SOURCE__CPU_SOURCE_CGROUP2;
        r.has_memory_bytes = true, r.memory_bytes = 100ULL << 20;
        r.has_memory_source = true, r.memory_source = ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP2;
        r.has_users = true, r.users = 10 + k;
        r.has_interval_usec = true, r.interval_usec = 5 * USEC_PER_SEC;
        e.has_busy = e.has_total = e.has_queue_depth = true;
        e.busy = 1, e.total = 4, e.queue_depth = 0;
        r.executor = &e;
        f.body_case = ELASTIC_POOL__FRAME__BODY_REPORT;
        f.report = &r;
        if (frame_encode(&f, 0, &ret->data, &ret->size) < 0)
                abort();
}

static int make_pool(Manager *m, unsigned n) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        static const ChannelCallbacks no_callbacks = {};

        m->pool.workers = calloc(n, sizeof *m->pool.workers);
        if (!m->pool.workers)
                return -ENOMEM;
        for (unsigned i = 0; i < n; i++) {
                Worker *w;
                int sv[2], r;

                r = worker_new(&m->pool, i + 1, &w);
                if (r < 0)
                        return r;
                r = window_init(&w->window, m->config.window_rows);
                if (r < 0)
                        return r;
                if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                        return -errno;
                /* sv[1], the worker's end, is closed at once: the loop never runs here, so nothing reads
                 * the hang-up, and one descriptor a worker lets 10 000 fit where the hard limit is 20 000
                 * (the commander's own two a worker, its channel and pidfd, are for check_nofile()) */
                safe_close(sv[1]);
                r = channel_new(m->event, sv[0], 0, &no_callbacks, w, &w->channel);
                if (r < 0)
                        return r;
                w->state = WORKER_ROUTABLE;
                w->spawned_at = w->routable_at = now;
                m->pool.workers[m->pool.n_workers++] = w;
        }
        m->pool.reception = m->pool.workers[0];
        m->pool.next_worker_id = n + 1;
        return 0;
}

/* Feeds report i (w2's lose their cpu reading when held) through the codec into the pool, as a channel
 * with bytes to read does: the pool's on_readable warms the worker's state (worker_prefetch_report()),
 * the frame is decoded, then dispatched. */
static int feed_report(Manager *m, FrameDecoder *d, const Packed *packed, const Packed *missing, unsigned long i) {
        unsigned v = (unsigned) ((i * 7) % VARIANTS);
        const Packed *p = i % m->pool.n_workers == 1 ? &missing[v] : &packed[v];
        Worker *w = m->pool.workers[i % m->pool.n_workers];
        Frame *f = NULL;
        size_t used;

        worker_prefetch_report(w);
        if (frame_decoder_feed(d, p->data, p->size, &used, &f) != 1)
                return -EBADMSG;
        pool_handle_frame(w, f);
        frame_free(f);
        return 0;
}

int main(int argc, char *argv[]) {
        unsigned workers = argc > 1 ? (unsigned) atoi(argv[1]) : 1000;
        bool held = argc > 3 && strcmp(argv[3], "held") == 0;
        unsigned long reports = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000000UL;
        struct rlimit rl;
        Packed packed[VARIANTS], missing[VARIANTS];
        Manager m = {};
        FrameDecoder d;
        unsigned rounds = bench_rounds(5);
        double per[BENCH_ROUNDS_MAX], other, steal, t0, median;
        bool disturbed[BENCH_ROUNDS_MAX];
        size_t quiet;
        int r;

        /* warming up 1 000 new workers holds compaction a thousand times: not what is measured */
        log_set_max_level(getenv("BENCH_LOG") ? LOG_DEBUG : LOG_CRIT);
        /* a descriptor a worker (its channel's end): as many as the hard limit allows */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
        if (workers < 2 || config_init_defaults(&m.config) < 0 || sd_event_new(&m.event) < 0)
                return 1;
        /* the pool and the capacity shell as manager_new() wires them, without a backend: nothing spawns */
        m.pool = (Pool) {
                .event = m.event,
                .config = &m.config,
                .group = "bench",
                .next_worker_id = 1,
                .hooks = &manager_pool_hooks,
                .userdata = &m,
        };
        spawn_throttle_init(&m.pool.throttle, m.event, NULL, NULL);
        manager_wire(&m);
        r = make_pool(&m, workers);
        if (r < 0) {
                fprintf(stderr, "setting up %u workers failed: %s (raise the fd limit?)\n", workers, strerror(-r));
                return 1;
        }
        for (unsigned k = 0; k < VARIANTS; k++) {
                pack_report(k, false, &packed[k]);
                pack_report(k, held, &missing[k]);
        }
        frame_decoder_init(&d, 0);

        /* warm every window so the steady state is what gets measured */
        for (unsigned long i = 0; i < (unsigned long) workers * 8; i++)
                if (feed_report(&m, &d, packed, packed, i) < 0)
                        return 1;

        for (unsigned k = 0; k < rounds; k++) {
                BenchSpan span;

                bench_span_begin(&span);
                t0 = bench_cpu_seconds();
                for (unsigned long i = 0; i < reports; i++)
                        if (feed_report(&m, &d, packed, missing, i) < 0)
                                return 1;
                per[k] = (bench_cpu_seconds() - t0) * 1e6 / (double) reports;
                disturbed[k] = bench_span_end(&span, &other, &steal);
                printf("round %u: %.3f us per report   other%% %.1f%s steal%% %.1f\n", k + 1, per[k], other,
                       disturbed[k] ? "!" : "", steal);
        }

        median = bench_quiet_median(per, disturbed, rounds, &quiet);
        printf("commander CPU per report: %.3f us, the median of %zu undisturbed round(s) of %u%s  (%s pool, %u "
               "workers, %lu reports a round, %llu reports archived, decisions: scale-up %s, compaction %s)\n",
               median, quiet, rounds,
               quiet == 0 ? ": every round disturbed, the median of all, rerun" : "", held ? "held" : "steady",
               workers, reports, (unsigned long long) m.pool.reports_received,
               decision_kind_to_string(m.capacity.last_scale_up), decision_kind_to_string(m.capacity.last_compaction));
        printf("goal: <= 1 us per report at 10 000 workers, steady and held\n");
        return 0;
}
