/* SPDX-License-Identifier: MIT */
#pragma once

/* Drift sentinels (DESIGN.md, "the occupancy report": users, pages and connections are register counts,
 * drift sentinels only). Each report, what the worker says it holds is set against what the commander
 * itself knows of that worker:
 *
 *   users        the worker's logged-in users    vs  the users the surface places on it
 *   connections  the worker's open connections   vs  the front end's connections to it (forward pool)
 *
 * Pages have no counterpart in the commander: nothing sets them against anything. A difference that
 * lasts for `sustain` reports in a row is sustained: shown by the status surfaces, and told once (the
 * caller journals the kinds drift_observe() returns) until the two agree again. A single report that
 * differs is ordinary: a login, a move or a connection in flight lands on one side before the other.
 *
 * Pure: no I/O, no clock. Missing is never zero: a register the report lacks, or a count the commander
 * does not have (no front end), is not compared, and ends nothing either. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "time-util.h"

typedef enum DriftRegister {
        DRIFT_USERS,
        DRIFT_CONNECTIONS,
        _DRIFT_REGISTER_MAX,
        _DRIFT_REGISTER_INVALID = -EINVAL,
} DriftRegister;

const char *drift_register_to_string(DriftRegister r);

/* One report's two sides for each register; has_* false: that side is unknown. */
typedef struct DriftInput {
        bool has_reported[_DRIFT_REGISTER_MAX];
        uint32_t reported[_DRIFT_REGISTER_MAX]; /* what the worker said */
        bool has_expected[_DRIFT_REGISTER_MAX];
        uint32_t expected[_DRIFT_REGISTER_MAX]; /* what the commander knows */
} DriftInput;

typedef struct DriftState {
        unsigned streak;   /* reports in a row that differed */
        usec_t since;      /* the first of them arrived */
        uint32_t reported, expected; /* the latest differing pair */
        bool sustained;    /* streak reached sustain: shown, and told once */
} DriftState;

typedef struct DriftSentinel {
        DriftState state[_DRIFT_REGISTER_MAX];
} DriftSentinel;

/* Takes one report at now into d. Returns a bitmask (1 << DriftRegister) of the registers whose drift
 * became sustained with this report (to be told, once); *ret_ended (may be NULL) the ones that were
 * sustained and agree again. sustain 0 is taken as 1. */
unsigned drift_observe(DriftSentinel *d, const DriftInput *in, unsigned sustain, usec_t now, unsigned *ret_ended);

/* Whether any register's drift is sustained now. */
bool drift_any(const DriftSentinel *d);
