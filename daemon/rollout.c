/* SPDX-License-Identifier: MIT */
#include "rollout.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "journal-ids.h"
#include "log.h"
#include "macro.h"

typedef struct Census {
        unsigned old_alive;      /* of an older definition, not yet dead */
        unsigned old_leaving;    /* of those, draining or stopping: a retire under way */
        unsigned new_routable;
        unsigned new_starting;
        const char *new_format;  /* the package format the new generation names */
} Census;

static bool is_old(const Rollout *r, const Worker *w) {
        return w->exec_generation != r->generation;
}

static void census(const Rollout *r, Census *ret) {
        const Pool *p = r->pool;

        *ret = (Census) {};
        for (size_t i = 0; i < p->n_workers; i++) {
                const Worker *w = p->workers[i];

                if (!worker_is_alive(w))
                        continue;
                if (is_old(r, w)) {
                        ret->old_alive++;
                        ret->old_leaving += w->state == WORKER_DRAINING || w->state == WORKER_STOPPING;
                } else if (worker_is_routable(w)) {
                        if (ret->new_routable++ == 0)
                                ret->new_format = w->package_format;
                } else if (worker_is_starting(w))
                        ret->new_starting++;
        }
}

unsigned rollout_old_workers(const Rollout *r) {
        Census c;

        if (!r->active)
                return 0;
        census(r, &c);
        return c.old_alive;
}

static void finish(Rollout *r, bool ok, const char *format, ...) _printf_(3, 4);
static void finish(Rollout *r, bool ok, const char *format, ...) {
        char span[32];
        va_list ap;

        va_start(ap, format);
        vsnprintf(r->last, sizeof r->last, format, ap);
        va_end(ap);
        r->active = false;
        r->pool->rollout_active = false;
        r->draining = 0;
        r->progress[0] = 0;
        r->timeout = sd_event_source_disable_unref(r->timeout);
        ok ? r->done++ : r->stopped++;
        /* stopped: the old generation takes users again, and keeps serving */
        pool_set_rolling(r->pool, false);
        format_timespan(span, sizeof span, now_usec(CLOCK_MONOTONIC) - r->started);
        log_struct(ok ? LOG_NOTICE : LOG_ERR, LOG_FIELDS(.message_id = MESSAGE_ID_RELOAD, .event = "rolling-reload"),
                   "Rolling reload %s after %s: %s", ok ? "done" : "stopped", span, r->last);
}

/* The text for the status surfaces, kept current; the journal hears of it once per step (key: the step,
 * the worker and what), not once per user moved. */
static void progress(Rollout *r, unsigned key, const char *format, ...) _printf_(3, 4);
static void progress(Rollout *r, unsigned key, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        vsnprintf(r->progress, sizeof r->progress, format, ap);
        va_end(ap);
        if (key == r->logged_key)
                return;
        r->logged_key = key;
        log_struct(LOG_INFO, LOG_FIELDS(.event = "rolling-reload"), "Rolling reload: %s", r->progress);
}

static unsigned step_key(unsigned step, unsigned worker, unsigned what) {
        return (step << 24) ^ (worker << 2) ^ what;
}

/* The next old worker to replace: the reception first (guests are then served by the new version), then
 * the lowest id. Under require-compatible, one whose users could not be carried is skipped. */
static Worker *next_old(Rollout *r, const Census *c) {
        Pool *p = r->pool;
        Worker *pick = NULL;

        for (size_t i = 0; i < p->n_workers; i++) {
                Worker *w = p->workers[i];

                if (!is_old(r, w) || !worker_is_routable(w) || w->evacuating)
                        continue;
                if (p->config->reload_state == RELOAD_STATE_REQUIRE_COMPATIBLE &&
                    !streq_ptr(w->package_format, c->new_format) && surface_worker_users(r->surface, w->id) > 0)
                        continue;
                if (w == p->reception)
                        return w;
                if (!pick)
                        pick = w;
        }
        return pick;
}

static void spawn_new(Rollout *r, unsigned replaced) {
        char why[96];
        int k;

        snprintf(why, sizeof why, "rolling reload: a new-definition worker to replace the %u%s old one",
                 replaced + 1, replaced == 0 ? "st" : replaced == 1 ? "nd" : replaced == 2 ? "rd" : "th");
        k = pool_spawn(r->pool, why);
        if (k < 0 && k != -EAGAIN)
                finish(r, false, "cannot spawn a worker of the new definition: %s; the old workers go on serving",
                       strerror(-k));
}

