/* SPDX-License-Identifier: MIT */
/* What a person watching the demo reads: one line a second (the load, then the pool as the commander
 * sees it) and the summary at the end. The per-worker part of the line is compressed in steps (full
 * bars, short bars, numbers only, a min/avg/max digest) until the line fits its width. */

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "loadgen.h"
#include "macro.h"

typedef enum CellStyle {
        CELL_BAR10, /* w1 [#####.....] 0.52 u=37 */
        CELL_BAR5,  /* w1 [###..] 0.52 u=37 */
        CELL_SHORT, /* w1 .52/37 (one space apart) */
        _CELL_STYLE_MAX,
} CellStyle;

typedef struct Buf {
        char *p;
        size_t size, len;
} Buf;

_printf_(2, 3) static void buf_printf(Buf *b, const char *fmt, ...) {
        va_list ap;
        int n;

        if (b->len + 1 >= b->size)
                return;
        va_start(ap, fmt);
        n = vsnprintf(b->p + b->len, b->size - b->len, fmt, ap);
        va_end(ap);
        if (n > 0)
                b->len = MIN(b->len + (size_t) n, b->size - 1);
}

char *format_latency(char *buf, size_t size, usec_t v) {
        if (v < USEC_PER_MSEC)
                snprintf(buf, size, "%lluus", (unsigned long long) v);
        else if (v < 10 * USEC_PER_MSEC)
                snprintf(buf, size, "%.1fms", (double) v / USEC_PER_MSEC);
        else if (v < USEC_PER_SEC)
                snprintf(buf, size, "%llums", (unsigned long long) (v / USEC_PER_MSEC));
        else
                snprintf(buf, size, "%.2fs", (double) v / USEC_PER_SEC);
        return buf;
}

static void bar(Buf *b, double occupancy, unsigned cells) {
        unsigned full = (unsigned) (CLAMP(occupancy, 0.0, 1.0) * cells + 0.5);

        buf_printf(b, "[");
        for (unsigned i = 0; i < cells; i++)
                buf_printf(b, "%c", i < full ? '#' : '.');
        buf_printf(b, "]");
}

/* A worker that takes no new users is marked: its state, or '?' when its readings are not fresh
 * (which is what holds compaction). */
static void worker_cell(Buf *b, const WorkerStatus *w, CellStyle style) {
        bool routable = streq(w->state, "routable"), draining = streq(w->state, "draining");

        buf_printf(b, "%s%s", w->name, w->fresh ? "" : "?");
        if (!routable && !draining) {
                buf_printf(b, style == CELL_SHORT ? ":%.1s" : " %s", w->state);
                return;
        }
        if (style == CELL_SHORT) {
                /* ".52", and "1.0" for a full one: three characters either way */
                if (w->occupancy >= 0.995)
                        buf_printf(b, " 1.0/%u%s", w->users, draining ? "d" : "");
                else
                        buf_printf(b, " .%02u/%u%s", (unsigned) (CLAMP(w->occupancy, 0.0, 1.0) * 100 + 0.5),
                                   w->users, draining ? "d" : "");
                return;
        }
        buf_printf(b, " ");
        bar(b, w->occupancy, style == CELL_BAR10 ? 10 : 5);
        buf_printf(b, " %.2f u=%u%s", w->occupancy, w->users, draining ? " draining" : "");
}

static void workers_cells(Buf *b, const PoolStatus *st, CellStyle style) {
        for (unsigned i = 0; i < st->n_shown; i++) {
                buf_printf(b, style == CELL_SHORT ? " " : "  ");
                worker_cell(b, &st->workers[i], style);
        }
}

/* The last resort for a wide pool: the spread of occupancy and users. */
static void workers_digest(Buf *b, const PoolStatus *st) {
        double lo = 1e9, hi = 0, sum = 0;
        unsigned ulo = UINT32_MAX, uhi = 0;

        for (unsigned i = 0; i < st->n_shown; i++) {
                const WorkerStatus *w = &st->workers[i];
                lo = MIN(lo, w->occupancy);
                hi = MAX(hi, w->occupancy);
                sum += w->occupancy;
                ulo = MIN(ulo, w->users);
                uhi = MAX(uhi, w->users);
        }
        if (st->n_shown == 0)
                return;
        buf_printf(b, "  occupancy min %.2f avg %.2f max %.2f, users %u..%u per worker", lo,
                   sum / st->n_shown, hi, ulo, uhi);
}

static void holds(Buf *b, const PoolStatus *st) {
        if (st->scale_up_hold[0])
                buf_printf(b, "  [scale-up held: %s]", st->scale_up_hold);
        if (st->compaction_hold[0])
                buf_printf(b, "  [compaction held: %s]", st->compaction_hold);
}

static void line_head(Buf *b, const ReportLine *l) {
        char p99[16];

        buf_printf(b, "%4llus users %4u/%-4u", (unsigned long long) (l->elapsed / USEC_PER_SEC), l->live,
                   l->target);
        if (l->show_away)
                buf_printf(b, " idle %-4u", l->away);
        buf_printf(b, " rps %5.0f p99 %6s err %llu sticky %llu", l->rps,
                   l->p99 == USEC_INFINITY ? "-" : format_latency(p99, sizeof p99, l->p99),
                   (unsigned long long) l->errors, (unsigned long long) l->sticky_errors);
}

