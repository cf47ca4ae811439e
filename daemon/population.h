/* SPDX-License-Identifier: MIT */
#pragma once

/* /_commander/population: who is on the pool, as the workers themselves tell it, fused with what the
 * commander measured of each user.
 *
 * A fan-out: every routable (or draining) worker is asked for its /_monitor/state at once, each over a
 * connection of its own (population-fetch.c), under one deadline. The document is written once every
 * worker answered or the deadline passed: a worker that did not answer in time, refused the connection
 * or answered something that is not its monitor document is an "error" row with the reason, and the
 * users the commander places on it are still listed (from the surface); the page itself never fails or
 * hangs on a worker. Nothing blocks the loop.
 *
 * The worker's document is the demo worker's shape ({"users": [{"user": NAME, ...}, ...], ...}; any
 * other top-level field is passed on as the worker said it, and so is every field of a user but its
 * name). Each user row gets the commander's side: whether the surface places it on that worker, and its
 * consumption there (requests, seconds, last seen). */

#include <stdio.h>
#include <systemd/sd-event.h>

#include "status.h"

/* The target asked of every worker. */
#define POPULATION_TARGET "/_monitor/state"

typedef struct Population Population;
typedef void (*PopulationDone)(Population *p, void *userdata);

/* Asks the workers of v->pool; done(p) follows from the loop once all answered or timeout passed (also
 * when there is no worker to ask). 0 or -errno (-ENOMEM). */
int population_start(sd_event *event, const StatusView *v, usec_t timeout, PopulationDone done, void *userdata,
                     Population **ret);

/* The document, once done: the answers fused with v's surface as it is now. 0 or -EIO. */
int population_write(const Population *p, const StatusView *v, FILE *f);

Population *population_free(Population *p);
