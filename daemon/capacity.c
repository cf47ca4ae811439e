/* SPDX-License-Identifier: MIT */
#include "capacity.h"

#include "decision-log.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "decision-log.h"
#include "journal-ids.h"
#include "log.h"
#include "macro.h"

/* ---- the shell's inputs to the pure cores ---- */

/* [policy] decision_log: (re)opened when the path changed; a failure is said and the log stays off. */
static void open_decision_log(Capacity *c) {
        const char *path = c->config->decision_log;

        if (streq_ptr(path, c->decision_log_path))
                return;
        if (c->decision_log)
                fclose(c->decision_log);
        c->decision_log = NULL;
        c->decision_log_path = mfree(c->decision_log_path);
        memset(c->last_logged, 0, sizeof c->last_logged);
        if (!path)
                return;
        c->decision_log = fopen(path, "ae");
        if (!c->decision_log) {
                log_warning_errno(errno, "Cannot open the decision log %s (%m): decisions are not recorded", path);
                return;
        }
        setvbuf(c->decision_log, NULL, _IOLBF, 0); /* one whole line at a time, readable while we run */
        c->decision_log_path = strdup(path);
        log_info("Recording every policy decision with its inputs in %s (elastic-pool-replay reads it)", path);
}

/* A decision that differs from the last of its direction goes to the log, with what it was taken on. */
static void record_decision(Capacity *c, DecisionDirection direction, const PolicyInput *in,
                            const RateReading *rate, const Decision *d) {
        Decision *last = &c->last_logged[direction];
        const BurstReading *burst = NULL;
        BurstReading buf;

        if (!c->decision_log || (last->kind == d->kind && last->worker == d->worker && streq(last->reason, d->reason)))
                return;
        *last = *d;
        /* the burst path is on scale-up's side only: the reading decided on */
        if (direction == DECIDE_SCALE_UP && c->burst.status != BURST_OFF)
                burst = capacity_burst_reading(c, &buf);
        if (decision_log_write(c->decision_log, direction, in, &c->policy,
                               c->policy.rps_target > 0 ? rate : NULL, burst, d) < 0)
                log_warning("Writing the decision log %s failed", c->decision_log_path);
}

void capacity_setup_parameters(Capacity *c) {
        const Config *cf = c->config;

        c->evaluator = (EvaluatorParams) {
                .memory_limit = cf->memory_limit,
                .cpu_wall_cores = cf->cpu_wall_cores,
                .smoothing_rows = cf->smoothing_rows,
                .concurrency = cf->concurrency,
        };
        c->policy = (PolicyParams) {
                .reception_threshold = cf->reception_threshold,
                .admission_threshold = cf->admission_threshold,
                .compaction_margin = cf->compaction_margin,
                .min_workers = cf->min_workers,
                .max_workers = cf->max_workers,
                .min_free_memory = cf->min_free_memory,
                .rps_target = cf->rps_target,
        };
        /* a rate measured under the old configuration never drives a decision under the new one */
        c->rate_epoch = now_usec(CLOCK_MONOTONIC);
        open_decision_log(c);
        (void) capacity_burst_setup(c);
}

void capacity_init(Capacity *c, Pool *pool, const Config *config, const CapacitySources *sources) {
        *c = (Capacity) { .pool = pool, .config = config };
        if (sources)
                c->sources = *sources;
        capacity_setup_parameters(c);
}

void capacity_set_actions(Capacity *c, const CapacityActions *actions) {
        c->actions = actions ? *actions : (CapacityActions) {};
}

/* The journal hears when a window's reading changes state: measured, held (and why), restarted. */
static void journal_rate(const RateReading *before, const RateReading *after) {
        char span[32];

        if (before->status == after->status &&
            (after->status != RATE_HELD || streq(before->reason, after->reason)))
                return;
        format_timespan(span, sizeof span, after->length);
        if (after->status == RATE_OK)
                log_struct(LOG_INFO, LOG_FIELDS(.event = "rps"), "rps over %s: measured, %.1f/s per worker (%u serving)",
                           span, after->per_worker, after->serving);
        else if (after->status != RATE_OFF)
                log_struct(after->status == RATE_HELD ? LOG_NOTICE : LOG_INFO, LOG_FIELDS(.event = "rps"),
                           "rps over %s: %s (%s)", span,
                           after->status == RATE_HELD ? "not available" : "window restarting", after->reason);
}

