/* SPDX-License-Identifier: MIT */
#include "rate.h"

#include <stdarg.h>
#include <stdio.h>

#include "macro.h"

const char *rate_status_to_string(RateStatus s) {
        static const char *const table[_RATE_STATUS_MAX] = {
                [RATE_OFF] = "off",
                [RATE_OK] = "ok",
                [RATE_WAITING] = "waiting",
                [RATE_HELD] = "held",
        };
        return s >= 0 && s < _RATE_STATUS_MAX ? table[s] : NULL;
}

static void reading_set(RateReading *r, RateStatus status, int culprit, const char *format, ...)
        _printf_(4, 5);
static void reading_set(RateReading *r, RateStatus status, int culprit, const char *format, ...) {
        va_list ap;

        r->status = status;
        r->culprit = culprit;
        va_start(ap, format);
        vsnprintf(r->reason, sizeof r->reason, format, ap);
        va_end(ap);
}

/* One worker's requests and covered time within [start, now]: false with r set (held) when its rows do not
 * cover it fresh and whole. */
static bool worker_coverage(const RateWorker *w, usec_t start, usec_t now, usec_t gap_max, uint64_t *ret_requests,
                            usec_t *ret_span, RateReading *r) {
        const Row *first = NULL, *prev = NULL;
        char span[32];

        /* oldest first */
        for (uint32_t age = w->window->count; age-- > 0;) {
                const Row *row = window_row(w->window, age);

                if (row->received + gap_max < start)
                        continue; /* long before the window: not needed */
                if (row->received > now) {
                        reading_set(r, RATE_HELD, (int) w->id, "w%u sent a row from the future", w->id);
                        return false;
                }
                if (!row->has_forward) {
                        /* before the window, a row from before it served (no forward pool yet) is no loss */
                        if (row->received < start)
                                continue;
                        reading_set(r, RATE_HELD, (int) w->id, "w%u has no forward counters", w->id);
                        return false;
                }
                if (prev && (row->received <= prev->received || (row->seq != 0 && row->seq == prev->seq))) {
                        reading_set(r, RATE_HELD, (int) w->id, "w%u repeated a row", w->id);
                        return false;
                }
                if (prev && row->fwd_requests < prev->fwd_requests) {
                        reading_set(r, RATE_HELD, (int) w->id, "w%u's counters went back", w->id);
                        return false;
                }
                if (prev && row->received - prev->received > gap_max) {
                        reading_set(r, RATE_HELD, (int) w->id, "w%u no row for %s", w->id,
                                    format_timespan(span, sizeof span, row->received - prev->received));
                        return false;
                }
                if (!first)
                        first = row;
                prev = row;
        }
        if (!prev)
                prev = window_latest(w->window); /* all before the window: how long it has been silent */
        if (!prev || now - prev->received > gap_max) {
                reading_set(r, RATE_HELD, (int) w->id, "w%u no row for %s", w->id,
                            prev && now > prev->received ? format_timespan(span, sizeof span, now - prev->received)
                                                         : "the whole window");
                return false;
        }
        if (first->received > start + gap_max || first == prev) {
                reading_set(r, RATE_HELD, (int) w->id, "w%u's rows begin %s into the window", w->id,
                            format_timespan(span, sizeof span, first->received > start ? first->received - start : 0));
                return false;
        }
        *ret_requests = prev->fwd_requests - first->fwd_requests;
        *ret_span = prev->received - first->received;
        return true;
}

void rate_sustained(const RateWorker *w, size_t n, usec_t now, usec_t length, usec_t epoch, usec_t gap_max,
                    RateReading *ret) {
        usec_t start = now > length ? now - length : 0, since = epoch;
        char left[32];
        double total = 0;

        *ret = (RateReading) { .status = RATE_OK, .culprit = -1, .length = length, .serving = (unsigned) n };
        if (n == 0) {
                reading_set(ret, RATE_HELD, -1, "no serving worker");
                return;
        }
        for (size_t i = 0; i < n; i++)
                since = MAX(since, w[i].serving_since);
        if (since > start) {
                reading_set(ret, RATE_WAITING, -1, "the window restarted %s ago (the serving set or the configuration "
                            "changed): %s to go", format_timespan(left, sizeof left, now - since),
                            format_timespan((char[32]) {}, 32, since - start));
                return;
        }
        for (size_t i = 0; i < n; i++) {
                uint64_t requests;
                usec_t span;

                if (!worker_coverage(&w[i], start, now, gap_max, &requests, &span, ret))
                        return;
                total += span > 0 ? (double) requests * USEC_PER_SEC / (double) span : 0;
        }
        ret->total = total;
        ret->per_worker = total / (double) n;
}
