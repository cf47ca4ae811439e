/* SPDX-License-Identifier: MIT */
#pragma once

/* The sustained request rate of the group (request-rate scaling, [policy] rps_target): from the
 * commander's own forward counters archived in each worker's window rows. Pure: callers pass the rows,
 * the clock and the window's epoch.
 *
 * Missing is never zero. The window [now - length, now] counts only when every serving worker covers
 * it with fresh, complete rows: a row that repeats a timestamp or a sequence number, a row from the
 * future, counters that go back, a gap longer than gap_max between two rows, rows that begin late or end
 * long ago: each HOLDS the reading, with the reason, never reads as 0 requests/s. A window that would
 * begin before its epoch (the serving set changed, the configuration was reloaded, the commander
 * started) or before a worker began serving is not complete yet: it WAITS, it restarts, and a rate from
 * before the change never drives a decision after it. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "time-util.h"
#include "window.h"

typedef struct RateWorker {
        unsigned id;
        const Window *window;
        usec_t serving_since; /* it takes requests of its own since (routable, not leaving) */
} RateWorker;

typedef enum RateStatus {
        RATE_OFF,     /* rps_target is not set */
        RATE_OK,      /* measured over the whole window */
        RATE_WAITING, /* the window restarted and is not long enough yet (nothing is late) */
        RATE_HELD,    /* a serving worker's coverage is missing or broken: not available */
        _RATE_STATUS_MAX,
        _RATE_STATUS_INVALID = -EINVAL,
} RateStatus;

const char *rate_status_to_string(RateStatus s);

typedef struct RateReading {
        RateStatus status;
        double total;       /* requests/s of the group (RATE_OK only) */
        double per_worker;  /* total / serving workers (RATE_OK only) */
        unsigned serving;   /* serving workers counted */
        int culprit;        /* RATE_HELD: the worker; -1 */
        usec_t length;      /* the window's length */
        char reason[160];   /* RATE_HELD, RATE_WAITING: why; e.g. "w3 no row for 7s" */
} RateReading;

/* The group's rate over [now - length, now] from the serving workers w[0..n) (n > 0), not before epoch,
 * with at most gap_max between two rows of a worker. */
void rate_sustained(const RateWorker *w, size_t n, usec_t now, usec_t length, usec_t epoch, usec_t gap_max,
                    RateReading *ret);
