/* SPDX-License-Identifier: MIT */
/* The thin shell around the pure policies: builds their input from the pool, acts on their decisions,
 * and journals each decision with the inputs that made it, so it can be replayed by hand. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "journal-ids.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "pool.h"

/* Workers that are in the policies' world: alive and not yet stopping. */
static bool in_policy(const Worker *w) {
        return w->state == WORKER_STARTING || w->state == WORKER_PROBING || w->state == WORKER_ROUTABLE ||
               w->state == WORKER_DRAINING;
}

static void policy_worker_fill(Manager *m, Worker *w, usec_t now, PolicyWorker *p) {
        *p = (PolicyWorker) {
                .id = w->id,
                .reception = w == m->reception,
                .routable = w->state == WORKER_ROUTABLE || w->state == WORKER_DRAINING,
                .retiring = w->state == WORKER_DRAINING,
                .occupancy = w->occupancy.value,
                .users = manager_worker_users(m, w),
        };
        p->freshness = pool_worker_freshness(m, w, now, &p->since);
        if (p->freshness == FRESHNESS_MISSING)
                p->missing = w->missing_names;
}

void manager_policy_input(Manager *m, PolicyInput *ret) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        size_t n = 0;

        if (m->policy_buf_size < m->n_workers) {
                PolicyWorker *p = reallocarray(m->policy_buf, m->n_workers + 16, sizeof *p);
                if (p) {
                        m->policy_buf = p;
                        m->policy_buf_size = m->n_workers + 16;
                }
        }
        for (size_t i = 0; i < m->n_workers && n < m->policy_buf_size; i++) {
                Worker *w = m->workers[i];

                if (!in_policy(w))
                        continue;
                policy_worker_fill(m, w, now, &m->policy_buf[n++]);
        }
        *ret = (PolicyInput) {
                .workers = m->policy_buf,
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
static char *format_inputs(const Manager *m) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < m->n_workers; i++) {
                const Worker *w = m->workers[i];
                if (!in_policy(w))
                        continue;
                fprintf(f, "%sw%u%s=%.3f[", i > 0 ? " " : "", w->id, w == m->reception ? "(reception)" : "",
                        w->occupancy.value);
                for (Component c = 0; c < _COMPONENT_MAX; c++) {
                        if (w->occupancy.has[c])
                                fprintf(f, "%s%s=%.3f", c > 0 ? " " : "", component_to_string(c),
                                        w->occupancy.component[c]);
                        else
                                fprintf(f, "%s%s=-", c > 0 ? " " : "", component_to_string(c));
                }
                fprintf(f, " users=%u %s]", manager_worker_users(m, w), worker_state_to_string(w->state));
        }
        if (fclose(f) != 0)
                return NULL;
        return TAKE_PTR(buf);
}

static void format_ledger(const Ledger *l, const PolicyParams *p, char *buf, size_t size) {
        snprintf(buf, size, "N=%u C=%.3f O=%.3f H=%.3f margin=%.2f threshold=%.3f", l->n, l->capacity, l->occupied,
                 l->headroom, p->compaction_margin, l->threshold);
}

/* Journals a decision with its inputs. */
static void journal_decision(Manager *m, int level, const char *message_id, const char *event, const char *what,
                             const Decision *d) {
        _cleanup_free_ char *inputs = format_inputs(m), *extra = NULL;
        const char *reason = startswith(d->reason, "held: ") ?: d->reason;
        char ledger[160];

        format_ledger(&d->ledger, &m->policy, ledger, sizeof ledger);
        if (asprintf(&extra, "EP_DECISION=%s\nEP_INPUTS=%s\nEP_LEDGER=%s\nEP_REASON=%s",
                     decision_kind_to_string(d->kind), strempty(inputs), ledger, reason) < 0)
                extra = NULL;
        log_struct(level, LOG_FIELDS(.message_id = message_id, .event = event, .worker = MAX(d->worker, 0), .extra = extra),
                   "%s: %s | inputs: %s | ledger: %s", what, reason, strempty(inputs), ledger);
}

/* Holds are journaled when they begin or change, not on every report that confirms them. A WAIT (a spawn
 * in flight, a retire in progress, the pool settling) is routine: kept for the status surfaces only. */
