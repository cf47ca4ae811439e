/* SPDX-License-Identifier: MIT */
#include "health.h"

#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "macro.h"

void health_init(Health *h, Pool *p, Capacity *c, sd_event *event) {
        *h = (Health) { .pool = p, .capacity = c, .event = event };
}

void health_done(Health *h) {
        for (size_t i = 0; i < h->n_probes; i++)
                health_probe_free(h->probes[i]);
        free(h->probes);
        *h = (Health) {};
}

/* ---- probes ---- */

static HealthProbe **probe_slot(Health *h, unsigned worker) {
        for (size_t i = 0; i < h->n_probes; i++)
                if (health_probe_worker(h->probes[i]) == worker)
                        return &h->probes[i];
        return NULL;
}

static void probe_drop(Health *h, HealthProbe **slot) {
        health_probe_free(*slot);
        *slot = h->probes[--h->n_probes];
}

static void take_back(Health *h, Worker *w, usec_t now, const char *why);

static void on_probe_answered(HealthProbe *probe, unsigned worker, unsigned status, void *userdata) {
        Health *h = userdata;
        Worker *w = pool_get_worker(h->pool, worker);
        WorkerTraffic t = {};
        char why[64];

        probe_drop(h, probe_slot(h, worker));
        if (!w || w->health.cause != HEALTH_CAUSE_UNANSWERED)
                return;
        /* the requests it left unanswered so far no longer count: it answers now */
        if (h->capacity->sources.worker_traffic &&
            h->capacity->sources.worker_traffic(w->id, &t, h->capacity->sources.userdata))
                w->health.forgiven = t.unanswered;
        snprintf(why, sizeof why, "it answered a health probe (HTTP %u)", status);
        take_back(h, w, now_usec(CLOCK_MONOTONIC), why);
}

/* One probe at a time per worker; a new one when the last failed or waited response_timeout (a worker
 * may lose a request; one that hangs keeps it, and answers it when it comes back). */
static void probe(Health *h, Worker *w, usec_t now) {
        HealthProbe **slot = probe_slot(h, w->id), **grown;
        int r;

        if (slot && !health_probe_failed(*slot) &&
            now - health_probe_started(*slot) < h->pool->config->response_timeout)
                return;
        if (slot)
                probe_drop(h, slot);
        if (!w->socket_path)
                return;
        grown = reallocarray(h->probes, h->n_probes + 1, sizeof *h->probes);
        if (!grown)
                return (void) log_oom();
        h->probes = grown;
        r = health_probe_new(h->event, w->id, w->socket_path, on_probe_answered, h, &h->probes[h->n_probes]);
        if (r < 0)
                return (void) log_debug_errno(
                        r, "Health probe of %s failed to start (%m), again in a second", WORKER_NAME(w));
        h->n_probes++;
}

/* Probes of workers no longer out for unanswered requests (answered, stopped, gone) end. */
static void sweep_probes(Health *h) {
        for (size_t i = 0; i < h->n_probes;) {
                Worker *w = pool_get_worker(h->pool, health_probe_worker(h->probes[i]));

                if (w && worker_is_routable(w) && w->health.cause == HEALTH_CAUSE_UNANSWERED)
                        i++;
                else
                        probe_drop(h, &h->probes[i]);
        }
}

/* ---- the two signs ---- */

static void take_out(Health *h, Worker *w, HealthCause cause, usec_t now, const char *why) {
        if (w->health.cause == cause)
                return;
        w->health.cause = cause;
        w->health.out_since = now;
        pool_set_unhealthy(h->pool, w, why);
}

static void take_back(Health *h, Worker *w, usec_t now, const char *why) {
        if (w->health.cause == HEALTH_CAUSE_NONE)
                return;
        log_struct(LOG_NOTICE, LOG_FIELDS(.event = "unhealthy", .worker = (int) w->id),
                   "%s answers again: %s", WORKER_NAME(w), why);
        w->health.cause = HEALTH_CAUSE_NONE;
        w->health.out_since = 0;
        pool_set_unhealthy(h->pool, w, NULL);
}