void capacity_measure_rate(Capacity *c, usec_t now, usec_t length, RateReading *ret) {
        RateReading before = *ret;
        Pool *p = c->pool;
        usec_t epoch;
        size_t n = 0;

        if (c->policy.rps_target <= 0) {
                *ret = (RateReading) { .status = RATE_OFF, .culprit = -1, .length = length };
                return;
        }
        if (c->rate_buf_size < p->n_workers) {
                RateWorker *b = reallocarray(c->rate_buf, p->n_workers, sizeof *b);
                if (!b) {
                        *ret = (RateReading) { .status = RATE_HELD, .culprit = -1, .length = length };
                        snprintf(ret->reason, sizeof ret->reason, "out of memory");
                        return;
                }
                c->rate_buf = b;
                c->rate_buf_size = p->n_workers;
        }
        /* serving: taking requests of its own (a worker drained, retiring or replaced is on its way out);
         * one taken out of new work because its reports stopped still serves its users, and its missing
         * rows must hold the rate, not drop out of it */
        for (size_t i = 0; i < p->n_workers; i++) {
                Worker *w = p->workers[i];
                if (worker_is_routable(w) && !w->evacuating && !worker_outdated(w))
                        c->rate_buf[n++] = (RateWorker) { .id = w->id, .window = &w->window,
                                                          .serving_since = w->routable_at };
        }
        epoch = MAX(c->rate_epoch, p->changed_at);
        if (epoch != c->rate_epoch_seen) {
                c->rate_epoch_seen = epoch;
                log_struct(LOG_INFO, LOG_FIELDS(.event = "rps"), "rps windows restarting: %s; no rate from before "
                           "drives a decision after", epoch == c->rate_epoch ? "the commander started or the "
                           "configuration was reloaded" : "the serving set changed");
        }
        rate_sustained(c->rate_buf, n, now, length, epoch, c->config->occupancy_interval * 3 / 2, ret);
        journal_rate(&before, ret);
}

void capacity_done(Capacity *c) {
        capacity_burst_done(c);
        c->deferred_check = sd_event_source_disable_unref(c->deferred_check);
        c->policy_buf = mfree(c->policy_buf);
        c->policy_buf_size = 0;
        c->rate_buf = mfree(c->rate_buf);
        c->rate_buf_size = 0;
        if (c->decision_log)
                fclose(c->decision_log);
        c->decision_log = NULL;
        c->decision_log_path = mfree(c->decision_log_path);
}

unsigned capacity_worker_users(const Capacity *c, const Worker *w) {
        return c->sources.worker_users ? c->sources.worker_users(w->id, c->sources.userdata) : 0;
}

Freshness capacity_freshness(const Capacity *c, const Worker *w, usec_t now, usec_t *ret_since) {
        FreshnessInput in;

        pool_freshness_input(c->pool, w, &in);
        return evaluator_freshness(&w->window, &w->reading, &in, now, ret_since);
}

/* What the policies see of w, judged with in (pool_freshness_input()). */
static void policy_worker_judge(const Capacity *c, const Worker *w, const FreshnessInput *in, usec_t now,
                                PolicyWorker *p) {
        *p = (PolicyWorker) {
                .id = w->id,
                .reception = w == c->pool->reception,
                .routable = w->state == WORKER_ROUTABLE || w->state == WORKER_DRAINING,
                /* one a rolling reload replaces is on its way out too: compaction waits for it */
                .retiring = w->state == WORKER_DRAINING || w->evacuating || worker_outdated(w),
                .outdated = worker_outdated(w),
                .occupancy = w->reading.occupancy.value,
                .users = capacity_worker_users(c, w),
                .saturated = c->burst.status != BURST_OFF && w->burst.over_since != 0,
        };
        p->freshness = evaluator_freshness(&w->window, &w->reading, in, now, &p->since);
        if (p->freshness == FRESHNESS_MISSING)
                p->missing = w->reading.missing_names;
}

static void policy_worker_fill(const Capacity *c, const Worker *w, usec_t now, PolicyWorker *p) {
        FreshnessInput in;

        pool_freshness_input(c->pool, w, &in);
        policy_worker_judge(c, w, &in, now, p);
}