static void set_hold(Manager *m, Hold *h, const char *decision, const Decision *d) {
        bool changed = !h->active || h->kind != d->kind || h->worker != d->worker;

        if (changed) {
                h->active = true;
                h->kind = d->kind;
                h->worker = d->worker;
                h->since = now_usec(CLOCK_MONOTONIC);
                if (d->kind != DECISION_WAIT) {
                        const char *id = d->kind == DECISION_REFUSED ? MESSAGE_ID_REFUSED : MESSAGE_ID_HELD;
                        int level = d->kind == DECISION_WAIT_MOVES ? LOG_INFO : LOG_WARNING;
                        char what[64];
                        snprintf(what, sizeof what, "%s %s", decision, decision_kind_to_string(d->kind));
                        journal_decision(m, level, id, d->kind == DECISION_REFUSED ? "refused" : "held", what, d);
                }
        }
        snprintf(h->reason, sizeof h->reason, "%s", d->reason);
}

static void clear_hold(Manager *m, Hold *h, const char *decision) {
        if (!h->active)
                return;
        if (h->kind == DECISION_WAIT)
                log_debug("%s no longer waits: %s", decision, h->reason);
        else
                log_info("%s no longer %s (was: %s)", decision, decision_kind_to_string(h->kind), h->reason);
        *h = (Hold) {};
}

/* After the pool changed (a worker left or joined), the survivors' windows have not seen the change yet:
 * the next compaction waits until each could have reported smoothing_rows rows since, so the ledger
 * judges the new pool and not the old one (the window is the anti-flapping). */
static bool settling(Manager *m, usec_t now, Decision *d) {
        usec_t settle = m->config.occupancy_interval * m->config.smoothing_rows;
        char left[32], total[32];

        if (m->pool_changed_at == 0 || now - m->pool_changed_at >= settle)
                return false;
        d->kind = DECISION_WAIT;
        d->worker = -1;
        snprintf(d->reason, sizeof d->reason, "the pool changed %s ago; waiting %s (smoothing_rows x interval) for "
                 "fresh readings", format_timespan(left, sizeof left, now - m->pool_changed_at),
                 format_timespan(total, sizeof total, settle));
        return true;
}

static void act_scale_up(Manager *m, const PolicyInput *in) {
        Decision d;
        int r;

        policy_scale_up(in, &m->policy, &d);
        if (d.kind == DECISION_SPAWN && m->policy.min_free_memory > 0) {
                /* the one input that costs a file read: only when a spawn is on the table */
                PolicyInput with_memory = *in;
                with_memory.mem_available = mem_available();
                policy_scale_up(&with_memory, &m->policy, &d);
        }
        m->last_scale_up = d.kind;
        switch (d.kind) {
        case DECISION_SPAWN:
                r = pool_spawn_throttle(m);
                if (r < 0) {
                        /* journal what stops the spawn, not a spawn that does not happen */
                        d.kind = r == -EAGAIN ? DECISION_WAIT : DECISION_REFUSED;
                        snprintf(d.reason, sizeof d.reason, "%s after %u consecutive failed spawns (last: %s)",
                                 r == -EAGAIN ? "spawn backing off" : "spawning stopped", m->spawn_failures,
                                 strna(m->last_spawn_error));
                        set_hold(m, &m->scale_up_hold, "scale-up", &d);
                        break;
                }
                clear_hold(m, &m->scale_up_hold, "scale-up");
                journal_decision(m, LOG_INFO, MESSAGE_ID_SCALE_UP, "scale-up", "Scale-up: spawning a worker", &d);
                (void) pool_spawn(m, d.reason);
                break;
        case DECISION_NONE:
                clear_hold(m, &m->scale_up_hold, "scale-up");
                break;
        default:
                set_hold(m, &m->scale_up_hold, "scale-up", &d);
        }
}

static bool culprit_is_new(const PolicyInput *in, int worker) {
        for (size_t i = 0; i < in->n_workers; i++)
                if ((int) in->workers[i].id == worker)
                        return in->workers[i].freshness == FRESHNESS_NEW;
        return false;
}

