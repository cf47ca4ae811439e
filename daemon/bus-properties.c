/* SPDX-License-Identifier: MIT */
/* What the group's D-Bus properties say: the pool as status.json shows it, in D-Bus types (signatures
 * in shared/bus-api.h). A value that is not known is absent (its bit in `has` clear), never 0. */

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bus-internal.h"
#include "macro.h"

static const char *const property_names[_BUS_PROPERTY_MAX] = {
        [BUS_PROPERTY_WORKERS] = "Workers",   [BUS_PROPERTY_USERS] = "Users",
        [BUS_PROPERTY_HOLDS] = "Holds",       [BUS_PROPERTY_DRAIN] = "Drain",
        [BUS_PROPERTY_COUNTERS] = "Counters", [BUS_PROPERTY_SCALE_TARGET] = "ScaleTarget",
        [BUS_PROPERTY_ROLLING_RELOAD] = "RollingReload",
        [BUS_PROPERTY_REQUEST_RATE] = "RequestRate",
};

const char *bus_property_to_string(BusProperty p) {
        return p >= 0 && p < _BUS_PROPERTY_MAX ? property_names[p] : NULL;
}

unsigned bus_workers_staying(const Pool *p) {
        unsigned n = 0;

        for (size_t i = 0; i < p->n_workers; i++) {
                const Worker *w = p->workers[i];

                if ((worker_is_starting(w) || worker_is_routable(w)) && !w->evacuating)
                        n++;
        }
        return n;
}

/* Why decisions on w are held, "" when nothing holds them: its reading first (missing is never zero),
 * then a hold of the capacity shell that names it. */
static void worker_held(const Bus *b, const Worker *w, usec_t now, char *buf, size_t size) {
        const Hold *holds[] = {&b->capacity->scale_up_hold, &b->capacity->compaction_hold};
        char span[32];
        usec_t since;

        buf[0] = 0;
        switch (capacity_freshness(b->capacity, w, now, &since)) {
        case FRESHNESS_STALE:
                snprintf(buf, size, "no report for %s",
                         format_timespan(span, sizeof span, since > 0 && now > since ? now - since : 0));
                return;
        case FRESHNESS_MISSING:
                snprintf(buf, size, "its report lacks %s", w->reading.missing_names);
                return;
        case FRESHNESS_NO_CHANNEL:
                snprintf(buf, size, "channel closed: %s", strna(w->channel_close_reason));
                return;
        default:
                break;
        }
        for (size_t i = 0; i < ELEMENTSOF(holds); i++)
                if (holds[i]->active && holds[i]->worker == (int) w->id) {
                        snprintf(buf, size, "%s", holds[i]->reason);
                        return;
                }
}

static int append_worker(const Bus *b, sd_bus_message *reply, const Worker *w, usec_t now) {
        const Occupancy *o = &w->reading.occupancy;
        const Row *last = window_latest(&w->window);
        char held[256];
        WorkerTraffic t;
        Rates rates;
        unsigned has = 0;

        for (Component c = 0; c < _COMPONENT_MAX; c++)
                if (o->has[c] && isfinite(o->component[c]))
                        has |= 1u << c; /* BUS_API_HAS_MEMORY, _CPU, _EXECUTOR: the Component order */
        evaluator_rates(&w->window, &rates);
        if (rates.valid)
                has |= BUS_API_HAS_RPS;
        if (last && last->has_memory)
                has |= BUS_API_HAS_MEMORY_BYTES;
        if (last && last->has_cpu && isfinite(last->cpu))
                has |= BUS_API_HAS_CPU_CORES;
        (void) status_worker_traffic(b->status, w->id, &t);
        worker_held(b, w, now, held, sizeof held);

        return sd_bus_message_append(
                reply, BUS_API_WORKER_SIG, w->id, (uint32_t) w->pid,
                w->place.unit ? w->place.unit : strempty(w->place.cgroup_path),
                worker_state_to_string(w->state), w == b->pool->reception, w->evacuating,
                freshness_to_string(capacity_freshness(b->capacity, w, now, &(usec_t){0})), o->value,
                o->bottleneck >= 0 ? component_to_string(o->bottleneck) : "", has,
                has & BUS_API_HAS_MEMORY ? o->component[COMPONENT_MEMORY] : 0.0,
                has & BUS_API_HAS_CPU ? o->component[COMPONENT_CPU] : 0.0,
                has & BUS_API_HAS_EXECUTOR ? o->component[COMPONENT_EXECUTOR] : 0.0,
                capacity_worker_users(b->capacity, w), t.inflight, rates.valid ? rates.rps : 0.0,
                (uint64_t) (has & BUS_API_HAS_MEMORY_BYTES ? last->memory_bytes : 0),
                has & BUS_API_HAS_CPU_CORES ? last->cpu : 0.0, held, strempty(w->unhealthy));
}

