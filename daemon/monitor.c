/* SPDX-License-Identifier: MIT */
#include "monitor.h"

#include <errno.h>

#include "json-write.h"
#include "macro.h"

static void write_ms(FILE *f, const char *name, usec_t usec) {
        fprintf(f, "\"%s\":%llu", name, (unsigned long long) (usec / USEC_PER_MSEC));
}

static void write_ms_or_null(FILE *f, const char *name, bool has, usec_t usec) {
        if (has)
                write_ms(f, name, usec);
        else
                fprintf(f, "\"%s\":null", name);
}

static usec_t ago(usec_t now, usec_t then) {
        return now > then ? now - then : 0;
}

/* How an operator names where a worker is in its life. */
static const char *shown_state(const Worker *w) {
        switch (w->state) {
        case WORKER_STARTING:
        case WORKER_PROBING:
                return "starting";
        case WORKER_ROUTABLE:
                return w->evacuating ? "evacuating" : "routable";
        default:
                return worker_state_to_string(w->state);
        }
}

/* The hold that names w as its culprit or target, if any. */
static const Hold *hold_on(const Capacity *c, const Worker *w, const char **ret_decision) {
        if (c->scale_up_hold.active && c->scale_up_hold.worker == (int) w->id) {
                *ret_decision = "scale-up";
                return &c->scale_up_hold;
        }
        if (c->compaction_hold.active && c->compaction_hold.worker == (int) w->id) {
                *ret_decision = "compaction";
                return &c->compaction_hold;
        }
        return NULL;
}

static void write_state(FILE *f, const StatusView *v, const Worker *w, usec_t now) {
        const char *decision = NULL;
        const Hold *h = hold_on(v->capacity, w, &decision);
        usec_t since;
        Freshness fr = capacity_freshness(v->capacity, w, now, &since);

        fprintf(f, "\"name\":\"w%u\",\"id\":%u,\"state\":\"%s\",\"shown\":\"%s\",\"reception\":%s,\"adopted\":%s,",
                w->id, w->id, worker_state_to_string(w->state), shown_state(w),
                w == v->pool->reception ? "true" : "false", w->adopted ? "true" : "false");
        fprintf(f, "\"freshness\":\"%s\",", freshness_to_string(fr));
        write_ms_or_null(f, "not_fresh_ms", fr != FRESHNESS_FRESH && fr != FRESHNESS_NEW, ago(now, since));
        fputs(",\"held\":", f);
        if (h) {
                fprintf(f, "{\"decision\":\"%s\",\"kind\":\"%s\",\"reason\":", decision,
                        decision_kind_to_string(h->kind));
                json_write_string(f, h->reason);
                fputc('}', f);
        } else
                fputs("null", f);
        fputs(",\"unhealthy\":", f);
        if (w->unhealthy)
                json_write_string(f, w->unhealthy);
        else
                fputs("null", f);
        fputc(',', f);
}

static void write_occupancy(FILE *f, const Worker *w) {
        const Occupancy *o = &w->reading.occupancy;

        fprintf(f, "\"occupancy\":%.4f,\"bottleneck\":", o->value);
        if (o->bottleneck >= 0)
                fprintf(f, "\"%s\"", component_to_string(o->bottleneck));
        else
                fputs("null", f);
        fputs(",\"components\":{", f);
        for (Component c = 0; c < _COMPONENT_MAX; c++) {
                fprintf(f, "%s\"%s\":", c > 0 ? "," : "", component_to_string(c));
                json_write_number_or_null(f, o->has[c], o->component[c]);
        }
        fputs("},", f);
}

/* The front end's counters: totals, the rates over the window, p50/p99 over the last minute. */
static void write_traffic(FILE *f, const StatusView *v, const Worker *w, usec_t now) {
        WorkerTraffic t;
        LatencyHistogram recent;
        usec_t span = 0, p50 = 0, p99 = 0;
        bool has_t = status_worker_traffic(v, w->id, &t) && t.has_forward;
        bool has_recent = has_t && latency_ring_recent(&w->latency, &t.latency, now, &recent, &span);
        bool has_p50 = has_recent && latency_histogram_quantile(&recent, 0.5, &p50);
        bool has_p99 = has_recent && latency_histogram_quantile(&recent, 0.99, &p99);
        Rates r;

        evaluator_rates(&w->window, &r);
        fprintf(f, "\"inflight\":%u,\"requests_total\":", t.inflight);
        if (has_t)
                fprintf(f, "%llu,\"errors_total\":%llu,", (unsigned long long) t.requests,
                        (unsigned long long) t.errors);
        else
                fputs("null,\"errors_total\":null,", f);
        fputs("\"rps\":", f);
        json_write_number_or_null(f, r.valid, r.rps);
        fputs(",\"errors_per_s\":", f);
        json_write_number_or_null(f, r.valid, r.error_rate);
        fputs(",\"p50_ms\":", f);
        json_write_number_or_null(f, has_p50, (double) p50 / USEC_PER_MSEC);
        fputs(",\"p99_ms\":", f);
        json_write_number_or_null(f, has_p99, (double) p99 / USEC_PER_MSEC);
        fputc(',', f);
        write_ms_or_null(f, "latency_span_ms", has_recent, span);
        fprintf(f, ",\"latency_requests\":");
        if (has_recent)
                fprintf(f, "%llu,", (unsigned long long) recent.total);
        else
                fputs("null,", f);
}