static void act_compaction(Manager *m, const PolicyInput *in) {
        Worker *w;
        Decision d;

        policy_compaction(in, &m->policy, &d);
        if (d.kind == DECISION_RETIRE || d.kind == DECISION_WAIT_MOVES)
                (void) settling(m, in->now, &d);
        if (d.kind == DECISION_HELD && culprit_is_new(in, d.worker))
                /* a worker that has not reported yet but is not late either is expected, not missing:
                 * compaction waits for its first reading without calling it a hold */
                d.kind = DECISION_WAIT;
        m->last_compaction = d.kind;
        switch (d.kind) {
        case DECISION_RETIRE:
                clear_hold(m, &m->compaction_hold, "compaction");
                w = manager_get_worker(m, (unsigned) d.worker);
                if (!w)
                        return;
                journal_decision(m, LOG_INFO, MESSAGE_ID_COMPACT, "compact", "Compaction: retiring a worker", &d);
                manager_retire_worker(m, w, "compaction");
                break;
        case DECISION_NONE:
                clear_hold(m, &m->compaction_hold, "compaction");
                break;
        default:
                set_hold(m, &m->compaction_hold, "compaction", &d);
        }
}

/* ---- the pool summary: O(1) per report ---- */

static SummaryShare share_of(const Manager *m, const Worker *w, usec_t now, usec_t *ret_stale_at) {
        SummaryShare sh = { .counted = true };
        usec_t since;
        Freshness f;

        if (!in_policy(w))
                return sh;
        f = pool_worker_freshness(m, w, now, &since);
        sh.in_flight = w->state == WORKER_STARTING || w->state == WORKER_PROBING;
        sh.retiring = w->state == WORKER_DRAINING;
        sh.routable = w->state == WORKER_ROUTABLE || w->state == WORKER_DRAINING;
        sh.active = w->state == WORKER_ROUTABLE;
        sh.room = sh.active && w != m->reception && (f == FRESHNESS_FRESH || f == FRESHNESS_NEW) &&
                  w->occupancy.value < m->policy.admission_threshold;
        sh.not_fresh = sh.routable && f != FRESHNESS_FRESH;
        sh.occupancy = sh.routable ? w->occupancy.value : 0.0;
        /* when this worker's reading would stop being fresh without any event to tell us */
        if (ret_stale_at && (f == FRESHNESS_FRESH || f == FRESHNESS_NEW)) {
                const Row *last = window_latest(&w->window);
                usec_t born = w->routable_at > 0 ? w->routable_at : w->spawned_at;
                *ret_stale_at = (last ? last->received : born) + pool_stale_horizon(m, w);
        }
        return sh;
}

static void summary_add(PoolSummary *s, const Worker *w, const SummaryShare *sh) {
        if (w->state == WORKER_STARTING || w->state == WORKER_PROBING || w->state == WORKER_ROUTABLE ||
            w->state == WORKER_DRAINING)
                s->n_policy++;
        s->n_in_flight += sh->in_flight;
        s->n_retiring += sh->retiring;
        s->n_active += sh->active;
        s->n_room += sh->room;
        s->n_not_fresh += sh->not_fresh;
        s->occupied += sh->occupancy;
}

static void summary_rebuild(Manager *m, usec_t now) {
        PoolSummary s = { .valid = true, .recheck_at = USEC_INFINITY };

        for (size_t i = 0; i < m->n_workers; i++) {
                Worker *w = m->workers[i];
                usec_t stale_at = USEC_INFINITY;

                w->summary_share = share_of(m, w, now, &stale_at);
                summary_add(&s, w, &w->summary_share);
                s.recheck_at = MIN(s.recheck_at, stale_at);
        }
        m->summary = s;
}

void manager_summary_forget(Manager *m, Worker *w) {
        PoolSummary *s = &m->summary;
        const SummaryShare *sh = &w->summary_share;

        if (!s->valid || !sh->counted)
                return;
        s->n_in_flight -= sh->in_flight;
        s->n_retiring -= sh->retiring;
        s->n_active -= sh->active;
        s->n_room -= sh->room;
        s->n_not_fresh -= sh->not_fresh;
        s->occupied -= sh->occupancy;
        if (in_policy(w))
                s->n_policy--;
        w->summary_share.counted = false;
}

void manager_summary_account(Manager *m, Worker *w, usec_t now) {
        usec_t stale_at = USEC_INFINITY;

        if (!m->summary.valid)
                return;
        w->summary_share = share_of(m, w, now, &stale_at);
        summary_add(&m->summary, w, &w->summary_share);
        /* a worker that was stale or incomplete may be fresh again: its deadline joins the others */
        m->summary.recheck_at = MIN(m->summary.recheck_at, stale_at);
}

/* Provably NONE from the summary alone, on the decision that held last time: the common report in a
 * steady pool. Anything else goes the whole way through the pure policies. */
