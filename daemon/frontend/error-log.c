/* SPDX-License-Identifier: MIT */
#include "error-log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "frontend-internal.h"
#include "log.h"
#include "macro.h"

/* Appends ", N more <what>" (or " and N more" before the last one) to the summary. */
static void summary_add(char *buf, size_t size, size_t *len, unsigned n, const char *what, bool last) {
        const char *sep = *len == 0 ? "" : last ? " and " : ", ";
        int k;

        if (*len >= size)
                return;
        k = snprintf(buf + *len, size - *len, "%s%u more %s", sep, n, what);
        *len = k < 0 ? size : MIN(size, *len + (size_t) k);
}

void frontend_log_flush(Frontend *fe) {
        char summary[512], what[16];
        unsigned kinds = 0, done = 0;
        size_t len = 0;

        if (fe->log_suppressed_total == 0)
                return;
        for (size_t i = 0; i < FRONTEND_LOG_STATUSES; i++)
                kinds += fe->log_suppressed[i] > 0;
        /* statuses in order, then the lines without one */
        for (size_t i = 1; i <= FRONTEND_LOG_STATUSES; i++) {
                size_t slot = i % FRONTEND_LOG_STATUSES;
                unsigned n = fe->log_suppressed[slot];

                if (n == 0)
                        continue;
                if (slot == 0)
                        snprintf(what, sizeof what, "client error%s", n == 1 ? "" : "s");
                else
                        snprintf(what, sizeof what, "%zu%s", slot + 399, n == 1 ? "" : "s");
                summary_add(summary, sizeof summary, &len, n, what, ++done == kinds && kinds > 1);
                fe->log_suppressed[slot] = 0;
        }
        log_notice("... and %s in the last second (error lines are rate-limited to %u a second)", summary,
                   ERROR_LINES_PER_SECOND);
        fe->log_suppressed_total = 0;
}

static int on_log_flush(sd_event_source *s, uint64_t usec, void *userdata) {
        frontend_log_flush(userdata);
        return 0;
}

/* Whether one more error line may go out now; counts it by status when not. */
static bool log_admit(Frontend *fe, unsigned status) {
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (now - fe->log_window_start >= USEC_PER_SEC) {
                frontend_log_flush(fe);
                fe->log_window_start = now;
                fe->log_in_window = 0;
        }
        if (fe->log_in_window < ERROR_LINES_PER_SECOND) {
                fe->log_in_window++;
                return true;
        }
        fe->log_suppressed[status >= 400 && status <= 599 ? status - 399 : 0]++;
        /* the first line left out in this second: report the count when the second ends, whether or not
         * another line comes to roll the window over */
        if (fe->log_suppressed_total++ == 0 && fe->log_flush_timer) {
                usec_t end = fe->log_window_start + USEC_PER_SEC;

                if (sd_event_source_set_time_relative(fe->log_flush_timer, end > now ? end - now : 0) < 0 ||
                    sd_event_source_set_enabled(fe->log_flush_timer, SD_EVENT_ONESHOT) < 0)
                        log_debug("Cannot arm the error log's flush timer; the count goes out with the "
                                  "next line");
        }
        return false;
}

void frontend_log_client_error(Frontend *fe, const char *format, ...) {
        char buf[1024];
        va_list ap;

        if (!log_admit(fe, 0))
                return;
        va_start(ap, format);
        vsnprintf(buf, sizeof buf, format, ap);
        va_end(ap);
        log_notice("%s", buf);
}

const char *request_log_fields(char *buf, size_t size, const Exchange *x, unsigned status) {
        if (status > 0)
                snprintf(buf, size, "EP_REQUEST_ID=%s\nEP_STATUS=%u", x->id, status);
        else
                snprintf(buf, size, "EP_REQUEST_ID=%s", x->id);
        return buf;
}

void frontend_log_request(Frontend *fe, const Exchange *x, unsigned status, const char *format, ...) {
        char buf[1024], extra[REQUEST_LOG_FIELDS_MAX];
        va_list ap;

        if (!log_admit(fe, status))
                return;
        va_start(ap, format);
        vsnprintf(buf, sizeof buf, format, ap);
        va_end(ap);
        log_struct(status >= 500 ? LOG_WARNING : LOG_NOTICE,
                   LOG_FIELDS(.event = status > 0 ? "request-error" : "client-error",
                              .worker = (int) x->worker, .user = x->user,
                              .extra = request_log_fields(extra, sizeof extra, x, status)),
                   "%s", buf);
}

int error_log_init(Frontend *fe) {
        int r;

        r = sd_event_add_time_relative(fe->event, &fe->log_flush_timer, CLOCK_MONOTONIC, USEC_PER_SEC,
                                       100 * USEC_PER_MSEC, on_log_flush, fe);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(fe->log_flush_timer, SD_EVENT_OFF);
}

void error_log_done(Frontend *fe) {
        /* what the rate limit left out is reported, not lost with us */
        frontend_log_flush(fe);
        fe->log_flush_timer = sd_event_source_disable_unref(fe->log_flush_timer);
}