void capacity_policy_input(Capacity *c, PolicyInput *ret) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        size_t n = 0;

        if (c->policy_buf_size < c->pool->n_workers) {
                PolicyWorker *p = reallocarray(c->policy_buf, c->pool->n_workers + 16, sizeof *p);
                if (p) {
                        c->policy_buf = p;
                        c->policy_buf_size = c->pool->n_workers + 16;
                }
        }
        for (size_t i = 0; i < c->pool->n_workers && n < c->policy_buf_size; i++) {
                Worker *w = c->pool->workers[i];

                if (!worker_in_policy(w))
                        continue;
                policy_worker_fill(c, w, now, &c->policy_buf[n++]);
        }
        *ret = (PolicyInput) {
                .workers = c->policy_buf,
                .n_workers = n,
                .mem_available = UINT64_MAX,
                .now = now,
        };
}

/* MemAvailable from /proc/meminfo, read only when a spawn is actually on the table. */
static uint64_t mem_available(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/meminfo", "re");
        char line[256];

        if (!f)
                return UINT64_MAX;
        while (fgets(line, sizeof line, f)) {
                unsigned long long kb;
                if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
                        return (uint64_t) kb * 1024;
        }
        return UINT64_MAX;
}

/* "w1=0.62[cpu=0.62 memory=- executor=0.25] w2=..." */
static char *format_inputs(const Capacity *c) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < c->pool->n_workers; i++) {
                const Worker *w = c->pool->workers[i];
                const Occupancy *o = &w->reading.occupancy;

                if (!worker_in_policy(w))
                        continue;
                fprintf(f, "%sw%u%s=%.3f[", i > 0 ? " " : "", w->id, w == c->pool->reception ? "(reception)" : "",
                        o->value);
                for (Component k = 0; k < _COMPONENT_MAX; k++) {
                        if (o->has[k])
                                fprintf(f, "%s%s=%.3f", k > 0 ? " " : "", component_to_string(k), o->component[k]);
                        else
                                fprintf(f, "%s%s=-", k > 0 ? " " : "", component_to_string(k));
                }
                fprintf(f, " users=%u %s%s]", capacity_worker_users(c, w), worker_state_to_string(w->state),
                        w->evacuating ? ",evacuating" : "");
        }
        if (fclose(f) != 0)
                return NULL;
        return TAKE_PTR(buf);
}

static void format_ledger(const Ledger *l, const PolicyParams *p, char *buf, size_t size) {
        snprintf(buf, size, "N=%u C=%.3f O=%.3f H=%.3f margin=%.2f threshold=%.3f", l->n, l->capacity, l->occupied,
                 l->headroom, p->compaction_margin, l->threshold);
}

static void remember_decision(Capacity *c, const char *what, const Decision *d) {
        DecisionRecord *r = &c->last_decision;

        *r = (DecisionRecord) {
                .set = true,
                .kind = d->kind,
                .worker = d->worker,
                .at = now_usec(CLOCK_MONOTONIC),
                .ledger = d->ledger,
        };
        snprintf(r->what, sizeof r->what, "%s", what);
        snprintf(r->reason, sizeof r->reason, "%s", d->reason);
}

/* Journals a decision with its inputs (format_inputs(); NULL: formatted now). */
static void journal_decision_of(Capacity *c, int level, const char *message_id, const char *event,
                                const char *what, const Decision *d, const char *inputs) {
        _cleanup_free_ char *mine = inputs ? NULL : format_inputs(c), *extra = NULL;
        const char *reason = startswith(d->reason, "held: ") ?: d->reason;
        char ledger[160];

        inputs = inputs ?: mine;

        remember_decision(c, what, d);
        format_ledger(&d->ledger, &c->policy, ledger, sizeof ledger);
        if (asprintf(&extra, "EP_DECISION=%s\nEP_INPUTS=%s\nEP_LEDGER=%s\nEP_REASON=%s",
                     decision_kind_to_string(d->kind), strempty(inputs), ledger, reason) < 0)
                extra = NULL;
        log_struct(level, LOG_FIELDS(.message_id = message_id, .event = event, .worker = MAX(d->worker, 0), .extra = extra),
                   "%s: %s | inputs: %s | ledger: %s", what, reason, strempty(inputs), ledger);
}

static void journal_decision(Capacity *c, int level, const char *message_id, const char *event,
                             const char *what, const Decision *d) {
        journal_decision_of(c, level, message_id, event, what, d, NULL);
}

/* The line that ends h's episode, with the hold's last kind and reason (not overwritten yet). */
static void episode_end(Hold *h, const char *decision) {
        HoldEpisode *e = &h->episode;
        char returns[64] = "";

        if (!e->open)
                return;
        if (e->returns > 0)
                snprintf(returns, sizeof returns, "; it came back %u time%s in between", e->returns,
                         e->returns == 1 ? "" : "s");
        log_info("%s no longer %s (was: %s%s)", decision, decision_kind_to_string(h->kind), h->reason, returns);
        *e = (HoldEpisode) {};
}

