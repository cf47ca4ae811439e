/* SPDX-License-Identifier: MIT */
#pragma once

/* When the front end gives memory back after a burst. A burst leaves glibc's heap full of free chunks
 * (nghttp2 sessions, stream and response objects, buffers of connections that closed) that it never
 * returns to the kernel by itself: a free chunk below the top of the heap only leaves with malloc_trim().
 * Trimming costs a walk of the heap, so it is done once the burst is over, never on the request path:
 * `delay` after the count of client connections fell to a quarter of its peak since the last trim, at
 * most once per `interval`, and only when it is still that low by then. A peak under `min_peak` is no
 * burst: a trickle of single connections (a health check every second) leaves nothing worth a trim
 * behind it, and would otherwise call for one every `interval` for good. A pure core: the caller feeds
 * it the counts and the time and arms one timer at the deadline it gets back (frontend-trim.c does the
 * giving back). */

#include <stdbool.h>

#include "time-util.h"

typedef struct TrimSchedule {
        usec_t delay;    /* the calm wanted before trimming: the tail of a burst closes over a moment */
        usec_t interval; /* at most one trim per interval */
        unsigned min_peak; /* the fewest connections open at once that make a burst */
        unsigned peak;   /* the most connections open at once since the last trim */
        usec_t last;     /* the last trim; 0: none yet */
        bool armed;      /* a deadline was handed out and has not been checked yet */
} TrimSchedule;

void trim_schedule_init(TrimSchedule *t, usec_t delay, usec_t interval, unsigned min_peak);

/* A connection opened; n connections are open now. A compare, on the accept path. */
static inline void trim_schedule_opened(TrimSchedule *t, unsigned n) {
        if (n > t->peak)
                t->peak = n;
}

/* A connection closed at now; n are open now. Returns the time to arm the timer at when this close
 * ended a burst (the count fell to a quarter of a peak of at least min_peak) and no deadline is
 * pending; 0 otherwise, the common case (nothing to do). */
usec_t trim_schedule_closed(TrimSchedule *t, unsigned n, usec_t now);

/* The timer fired at now with n connections open: true when the memory is to be given back now (the
 * trim is recorded as done); false when a burst started again in the meantime (the next close that
 * ends it arms the timer again). */
bool trim_schedule_due(TrimSchedule *t, unsigned n, usec_t now);