int bus_property_get_workers(sd_bus *bus, const char *path, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Bus *b = userdata;
        usec_t now = now_usec(CLOCK_MONOTONIC);
        int r;

        r = sd_bus_message_open_container(reply, 'a', BUS_API_WORKER_SIG);
        if (r < 0)
                return r;
        for (size_t i = 0; i < b->pool->n_workers; i++) {
                r = append_worker(b, reply, b->pool->workers[i], now);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

int bus_property_get_users(sd_bus *bus, const char *path, const char *interface, const char *property,
                           sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Bus *b = userdata;
        SurfaceUser *u;
        int r;

        r = sd_bus_message_open_container(reply, 'a', BUS_API_USER_SIG);
        if (r < 0)
                return r;
        for (size_t i = 0; (u = surface_next_user(b->surface, &i));) {
                r = sd_bus_message_append(reply, BUS_API_USER_SIG, u->name, u->worker, u->requests,
                                          (double) u->busy_usec / USEC_PER_SEC, u->open, u->move != NULL);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

static int append_hold(sd_bus_message *reply, const char *decision, const Hold *h, usec_t now) {
        if (!h->active)
                return 0;
        return sd_bus_message_append(reply, BUS_API_HOLD_SIG, decision,
                                     strempty(decision_kind_to_string(h->kind)), (int32_t) h->worker,
                                     h->reason, (uint64_t) (now > h->since ? now - h->since : 0));
}

int bus_property_get_holds(sd_bus *bus, const char *path, const char *interface, const char *property,
                           sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Bus *b = userdata;
        usec_t now = now_usec(CLOCK_MONOTONIC);
        int r;

        r = sd_bus_message_open_container(reply, 'a', BUS_API_HOLD_SIG);
        if (r >= 0)
                r = append_hold(reply, "scale_up", &b->capacity->scale_up_hold, now);
        if (r >= 0)
                r = append_hold(reply, "compaction", &b->capacity->compaction_hold, now);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

int bus_property_get_drain(sd_bus *bus, const char *path, const char *interface, const char *property,
                           sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Bus *b = userdata;
        const Compaction *c = b->compaction;
        const Drain *d = &c->drain;
        usec_t now = now_usec(CLOCK_MONOTONIC);

        return sd_bus_message_append(reply, BUS_API_DRAIN_SIG, d->worker, d->worker != 0 && d->asked,
                                     (uint64_t) (d->worker != 0 && now > d->started ? now - d->started : 0),
                                     d->users_at_start, d->moved, d->repointed, d->deferred,
                                     d->worker != 0 ? surface_worker_users(c->surface, d->worker) : 0u,
                                     d->worker != 0 ? strempty(d->why) : "", c->last, c->drains_done,
                                     c->drains_stopped);
}

int bus_property_get_rolling_reload(sd_bus *bus, const char *path, const char *interface, const char *property,
                                    sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Rollout *r = ((const Bus *) userdata)->rollout;

        if (!r)
                return sd_bus_message_append(reply, BUS_API_ROLLING_RELOAD_SIG, false, "", "", (uint64_t) 0,
                                             (uint64_t) 0);
        return sd_bus_message_append(reply, BUS_API_ROLLING_RELOAD_SIG, r->active, r->active ? r->progress : "",
                                     r->last, r->done, r->stopped);
}

int bus_property_get_request_rate(sd_bus *bus, const char *path, const char *interface, const char *property,
                                  sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Capacity *c = ((const Bus *) userdata)->capacity;
        const RateReading *r = &c->rate_up;
        RateStatus status = c->policy.rps_target > 0 ? r->status : RATE_OFF;
        bool ok = status == RATE_OK;

        return sd_bus_message_append(reply, BUS_API_REQUEST_RATE_SIG, rate_status_to_string(status),
                                     ok ? r->per_worker : NAN, ok ? r->total : NAN, c->policy.rps_target,
                                     status == RATE_HELD || status == RATE_WAITING ? r->reason : "");
}

int bus_property_get_counters(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Bus *b = userdata;

        return sd_bus_message_append(reply, BUS_API_COUNTERS_SIG, b->pool->reports_received, b->pool->spawns,
                                     b->pool->deaths, b->moves);
}

/* ---- what changed ---- */

/* FNV-1a, 64 bits: a digest, not a security boundary */
static uint64_t mix(uint64_t h, const void *p, size_t n) {
        for (const unsigned char *c = p; n > 0; n--, c++)
                h = (h ^ *c) * UINT64_C(0x100000001b3);
        return h;
}

#define MIX(h, v) mix((h), &(typeof(v)){v}, sizeof(v))

static uint64_t mix_string(uint64_t h, const char *s) {
        return mix(h, strempty(s), strlen(strempty(s)) + 1);
}

static uint64_t workers_fingerprint(const Bus *b) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        usec_t now = now_usec(CLOCK_MONOTONIC);

        /* reports move occupancy; the generation moves states, membership, reception, channels */
        h = MIX(h, b->pool->generation);
        h = MIX(h, b->pool->reports_received);
        for (size_t i = 0; i < b->pool->n_workers; i++) {
                const Worker *w = b->pool->workers[i];
                WorkerTraffic t;

                (void) status_worker_traffic(b->status, w->id, &t);
                h = MIX(h, w->id);
                h = MIX(h, (int) w->state);
                h = MIX(h, w->evacuating);
                h = MIX(h, capacity_worker_users(b->capacity, w));
                h = MIX(h, t.inflight);
                h = MIX(h, (int) capacity_freshness(b->capacity, w, now, &(usec_t){0}));
        }
        return h;
}

/* The surface counts its own changes: no walk over every user four times a second. A user's move shows
 * as its placement (the switch) and its requests. */
static uint64_t users_fingerprint(const Bus *b) {
        return MIX(UINT64_C(0xcbf29ce484222325), b->surface->version);
}

static uint64_t hold_fingerprint(uint64_t h, const Hold *hold) {
        h = MIX(h, hold->active);
        if (!hold->active)
                return h;
        h = MIX(h, (int) hold->kind);
        h = MIX(h, hold->worker);
        return mix_string(h, hold->reason);
}

static uint64_t drain_fingerprint(const Bus *b) {
        const Compaction *c = b->compaction;
        uint64_t h = UINT64_C(0xcbf29ce484222325);

        h = MIX(h, c->drain.worker);
        h = MIX(h, c->drain.moved);
        h = MIX(h, c->drain.repointed);
        h = MIX(h, c->drain.deferred);
        h = MIX(h, c->drains_done);
        h = MIX(h, c->drains_stopped);
        if (c->drain.worker != 0)
                h = MIX(h, surface_worker_users(c->surface, c->drain.worker));
        return mix_string(h, c->last);
}

uint64_t bus_property_fingerprint(const Bus *b, BusProperty p) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);

        switch (p) {
        case BUS_PROPERTY_WORKERS:
                return workers_fingerprint(b);
        case BUS_PROPERTY_USERS:
                return users_fingerprint(b);
        case BUS_PROPERTY_HOLDS:
                h = hold_fingerprint(h, &b->capacity->scale_up_hold);
                return hold_fingerprint(h, &b->capacity->compaction_hold);
        case BUS_PROPERTY_DRAIN:
                return drain_fingerprint(b);
        case BUS_PROPERTY_COUNTERS:
                h = MIX(h, b->pool->reports_received);
                h = MIX(h, b->pool->spawns);
                h = MIX(h, b->pool->deaths);
                return MIX(h, b->moves);
        case BUS_PROPERTY_SCALE_TARGET:
                return MIX(h, b->scale_target);
        case BUS_PROPERTY_REQUEST_RATE:
                h = MIX(h, (int) b->capacity->rate_up.status);
                h = MIX(h, b->capacity->rate_up.per_worker);
                return mix_string(h, b->capacity->rate_up.reason);
        case BUS_PROPERTY_ROLLING_RELOAD:
                if (!b->rollout)
                        return h;
                h = MIX(h, b->rollout->active);
                h = MIX(h, b->rollout->done + b->rollout->stopped);
                return mix_string(h, b->rollout->progress);
        default:
                return 0;
        }
}