/* A cleared hold's episode ends once the hold stayed clear for the smoothing window: what the policies
 * decide on has turned over once. Checked on every capacity check, before its fast paths. */
static void episode_settle(const Capacity *c, Hold *h, const char *decision, usec_t now) {
        if (h->episode.cleared == 0) /* the report path's usual case: no episode waits for its end */
                return;
        if (now - h->episode.cleared >= c->config->occupancy_interval * c->config->smoothing_rows)
                episode_end(h, decision);
}

/* A hold begins or changes (h still has the previous kind and worker): a new episode is journaled, unless
 * this is the open one coming back. */
static void episode_begin(Capacity *c, Hold *h, const char *decision, const Decision *d) {
        HoldEpisode *e = &h->episode;
        const char *id = d->kind == DECISION_REFUSED ? MESSAGE_ID_REFUSED : MESSAGE_ID_HELD;
        int level = d->kind == DECISION_WAIT_MOVES ? LOG_INFO : LOG_WARNING;
        char what[64];

        if (e->open && h->kind == d->kind && h->worker == d->worker) {
                e->cleared = 0;
                e->returns++;
                log_debug("%s %s again (%u times in this episode): %s", decision, decision_kind_to_string(d->kind),
                          e->returns, d->reason);
                return;
        }
        episode_end(h, decision);
        if (d->kind == DECISION_WAIT) /* routine (a spawn in flight, a retire in progress): no episode */
                return;
        snprintf(what, sizeof what, "%s %s", decision, decision_kind_to_string(d->kind));
        journal_decision(c, level, id, d->kind == DECISION_REFUSED ? "refused" : "held", what, d);
        *e = (HoldEpisode) { .open = true };
}

/* Holds are journaled as episodes (HoldEpisode), not on every report that confirms them. A WAIT (a spawn
 * in flight, a retire in progress, the pool settling) is routine: kept for the status surfaces only. */
static void set_hold(Capacity *c, Hold *h, const char *decision, const Decision *d) {
        bool changed = !h->active || h->kind != d->kind || h->worker != d->worker;

        if (changed) {
                episode_begin(c, h, decision, d);
                h->active = true;
                h->kind = d->kind;
                h->worker = d->worker;
                h->since = now_usec(CLOCK_MONOTONIC);
        }
        snprintf(h->reason, sizeof h->reason, "%s", d->reason);
        h->formatted_at = now_usec(CLOCK_MONOTONIC);
}

/* The hold is over for the status surfaces at once; its episode ends at once only when something decisive
 * took its place (settled: a spawn, a retire, a drain begun), else once it stayed clear (episode_settle). */
static void clear_hold(Hold *h, const char *decision, bool settled) {
        if (h->active && h->kind == DECISION_WAIT)
                log_debug("%s no longer waits: %s", decision, h->reason);
        if (h->active && h->episode.open)
                h->episode.cleared = now_usec(CLOCK_MONOTONIC);
        h->active = false;
        if (settled)
                episode_end(h, decision);
}

/* After the pool changed (a worker left or joined), the survivors' windows have not seen the change yet:
 * the next compaction waits until each could have reported smoothing_rows rows since, so the ledger
 * judges the new pool and not the old one (the window is the anti-flapping). */
static bool settling(Capacity *c, usec_t now, Decision *d) {
        usec_t settle = c->config->occupancy_interval * c->config->smoothing_rows;
        char left[32], total[32];

        if (c->pool->changed_at == 0 || now - c->pool->changed_at >= settle)
                return false;
        d->kind = DECISION_WAIT;
        d->worker = -1;
        snprintf(d->reason, sizeof d->reason, "the pool changed %s ago; waiting %s (smoothing_rows x interval) for "
                 "fresh readings", format_timespan(left, sizeof left, now - c->pool->changed_at),
                 format_timespan(total, sizeof total, settle));
        return true;
}

/* The first rule of policy_scale_up(): fewer than min_workers, in flight included, retiring excluded. */
static bool under_floor(const PolicyInput *in, const PolicyParams *p) {
        size_t staying = 0;

        for (size_t i = 0; i < in->n_workers; i++)
                staying += !in->workers[i].retiring;
        return staying < p->min_workers;
}

