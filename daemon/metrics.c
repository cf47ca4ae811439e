/* SPDX-License-Identifier: MIT */
#include "metrics.h"

#include <errno.h>
#include <math.h>

#include "macro.h"

/* What every sample of one scrape shares. */
typedef struct Exposition {
        FILE *f;
        const StatusView *v;
        char group[256]; /* the group label's value, escaped */
} Exposition;

/* A label value in the exposition format: backslash, double quote and newline escaped. */
static void escape_label(const char *s, char *buf, size_t size) {
        size_t o = 0;

        for (; *s && o + 3 < size; s++) {
                if (*s == '\\' || *s == '"')
                        buf[o++] = '\\', buf[o++] = *s;
                else if (*s == '\n')
                        buf[o++] = '\\', buf[o++] = 'n';
                else
                        buf[o++] = *s;
        }
        buf[o] = 0;
}

static void family(Exposition *e, const char *name, const char *type, const char *help) {
        fprintf(e->f, "# HELP elastic_pool_%s %s\n# TYPE elastic_pool_%s %s\n", name, help, name, type);
}

/* A sample of the group: elastic_pool_NAME{group="g"LABELS} VALUE, labels as ",k=\"v\"" or "". */
static void sample_u64(Exposition *e, const char *name, const char *labels, uint64_t value) {
        fprintf(e->f, "elastic_pool_%s{group=\"%s\"%s} %llu\n", name, e->group, labels, (unsigned long long) value);
}

static void sample_double(Exposition *e, const char *name, const char *labels, double value) {
        if (!isfinite(value))
                return; /* not a reading: left out */
        fprintf(e->f, "elastic_pool_%s{group=\"%s\"%s} %.6f\n", name, e->group, labels, value);
}

static const char *worker_label(const Worker *w, char *buf, size_t size) {
        snprintf(buf, size, ",worker=\"w%u\"", w->id);
        return buf;
}

#define FOREACH_WORKER(e, w)                                                                             \
        for (size_t _i = 0; _i < (e)->v->pool->n_workers; _i++)                                          \
                for (const Worker *w = (e)->v->pool->workers[_i]; w; w = NULL)

/* ---- the workers and what they report ---- */

static void write_states(Exposition *e) {
        family(e, "workers", "gauge", "Workers of the group by state.");
        for (WorkerState s = 0; s < _WORKER_STATE_MAX; s++) {
                char labels[64];
                unsigned n = 0;

                FOREACH_WORKER(e, w) n += w->state == s;
                snprintf(labels, sizeof labels, ",state=\"%s\"", worker_state_to_string(s));
                sample_u64(e, "workers", labels, n);
        }
}

static void write_occupancy(Exposition *e) {
        char l[96];

        family(e, "worker_occupancy_ratio", "gauge",
               "Occupancy in [0, 1] as the evaluator sees it: the max of the averaged components.");
        FOREACH_WORKER(e, w) sample_double(e, "worker_occupancy_ratio", worker_label(w, l, sizeof l),
                                           w->reading.occupancy.value);
        family(e, "worker_component_ratio", "gauge",
               "Averaged occupancy components in [0, 1]; a component the worker does not report is absent.");
        FOREACH_WORKER(e, w) {
                for (Component c = 0; c < _COMPONENT_MAX; c++) {
                        if (!w->reading.occupancy.has[c])
                                continue;
                        snprintf(l, sizeof l, ",worker=\"w%u\",component=\"%s\"", w->id, component_to_string(c));
                        sample_double(e, "worker_component_ratio", l, w->reading.occupancy.component[c]);
                }
        }
        family(e, "worker_memory_bytes", "gauge", "The memory.current of the worker's cgroup, as last reported.");
        FOREACH_WORKER(e, w) {
                const Row *r = window_latest(&w->window);
                if (r && r->has_memory)
                        sample_u64(e, "worker_memory_bytes", worker_label(w, l, sizeof l), r->memory_bytes);
        }
        family(e, "worker_users", "gauge", "Logged-in users the commander places on the worker.");
        FOREACH_WORKER(e, w) sample_u64(e, "worker_users", worker_label(w, l, sizeof l),
                                        capacity_worker_users(e->v->capacity, w));
        family(e, "worker_unhealthy", "gauge",
               "Whether (1) the worker is taken out of new work: its reports stopped, or requests went unanswered.");
        FOREACH_WORKER(e, w) sample_u64(e, "worker_unhealthy", worker_label(w, l, sizeof l), w->unhealthy != NULL);
        family(e, "worker_drift", "gauge",
               "Whether (1) a register the worker reports (users, connections) drifts from the commander's count.");
        FOREACH_WORKER(e, w) {
                for (DriftRegister r = 0; r < _DRIFT_REGISTER_MAX; r++) {
                        snprintf(l, sizeof l, ",worker=\"w%u\",register=\"%s\"", w->id, drift_register_to_string(r));
                        sample_u64(e, "worker_drift", l, w->drift.state[r].sustained);
                }
        }
}

/* ---- what the front end forwarded to each worker ---- */

