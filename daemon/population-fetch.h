/* SPDX-License-Identifier: MIT */
#pragma once

/* One GET of a worker's monitor document over a Unix socket connection of its own: never the forward
 * pool, whose connections carry users' requests and whose queue a stopped worker would block. Everything
 * is non-blocking on the loop (connect, write, read); the fetch itself has no clock: whoever started it
 * gives up on it with population_fetch_abort() (the population's one deadline). The answer is read with
 * http-parser, up to POPULATION_FETCH_BODY_MAX bytes of body.
 *
 * done is called exactly once, from the loop (never from population_fetch_start()), as the last thing
 * the fetch does: the callee may free it. */

#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-event.h>

#include "time-util.h"

/* A demo worker lists 10 000 users in about 1 MiB. */
#define POPULATION_FETCH_BODY_MAX (16U << 20)

typedef struct PopulationFetch PopulationFetch;
typedef void (*PopulationFetchDone)(PopulationFetch *f, void *userdata);

typedef struct PopulationFetchResult {
        int error;          /* 0: a complete answer came (any status); -errno otherwise */
        char reason[200];   /* with an error: what went wrong, for a person ("cannot connect: ...") */
        unsigned status;    /* the answer's HTTP status */
        const char *body;   /* the answer's body, NUL-terminated (valid while the fetch lives) */
        size_t body_len;
        usec_t elapsed;     /* from the start to the end (answer, failure or abort) */
} PopulationFetchResult;

/* Starts GET target on the Unix socket at socket_path. 0 or -ENOMEM (or another -errno of the loop);
 * a refused or failed connection is not an error here: it ends the fetch with a result. */
int population_fetch_start(sd_event *event, const char *socket_path, const char *target, PopulationFetchDone done,
                           void *userdata, PopulationFetch **ret);
/* Ends a fetch that is still running with -ETIMEDOUT (or error) and reason; done is called as usual. A
 * fetch that already ended is left alone. */
void population_fetch_abort(PopulationFetch *f, int error, const char *reason);
bool population_fetch_done(const PopulationFetch *f);
const PopulationFetchResult *population_fetch_result(const PopulationFetch *f);
PopulationFetch *population_fetch_free(PopulationFetch *f);
