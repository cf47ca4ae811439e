/* SPDX-License-Identifier: MIT */
#include "window.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "macro.h"

int window_init(Window *w, uint32_t capacity) {
        _cleanup_free_ Row *rows = NULL;
        _cleanup_free_ RowComponents *components = NULL;

        if (capacity == 0)
                return -EINVAL;
        rows = calloc(capacity, sizeof(Row));
        components = calloc(capacity, sizeof(RowComponents));
        if (!rows || !components)
                return -ENOMEM;
        *w = (Window){.rows = TAKE_PTR(rows), .components = TAKE_PTR(components), .capacity = capacity};
        return 0;
}

void window_done(Window *w) {
        free(w->rows);
        free(w->components);
        *w = (Window){};
}

void window_clear(Window *w) {
        w->count = 0;
        w->head = 0;
}

void row_components(const Row *row, RowComponents *ret) {
        *ret = (RowComponents) {
                .has_cpu = row->has_cpu,
                .cpu = row->cpu,
                .has_memory = row->has_memory,
                .memory_bytes = row->memory_bytes,
                .has_executor = row->has_executor && row->executor_total > 0,
                .has_inflight = row->has_inflight,
                .inflight = row->inflight,
        };
        if (ret->has_executor)
                ret->executor = (double) row->executor_busy / (double) row->executor_total;
}

void window_push(Window *w, const Row *row) {
        w->rows[w->head] = *row;
        row_components(row, &w->components[w->head]);
        w->head = w->head + 1 == w->capacity ? 0 : w->head + 1;
        if (w->count < w->capacity)
                w->count++;
        w->total++;
}

/* The slot of the row of that age; age < count. */
static uint32_t slot(const Window *w, uint32_t age) {
        /* head is one past the newest; count <= capacity, so one wrap at most. */
        return w->head >= age + 1 ? w->head - age - 1 : w->head + w->capacity - age - 1;
}

const Row *window_row(const Window *w, uint32_t age) {
        return age < w->count ? &w->rows[slot(w, age)] : NULL;
}

const RowComponents *window_components(const Window *w, uint32_t age) {
        return age < w->count ? &w->components[slot(w, age)] : NULL;
}

const Row *window_latest(const Window *w) {
        return window_row(w, 0);
}

unsigned window_recent_slots(const Window *w, uint32_t rows, uint32_t ret_first[2], uint32_t ret_n[2]) {
        uint32_t back, first;

        if (w->capacity == 0) /* a window never initialised, or done */
                return 0;
        back = MIN(rows, w->capacity - 1);
        first = w->head >= back ? w->head - back : w->head + w->capacity - back;
        if (first <= w->head) {
                ret_first[0] = first, ret_n[0] = back + 1;
                return 1;
        }
        /* the span wraps round the ring's end */
        ret_first[0] = first, ret_n[0] = w->capacity - first;
        ret_first[1] = 0, ret_n[1] = w->head + 1;
        return 2;
}

void window_prefetch(const Window *w, uint32_t rows) {
        uint32_t first[2], n[2];
        unsigned runs = window_recent_slots(w, rows, first, n);

        if (runs == 0)
                return;
        prefetch_range(&w->rows[w->head], sizeof(Row), true);
        for (unsigned i = 0; i < runs; i++)
                prefetch_range(&w->components[first[i]], n[i] * sizeof(RowComponents), true);
}

/* A double from the wire is a reading only when present and finite: NaN would slip through every
 * comparison and read as idle. */
static bool take_double(bool present, double v, double *ret) {
        if (!present || !isfinite(v))
                return false;
        *ret = v;
        return true;
}

void row_from_report(Row *row, const ElasticPool__OccupancyReport *r, usec_t received) {
        const ElasticPool__Executor *e = r->executor;
        const ElasticPool__Pressure *ps = r->pressure;
        const ElasticPool__Backlog *b = r->backlog;
        const ElasticPool__Load *l = r->load;

        *row = (Row){
                .seq = r->has_seq ? r->seq : 0,
                .monotonic = r->has_monotonic_usec ? r->monotonic_usec : 0,
                .received = received,
                .early = r->has_early && r->early,
        };

        row->has_cpu = take_double(r->has_cpu, r->cpu, &row->cpu);

        if (r->has_memory_bytes) {
                row->has_memory = true;
                row->memory_bytes = r->memory_bytes;
                row->memory_source = r->has_memory_source
                                             ? (int) r->memory_source
                                             : ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_UNSPECIFIED;
        }

        if (e && e->has_busy && e->has_total) {
                row->has_executor = true;
                row->executor_busy = e->busy;
                row->executor_total = e->total;
        }
        if (e && e->has_queue_depth) {
                row->has_executor_queue = true;
                row->executor_queue = e->queue_depth;
        }

        if (r->has_users)
                row->has_users = true, row->users = r->users;
        if (r->has_active_users)
                row->has_active_users = true, row->active_users = r->active_users;
        if (r->has_pages)
                row->has_pages = true, row->pages = r->pages;
        if (r->has_connections)
                row->has_connections = true, row->connections = r->connections;

        if (ps) {
                row->has_psi_cpu = take_double(ps->has_cpu_some_avg10, ps->cpu_some_avg10, &row->psi_cpu);
                row->has_psi_memory =
                        take_double(ps->has_memory_some_avg10, ps->memory_some_avg10, &row->psi_memory);
        }

        if (b && b->has_pending && b->has_outbox) {
                row->has_backlog = true;
                row->backlog_pending = b->pending;
                row->backlog_outbox = b->outbox;
        }

        if (l)
                row->has_load = take_double(l->has_avg1, l->avg1, &row->load1);
}
