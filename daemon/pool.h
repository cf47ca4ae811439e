/* SPDX-License-Identifier: MIT */
#pragma once

/* The worker lifecycle of the group: spawn (socket, channel, placement, clone3), Hello and the accept
 * probe that make a worker routable, reports into its window, retirement, stop and death. */

#include "manager.h"

/* Whether the spawn throttle lets a spawn happen now: 0, -EAGAIN when it defers (a retry is scheduled
 * for when the back-off ends), -ECANCELED once it gave up. */
int pool_spawn_throttle(Manager *m);

/* Starts one worker. 0, -EAGAIN when the spawn throttle defers it (a retry is scheduled),
 * -ECANCELED once the throttle gave up, -errno on failure (logged). */
int pool_spawn(Manager *m, const char *reason);

/* The backend placed the worker (error 0) or could not; releases the parked child or kills it. */
void pool_attach_done(Worker *w, int error);

/* SIGTERM through the pidfd now, SIGKILL after stop_timeout. */
void pool_stop_worker(Manager *m, Worker *w, const char *why);

/* One decoded frame from w's channel: the dispatch of the commander-bound messages (Hello, reports,
 * move answers, Goodbye). Exposed for the report-cost benchmark. */
void pool_handle_frame(Worker *w, const Frame *f);

/* Freshness of w's readings at now (and since when it is not fresh). */
Freshness pool_worker_freshness(const Manager *m, const Worker *w, usec_t now, usec_t *ret_since);

/* Staleness horizon: stale_after intervals of the slower of the configured and the sensor's interval. */
usec_t pool_stale_horizon(const Manager *m, const Worker *w);
