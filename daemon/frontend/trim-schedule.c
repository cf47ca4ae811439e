/* SPDX-License-Identifier: MIT */
#include "trim-schedule.h"

#include "macro.h"

void trim_schedule_init(TrimSchedule *t, usec_t delay, usec_t interval, unsigned min_peak) {
        *t = (TrimSchedule) { .delay = delay, .interval = interval, .min_peak = min_peak };
}

/* A quarter of the peak: a burst is over when most of its connections left, even if a few long-lived
 * ones stay (a pool that never drops to zero connections still gets its burst's memory back). */
static bool calm(const TrimSchedule *t, unsigned n) {
        return t->peak >= t->min_peak && n <= t->peak / 4;
}

usec_t trim_schedule_closed(TrimSchedule *t, unsigned n, usec_t now) {
        usec_t at;

        if (t->armed || !calm(t, n))
                return 0;
        t->armed = true;
        at = now + t->delay;
        if (t->last != 0 && t->last + t->interval > at)
                at = t->last + t->interval;
        return at;
}

bool trim_schedule_due(TrimSchedule *t, unsigned n, usec_t now) {
        t->armed = false;
        if (!calm(t, n))
                return false;
        t->last = now;
        t->peak = n; /* what stays open counts as the new base: its own close may call for another trim */
        return true;
}
