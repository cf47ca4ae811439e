/* SPDX-License-Identifier: MIT */
/* The pool's state as one JSON document: workers with occupancy and components, freshness, holds with
 * their reasons, the ledger. Written to <runtime dir>/status.json every second (for the demo and for
 * operators with nothing but a shell) and served by the status surfaces. */

#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "json-write.h"
#include "log.h"
#include "macro.h"

static void write_hold(FILE *f, const char *name, const Hold *h, usec_t now) {
        fprintf(f, "\"%s\":", name);
        if (!h->active) {
                fputs("null", f);
                return;
        }
        fprintf(f, "{\"kind\":\"%s\",\"worker\":", decision_kind_to_string(h->kind));
        if (h->worker >= 0)
                fprintf(f, "\"w%d\"", h->worker);
        else
                fputs("null", f);
        fprintf(f, ",\"for_ms\":%llu,\"reason\":", (unsigned long long) ((now - h->since) / USEC_PER_MSEC));
        json_write_string(f, h->reason);
        fputc('}', f);
}

static void write_worker(FILE *f, const StatusView *v, const Worker *w, usec_t now) {
        const Row *last = window_latest(&w->window);
        const Occupancy *o = &w->reading.occupancy;
        usec_t since;
        Freshness fr = capacity_freshness(v->capacity, w, now, &since);
        WorkerTraffic t;

        fprintf(f,
                "{\"id\":%u,\"name\":\"w%u\",\"state\":\"%s\",\"reception\":%s,\"evacuating\":%s,"
                "\"adopted\":%s,\"awaiting_sensor\":%s,\"pid\":%d,",
                w->id, w->id, worker_state_to_string(w->state), w == v->pool->reception ? "true" : "false",
                w->evacuating ? "true" : "false", w->adopted ? "true" : "false",
                w->awaiting_sensor ? "true" : "false", (int) w->pid);
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
        fprintf(f, "},\"freshness\":\"%s\",", freshness_to_string(fr));
        if (fr != FRESHNESS_FRESH && fr != FRESHNESS_NEW)
                fprintf(f, "\"not_fresh_for_ms\":%llu,", (unsigned long long) ((now - since) / USEC_PER_MSEC));
        if (w->reading.missing_mask)
                fprintf(f, "\"missing\":\"%s\",", w->reading.missing_names);
        if (w->unhealthy) {
                fputs("\"unhealthy\":", f);
                json_write_string(f, w->unhealthy);
                fputc(',', f);
        }
        if (w->channel_close_reason && !channel_is_open(w->channel)) {
                fputs("\"channel_closed\":", f);
                json_write_string(f, w->channel_close_reason);
                fputc(',', f);
        }
        (void) status_worker_traffic(v, w->id, &t);
        fprintf(f, "\"rows\":%u,\"users\":%u,\"inflight\":%u,\"requests\":", w->window.count,
                capacity_worker_users(v->capacity, w), t.inflight);
        if (t.has_forward)
                fprintf(f, "%llu,", (unsigned long long) t.requests);
        else
                fputs("null,", f);
        if (last) {
                fprintf(f, "\"last_report_ms_ago\":%llu,\"cpu\":", (unsigned long long) ((now - last->received) / USEC_PER_MSEC));
                json_write_number_or_null(f, last->has_cpu, last->cpu);
                fputs(",\"memory_bytes\":", f);
                if (last->has_memory)
                        fprintf(f, "%llu", (unsigned long long) last->memory_bytes);
                else
                        fputs("null", f);
                fputc(',', f);
        }
        fprintf(f, "\"exec_current\":%s,", w->exec_generation == v->pool->exec_generation ? "true" : "false");
        fputs("\"socket\":", f);
        json_write_string(f, w->socket_path);
        if (w->place.cgroup_path) {
                fputs(",\"cgroup\":", f);
                json_write_string(f, w->place.cgroup_path);
        }
        if (w->place.unit) {
                fputs(",\"unit\":", f);
                json_write_string(f, w->place.unit);
        }
        fputc('}', f);
}

/* A front end writes *ret whole (frontend-port.h): zeroed here only without one, not twice a report. */
bool status_worker_traffic(const StatusView *v, unsigned worker, WorkerTraffic *ret) {
        if (v->frontend)
                return v->frontend->worker_traffic(v->frontend_data, worker, ret);
        *ret = (WorkerTraffic) {};
        return false;
}