/* Scale-up in its three layers: occupancy, the request rate, the burst path. *ret_by_burst: the burst
 * path alone wanted the spawn (the other two decided NONE). */
static void decide_scale_up(Capacity *c, const PolicyInput *in, Decision *d, bool *ret_by_burst) {
        BurstReading buf;
        const BurstReading *burst = capacity_burst_reading(c, &buf);

        policy_scale_up(in, &c->policy, d);
        policy_scale_up_rate(in, &c->policy, &c->rate_up, d);
        *ret_by_burst = d->kind == DECISION_NONE && burst->status == BURST_SUSTAINED;
        policy_scale_up_burst(in, &c->policy, burst, d);
}

static void act_scale_up(Capacity *c, const PolicyInput *in) {
        bool by_burst;
        Decision d;
        int r;

        if (c->policy.rps_target > 0)
                capacity_measure_rate(c, in->now, c->config->rps_up_window, &c->rate_up);
        decide_scale_up(c, in, &d, &by_burst);
        if (d.kind == DECISION_SPAWN && c->policy.min_free_memory > 0) {
                /* the one input that costs a file read: only when a spawn is on the table */
                PolicyInput with_memory = *in;
                with_memory.mem_available = mem_available();
                decide_scale_up(c, &with_memory, &d, &by_burst);
                record_decision(c, DECIDE_SCALE_UP, &with_memory, &c->rate_up, &d);
        } else
                record_decision(c, DECIDE_SCALE_UP, in, &c->rate_up, &d);
        c->last_scale_up = d.kind;
        switch (d.kind) {
        case DECISION_SPAWN:
                r = spawn_throttle_check(&c->pool->throttle, in->now);
                if (r < 0) {
                        /* journal what stops the spawn, not a spawn that does not happen */
                        d.kind = r == -EAGAIN ? DECISION_WAIT : DECISION_REFUSED;
                        snprintf(d.reason, sizeof d.reason, "%s after %u consecutive failed spawns (last: %s)",
                                 r == -EAGAIN ? "spawn backing off" : "spawning stopped", c->pool->throttle.failures,
                                 strna(c->pool->throttle.last_error));
                        set_hold(c, &c->scale_up_hold, "scale-up", &d);
                        break;
                }
                clear_hold(&c->scale_up_hold, "scale-up", true);
                journal_decision(c, LOG_INFO, MESSAGE_ID_SCALE_UP, "scale-up",
                                 by_burst ? "Scale-up (burst path): spawning a worker" : "Scale-up: spawning a worker",
                                 &d);
                if (pool_spawn(c->pool, d.reason) >= 0)
                        pool_count_spawn(c->pool, under_floor(in, &c->policy) ? POOL_SPAWN_FLOOR
                                                  : by_burst                  ? POOL_SPAWN_BURST
                                                                              : POOL_SPAWN_SCALE_UP);
                break;
        case DECISION_NONE:
                clear_hold(&c->scale_up_hold, "scale-up", false);
                break;
        default:
                set_hold(c, &c->scale_up_hold, "scale-up", &d);
        }
}

static bool culprit_is_new(const PolicyInput *in, int worker) {
        for (size_t i = 0; i < in->n_workers; i++)
                if ((int) in->workers[i].id == worker)
                        return in->workers[i].freshness == FRESHNESS_NEW;
        return false;
}

/* The worker compaction chose still has users: the drain service moves them off first. */
static void drain(Capacity *c, Decision *d) {
        _cleanup_free_ char *inputs = NULL;
        char why[sizeof d->reason];
        int r;

        if (!c->actions.drain) {
                set_hold(c, &c->compaction_hold, "compaction", d);
                return;
        }
        inputs = format_inputs(c); /* as they were when decided, before the drain marks its worker */
        r = c->actions.drain((unsigned) d->worker, d, why, sizeof why, c->actions.userdata);
        if (r >= 0) {
                char what[64];

                clear_hold(&c->compaction_hold, "compaction", true);
                snprintf(what, sizeof what, "Compaction: draining w%d by live moves", d->worker);
                journal_decision_of(c, LOG_INFO, MESSAGE_ID_COMPACT, "compact", what, d, inputs);
                return;
        }
        d->kind = DECISION_WAIT;
        if (r == -EAGAIN)
                snprintf(d->reason, sizeof d->reason, "%s", why);
        else
                snprintf(d->reason, sizeof d->reason, "cannot drain w%d: %s", d->worker, strerror(-r));
        set_hold(c, &c->compaction_hold, "compaction", d);
}

