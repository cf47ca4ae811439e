/* SPDX-License-Identifier: MIT */
/* The burst path's shell (burst.h has the rules): every CAPACITY_BURST_INTERVAL it samples each routable
 * worker's waiting requests (one sock_diag dump for every accept queue, the front end's queue, the
 * executor queue the sensor told), feeds the pure tracks and assessment, journals a change of the
 * reading, and runs the capacity check when the reading wants a spawn or holds one: the spawn itself goes
 * the way of every scale-up (policy_scale_up_burst() behind occupancy and rate, the guards, the spawn
 * throttle, one spawn in flight at a time). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "capacity.h"
#include "cleanup.h"
#include "log.h"
#include "macro.h"

static void burst_buffers_free(Capacity *c) {
        c->burst_buf = mfree(c->burst_buf);
        c->burst_inos = mfree(c->burst_inos);
        c->burst_queued = mfree(c->burst_queued);
        c->burst_found = mfree(c->burst_found);
        c->burst_buf_size = 0;
}

static int burst_buffers_fit(Capacity *c, size_t n) {
        size_t size = n + 16;

        if (c->burst_buf_size >= n)
                return 0;
        burst_buffers_free(c);
        c->burst_buf = calloc(size, sizeof *c->burst_buf);
        c->burst_inos = calloc(size, sizeof *c->burst_inos);
        c->burst_queued = calloc(size, sizeof *c->burst_queued);
        c->burst_found = calloc(size, sizeof *c->burst_found);
        if (!c->burst_buf || !c->burst_inos || !c->burst_queued || !c->burst_found) {
                burst_buffers_free(c);
                return -ENOMEM;
        }
        c->burst_buf_size = size;
        return 0;
}

const BurstReading *capacity_burst_reading(const Capacity *c, BurstReading *buf) {
        if (c->burst.status == BURST_OFF || c->burst_generation == c->pool->generation)
                return &c->burst;
        /* assessed on another pool: a worker joined (the one the burst spawned, say) or left since. A
         * reading of the old set must not spawn again; the next sample judges the new one. */
        *buf = (BurstReading) { .status = BURST_CALM, .culprit = -1 };
        snprintf(buf->reason, sizeof buf->reason, "burst: the pool changed since the last sample");
        return buf;
}

void capacity_burst_executor(Capacity *c, Worker *w, uint32_t queue_depth, usec_t at) {
        (void) c;
        w->executor_queue_offered = true;
        w->executor_queue = queue_depth;
        w->executor_queue_at = at;
}

/* The accept queues of the n workers in c->burst_inos, by one dump. false when the dump failed (each
 * worker's accept queue is then late, not empty). */
static bool sample_accept_queues(Capacity *c, size_t n) {
        int r;

        r = sock_diag_unix_backlogs(c->pool->sock_diag, c->burst_inos, n, c->burst_queued, c->burst_found);
        if (r < 0) {
                log_debug_errno(r, "sock_diag dump of the workers' accept queues failed: %m");
                return false;
        }
        return true;
}

/* w's sample; accept_found/accept_queued from the dump (dumped false: no dump this time). */
static void fill_sample(Capacity *c, Worker *w, bool dumped, bool accept_found, uint32_t accept_queued, usec_t now,
                        BurstSample *s) {
        FreshnessInput fin;
        WorkerTraffic t;

        *s = (BurstSample) {};
        if (c->pool->sock_diag) {
                if (dumped && accept_found) {
                        w->accept_queue_at = now;
                        s->availability[BURST_ACCEPT_QUEUE] = BURST_CURRENT;
                        s->value[BURST_ACCEPT_QUEUE] = accept_queued;
                } else {
                        s->availability[BURST_ACCEPT_QUEUE] = BURST_LATE;
                        s->late_since[BURST_ACCEPT_QUEUE] = w->accept_queue_at;
                }
        }
        if (c->sources.worker_traffic && c->sources.worker_traffic(w->id, &t, c->sources.userdata) && t.has_forward) {
                s->availability[BURST_FORWARD_QUEUE] = BURST_CURRENT;
                s->value[BURST_FORWARD_QUEUE] = t.queued;
        }
        if (w->executor_queue_offered) {
                /* as current as the reports are fresh: the sensor tells a crossing of burst_queue at once
                 * (an early report), so between two reports the depth stayed on the side it was on */
                pool_freshness_input(c->pool, w, &fin);
                if (fin.channel_open && now - w->executor_queue_at <= fin.horizon) {
                        s->availability[BURST_EXECUTOR_QUEUE] = BURST_CURRENT;
                        s->value[BURST_EXECUTOR_QUEUE] = w->executor_queue;
                } else {
                        s->availability[BURST_EXECUTOR_QUEUE] = BURST_LATE;
                        s->late_since[BURST_EXECUTOR_QUEUE] = w->executor_queue_at;
                }
        }
}