/* The occupancy of every row of the window, oldest first: what the histogram draws. */
static void write_history(FILE *f, const StatusView *v, const Worker *w) {
        fputs("\"history\":[", f);
        for (uint32_t age = w->window.count; age-- > 0;) {
                const Row *row = window_row(&w->window, age);
                double o = 0;
                bool has = row && evaluator_row_occupancy(row, &v->capacity->evaluator, &o);

                json_write_number_or_null(f, has, o);
                if (age > 0)
                        fputc(',', f);
        }
        fputs("],", f);
}

static void write_drift(FILE *f, const Worker *w, usec_t now) {
        bool first = true;

        fputs("\"drift\":[", f);
        for (DriftRegister r = 0; r < _DRIFT_REGISTER_MAX; r++) {
                const DriftState *s = &w->drift.state[r];

                if (!s->sustained)
                        continue;
                fprintf(f, "%s{\"register\":\"%s\",\"reported\":%u,\"expected\":%u,\"reports\":%u,", first ? "" : ",",
                        drift_register_to_string(r), s->reported, s->expected, s->streak);
                write_ms(f, "for_ms", ago(now, s->since));
                fputc('}', f);
                first = false;
        }
        fputs("]", f);
}

static void write_worker(FILE *f, const StatusView *v, const Worker *w, usec_t now) {
        const Row *last = window_latest(&w->window);

        fputc('{', f);
        write_state(f, v, w, now);
        write_occupancy(f, w);
        fprintf(f, "\"users\":%u,", capacity_worker_users(v->capacity, w));
        write_traffic(f, v, w, now);
        write_ms_or_null(f, "last_report_ms_ago", last, last ? ago(now, last->received) : 0);
        fputs(",\"memory_bytes\":", f);
        if (last && last->has_memory)
                fprintf(f, "%llu,", (unsigned long long) last->memory_bytes);
        else
                fputs("null,", f);
        write_history(f, v, w);
        write_drift(f, w, now);
        fputc('}', f);
}

static void write_hold(FILE *f, const char *name, const Hold *h, usec_t now) {
        fprintf(f, "\"%s\":", name);
        if (!h->active) {
                fputs("null", f);
                return;
        }
        fprintf(f, "{\"kind\":\"%s\",\"worker\":", decision_kind_to_string(h->kind));
        if (h->worker > 0)
                fprintf(f, "\"w%d\",", h->worker);
        else
                fputs("null,", f);
        write_ms(f, "for_ms", ago(now, h->since));
        fputs(",\"reason\":", f);
        json_write_string(f, h->reason);
        fputc('}', f);
}

/* The ledger as the policies see the pool now, and the last decision taken on one. */
static void write_decisions(FILE *f, const StatusView *v, usec_t now) {
        const Capacity *c = v->capacity;
        const DecisionRecord *d = &c->last_decision;
        PolicyInput in;
        Ledger l;

        capacity_policy_input(v->capacity, &in);
        policy_ledger(&in, &c->policy, &l);
        fprintf(f, "\"ledger\":{\"n\":%u,\"capacity\":%.4f,\"occupied\":%.4f,\"headroom\":%.4f,\"margin\":%.4f,"
                   "\"threshold\":%.4f,\"over_threshold\":%s,\"min_workers\":%u},",
                l.n, l.capacity, l.occupied, l.headroom, c->policy.compaction_margin, l.threshold,
                l.n > 0 && l.headroom > l.threshold ? "true" : "false", c->policy.min_workers);
        fputs("\"last_decision\":", f);
        if (d->set) {
                fprintf(f, "{\"kind\":\"%s\",\"what\":", decision_kind_to_string(d->kind));
                json_write_string(f, d->what);
                fputs(",\"reason\":", f);
                json_write_string(f, d->reason);
                fputc(',', f);
                write_ms(f, "ago_ms", ago(now, d->at));
                fprintf(f, ",\"ledger\":{\"n\":%u,\"capacity\":%.4f,\"occupied\":%.4f,\"headroom\":%.4f}}",
                        d->ledger.n, d->ledger.capacity, d->ledger.occupied, d->ledger.headroom);
        } else
                fputs("null", f);
        fputs(",\"holds\":{", f);
        write_hold(f, "scale_up", &c->scale_up_hold, now);
        fputc(',', f);
        write_hold(f, "compaction", &c->compaction_hold, now);
        fputs("},", f);
}