static void write_latency(Exposition *e, const Worker *w, const LatencyHistogram *h) {
        uint64_t cumulative = 0;
        char l[96];

        for (unsigned i = 0; i < LATENCY_BUCKETS; i++) {
                usec_t bound = latency_bucket_bound(i);

                cumulative += h->count[i];
                if (bound == USEC_INFINITY)
                        snprintf(l, sizeof l, ",worker=\"w%u\",le=\"+Inf\"", w->id);
                else
                        snprintf(l, sizeof l, ",worker=\"w%u\",le=\"%g\"", w->id, (double) bound / USEC_PER_SEC);
                sample_u64(e, "worker_request_duration_seconds_bucket", l, cumulative);
        }
        sample_double(e, "worker_request_duration_seconds_sum", worker_label(w, l, sizeof l),
                      (double) h->sum_usec / USEC_PER_SEC);
        sample_u64(e, "worker_request_duration_seconds_count", l, h->total);
}

static void write_traffic(Exposition *e) {
        WorkerTraffic t;
        char l[96];

        family(e, "worker_inflight_requests", "gauge", "Requests forwarded to the worker and not answered yet.");
        FOREACH_WORKER(e, w) {
                (void) status_worker_traffic(e->v, w->id, &t);
                sample_u64(e, "worker_inflight_requests", worker_label(w, l, sizeof l), t.inflight);
        }
        family(e, "worker_requests_total", "counter", "Responses the front end completed from the worker.");
        FOREACH_WORKER(e, w) if (status_worker_traffic(e->v, w->id, &t) && t.has_forward)
                sample_u64(e, "worker_requests_total", worker_label(w, l, sizeof l), t.requests);
        family(e, "worker_errors_total", "counter",
               "Requests to the worker that failed: 502/504 made by the front end, or aborted responses.");
        FOREACH_WORKER(e, w) if (status_worker_traffic(e->v, w->id, &t) && t.has_forward)
                sample_u64(e, "worker_errors_total", worker_label(w, l, sizeof l), t.errors);
        family(e, "worker_busy_seconds_total", "counter",
               "Sum of the durations of every request forwarded to the worker, failed ones included.");
        FOREACH_WORKER(e, w) if (status_worker_traffic(e->v, w->id, &t) && t.has_forward)
                sample_double(e, "worker_busy_seconds_total", worker_label(w, l, sizeof l),
                              (double) t.busy_usec / USEC_PER_SEC);
        family(e, "worker_connections", "gauge", "Open connections of the front end to the worker.");
        FOREACH_WORKER(e, w) if (status_worker_traffic(e->v, w->id, &t) && t.has_forward)
                sample_u64(e, "worker_connections", worker_label(w, l, sizeof l), t.connections);
        family(e, "worker_request_duration_seconds", "histogram",
               "Time from a request's start to its response's end, for the responses counted in "
               "worker_requests_total.");
        FOREACH_WORKER(e, w) if (status_worker_traffic(e->v, w->id, &t) && t.has_forward)
                write_latency(e, w, &t.latency);
}

/* ---- decisions and the lifecycle ---- */

static void write_decisions(Exposition *e) {
        const Capacity *c = e->v->capacity;
        PolicyInput in;
        Ledger l;

        family(e, "hold", "gauge",
               "Whether (1) a decision is held, waits or is refused; the reason is in /_commander/monitor.json.");
        sample_u64(e, "hold", ",decision=\"scale-up\"", c->scale_up_hold.active);
        sample_u64(e, "hold", ",decision=\"compaction\"", c->compaction_hold.active);
        capacity_policy_input(e->v->capacity, &in);
        policy_ledger(&in, &c->policy, &l);
        family(e, "ledger_capacity_ratio", "gauge", "The capacity ledger's C: reception_threshold + (N-1) x "
                                                    "admission_threshold.");
        sample_double(e, "ledger_capacity_ratio", "", l.capacity);
        family(e, "ledger_occupied_ratio", "gauge", "The capacity ledger's O: the sum of occupancies.");
        sample_double(e, "ledger_occupied_ratio", "", l.occupied);
        family(e, "ledger_headroom_ratio", "gauge",
               "The capacity ledger's H = C - O; compaction when over margin x admission_threshold.");
        sample_double(e, "ledger_headroom_ratio", "", l.headroom);
        family(e, "ledger_threshold_ratio", "gauge",
               "The compaction threshold, margin x admission_threshold, that H is compared with.");
        sample_double(e, "ledger_threshold_ratio", "", l.threshold);
}