void rollout_step(Rollout *r, usec_t now) {
        Pool *p = r->pool;
        unsigned replaced;
        Census c;
        Worker *w;
        int k;

        if (!r->active || p->stopping)
                return;
        census(r, &c);
        if (p->spawn_failures > r->failures_at_start) {
                finish(r, false, "the new definition cannot start (%s); the old workers go on serving",
                       strna(p->throttle.last_error));
                return;
        }
        if (c.old_alive == 0) {
                finish(r, true, "%u workers replaced", r->total);
                return;
        }
        if (c.new_routable > 0 && !p->rolling)
                pool_set_rolling(p, true);
        if (compaction_draining(r->compaction)) {
                progress(r, step_key(r->total - c.old_alive + 1, r->compaction->drain.worker, 1),
                         "%u/%u: moving %u users off w%u", r->total - c.old_alive + 1, r->total,
                         surface_worker_users(r->surface, r->compaction->drain.worker), r->compaction->drain.worker);
                return;
        }
        if (c.old_leaving > 0)
                return; /* its death is the next step: capacity never drops by two */
        replaced = r->total > c.old_alive ? r->total - c.old_alive : 0;
        if (c.new_routable < replaced + 1) {
                if (c.new_starting == 0)
                        spawn_new(r, replaced);
                progress(r, step_key(replaced + 1, 0, 2), "%u/%u: starting a worker of the new definition",
                         replaced + 1, r->total);
                return;
        }
        w = next_old(r, &c);
        if (!w) {
                progress(r, step_key(0, c.old_alive, 3),
                         "%u old workers keep users whose state the new version cannot read "
                         "(reload_state=require-compatible): retired once empty, or at reload_timeout",
                         c.old_alive);
                for (size_t i = 0; i < p->n_workers; i++)
                        if (is_old(r, p->workers[i]) && worker_is_routable(p->workers[i]) &&
                            surface_worker_users(r->surface, p->workers[i]->id) == 0)
                                pool_retire_worker(p, p->workers[i], "rolling reload: no users left");
                return;
        }
        if (w == p->reception)
                pool_pick_reception(p);
        k = compaction_replace(r->compaction, w->id, "rolling reload", now);
        if (k < 0) {
                progress(r, step_key(replaced + 1, w->id, 0), "%u/%u: cannot drain w%u yet: %s", replaced + 1,
                         r->total, w->id, strerror(-k));
                return;
        }
        r->draining = w->id;
        progress(r, step_key(replaced + 1, w->id, 1), "%u/%u: moving %u users off w%u", replaced + 1, r->total,
                 surface_worker_users(r->surface, w->id), w->id);
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Rollout *r = userdata;
        Pool *p = r->pool;
        unsigned n = 0;

        r->timeout = sd_event_source_disable_unref(r->timeout);
        for (size_t i = 0; i < p->n_workers; i++) {
                Worker *w = p->workers[i];

                if (!is_old(r, w) || !worker_is_routable(w) || w->evacuating)
                        continue;
                if (w == p->reception)
                        pool_pick_reception(p);
                pool_retire_worker(p, w, "reload_timeout");
                n++;
        }
        if (n > 0)
                log_warning("Rolling reload still running at reload_timeout: retired %u old workers whose users had "
                            "not moved (they are placed again on their next request)", n);
        rollout_step(r, now_usec(CLOCK_MONOTONIC));
        return 0;
}

void rollout_start(Rollout *r, usec_t now) {
        bool superseded = r->active;
        Census c;
        int k;

        r->generation = r->pool->exec_generation;
        census(r, &c);
        if (c.old_alive == 0)
                return;
        r->active = true;
        r->pool->rollout_active = true;
        r->started = now;
        r->total = c.old_alive;
        r->draining = 0;
        r->failures_at_start = r->pool->spawn_failures;
        r->progress[0] = 0;
        r->logged_key = UINT_MAX;
        /* the workers of the superseded definition are old now too: the next new one takes over */
        pool_set_rolling(r->pool, false);
        r->timeout = sd_event_source_disable_unref(r->timeout);
        k = sd_event_add_time_relative(r->pool->event, &r->timeout, CLOCK_MONOTONIC, r->pool->config->reload_timeout,
                                       USEC_PER_SEC, on_timeout, r);
        if (k < 0)
                log_warning_errno(k, "Failed to arm reload_timeout (%m): the rolling reload has no time limit");
        log_struct(LOG_NOTICE, LOG_FIELDS(.message_id = MESSAGE_ID_RELOAD, .event = "rolling-reload"),
                   "Rolling reload%s: replacing %u workers one at a time", superseded ? " (superseding the one "
                   "under way)" : "", r->total);
        rollout_step(r, now);
}

void rollout_init(Rollout *r, Pool *pool, Compaction *compaction, Surface *surface) {
        *r = (Rollout) { .pool = pool, .compaction = compaction, .surface = surface };
}

void rollout_done(Rollout *r) {
        r->timeout = sd_event_source_disable_unref(r->timeout);
}
