/* SPDX-License-Identifier: MIT */
#include "burst.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"

static const char *const signal_table[_BURST_SIGNAL_MAX] = {
        [BURST_ACCEPT_QUEUE] = "accept queue",
        [BURST_FORWARD_QUEUE] = "forward queue",
        [BURST_EXECUTOR_QUEUE] = "executor queue",
};

const char *burst_signal_to_string(BurstSignal s) {
        return s >= 0 && s < _BURST_SIGNAL_MAX ? signal_table[s] : NULL;
}

static const char *const status_table[_BURST_STATUS_MAX] = {
        [BURST_OFF] = "off",         [BURST_CALM] = "calm", [BURST_RISING] = "rising",
        [BURST_SUSTAINED] = "sustained", [BURST_HELD] = "held",
};

const char *burst_status_to_string(BurstStatus s) {
        return s >= 0 && s < _BURST_STATUS_MAX ? status_table[s] : NULL;
}

BurstStatus burst_status_from_string(const char *s) {
        for (BurstStatus k = 0; s && k < _BURST_STATUS_MAX; k++)
                if (streq(s, status_table[k]))
                        return k;
        return _BURST_STATUS_INVALID;
}

void burst_observe(BurstTrack *t, const BurstSample *s, const BurstParams *p, usec_t now) {
        /* a sample long after the last says nothing of the time between: the streak starts again */
        bool gap = t->last == 0 || now < t->last || now - t->last > p->gap_max;

        t->last = now;
        t->waiting = 0;
        t->late = -1;
        t->late_since = 0;
        for (BurstSignal k = 0; k < _BURST_SIGNAL_MAX; k++) {
                t->current[k] = s->availability[k] == BURST_CURRENT;
                t->value[k] = t->current[k] ? s->value[k] : 0;
                t->waiting += t->value[k];
                if (s->availability[k] == BURST_LATE && t->late < 0) {
                        t->late = (int) k;
                        t->late_since = s->late_since[k];
                }
        }
        if (t->late >= 0 || t->waiting < MAX(p->queue, 1U))
                t->over_since = 0;
        else if (t->over_since == 0 || gap)
                t->over_since = now;
}

_printf_(2, 3) static void reading_set(BurstReading *r, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(r->reason, sizeof r->reason, fmt, ap);
        va_end(ap);
}

/* Appends to r->reason; what does not fit ends in "...". */
_printf_(2, 3) static void reading_append(BurstReading *r, const char *fmt, ...) {
        size_t len = strnlen(r->reason, sizeof r->reason), size = sizeof r->reason;
        va_list ap;
        int k;

        if (len + 4 >= size)
                return;
        va_start(ap, fmt);
        k = vsnprintf(r->reason + len, size - len, fmt, ap);
        va_end(ap);
        if (k >= 0 && (size_t) k >= size - len)
                memcpy(r->reason + size - 4, "...", 4);
}

/* "executor queue 9, accept queue 3": the signals that hold waiting requests. */
static void append_signals(BurstReading *r, const BurstTrack *t) {
        bool first = true;

        for (BurstSignal k = 0; k < _BURST_SIGNAL_MAX; k++) {
                if (!t->current[k] || t->value[k] == 0)
                        continue;
                reading_append(r, "%s%s %u", first ? "" : ", ", burst_signal_to_string(k), t->value[k]);
                first = false;
        }
        if (first)
                reading_append(r, "no signal");
}

static void assess_late(const BurstWorker *w, usec_t now, BurstReading *ret) {
        const BurstTrack *t = &w->track;
        char age[32];

        ret->status = BURST_HELD;
        ret->culprit = (int) w->id;
        ret->since = t->late_since;
        if (t->late_since == 0)
                reading_set(ret, "burst held: w%u %s never read", w->id, burst_signal_to_string(t->late));
        else
                reading_set(ret, "burst held: w%u %s not current for %s", w->id, burst_signal_to_string(t->late),
                            format_timespan(age, sizeof age, now > t->late_since ? now - t->late_since : 0));
}

bool burst_track_sustained(const BurstTrack *t, const BurstParams *p, usec_t now) {
        if (p->window == 0 || t->last == 0 || now < t->last || now - t->last > p->gap_max || t->late >= 0)
                return false; /* off, or no current reading: missing is never saturated either */
        return t->over_since != 0 && now >= t->over_since && now - t->over_since >= p->window;
}

/* Every worker saturated since `since`: the line names them, their waiting requests and the span. */
static void assess_saturated(const BurstWorker *w, size_t n, const BurstParams *p, usec_t since, usec_t now,
                             BurstReading *ret) {
        char span[32];

        ret->status = now - since >= p->window ? BURST_SUSTAINED : BURST_RISING;
        ret->since = since;
        ret->span = now - since;
        reading_set(ret, "burst:");
        for (size_t i = 0; i < n; i++)
                reading_append(ret, " w%u", w[i].id);
        for (size_t i = 0; i < n; i++) {
                reading_append(ret, "%s waiting %u/%u (", i == 0 ? "" : ",", w[i].track.waiting, p->queue);
                append_signals(ret, &w[i].track);
                reading_append(ret, ")");
        }
        reading_append(ret, " for %s", format_timespan(span, sizeof span, now - since));
}

void burst_assess(const BurstWorker *w, size_t n, const BurstParams *p, usec_t now, BurstReading *ret) {
        const BurstWorker *late = NULL;
        usec_t since = 0;

        *ret = (BurstReading) { .status = BURST_CALM, .culprit = -1 };
        if (p->window == 0) {
                ret->status = BURST_OFF;
                reading_set(ret, "burst path off (burst_window=0)");
                return;
        }
        if (n == 0) {
                reading_set(ret, "burst: no routable worker");
                return;
        }
        for (size_t i = 0; i < n; i++) {
                const BurstTrack *t = &w[i].track;

                /* a worker measured with room answers for the pool, whatever the others read */
                if (t->last != 0 && t->late < 0 && t->over_since == 0) {
                        ret->culprit = (int) w[i].id;
                        reading_set(ret, "burst: w%u has room: waiting %u < burst_queue=%u", w[i].id, t->waiting,
                                    p->queue);
                        return;
                }
                if ((t->last == 0 || t->late >= 0) && !late)
                        late = &w[i];
                since = MAX(since, t->over_since);
        }
        if (late) {
                if (late->track.last == 0) {
                        /* not sampled yet (it became routable since the last tick): nothing is late */
                        ret->culprit = (int) late->id;
                        reading_set(ret, "burst: w%u not sampled yet", late->id);
                        return;
                }
                assess_late(late, now, ret);
                return;
        }
        assess_saturated(w, n, p, since, now, ret);
}
