/* SPDX-License-Identifier: MIT */
#pragma once

/* The door between the commander and its front end wing (daemon/frontend/): the only types both sides
 * know. The front end measures what it forwards; the commander's modules read those measures through
 * hooks, never the front end's objects. */

#include <stdbool.h>
#include <stdint.h>

#include "time-util.h"

/* What the front end measured of one worker. */
typedef struct WorkerTraffic {
        unsigned inflight;  /* requests forwarded to it and not answered yet */
        bool has_forward;   /* the counters below are known: it has a forward pool */
        uint64_t requests;  /* responses completed, cumulative */
        uint64_t errors;    /* 5xx made by the front end (502/504) and aborted responses, cumulative */
        usec_t busy_usec;   /* sum of request durations, cumulative */
} WorkerTraffic;