/* Requests w left unanswered in a row as health counts them: the front end's run since w's last answer,
 * less what a probe's answer forgave. 0 without a front end. */
static unsigned unanswered_run(Health *h, Worker *w) {
        const CapacitySources *s = &h->capacity->sources;
        WorkerTraffic t = {};

        if (!s->worker_traffic || !s->worker_traffic(w->id, &t, s->userdata) || !t.has_forward)
                return 0;
        if (t.answers != w->health.answers) {
                /* it answered since the last look: the front end's run began after that answer */
                w->health.answers = t.answers;
                w->health.forgiven = 0;
        }
        return t.unanswered > w->health.forgiven ? t.unanswered - w->health.forgiven : 0;
}

static void stop_hung(Health *h, Worker *w, usec_t out_for, const char *what) {
        const Config *config = h->pool->config;
        char span[32], limit[32];

        log_struct(LOG_WARNING, LOG_FIELDS(.event = "hung", .worker = (int) w->id),
                   "%s %s for %s (hung_timeout=%s): stopping it; it is replaced as capacity needs",
                   WORKER_NAME(w), what, format_timespan(span, sizeof span, out_for),
                   format_timespan(limit, sizeof limit, config->hung_timeout));
        pool_stop_worker(h->pool, w,
                         w->health.cause == HEALTH_CAUSE_SILENT ? "hung: no report for hung_timeout"
                                                                : "hung: unanswered for hung_timeout");
}

static void check_silent(Health *h, Worker *w, usec_t since, usec_t now) {
        usec_t silent = since > 0 && now > since ? now - since : 0;
        char why[128], span[32];

        snprintf(why, sizeof why, "no report for %s", format_timespan(span, sizeof span, silent));
        take_out(h, w, HEALTH_CAUSE_SILENT, now, why);
        if (h->pool->config->hung_timeout > 0 && silent >= h->pool->config->hung_timeout)
                stop_hung(h, w, silent, "sent no report");
}

static void check_unanswered(Health *h, Worker *w, unsigned run, usec_t now) {
        const Config *config = h->pool->config;
        char why[160], span[32];

        snprintf(why, sizeof why,
                 "%u requests in a row unanswered (no response head within response_timeout=%s, or no "
                 "connection)",
                 run, format_timespan(span, sizeof span, config->response_timeout));
        take_out(h, w, HEALTH_CAUSE_UNANSWERED, now, why);
        if (config->hung_timeout > 0 && now - w->health.out_since >= config->hung_timeout) {
                stop_hung(h, w, now - w->health.out_since, "left requests unanswered");
                return;
        }
        probe(h, w, now);
}

static void check_worker(Health *h, Worker *w, usec_t now) {
        const Config *config = h->pool->config;
        usec_t since = 0;
        unsigned run;
        Freshness f;

        f = capacity_freshness(h->capacity, w, now, &since);
        if (f == FRESHNESS_STALE) {
                check_silent(h, w, since, now);
                return;
        }
        run = unanswered_run(h, w);
        if (config->unanswered_limit > 0 && run >= config->unanswered_limit) {
                check_unanswered(h, w, run, now);
                return;
        }
        /* a reading again (or none expected yet), and it answers */
        if (w->health.cause == HEALTH_CAUSE_SILENT && (f == FRESHNESS_FRESH || f == FRESHNESS_MISSING))
                take_back(h, w, now, "it reports");
        else if (w->health.cause == HEALTH_CAUSE_UNANSWERED)
                take_back(h, w, now, "a request got its answer");
}

void health_check(Health *h, usec_t now) {
        Pool *p = h->pool;

        if (p->stopping || p->adopting > 0)
                return;
        for (size_t i = 0; i < p->n_workers; i++) {
                Worker *w = p->workers[i];

                if (w->state == WORKER_ROUTABLE && !w->awaiting_sensor)
                        check_worker(h, w, now);
        }
        sweep_probes(h);
}