/* The drain under way (null when none), how the last one ended, the back-off before the next. */
static void write_compaction(FILE *f, const Compaction *c, usec_t now) {
        const Drain *d = &c->drain;

        fputs("\"drain\":", f);
        if (d->worker == 0)
                fputs("null", f);
        else {
                fprintf(f,
                        "{\"worker\":\"w%u\",\"for_ms\":%llu,\"operator\":%s,\"users_at_start\":%u,"
                        "\"moved\":%u,\"repointed\":%u,\"deferred\":%u,\"users_left\":%u,\"why\":",
                        d->worker, (unsigned long long) ((now - d->started) / USEC_PER_MSEC),
                        d->asked ? "true" : "false", d->users_at_start, d->moved, d->repointed, d->deferred,
                        surface_worker_users(c->surface, d->worker));
                json_write_string(f, d->why);
                fputc('}', f);
        }
        fputs(",\"last_drain\":", f);
        if (c->last[0])
                json_write_string(f, c->last);
        else
                fputs("null", f);
        fprintf(f, ",\"drain_backoff_ms\":%llu,\"drains_done\":%llu,\"drains_stopped\":%llu,",
                (unsigned long long) (c->backoff_until > now ? (c->backoff_until - now) / USEC_PER_MSEC : 0),
                (unsigned long long) c->drains_done, (unsigned long long) c->drains_stopped);
}

/* The relief round under way (null when none) and how many there were. */
static void write_relief(FILE *f, const Relief *r) {
        const ReliefRound *rd = &r->round;

        fputs("\"relief\":", f);
        if (rd->from == 0)
                fputs("null", f);
        else
                fprintf(f, "{\"from\":\"w%u\",\"to\":\"w%u\",\"burst\":%s,\"moved\":%u,"
                           "\"from_projected\":%.4f,\"to_projected\":%.4f}",
                        rd->from, rd->to, rd->burst ? "true" : "false", rd->moved, rd->from_projected,
                        rd->to_projected);
        fprintf(f, ",\"relief_rounds\":%llu,\"relief_burst_rounds\":%llu,\"relief_moves\":%llu,",
                (unsigned long long) r->rounds, (unsigned long long) r->burst_rounds,
                (unsigned long long) r->moved);
}

/* The hold of a decision for the one-line status: its kind and reason, "none" without one. */
static const char *hold_text(const Hold *h, char *buf, size_t size) {
        if (!h->active)
                return "none";
        snprintf(buf, size, "%s (%s)", decision_kind_to_string(h->kind), h->reason);
        return buf;
}

static void write_rate(FILE *f, const char *name, const RateReading *r) {
        fprintf(f, "\"%s\":{\"status\":\"%s\",\"window_s\":%.0f,\"per_worker\":", name,
                rate_status_to_string(r->status), (double) r->length / USEC_PER_SEC);
        /* not available is null with the reason, never a live-looking 0 */
        json_write_number_or_null(f, r->status == RATE_OK, r->per_worker);
        fputs(",\"group\":", f);
        json_write_number_or_null(f, r->status == RATE_OK, r->total);
        fputs(",\"reason\":", f);
        if (r->status == RATE_HELD || r->status == RATE_WAITING)
                json_write_string(f, r->reason);
        else
                fputs("null", f);
        fputc('}', f);
}

static void write_rates(FILE *f, const Capacity *c) {
        fputs("\"rps\":", f);
        if (c->policy.rps_target <= 0) {
                fputs("null,", f);
                return;
        }
        fprintf(f, "{\"target\":%g,", c->policy.rps_target);
        write_rate(f, "up", &c->rate_up);
        fputc(',', f);
        write_rate(f, "down", &c->rate_down);
        fputs("},", f);
}

/* The burst path's reading: null while it is off. */
static void write_burst(FILE *f, const Capacity *c) {
        fputs("\"burst\":", f);
        if (c->burst.status == BURST_OFF) {
                fputs("null,", f);
                return;
        }
        fprintf(f, "{\"status\":\"%s\",\"window_s\":%.3f,\"queue\":%u,\"samples\":%llu,\"reason\":",
                burst_status_to_string(c->burst.status), (double) c->burst_params.window / USEC_PER_SEC,
                c->burst_params.queue, (unsigned long long) c->burst_samples);
        json_write_string(f, c->burst.reason);
        fputs("},", f);
}

static void write_rollout(FILE *f, const Rollout *r) {
        fputs("\"rolling_reload\":", f);
        if (r->active) {
                fprintf(f, "{\"old_workers\":%u,\"of\":%u,\"draining\":%u,\"progress\":", rollout_old_workers(r),
                        r->total, r->compaction->drain.worker);
                json_write_string(f, r->progress);
                fputs("}", f);
        } else
                fputs("null", f);
        fputs(",\"last_rolling_reload\":", f);
        if (r->last[0])
                json_write_string(f, r->last);
        else
                fputs("null", f);
        fprintf(f, ",\"rolling_reloads_done\":%llu,\"rolling_reloads_stopped\":%llu,", (unsigned long long) r->done,
                (unsigned long long) r->stopped);
}