static void act_compaction(Capacity *c, const PolicyInput *in) {
        Worker *w;
        Decision d;

        policy_compaction(in, &c->policy, &d);
        if (c->policy.rps_target > 0) {
                capacity_measure_rate(c, in->now, c->config->rps_down_window, &c->rate_down);
                policy_compaction_rate(in, &c->policy, &c->rate_down, &d);
        }
        record_decision(c, DECIDE_COMPACTION, in, &c->rate_down, &d);
        if ((d.kind == DECISION_RETIRE || d.kind == DECISION_WAIT_MOVES) && c->pool->rollout_active) {
                /* its spare new worker is no surplus: it replaces an old one in a moment */
                d.kind = DECISION_WAIT;
                snprintf(d.reason, sizeof d.reason, "a rolling reload is under way (it retires the old workers "
                         "itself)");
        }
        if (d.kind == DECISION_RETIRE || d.kind == DECISION_WAIT_MOVES)
                (void) settling(c, in->now, &d);
        if (d.kind == DECISION_HELD && culprit_is_new(in, d.worker))
                /* a worker that has not reported yet but is not late either is expected, not missing:
                 * compaction waits for its first reading without calling it a hold */
                d.kind = DECISION_WAIT;
        c->last_compaction = d.kind;
        switch (d.kind) {
        case DECISION_RETIRE:
                clear_hold(&c->compaction_hold, "compaction", true);
                w = pool_get_worker(c->pool, (unsigned) d.worker);
                if (!w)
                        return;
                journal_decision(c, LOG_INFO, MESSAGE_ID_COMPACT, "compact", "Compaction: retiring a worker", &d);
                pool_retire_worker(c->pool, w, "compaction");
                break;
        case DECISION_WAIT_MOVES:
                drain(c, &d);
                break;
        case DECISION_NONE:
                clear_hold(&c->compaction_hold, "compaction", false);
                break;
        default:
                set_hold(c, &c->compaction_hold, "compaction", &d);
        }
}

/* ---- ACCOUNT: the pool summary, O(1) per report ---- */

static bool summary_valid(const Capacity *c) {
        return c->summary_valid && c->summary_generation == c->pool->generation;
}

/* w's share goes into the sums; a fresh reading also says when, without a report, it would turn stale:
 * no event tells of that, so the summary is rebuilt then (recheck_at). */
static void account_add(Capacity *c, Worker *w, usec_t now) {
        FreshnessInput in;
        PolicyWorker p;

        w->share = (PolicyShare) {};
        if (!worker_in_policy(w))
                return;
        pool_freshness_input(c->pool, w, &in);
        policy_worker_judge(c, w, &in, now, &p);
        policy_share(&p, &c->policy, &w->share);
        policy_summary_add(&c->summary, &w->share);
        if (p.freshness == FRESHNESS_FRESH || p.freshness == FRESHNESS_NEW)
                c->recheck_at = MIN(c->recheck_at, evaluator_fresh_until(&w->window, &in));
}

/* Takes w's share out exactly as it went in, before its reading changes. */
static void account_forget(Capacity *c, Worker *w) {
        if (!summary_valid(c) || !w->share.counted)
                return;
        policy_summary_remove(&c->summary, &w->share);
        w->share.counted = false;
}

static void summary_rebuild(Capacity *c, usec_t now) {
        c->summary = (PolicySummary) {};
        c->recheck_at = USEC_INFINITY;
        for (size_t i = 0; i < c->pool->n_workers; i++)
                account_add(c, c->pool->workers[i], now);
        c->summary_valid = true;
        c->summary_generation = c->pool->generation;
}

/* Provably NONE from the summary alone (policy.c says when), on the decision that held last time: the
 * common report in a steady pool. Anything else goes the whole way through the pure policies. */
static bool scale_up_is_none(const Capacity *c) {
        /* the summary knows occupancy, not the request rate */
        /* ... nor the burst path's signals: a reading that wants a spawn or holds one goes the whole way */
        return c->policy.rps_target <= 0 && c->burst.status != BURST_SUSTAINED && c->burst.status != BURST_HELD &&
               c->last_scale_up == DECISION_NONE && !c->scale_up_hold.active &&
               policy_scale_up_surely_none(&c->summary, &c->policy);
}

static bool compaction_is_none(const Capacity *c) {
        return c->last_compaction == DECISION_NONE && !c->compaction_hold.active &&
               policy_compaction_surely_none(&c->summary, &c->policy);
}

