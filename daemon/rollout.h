/* SPDX-License-Identifier: MIT */
#pragma once

/* The rolling reload: a reload that changed the worker definition (a [worker] setting: config_worker_digest) replaces
 * the running workers one at a time, without losing a user:
 *
 *   a worker of the new definition is spawned and becomes routable -> from then on new logins and guests
 *   go only to the new generation (the reception passes to it) -> the old reception first, then each
 *   other old worker, is drained by live moves to new workers (compaction's drain: one at a time) and
 *   retired -> the next new worker is spawned before the next old one is drained, so capacity never
 *   drops by more than the one worker being replaced
 *
 * Users whose new worker names another package format are re-pointed (reload_state=repoint), or kept on
 * their old worker until they leave (require-compatible); reload_timeout retires what is left. A new
 * generation that cannot start stops the rollout: the old generation takes users again, and the status
 * says why. A reload during a rollout supersedes it: what is not of the newest definition is old. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "compaction.h"
#include "pool.h"
#include "surface.h"

typedef struct Rollout {
        Pool *pool;
        Compaction *compaction;
        Surface *surface;

        bool active;
        unsigned generation;      /* the pool's exec_generation it rolls to */
        usec_t started;
        unsigned total;           /* old workers when it began (or was superseded) */
        unsigned draining;        /* the old worker it drains now; 0: none */
        uint64_t failures_at_start; /* the pool's spawn failures then: one more stops the rollout */
        sd_event_source *timeout; /* reload_timeout */
        char progress[256];       /* "2/4: moving 17 users off w3" */
        unsigned logged_key;      /* the step the journal last heard of */
        char last[256];           /* how the last rollout ended */
        uint64_t done, stopped;
} Rollout;

void rollout_init(Rollout *r, Pool *pool, Compaction *compaction, Surface *surface);
void rollout_done(Rollout *r);

/* The worker definition changed (the pool's exec_generation was bumped): replace the workers that run an
 * older one. Supersedes a rollout under way. */
void rollout_start(Rollout *r, usec_t now);
/* Takes the rollout one step further; cheap when none runs. Called when a worker became routable or
 * left, when a move ended, on reports. */
void rollout_step(Rollout *r, usec_t now);

/* Old workers still alive (for the status surfaces). */
unsigned rollout_old_workers(const Rollout *r);
