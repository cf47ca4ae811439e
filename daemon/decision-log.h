/* SPDX-License-Identifier: MIT */
#pragma once

/* The decision log ([policy] decision_log = PATH): each decision of the policies, with every input it was
 * taken on, as one JSON object a line: the pool as the policies saw it (PolicyInput), the parameters, the
 * sustained request rate of the direction, and what the pure policy code decided (before the capacity
 * shell's own guards: the spawn throttle, settling, a rolling reload). elastic-pool-replay reads it back
 * and runs the same pure code on it: the same decisions, or, with other parameters, what they would have
 * been. Scale-up lines also carry the burst path's reading (burst.h): its status, culprit and reason are
 * the input policy_scale_up_burst() decides on (the samples behind it are not logged; a log written
 * before the burst path has none, and replays as with the path off). Numbers are written with 17 significant digits: a replay reads back exactly what was decided on. */

#include <stdio.h>

#include "policy.h"
#include "rate.h"

typedef enum DecisionDirection {
        DECIDE_SCALE_UP,
        DECIDE_COMPACTION,
        _DECIDE_MAX,
        _DECIDE_INVALID = -EINVAL,
} DecisionDirection;

const char *decision_direction_to_string(DecisionDirection d);

/* One line: direction, the input, the parameters, the rate (NULL: none measured), the burst reading
 * (NULL: none) and the decision. */
int decision_log_write(FILE *f, DecisionDirection direction, const PolicyInput *in, const PolicyParams *p,
                       const RateReading *rate, const BurstReading *burst, const Decision *d);

/* A line read back; its workers are its own (decision_entry_done() frees them). */
typedef struct DecisionEntry {
        DecisionDirection direction;
        PolicyInput in;
        PolicyWorker *workers;
        char **missing;   /* the workers' missing strings, owned */
        PolicyParams params;
        RateReading rate;
        BurstReading burst; /* BURST_OFF when the line has none */
        Decision decision;
} DecisionEntry;

/* 0, or -EINVAL with a message naming what is wrong in *ret_error (malloc()ed). */
int decision_log_parse(const char *line, DecisionEntry *ret, char **ret_error);
void decision_entry_done(DecisionEntry *e);

/* Runs the pure policies of e's direction on e's input with params: what the commander decides. */
void decision_replay(const DecisionEntry *e, const PolicyParams *params, Decision *ret);