/* A compaction hold stands while its worker still cannot be judged and nothing that the policy checks
 * before the readings has changed (a retire or a spawn under way, the min_workers floor): the walk would
 * hold again, on this worker or an earlier one that is not fresh either. A sensor that cannot read its
 * cpu keeps the pool in this state for as long as it lasts, so it must not cost a walk per report; only
 * the hold's reason is written anew (how long, and what is missing now). */
static bool compaction_hold_stands(Capacity *c, usec_t now) {
        const PolicySummary *s = &c->summary;
        PolicyWorker p;
        Decision d;
        Worker *w;

        if (c->last_compaction != DECISION_HELD || !c->compaction_hold.active || s->n_retiring > 0 ||
            s->n_in_flight > 0 || s->n_active <= c->config->min_workers || c->compaction_hold.worker <= 0)
                return false;
        w = pool_get_worker(c->pool, (unsigned) c->compaction_hold.worker);
        if (!w || !w->share.counted || !w->share.not_fresh)
                return false;
        /* the reason only ages ("no report for 17s"): formatting it on every report of a large pool costs
         * more than the rest of the report path; its readers see it at most a second old */
        if (now - c->compaction_hold.formatted_at < USEC_PER_SEC)
                return true;
        /* set here, not at the top: this runs on every report, and a Decision is 300 bytes to zero */
        d = (Decision) { .kind = DECISION_NONE };
        policy_worker_fill(c, w, now, &p);
        policy_compaction_hold(&p, now, &d);
        set_hold(c, &c->compaction_hold, "compaction", &d);
        return true;
}

/* ---- the report path ---- */

/* The commander-side measures of a row: what the front end forwarded to w when its report arrived
 * (*t zeroed without a front end). */
static void fill_traffic(const Capacity *c, Worker *w, Row *row, WorkerTraffic *t) {
        /* the source zeroes what it does not know: its 216 bytes are written once a report, not twice */
        if (!c->sources.worker_traffic) {
                *t = (WorkerTraffic) {};
                return;
        }
        if (!c->sources.worker_traffic(w->id, t, c->sources.userdata))
                return;
        row->has_inflight = true;
        row->inflight = t->inflight;
        if (!t->has_forward)
                return;
        row->has_forward = true;
        row->fwd_requests = t->requests;
        row->fwd_errors = t->errors;
        row->fwd_busy_usec = t->busy_usec;
        latency_ring_push(&w->latency, &t->latency, row->received);
}

unsigned capacity_drift_sustain(const Capacity *c) {
        return MAX(c->config->smoothing_rows, 3U);
}

/* The drift sentinels: what the report says w holds against what the commander knows of it. */
static void check_drift(Capacity *c, Worker *w, const Row *row, const WorkerTraffic *t) {
        DriftInput in = {
                .has_reported = { [DRIFT_USERS] = row->has_users, [DRIFT_CONNECTIONS] = row->has_connections },
                .reported = { [DRIFT_USERS] = row->users, [DRIFT_CONNECTIONS] = row->connections },
                .has_expected = { [DRIFT_USERS] = c->sources.worker_users != NULL,
                                  [DRIFT_CONNECTIONS] = t->has_forward },
                .expected = { [DRIFT_USERS] = capacity_worker_users(c, w), [DRIFT_CONNECTIONS] = t->connections },
        };
        unsigned began, ended;

        began = drift_observe(&w->drift, &in, capacity_drift_sustain(c), row->received, &ended);
        if (!(began | ended))
                return;
        for (DriftRegister r = 0; r < _DRIFT_REGISTER_MAX; r++) {
                const DriftState *s = &w->drift.state[r];
                const char *name = drift_register_to_string(r);
                _cleanup_free_ char *extra = NULL;
                char span[32];

                if (ended & (1U << r))
                        log_info("Drift of %s on %s is over: the worker and the commander agree again", name,
                                 WORKER_NAME(w));
                if (!(began & (1U << r)))
                        continue;
                if (asprintf(&extra, "EP_DRIFT_REGISTER=%s\nEP_DRIFT_REPORTED=%u\nEP_DRIFT_EXPECTED=%u", name,
                             s->reported, s->expected) < 0)
                        extra = NULL;
                log_struct(LOG_WARNING,
                           LOG_FIELDS(.message_id = MESSAGE_ID_DRIFT, .event = "drift", .worker = (int) w->id,
                                      .extra = extra),
                           "Drift on %s: the worker reports %u %s, the commander knows of %u (%u reports in a row, "
                           "%s)",
                           WORKER_NAME(w), s->reported, name, s->expected, s->streak,
                           format_timespan(span, sizeof span, row->received - s->since));
        }
}

