/* SPDX-License-Identifier: MIT */
#pragma once

/* The admin listener ([frontend] admin_listen: loopback or a Unix socket; a public address only with
 * admin_allow_public; never the public listener). What it serves, for operators and scrapers:
 *
 *   GET /_commander/monitor        the monitor, an HTML page (monitor-page.c)
 *   GET /_commander/monitor.json   what the monitor draws (monitor.c)
 *   GET /_commander/population     every worker's users, fused with the commander's (population.c)
 *   GET /_commander/status         the status document (status.c, as in <runtime dir>/status.json)
 *   GET /metrics                   Prometheus text (metrics.c)
 *
 * One request per connection, answered with Connection: close; answers are written without blocking the
 * loop, and a population fan-out under way is shared by every request that arrives meanwhile. */

#include <systemd/sd-event.h>

#include "status.h"

typedef struct Admin Admin;

/* Listens on address ("127.0.0.1:9090", "[::1]:9090" or an absolute Unix path) and answers from view,
 * which must outlive it; its settings are read from view->pool->config (admin_allow_public here,
 * admin_population_timeout at each fan-out, so a reload applies it). An address that is not loopback
 * or a Unix path is refused (-EPERM) unless admin_allow_public. 0 or -errno (logged). */
int admin_new(sd_event *event, const char *address, const StatusView *view, Admin **ret);
Admin *admin_free(Admin *a);
