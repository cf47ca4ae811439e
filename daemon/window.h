/* SPDX-License-Identifier: MIT */
#pragma once

/* The archive: per worker, the last window_rows reports as a ring (not a list). A Row keeps exactly
 * what the report said, with presence flags, plus what the commander itself measured when the report
 * arrived (its forward counters and in-flight requests for that worker).
 *
 * A value without its has_ flag is unknown, never 0: readers test the flag first. The ring is fixed at
 * window_init(): pushing never allocates, and the oldest row is overwritten once it is full. */

#include <stdbool.h>
#include <stdint.h>

#include "elastic_pool.pb-c.h"
#include "time-util.h"

typedef struct Row {
        uint64_t seq;     /* 0 when the report carried none */
        bool early;       /* an early report (executor queue crossed burst_queue): not a row of the window */
        usec_t monotonic; /* the sensor's reading time (CLOCK_MONOTONIC, one clock per host); 0 if none */
        usec_t received;  /* when the commander got it (CLOCK_MONOTONIC) */

        bool has_cpu;
        double cpu; /* fraction of one core */
        bool has_memory;
        uint64_t memory_bytes;
        int memory_source; /* ElasticPool__MemorySource */
        bool has_executor; /* busy AND total present: half an executor reading is no reading */
        uint32_t executor_busy, executor_total;
        bool has_executor_queue;
        uint32_t executor_queue;
        bool has_users, has_active_users, has_pages, has_connections;
        uint32_t users, active_users, pages, connections;
        bool has_psi_cpu, has_psi_memory;
        double psi_cpu, psi_memory;
        bool has_backlog; /* pending AND outbox present */
        uint64_t backlog_pending, backlog_outbox;
        bool has_load;
        double load1;

        /* Commander-side measures at arrival, filled by the manager (front end issue). */
        bool has_inflight;
        uint32_t inflight; /* open requests forwarded to this worker */
        bool has_forward;
        uint64_t fwd_requests; /* cumulative counters of the front end for this worker */
        uint64_t fwd_errors;
        usec_t fwd_busy_usec; /* sum of request durations */
} Row;

/* What the evaluator averages of a row (evaluator.h), kept apart from the rows in a ring of its own: a
 * report averages smoothing_rows of them, and in a pool of thousands of workers each one it reads is a
 * cache miss. At 32 bytes six rows sit in three adjacent cache lines; in the 208-byte rows the same fields
 * spread over a dozen. Readings, not components: the parameters that turn cpu, memory and inflight into
 * components may change with a reload. The executor's busy / total needs none, and is divided here, once
 * a row instead of once an evaluation. */
typedef struct RowComponents {
        double cpu;
        uint64_t memory_bytes;
        double executor; /* busy / total */
        uint32_t inflight;
        bool has_cpu, has_memory;
        bool has_executor; /* an executor reading with total > 0: a total of 0 measures nothing */
        bool has_inflight;
} RowComponents;

typedef struct Window {
        Row *rows;
        RowComponents *components; /* components[i] is rows[i]'s */
        uint32_t capacity;
        uint32_t count; /* valid rows, <= capacity */
        uint32_t head;  /* slot the next row goes to */
        uint64_t total; /* rows ever pushed */
} Window;

/* 0, -EINVAL (capacity 0), -ENOMEM. */
int window_init(Window *w, uint32_t capacity);
void window_done(Window *w);
/* Drops every row (a worker's channel restarted, say); keeps the capacity and `total`. The manager clears
 * the window when a channel (re)connects: the sensor's first report of a connection carries no cpu, and
 * evaluator_missing_components() only forgives that on a window of one row. */
void window_clear(Window *w);
/* Copies *row into the ring, overwriting the oldest row when full. */
void window_push(Window *w, const Row *row);
/* age 0 is the newest row; NULL when age >= count. */
const Row *window_row(const Window *w, uint32_t age);
const Row *window_latest(const Window *w);
/* The components of the row of that age; NULL when age >= count. */
const RowComponents *window_components(const Window *w, uint32_t age);
/* The slot the next row goes to and the `rows` before it (as many as the ring holds besides), as at most
 * two runs of slots in the ring's order: ret_first[i], ret_n[i]. Returns how many runs (1, or 2 where the
 * span wraps round the ring's end; 0 for a window without a ring). */
unsigned window_recent_slots(const Window *w, uint32_t rows, uint32_t ret_first[2], uint32_t ret_n[2]);
/* Asks the CPU to fetch what the next push and an evaluation of the newest `rows` rows will touch: the
 * row of the next slot and the components of window_recent_slots(). A hint; it changes nothing. */
void window_prefetch(const Window *w, uint32_t rows);
/* What the evaluator averages of *row. */
void row_components(const Row *row, RowComponents *ret);

/* Copies a decoded report into a Row, keeping absent fields absent. received = arrival time. A
 * non-finite double (cpu, pressure, load) is not a reading and stays absent. The commander-side measures
 * (has_inflight, has_forward) come out absent: the manager fills them. */
void row_from_report(Row *row, const ElasticPool__OccupancyReport *r, usec_t received);
