/* SPDX-License-Identifier: MIT */
#pragma once

/* What elastic-poolctl shows of a group, for humans and as JSON: a model filled from the commander's
 * properties (ctl-bus.c) and its pure formatting (tested in tests/unit/test-ctl.c). Strings point into
 * whatever the model was filled from (the bus reply); the model owns only its arrays. */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bus-api.h"

typedef struct CtlWorker {
        unsigned id, pid;
        const char *place, *state, *freshness, *bottleneck, *held;
        const char *unhealthy; /* why it takes no new work; "" or NULL: it does */
        bool reception, evacuating;
        double occupancy;
        unsigned has; /* BUS_API_HAS_*: which of the values below are present */
        double memory, cpu, executor, rps, cpu_cores;
        uint64_t memory_bytes;
        unsigned users, inflight;
} CtlWorker;

typedef struct CtlUser {
        const char *name;
        unsigned worker;
        uint64_t requests;
        double busy_seconds;
        unsigned open;
        bool moving;
} CtlUser;

typedef struct CtlHold {
        const char *decision, *kind, *reason;
        int worker; /* -1: none */
        uint64_t for_usec;
} CtlHold;

typedef struct CtlDrain {
        unsigned worker; /* 0: none */
        bool asked;
        uint64_t for_usec;
        unsigned users_at_start, moved, repointed, deferred, users_left;
        const char *why, *last;
        uint64_t done, stopped;
} CtlDrain;

typedef struct CtlStatus {
        const char *group, *bus_name, *bus_kind, *backend;
        CtlWorker *workers;
        size_t n_workers;
        CtlUser *users;
        size_t n_users;
        CtlHold *holds;
        size_t n_holds;
        CtlDrain drain;
        uint64_t reports, spawns, deaths, moves;
        unsigned scale_target;
} CtlStatus;

void ctl_status_done(CtlStatus *s);

/* An occupancy bar of width cells ('#' filled, '.' empty) into buf (>= width + 1 bytes); a value
 * outside [0, 1] is clamped. */
char *ctl_occupancy_bar(double occupancy, unsigned width, char *buf);

/* For humans. */
void ctl_print_status(FILE *f, const CtlStatus *s);
void ctl_print_workers(FILE *f, const CtlStatus *s);
void ctl_print_users(FILE *f, const CtlStatus *s);

/* As one JSON document each (an absent value is null, never 0). */
void ctl_json_status(FILE *f, const CtlStatus *s);
void ctl_json_workers(FILE *f, const CtlStatus *s);
void ctl_json_users(FILE *f, const CtlStatus *s);