static bool scale_up_is_none(const Manager *m) {
        const PoolSummary *s = &m->summary;

        return m->last_scale_up == DECISION_NONE && !m->scale_up_hold.active &&
               s->n_policy - s->n_retiring >= m->config.min_workers && s->n_in_flight == 0 && s->n_active >= 2 &&
               s->n_room > 0;
}

static bool compaction_is_none(const Manager *m) {
        const PoolSummary *s = &m->summary;
        unsigned n = s->n_active;
        double capacity, headroom;

        if (m->last_compaction != DECISION_NONE || m->compaction_hold.active || s->n_retiring > 0 ||
            s->n_in_flight > 0)
                return false;
        if (n <= m->config.min_workers)
                return true;
        if (s->n_not_fresh > 0)
                return false;
        capacity = m->policy.reception_threshold + (double) (n - 1) * m->policy.admission_threshold;
        headroom = capacity - s->occupied;
        /* a margin for rounding drift of the running sum: near the threshold, ask the real policy */
        return headroom < m->policy.compaction_margin * m->policy.admission_threshold - 1e-6;
}

/* A compaction hold stands while its worker still cannot be judged and nothing that the policy checks
 * before the readings has changed (a retire or a spawn under way, the min_workers floor): the walk would
 * hold again, on this worker or an earlier one that is not fresh either. A sensor that cannot read its
 * cpu keeps the pool in this state for as long as it lasts, so it must not cost a walk per report; only
 * the hold's reason is written anew (how long, and what is missing now). */
static bool compaction_hold_stands(Manager *m, usec_t now) {
        const PoolSummary *s = &m->summary;
        Decision d = { .kind = DECISION_NONE };
        PolicyWorker p;
        Worker *w;

        if (m->last_compaction != DECISION_HELD || !m->compaction_hold.active || s->n_retiring > 0 ||
            s->n_in_flight > 0 || s->n_active <= m->config.min_workers || m->compaction_hold.worker <= 0)
                return false;
        w = manager_get_worker(m, (unsigned) m->compaction_hold.worker);
        if (!w || !w->summary_share.counted || !w->summary_share.not_fresh)
                return false;
        policy_worker_fill(m, w, now, &p);
        policy_compaction_hold(&p, now, &d);
        set_hold(m, &m->compaction_hold, "compaction", &d);
        return true;
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
        Manager *m = userdata;

        m->deferred_check = sd_event_source_disable_unref(m->deferred_check);
        manager_check_capacity(m);
        return 0;
}

/* True when the full check runs now; false when it was deferred to the end of the gap. */
static bool full_check_now(Manager *m, usec_t now, bool pool_changed) {
        int r;

        if (pool_changed || m->n_workers < COALESCE_MIN_WORKERS || now >= m->next_full_check) {
                m->deferred_check = sd_event_source_disable_unref(m->deferred_check);
                m->next_full_check = now + m->config.occupancy_interval / COALESCE_DIVISOR;
                return true;
        }
        if (m->deferred_check)
                return false;
        r = sd_event_add_time(m->event, &m->deferred_check, CLOCK_MONOTONIC, m->next_full_check, 0,
                              on_deferred_check, m);
        if (r < 0) {
                log_warning_errno(r, "Failed to defer a capacity check, checking at once: %m");
                return true;
        }
        return false;
}

void manager_check_capacity(Manager *m) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        bool pool_changed = !m->summary.valid;
        PolicyInput in;

        if (m->stopping)
                return;
        if (pool_changed || now >= m->summary.recheck_at)
                summary_rebuild(m, now);
        if (scale_up_is_none(m) && (compaction_is_none(m) || compaction_hold_stands(m, now)))
                return;
        if (!full_check_now(m, now, pool_changed))
                return;
        manager_policy_input(m, &in);
        act_scale_up(m, &in);
        if (m->last_scale_up == DECISION_SPAWN) {
                /* Under the min_workers floor the whole deficit starts at once (the floor does not wait
                 * for a spawn in flight); any other spawn is one at a time. Compaction sees the new pool
                 * next time round. */
                for (unsigned i = 0; i < m->config.min_workers && m->last_scale_up == DECISION_SPAWN &&
                                     m->n_workers < m->config.min_workers;
                     i++) {
                        manager_policy_input(m, &in);
                        act_scale_up(m, &in);
                }
                return;
        }
        act_compaction(m, &in);
}