char *report_format_line(char *buf, size_t size, unsigned width, const ReportLine *line, bool show_pool,
                         const PoolStatus *status) {
        Buf b = {buf, size, 0};
        size_t head, limit = MIN((size_t) width, size - 1);

        buf[0] = 0;
        line_head(&b, line);
        if (!show_pool)
                return buf;
        if (!status) {
                buf_printf(&b, " | pool: no status");
                return buf;
        }
        buf_printf(&b, " | %u worker%s", status->n_workers, status->n_workers == 1 ? "" : "s");
        head = b.len;
        for (CellStyle style = 0; style <= _CELL_STYLE_MAX; style++) {
                b.len = head;
                buf[head] = 0;
                if (style < _CELL_STYLE_MAX && status->n_shown == status->n_workers)
                        workers_cells(&b, status, style);
                else
                        workers_digest(&b, status);
                if (b.len <= limit)
                        break;
        }
        /* the holds say why the pool does not move; shown when they fit */
        head = b.len;
        holds(&b, status);
        if (b.len > limit) {
                b.len = head;
                buf[head] = 0;
        }
        if (b.len > limit)
                buf[limit] = 0;
        return buf;
}

static void summary_errors(FILE *f, const Stats *s) {
        bool any = false;

        fputs("errors:", f);
        for (ErrorKind k = 0; k < _ERROR_KIND_MAX; k++)
                if (s->errors[k] > 0) {
                        fprintf(f, "%s %s %llu", any ? "," : "", error_kind_to_string(k),
                                (unsigned long long) s->errors[k]);
                        any = true;
                }
        fputs(any ? "\n" : " none\n", f);
}

/* What the kept sessions saw: the users that stayed logged in after they left the load, and how their
 * sparse checks fared, above all once the pool had shrunk under them (their state moved along). */
static void summary_sessions(FILE *f, const Stats *s, const Loadgen *lg) {
        fprintf(f,
                "sessions: %llu users stayed logged in through the ramp-down; %llu idle checks, %llu passed",
                (unsigned long long) s->kept, (unsigned long long) s->idle_checks,
                (unsigned long long) s->idle_checks_ok);
        if (lg->have_status && lg->max_workers_seen > lg->status.n_routable)
                fprintf(f, ", %llu of them after the pool shrank (%u -> %u workers)",
                        (unsigned long long) s->idle_checks_shrunk, lg->max_workers_seen,
                        lg->status.n_routable);
        else if (lg->have_status)
                fprintf(f, "; the pool did not shrink (%u routable worker%s)", lg->status.n_routable,
                        lg->status.n_routable == 1 ? "" : "s");
        fprintf(f, "; %llu passed on another worker than the check before (moved, state intact)",
                (unsigned long long) s->idle_moves);
        if (s->idle_lost > 0)
                fprintf(f, "; %llu found the state gone", (unsigned long long) s->idle_lost);
        fputc('\n', f);
}

void report_write_summary(FILE *f, const Stats *s, usec_t elapsed, const Loadgen *lg) {
        char p50[16], p90[16], p99[16], max[16];
        double secs = (double) elapsed / USEC_PER_SEC;

        fprintf(f,
                "summary: %.1fs, %llu requests (%.1f/s), %llu errors, %llu sticky errors, %llu lost states, "
                "%llu moves seen, %llu logins, %llu logouts\n",
                secs, (unsigned long long) s->requests, secs > 0 ? (double) s->requests / secs : 0.0,
                (unsigned long long) stats_errors_total(s), (unsigned long long) s->sticky_errors,
                (unsigned long long) s->lost, (unsigned long long) s->moves, (unsigned long long) s->logins,
                (unsigned long long) s->logouts);
        if (s->latency.count == 0)
                fputs("latency: no answers\n", f);
        else
                fprintf(f, "latency: p50 %s, p90 %s, p99 %s, max %s\n",
                        format_latency(p50, sizeof p50, histogram_quantile(&s->latency, 0.50)),
                        format_latency(p90, sizeof p90, histogram_quantile(&s->latency, 0.90)),
                        format_latency(p99, sizeof p99, histogram_quantile(&s->latency, 0.99)),
                        format_latency(max, sizeof max, s->latency.max));
        summary_errors(f, s);
        if (lg->opt->keep_sessions)
                summary_sessions(f, s, lg);
        if (s->abandoned > 0)
                fprintf(f, "abandoned: %llu users stopped without logging out\n",
                        (unsigned long long) s->abandoned);
        if (lg->have_status)
                fprintf(f,
                        "pool: max routable workers seen %u; the commander counts %llu spawns, %llu "
                        "deaths\n",
                        lg->max_workers_seen, (unsigned long long) lg->status.spawns,
                        (unsigned long long) lg->status.deaths);
        else if (lg->opt->status_path)
                fprintf(f, "pool: %s was never readable\n", lg->opt->status_path);
        fflush(f);
}