/* A full check walks the whole pool, about 14 ns a worker. Where the summary cannot prove "nothing to
 * do" (a hold that stands, retiring waiting for moves, the pool settling), every report would pay that
 * walk: 14 us per report with 1 000 workers. So in a large pool a full check is followed by a gap of
 * occupancy_interval / COALESCE_DIVISOR (156 ms at 5 s) in which reports defer theirs to the gap's end,
 * by a one-shot timer the first of them arms: decisions come at most that much later, on readings that
 * are averaged over 30 s anyway. A change of the pool (a worker joined or left) checks at once. In a
 * small pool the walk is cheap and reports are further apart than the gap: every check runs at once. */
#define COALESCE_MIN_WORKERS 64U
#define COALESCE_DIVISOR 32U

static int on_deferred_check(sd_event_source *s, uint64_t usec, void *userdata) {
        Capacity *c = userdata;

        c->deferred_check = sd_event_source_disable_unref(c->deferred_check);
        capacity_check(c);
        return 0;
}

/* True when the full check runs now; false when it was deferred to the end of the gap. */
static bool full_check_now(Capacity *c, usec_t now, bool pool_changed) {
        int r;

        if (pool_changed || c->pool->n_workers < COALESCE_MIN_WORKERS || now >= c->next_full_check) {
                c->deferred_check = sd_event_source_disable_unref(c->deferred_check);
                c->next_full_check = now + c->config->occupancy_interval / COALESCE_DIVISOR;
                return true;
        }
        if (c->deferred_check)
                return false;
        r = sd_event_add_time(c->pool->event, &c->deferred_check, CLOCK_MONOTONIC, c->next_full_check, 0,
                              on_deferred_check, c);
        if (r < 0) {
                log_warning_errno(r, "Failed to defer a capacity check, checking at once: %m");
                return true;
        }
        return false;
}

/* The check at now: a report's arrival (read just before) or the clock's. */
static void check_at(Capacity *c, usec_t now) {
        bool pool_changed = !summary_valid(c);
        PolicyInput in;

        if (c->pool->stopping)
                return;
        episode_settle(c, &c->scale_up_hold, "scale-up", now);
        episode_settle(c, &c->compaction_hold, "compaction", now);
        if (pool_changed || now >= c->recheck_at)
                summary_rebuild(c, now);
        if (scale_up_is_none(c) && (compaction_is_none(c) || compaction_hold_stands(c, now)))
                return;
        if (!full_check_now(c, now, pool_changed))
                return;
        capacity_policy_input(c, &in);
        act_scale_up(c, &in);
        if (c->last_scale_up == DECISION_SPAWN) {
                /* Under the min_workers floor the whole deficit starts at once (the floor does not wait
                 * for a spawn in flight); any other spawn is one at a time. Compaction sees the new pool
                 * next time round. */
                for (unsigned i = 0; i < c->config->min_workers && c->last_scale_up == DECISION_SPAWN &&
                                     c->pool->n_workers < c->config->min_workers;
                     i++) {
                        capacity_policy_input(c, &in);
                        act_scale_up(c, &in);
                }
                return;
        }
        act_compaction(c, &in);
}

void capacity_check(Capacity *c) {
        check_at(c, now_usec(CLOCK_MONOTONIC));
}

void capacity_take_row(Capacity *c, Worker *w, Row *row) {
        WorkerTraffic t;

        if (row->early) {
                /* off the grid: the burst path's executor queue only; the window keeps its cadence */
                if (row->has_executor_queue)
                        capacity_burst_executor(c, w, row->executor_queue, row->received);
                return;
        }

        /* w's share of the summary changes with its reading: out now, in again once interpreted */
        account_forget(c, w);
        fill_traffic(c, w, row, &t);
        check_drift(c, w, row, &t);
        if (row->has_executor_queue)
                capacity_burst_executor(c, w, row->executor_queue, row->received);
        window_push(&w->window, row);                                          /* archive */
        evaluator_interpret(&w->window, &c->evaluator, row->received, &w->reading); /* interpret */
        if (summary_valid(c))
                account_add(c, w, row->received);                             /* account */
        if (w->state == WORKER_ROUTABLE || w->state == WORKER_DRAINING)
                check_at(c, row->received);                                /* decide, act */
}
