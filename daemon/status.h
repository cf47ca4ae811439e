/* SPDX-License-Identifier: MIT */
#pragma once

/* The pool's state as one JSON document: workers with occupancy and components, freshness, holds with
 * their reasons, the ledger. Written to <runtime dir>/status.json every second (for the demo and for
 * operators with nothing but a shell) and served by the admin listener. */

#include <stdbool.h>
#include <stdio.h>

#include "capacity.h"
#include "compaction.h"
#include "frontend-port.h"
#include "move.h"
#include "pool.h"
#include "relief.h"
#include "rollout.h"
#include "surface.h"

/* What the status surfaces read: the manager's parts, and the front end through its hooks. */
typedef struct StatusView {
        const char *group;
        Pool *pool;
        Capacity *capacity;
        const Compaction *compaction;  /* NULL: no drains to show */
        const Relief *relief;          /* NULL: no relief rounds to show */
        const Rollout *rollout;        /* NULL: no rolling reloads to show */
        const Surface *surface;        /* who lives where, with each user's consumption; NULL: unknown */
        const Moves *moves;            /* moves under way and recent ones; NULL: none to show */
        char *const *reload_error;     /* where the last reload's failure is kept (NULL: nowhere) */
        const FrontendHooks *frontend; /* NULL without a front end */
        void *frontend_data;
} StatusView;

/* What the front end measured of wN; false (and zeros) without a front end. */
bool status_worker_traffic(const StatusView *v, unsigned worker, WorkerTraffic *ret);

/* The pool in one line for systemd's STATUS=: "3 workers, 120 users, occupancy 0.41/0.63/0.12, held:
 * none", then a drain under way and a failed reload (v->reload_error). Truncated to size. */
void status_line(const StatusView *v, char *buf, size_t size);

/* The pool as JSON on f. 0 or -EIO. */
int status_write(const StatusView *v, FILE *f);

/* Atomically replaces path with the current JSON (temp file + rename). 0 or -errno. */
int status_write_file(const StatusView *v, const char *path);