void status_line(const StatusView *v, char *buf, size_t size) {
        const char *reload_error = v->reload_error ? *v->reload_error : NULL;
        _cleanup_free_ char *text = NULL;
        size_t len = 0, users = 0, workers = 0;
        char up[300], down[300];
        FILE *f = open_memstream(&text, &len);

        if (!f) {
                snprintf(buf, size, "%zu workers", v->pool->n_workers);
                return;
        }
        for (size_t i = 0; i < v->pool->n_workers; i++)
                if (worker_in_policy(v->pool->workers[i])) {
                        workers++;
                        users += capacity_worker_users(v->capacity, v->pool->workers[i]);
                }
        fprintf(f, "%zu worker%s, %zu users, occupancy ", workers, workers == 1 ? "" : "s", users);
        if (workers == 0)
                fputc('-', f);
        for (size_t i = 0, n = 0; i < v->pool->n_workers; i++)
                if (worker_in_policy(v->pool->workers[i]))
                        fprintf(f, "%s%.2f", n++ == 0 ? "" : "/", v->pool->workers[i]->reading.occupancy.value);
        fprintf(f, ", held: scale-up %s, compaction %s", hold_text(&v->capacity->scale_up_hold, up, sizeof up),
                hold_text(&v->capacity->compaction_hold, down, sizeof down));
        if (v->compaction && v->compaction->drain.worker)
                fprintf(f, "; draining w%u (%u users left)", v->compaction->drain.worker,
                        surface_worker_users(v->compaction->surface, v->compaction->drain.worker));
        if (v->capacity->policy.rps_target > 0) {
                const RateReading *r = &v->capacity->rate_up;
                if (r->status == RATE_OK)
                        fprintf(f, "; rps %.1f/s per worker", r->per_worker);
                else if (r->reason[0])
                        fprintf(f, "; rps not available (%s)", r->reason);
                else
                        fputs("; rps not measured yet", f);
        }
        /* a burst under way or held shows (calm is the usual state, and says nothing) */
        if (v->capacity->burst.status == BURST_RISING || v->capacity->burst.status == BURST_SUSTAINED ||
            v->capacity->burst.status == BURST_HELD)
                fprintf(f, "; %s", v->capacity->burst.reason);
        if (v->rollout && v->rollout->active)
                fprintf(f, "; reload %s", v->rollout->progress[0] ? v->rollout->progress : "starting");
        if (reload_error)
                fprintf(f, "; reload failed, running on the previous configuration: %s", reload_error);
        if (fclose(f) != 0 || !text) {
                snprintf(buf, size, "%zu workers", v->pool->n_workers);
                return;
        }
        snprintf(buf, size, "%s", text);
}

int status_write(const StatusView *v, FILE *f) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        PolicyInput in;
        Ledger l;

        capacity_policy_input(v->capacity, &in);
        policy_ledger(&in, &v->capacity->policy, &l);
        fputs("{\"group\":", f);
        json_write_string(f, v->group);
        fprintf(f, ",\"backend\":\"%s\",\"stopping\":%s,\"workers\":[",
                backend_kind_to_string(v->pool->backend->vtable->kind), v->pool->stopping ? "true" : "false");
        for (size_t i = 0; i < v->pool->n_workers; i++) {
                if (i > 0)
                        fputc(',', f);
                write_worker(f, v, v->pool->workers[i], now);
        }
        fprintf(f, "],\"ledger\":{\"n\":%u,\"capacity\":%.4f,\"occupied\":%.4f,\"headroom\":%.4f,\"threshold\":%.4f},",
                l.n, l.capacity, l.occupied, l.headroom, l.threshold);
        if (v->compaction)
                write_compaction(f, v->compaction, now);
        if (v->relief)
                write_relief(f, v->relief);
        if (v->rollout)
                write_rollout(f, v->rollout);
        write_rates(f, v->capacity);
        write_burst(f, v->capacity);
        fputs("\"reload_error\":", f);
        if (v->reload_error && *v->reload_error)
                json_write_string(f, *v->reload_error);
        else
                fputs("null", f);
        fputs(",\"holds\":{", f);
        write_hold(f, "scale_up", &v->capacity->scale_up_hold, now);
        fputc(',', f);
        write_hold(f, "compaction", &v->capacity->compaction_hold, now);
        fprintf(f, "},\"spawn\":{\"failures\":%u,\"given_up\":%s,\"last_error\":", v->pool->throttle.failures,
                v->pool->throttle.given_up ? "true" : "false");
        json_write_string(f, v->pool->throttle.last_error);
        fprintf(f, "},\"adopting\":%u,\"counters\":{\"reports\":%llu,\"spawns\":%llu,\"deaths\":%llu,"
                "\"adopted\":%llu,\"channel_refused\":%llu}}\n", v->pool->adopting,
                (unsigned long long) v->pool->reports_received, (unsigned long long) v->pool->spawns,
                (unsigned long long) v->pool->deaths, (unsigned long long) v->pool->adopted,
                (unsigned long long) channel_listener_refused(v->pool->channel_listener));
        return ferror(f) ? -EIO : 0;
}

int status_write_file(const StatusView *v, const char *path) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        int fd, r;

        if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
                return -ENOMEM;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "w");
        if (!f) {
                r = -errno;
                (void) close(fd);
                (void) unlink(tmp);
                return r;
        }
        (void) fchmod(fd, 0644);
        r = status_write(v, f);
        if (r >= 0 && fflush(f) != 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp);
        return r;
}
