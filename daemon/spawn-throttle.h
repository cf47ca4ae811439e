/* SPDX-License-Identifier: MIT */
#pragma once

/* The spawn throttle: consecutive failed spawns back off (250 ms, doubling) and the fifth stops spawning
 * with a critical message naming the last failure. What counts as a failure is the pool's to say (see
 * docs/architecture.md, "Spawn throttle"); the count starts over once a worker stayed up for the stable
 * period. */

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "time-util.h"

/* Consecutive failed spawns before the throttle stops trying. */
#define SPAWN_FAILURES_MAX 5U

typedef struct SpawnThrottle {
        sd_event *event;
        unsigned failures;     /* consecutive */
        usec_t not_before;
        bool given_up;
        char *last_error;
        sd_event_source *retry;
        /* called when a back-off that deferred a spawn ends */
        void (*on_retry)(void *userdata);
        void *userdata;
} SpawnThrottle;

void spawn_throttle_init(SpawnThrottle *t, sd_event *event, void (*on_retry)(void *userdata), void *userdata);
void spawn_throttle_done(SpawnThrottle *t);

/* Whether a spawn may happen at now: 0; -EAGAIN when it is deferred (on_retry follows when the back-off
 * ends; without an event loop, nothing follows); -ECANCELED once the throttle gave up; -errno when the
 * retry cannot be scheduled. */
int spawn_throttle_check(SpawnThrottle *t, usec_t now);

/* The spawn of worker wN failed at now for `what`: journaled, counted, backed off. config_path names the
 * file to fix in the message that gives up (NULL: the built-in defaults). */
void spawn_throttle_failed(SpawnThrottle *t, unsigned worker, const char *what, const char *config_path,
                           usec_t now);

/* A spawn that failed before any child ran: no death will ask for the next attempt, so the retry is
 * scheduled here, through the same back-off. */
void spawn_throttle_failed_early(SpawnThrottle *t, unsigned worker, const char *what, const char *config_path,
                                 usec_t now);

/* wN stayed up for the stable period: the count of failures starts over. */
void spawn_throttle_stable(SpawnThrottle *t, unsigned worker, usec_t period);

/* How long a worker must stay up after it became routable to count as started: max(spawn_timeout, 10 s).
 * One that dies sooner is a failed spawn like one that never got there, or a crash loop just past its
 * Hello would respawn at full speed forever. spawn_timeout is what the operator gave a start; 10 s keeps
 * the period meaningful under a short one. */
usec_t spawn_throttle_stable_period(usec_t spawn_timeout);
