/* SPDX-License-Identifier: MIT */
#include "health.h"

#include <stdio.h>

#include "log.h"
#include "macro.h"

static void check_worker(Pool *p, Capacity *c, Worker *w, usec_t now) {
        usec_t since = 0, silent;
        char why[128], span[32];
        Freshness f;

        f = capacity_freshness(c, w, now, &since);
        if (f != FRESHNESS_STALE) {
                /* a reading again (or none expected yet): it answers */
                if (w->unhealthy && (f == FRESHNESS_FRESH || f == FRESHNESS_MISSING))
                        pool_set_unhealthy(p, w, NULL);
                return;
        }
        silent = since > 0 && now > since ? now - since : 0;
        if (!w->unhealthy) {
                snprintf(why, sizeof why, "no report for %s", format_timespan(span, sizeof span, silent));
                pool_set_unhealthy(p, w, why);
        }
        if (p->config->hung_timeout == 0 || silent < p->config->hung_timeout)
                return;
        log_struct(LOG_WARNING, LOG_FIELDS(.event = "hung", .worker = (int) w->id),
                   "%s sent no report for %s (hung_timeout=%s): stopping it; it is replaced as capacity needs",
                   WORKER_NAME(w), format_timespan(span, sizeof span, silent),
                   format_timespan((char[32]) {}, 32, p->config->hung_timeout));
        pool_stop_worker(p, w, "hung: no report for hung_timeout");
}

void health_check(Pool *p, Capacity *c, usec_t now) {
        if (p->stopping || p->adopting > 0)
                return;
        for (size_t i = 0; i < p->n_workers; i++) {
                Worker *w = p->workers[i];

                if (w->state == WORKER_ROUTABLE && !w->awaiting_sensor)
                        check_worker(p, c, w, now);
        }
}