static void write_drain(FILE *f, const StatusView *v, usec_t now) {
        const Drain *d = v->compaction ? &v->compaction->drain : NULL;

        fputs("\"drain\":", f);
        if (!d || d->worker == 0) {
                fputs("null,", f);
                return;
        }
        fprintf(f, "{\"worker\":\"w%u\",\"users_at_start\":%u,\"moved\":%u,\"users_left\":%u,", d->worker,
                d->users_at_start, d->moved, surface_worker_users(v->compaction->surface, d->worker));
        write_ms(f, "for_ms", ago(now, d->started));
        fputs(",\"why\":", f);
        json_write_string(f, d->why);
        fputs("},", f);
}

static void write_moves(FILE *f, const StatusView *v, usec_t now) {
        const Moves *m = v->moves;
        const MoveRecord *r;
        bool first = true;

        fputs("\"moves\":{\"in_progress\":[", f);
        for (const Move *mv = m ? m->list : NULL; mv; mv = mv->next, first = false) {
                fprintf(f, "%s{\"id\":%llu,\"user\":", first ? "" : ",", (unsigned long long) mv->id);
                json_write_string(f, mv->user ? mv->user->name : NULL);
                fprintf(f, ",\"from\":\"w%u\",\"to\":\"w%u\",\"step\":\"%s\",\"repoint\":%s,", mv->from, mv->to,
                        move_state_to_string(mv->state), mv->repoint ? "true" : "false");
                write_ms(f, "for_ms", ago(now, mv->started));
                fputs(",\"why\":", f);
                json_write_string(f, mv->why);
                fputc('}', f);
        }
        fputs("],\"recent\":[", f);
        for (unsigned age = 0; m && (r = moves_recent(m, age)); age++) {
                fprintf(f, "%s{\"id\":%llu,\"user\":", age > 0 ? "," : "", (unsigned long long) r->id);
                json_write_string(f, r->user);
                fprintf(f, ",\"from\":\"w%u\",\"to\":\"w%u\",\"switched\":%s,\"repointed\":%s,\"bytes\":%llu,",
                        r->from, r->to, r->switched ? "true" : "false", r->repointed ? "true" : "false",
                        (unsigned long long) r->bytes);
                write_ms(f, "pause_ms", r->pause);
                fputc(',', f);
                write_ms(f, "ago_ms", ago(now, r->ended));
                fputs(",\"outcome\":", f);
                json_write_string(f, r->outcome);
                fputc('}', f);
        }
        fputs("],", f);
        if (m)
                fprintf(f, "\"started\":%llu,\"done\":%llu,\"repointed\":%llu,\"aborted\":%llu},",
                        (unsigned long long) m->next_id, (unsigned long long) m->done,
                        (unsigned long long) m->repointed, (unsigned long long) m->aborted);
        else
                fputs("\"started\":null,\"done\":null,\"repointed\":null,\"aborted\":null},", f);
}

static void write_frontend(FILE *f, const StatusView *v) {
        FrontendTotals t;

        fputs("\"frontend\":", f);
        if (!v->frontend) {
                fputs("null", f);
                return;
        }
        v->frontend->totals(v->frontend_data, &t);
        fprintf(f, "{\"requests\":%llu,\"errors\":%llu,\"connections\":%u,\"h2_connections\":%u,\"streams\":%u,",
                (unsigned long long) t.requests, (unsigned long long) t.errors, t.connections, t.h2_connections,
                t.streams);
        /* how its sockets are read and written, and why not through io_uring when it was asked for */
        fprintf(f, "\"io\":\"%s\",\"io_uring_error\":", t.io_uring ? "io_uring" : "syscalls");
        if (t.io_uring_error < 0)
                json_write_string(f, strerrordesc_np(-t.io_uring_error) ?: "unknown error");
        else
                fputs("null", f);
        fputc('}', f);
}

int monitor_write_json(const StatusView *v, FILE *f) {
        const Config *c = v->pool->config;
        usec_t now = now_usec(CLOCK_MONOTONIC);

        fputs("{\"group\":", f);
        json_write_string(f, v->group);
        fputc(',', f);
        write_ms(f, "interval_ms", c->occupancy_interval);
        fprintf(f, ",\"window_rows\":%u,\"reception_threshold\":%.4f,\"admission_threshold\":%.4f,"
                   "\"drift_after_reports\":%u,\"stopping\":%s,\"workers\":[",
                c->window_rows, c->reception_threshold, c->admission_threshold,
                capacity_drift_sustain(v->capacity), v->pool->stopping ? "true" : "false");
        for (size_t i = 0; i < v->pool->n_workers; i++) {
                if (i > 0)
                        fputc(',', f);
                write_worker(f, v, v->pool->workers[i], now);
        }
        fputs("],", f);
        write_decisions(f, v, now);
        write_drain(f, v, now);
        write_moves(f, v, now);
        write_frontend(f, v);
        fputs("}\n", f);
        return ferror(f) ? -EIO : 0;
}
