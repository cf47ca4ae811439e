/* SPDX-License-Identifier: MIT */
#pragma once

/* Health: a worker that stops answering is taken out of new work while the rest of the pool serves, and
 * stopped and replaced if it stays so for hung_timeout. Two signs, looked at once a second:
 *   - its reports stopped (stale): hung, stopped, swapping to death. Missing is never zero for the
 *     policies (they hold); for routing, silence is reason enough not to send new work. It takes work
 *     again when it reports.
 *   - it reports, but left unanswered_limit requests in a row unanswered (no response head within
 *     response_timeout, or no connection) with no answer between them: its HTTP side hangs while its
 *     sensor lives. A worker merely slow under load answers some in between and is never taken out. It
 *     takes work again when it answers: one of its own users' requests, or the probe health sends it
 *     (health-probe.h) while it is out.
 * Out of new work: no new users, no guests (the reception passes to a healthy worker); its own users still
 * go to it, their state is there. Stopped, its users are placed again on their next request (the
 * manager's worker_gone journals that their state there is lost). */

#include <systemd/sd-event.h>

#include "capacity.h"
#include "health-probe.h"
#include "pool.h"

typedef struct Health {
        Pool *pool;
        Capacity *capacity; /* its sources: the front end's counters of a worker */
        sd_event *event;
        HealthProbe **probes; /* one per worker out for unanswered requests, while it is */
        size_t n_probes;
} Health;

void health_init(Health *h, Pool *p, Capacity *c, sd_event *event);
void health_done(Health *h);

/* One look at every routable worker (the manager's status timer, once a second). */
void health_check(Health *h, usec_t now);