static void write_lifecycle(Exposition *e) {
        const Pool *p = e->v->pool;
        char l[64];

        family(e, "reports_total", "counter", "Occupancy reports received.");
        sample_u64(e, "reports_total", "", p->reports_received);
        family(e, "spawns_total", "counter",
               "Workers whose spawn began, by cause: floor (under min_workers), scale-up, operator, burst.");
        for (PoolSpawnCause c = 0; c < _POOL_SPAWN_CAUSE_MAX; c++) {
                snprintf(l, sizeof l, ",cause=\"%s\"", pool_spawn_cause_to_string(c));
                sample_u64(e, "spawns_total", l, p->spawns_by_cause[c]);
        }
        family(e, "deaths_total", "counter",
               "Workers that ended, by cause: stopped (asked to), exited, signaled, oom, exec-failed, unknown.");
        for (WorkerDeathCause c = 0; c < _WORKER_DEATH_MAX; c++) {
                snprintf(l, sizeof l, ",cause=\"%s\"", worker_death_cause_to_string(c));
                sample_u64(e, "deaths_total", l, p->deaths_by_cause[c]);
        }
        family(e, "workers_adopted_total", "counter", "Workers of an earlier commander taken back.");
        sample_u64(e, "workers_adopted_total", "", p->adopted);
}

static void write_moves(Exposition *e) {
        const Moves *m = e->v->moves;
        unsigned running = 0;

        if (!m)
                return;
        for (const Move *mv = m->list; mv; mv = mv->next)
                running++;
        family(e, "moves_in_progress", "gauge", "Live moves of users under way.");
        sample_u64(e, "moves_in_progress", "", running);
        family(e, "moves_total", "counter",
               "Live moves that ended, by outcome: done, re-pointed (nothing to carry), aborted.");
        sample_u64(e, "moves_total", ",outcome=\"done\"", m->done);
        sample_u64(e, "moves_total", ",outcome=\"re-pointed\"", m->repointed);
        sample_u64(e, "moves_total", ",outcome=\"aborted\"", m->aborted);
        if (e->v->compaction) {
                family(e, "drains_total", "counter", "Compaction drains that ended, by outcome.");
                sample_u64(e, "drains_total", ",outcome=\"done\"", e->v->compaction->drains_done);
                sample_u64(e, "drains_total", ",outcome=\"stopped\"", e->v->compaction->drains_stopped);
        }
        if (e->v->relief) {
                family(e, "relief_rounds_total", "counter", "Relief rounds begun.");
                sample_u64(e, "relief_rounds_total", "", e->v->relief->rounds);
                family(e, "relief_burst_rounds_total", "counter",
                       "Relief rounds the burst path began (a worker saturated for burst_window).");
                sample_u64(e, "relief_burst_rounds_total", "", e->v->relief->burst_rounds);
        }
}

static void write_frontend(Exposition *e) {
        FrontendTotals t;
        char l[64];

        if (!e->v->frontend)
                return;
        e->v->frontend->totals(e->v->frontend_data, &t);
        family(e, "frontend_requests_total", "counter", "Requests the front end began.");
        sample_u64(e, "frontend_requests_total", "", t.requests);
        family(e, "frontend_errors_total", "counter", "Error responses made by the front end (4xx, 5xx).");
        sample_u64(e, "frontend_errors_total", "", t.errors);
        family(e, "frontend_connections", "gauge", "Open client connections, by protocol.");
        snprintf(l, sizeof l, ",protocol=\"http/1.1\"");
        sample_u64(e, "frontend_connections", l, t.connections - MIN(t.h2_connections, t.connections));
        snprintf(l, sizeof l, ",protocol=\"h2c\"");
        sample_u64(e, "frontend_connections", l, t.h2_connections);
        family(e, "frontend_streams", "gauge",
               "Requests open on client connections: HTTP/1.1 requests and HTTP/2 streams.");
        sample_u64(e, "frontend_streams", "", t.streams);
        family(e, "frontend_wakeups_total", "counter",
               "Wake-ups of the front end's socket set; each dispatches every client and worker socket ready.");
        sample_u64(e, "frontend_wakeups_total", "", t.wakeups);
        family(e, "frontend_socket_events_total", "counter", "Ready sockets the front end's wake-ups dispatched.");
        sample_u64(e, "frontend_socket_events_total", "", t.socket_events);
        family(e, "frontend_batch_largest", "gauge", "The most ready sockets one wake-up has dispatched.");
        sample_u64(e, "frontend_batch_largest", "", t.batch_largest);
        family(e, "frontend_io_uring", "gauge",
               "Whether the front end's socket reads and writes go to the kernel in batches through io_uring "
               "(1) or take one system call each (0).");
        sample_u64(e, "frontend_io_uring", "", t.io_uring ? 1 : 0);
        family(e, "frontend_io_ops_total", "counter", "Socket reads and writes the front end did in batches.");
        sample_u64(e, "frontend_io_ops_total", "", t.io_ops);
        family(e, "frontend_io_syscalls_total", "counter",
               "System calls those took: io_uring_enter() calls, or one per read or write without io_uring.");
        sample_u64(e, "frontend_io_syscalls_total", "", t.io_calls);
}

int metrics_write(const StatusView *v, FILE *f) {
        Exposition e = { .f = f, .v = v };

        escape_label(v->group, e.group, sizeof e.group);
        write_states(&e);
        write_occupancy(&e);
        write_traffic(&e);
        write_decisions(&e);
        write_lifecycle(&e);
        write_moves(&e);
        write_frontend(&e);
        return ferror(f) ? -EIO : 0;
}