/* The journal hears the reading's turns: a burst that is sustained, a spike that ended before
 * burst_window (nothing spawned), a hold. A pool that hovers at burst_queue turns every sample or two:
 * a streak that begins, and one that ends within a quarter of burst_window, are debug lines. */
static void journal_burst(const BurstReading *before, const BurstReading *after, usec_t window) {
        char span[32];

        if (before->status == after->status)
                return;
        switch (after->status) {
        case BURST_RISING:
                log_debug("%s: every worker saturated, waiting for burst_window", after->reason);
                break;
        case BURST_SUSTAINED:
                log_struct(LOG_NOTICE, LOG_FIELDS(.event = "burst"), "%s: sustained, a worker is wanted",
                           after->reason);
                break;
        case BURST_HELD:
                log_struct(LOG_NOTICE, LOG_FIELDS(.event = "burst"), "%s", after->reason);
                break;
        case BURST_CALM:
                if (before->status == BURST_RISING && before->span >= window / 4)
                        log_struct(LOG_INFO, LOG_FIELDS(.event = "burst"),
                                   "Burst over after %s, shorter than burst_window: a spike, nothing spawned (%s)",
                                   format_timespan(span, sizeof span, before->span), after->reason);
                else
                        log_debug("%s", after->reason);
                break;
        default:
                break;
        }
}

void capacity_burst_sample(Capacity *c, usec_t now) {
        BurstReading before = c->burst;
        Pool *p = c->pool;
        size_t n = 0;
        bool dumped = false;

        if (p->stopping)
                return;
        if (burst_buffers_fit(c, p->n_workers) < 0) {
                log_warning("Out of memory sampling the burst path, skipping a sample");
                return;
        }
        for (size_t i = 0; i < p->n_workers; i++) {
                Worker *w = p->workers[i];

                if (!worker_takes_users(w)) {
                        /* out of new work: its streak ends, a later one starts afresh */
                        w->burst = BURST_TRACK_INIT;
                        continue;
                }
                c->burst_inos[n] = w->socket_ino;
                c->burst_buf[n++].id = w->id;
        }
        if (n > 0 && p->sock_diag)
                dumped = sample_accept_queues(c, n);
        /* the same walk again, in the same order: the i-th taker is c->burst_buf[i] */
        for (size_t j = 0, i = 0; j < p->n_workers && i < n; j++) {
                Worker *w = p->workers[j];
                BurstSample s;

                if (!worker_takes_users(w))
                        continue;
                fill_sample(c, w, dumped, c->burst_found[i], c->burst_queued[i], now, &s);
                burst_observe(&w->burst, &s, &c->burst_params, now);
                c->burst_buf[i++].track = w->burst;
        }
        c->burst_samples++;
        burst_assess(c->burst_buf, n, &c->burst_params, now, &c->burst);
        c->burst_generation = p->generation;
        journal_burst(&before, &c->burst, c->burst_params.window);
        /* a spawn wanted, or a hold to show: the capacity check decides, through the same guards */
        if (c->burst.status == BURST_SUSTAINED || (c->burst.status == BURST_HELD && before.status != BURST_HELD) ||
            (before.status == BURST_HELD && c->burst.status != BURST_HELD))
                capacity_check(c);
        if (c->actions.burst_sampled)
                c->actions.burst_sampled(now, c->actions.userdata);
}

static int on_burst_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Capacity *c = userdata;
        int r;

        capacity_burst_sample(c, now_usec(CLOCK_MONOTONIC));
        /* the next sample a fixed interval after this one: a slow loop delays, never bunches, samples */
        r = sd_event_source_set_time_relative(s, CAPACITY_BURST_INTERVAL);
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        if (r < 0)
                log_warning_errno(r, "Failed to re-arm the burst path's timer, the burst path stops: %m");
        return 0;
}

int capacity_burst_setup(Capacity *c) {
        int r;

        c->burst_params = (BurstParams) {
                .window = c->config->burst_window,
                .queue = c->config->burst_queue,
                .gap_max = 3 * CAPACITY_BURST_INTERVAL,
        };
        if (c->config->burst_window == 0) {
                c->burst_timer = sd_event_source_disable_unref(c->burst_timer);
                c->burst = (BurstReading) { .status = BURST_OFF, .culprit = -1 };
                return 0;
        }
        if (c->burst.status == BURST_OFF)
                c->burst = (BurstReading) { .status = BURST_CALM, .culprit = -1 };
        if (c->burst_timer || !c->pool->event)
                return 0;
        r = sd_event_add_time_relative(c->pool->event, &c->burst_timer, CLOCK_MONOTONIC, CAPACITY_BURST_INTERVAL,
                                       0, on_burst_tick, c);
        if (r < 0)
                return log_warning_errno(r, "Failed to start the burst path's timer, growth keeps the smoothed "
                                         "window alone: %m");
        (void) sd_event_source_set_description(c->burst_timer, "burst-sample");
        return 0;
}

void capacity_burst_done(Capacity *c) {
        c->burst_timer = sd_event_source_disable_unref(c->burst_timer);
        burst_buffers_free(c);
}
