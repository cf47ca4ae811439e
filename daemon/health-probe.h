/* SPDX-License-Identifier: MIT */
#pragma once

/* A health probe: one HTTP/1.1 request ("OPTIONS *", which asks nothing of the application and which
 * every server answers, if only with 400 or 404) on a fresh connection to a worker's socket. Any status
 * line is an answer: the worker's HTTP side works again. It is what tells a worker taken out of new work
 * for unanswered requests that it answers again when none of its own users' requests would (a worker
 * without users gets no requests at all while it takes no new work). */

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "time-util.h"

typedef struct HealthProbe HealthProbe;

/* The worker answered with this status line's code. Called from the probe's own event handler; the
 * callee may free the probe. */
typedef void (*HealthProbeAnswered)(HealthProbe *probe, unsigned worker, unsigned status, void *userdata);

/* Connects to socket_path and sends the request. 0 (the answer, if any, comes through answered), or
 * -errno: nothing listens, its accept queue is full (-EAGAIN), or no memory; no probe then. */
int health_probe_new(sd_event *event, unsigned worker, const char *socket_path, HealthProbeAnswered answered,
                     void *userdata, HealthProbe **ret);
HealthProbe *health_probe_free(HealthProbe *p);

unsigned health_probe_worker(const HealthProbe *p);
/* When it was sent. */
usec_t health_probe_started(const HealthProbe *p);
/* The worker closed the connection, or it failed, without an answer: another probe is due. */
bool health_probe_failed(const HealthProbe *p);
