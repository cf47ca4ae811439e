/* SPDX-License-Identifier: MIT */
#include "spawn-throttle.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "journal-ids.h"
#include "log.h"
#include "macro.h"

#define SPAWN_BACKOFF_FIRST (250 * USEC_PER_MSEC)
#define SPAWN_STABLE_MIN (10 * USEC_PER_SEC)

void spawn_throttle_init(SpawnThrottle *t, sd_event *event, void (*on_retry)(void *userdata), void *userdata) {
        *t = (SpawnThrottle) { .event = event, .on_retry = on_retry, .userdata = userdata };
}

void spawn_throttle_done(SpawnThrottle *t) {
        t->retry = sd_event_source_disable_unref(t->retry);
        t->last_error = mfree(t->last_error);
}

usec_t spawn_throttle_stable_period(usec_t spawn_timeout) {
        return MAX(spawn_timeout, SPAWN_STABLE_MIN);
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        SpawnThrottle *t = userdata;

        t->retry = sd_event_source_disable_unref(t->retry);
        if (t->on_retry)
                t->on_retry(t->userdata);
        return 0;
}

int spawn_throttle_check(SpawnThrottle *t, usec_t now) {
        int r;

        if (t->given_up)
                return -ECANCELED;
        if (now >= t->not_before)
                return 0;
        if (!t->retry && t->event) {
                r = sd_event_add_time(t->event, &t->retry, CLOCK_MONOTONIC, t->not_before, USEC_PER_MSEC, on_retry,
                                      t);
                if (r < 0)
                        return r;
        }
        return -EAGAIN;
}

void spawn_throttle_failed(SpawnThrottle *t, unsigned worker, const char *what, const char *config_path,
                           usec_t now) {
        t->failures++;
        free(t->last_error);
        t->last_error = strdup(what);
        log_struct(LOG_ERR,
                   LOG_FIELDS(.message_id = MESSAGE_ID_SPAWN_FAILED, .event = "spawn-failed", .worker = (int) worker),
                   "Worker w%u failed to start: %s (%u consecutive failed spawns)", worker, what, t->failures);
        if (t->failures >= SPAWN_FAILURES_MAX) {
                t->given_up = true;
                log_struct(LOG_CRIT, LOG_FIELDS(.message_id = MESSAGE_ID_SPAWN_GAVE_UP, .event = "spawn-gave-up"),
                           "Stopped spawning workers after %u consecutive failed spawns (last: %s). Fix the cause "
                           "([worker] exec in %s, or the host) and restart the commander.",
                           t->failures, what, config_path ? config_path : "the built-in defaults");
                return;
        }
        t->not_before = now + (SPAWN_BACKOFF_FIRST << (t->failures - 1));
}

void spawn_throttle_failed_early(SpawnThrottle *t, unsigned worker, const char *what, const char *config_path,
                                 usec_t now) {
        int r;

        spawn_throttle_failed(t, worker, what, config_path, now);
        r = spawn_throttle_check(t, now);
        if (r < 0 && r != -EAGAIN && r != -ECANCELED)
                log_warning_errno(r, "Failed to schedule the next spawn attempt: %m");
}

void spawn_throttle_stable(SpawnThrottle *t, unsigned worker, usec_t period) {
        char span[32];

        if (t->failures > 0)
                log_info("w%u stayed up %s after it became routable: the spawn throttle forgets %u failures",
                         worker, format_timespan(span, sizeof span, period), t->failures);
        t->failures = 0;
}
