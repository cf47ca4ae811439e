/* SPDX-License-Identifier: MIT */
#include "time-util.h"

#include <stdio.h>

usec_t timespec_to_usec(const struct timespec *ts) {
        return (usec_t) ts->tv_sec * USEC_PER_SEC + (usec_t) ts->tv_nsec / NSEC_PER_USEC;
}

usec_t now_usec(clockid_t clock) {
        struct timespec ts;

        (void) clock_gettime(clock, &ts);
        return timespec_to_usec(&ts);
}

char *format_timespan(char *buf, size_t size, usec_t span) {
        if (span == USEC_INFINITY)
                snprintf(buf, size, "infinity");
        else if (span < USEC_PER_MSEC)
                snprintf(buf, size, "%lluus", (unsigned long long) span);
        else if (span < USEC_PER_SEC)
                snprintf(buf, size, "%llums", (unsigned long long) (span / USEC_PER_MSEC));
        else if (span < 60 * USEC_PER_SEC && span % USEC_PER_SEC >= USEC_PER_SEC / 10)
                /* truncated like every other unit here: "%.1f" would round 59.96 s up to "60.0s" */
                snprintf(buf, size, "%llu.%llus", (unsigned long long) (span / USEC_PER_SEC),
                         (unsigned long long) (span % USEC_PER_SEC / (USEC_PER_SEC / 10)));
        else if (span < 60 * USEC_PER_SEC)
                snprintf(buf, size, "%llus", (unsigned long long) (span / USEC_PER_SEC));
        else
                snprintf(buf, size, "%llumin %llus", (unsigned long long) (span / (60 * USEC_PER_SEC)),
                         (unsigned long long) (span / USEC_PER_SEC % 60));
        return buf;
}
