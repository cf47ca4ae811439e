/* SPDX-License-Identifier: MIT */
#pragma once

/* What the load generator reads back: the commander's status.json (the pool as the commander sees it)
 * and the demo worker's /state answer (the stickiness check). Pure functions on caller-owned bytes. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Workers shown per line; a larger pool is summarised (n_workers still counts them all). */
#define POOL_STATUS_WORKERS_MAX 64

typedef struct WorkerStatus {
        char name[16];  /* "w3" */
        char state[16]; /* starting, probing, routable, draining, stopping, dead */
        bool reception;
        double occupancy;
        unsigned users;
        bool fresh; /* freshness "fresh" or "new": a stale or silent worker holds decisions */
} WorkerStatus;

typedef struct PoolStatus {
        unsigned n_workers;  /* listed in status.json */
        unsigned n_routable; /* of those, routable */
        unsigned n_shown;    /* filled entries of workers[] */
        WorkerStatus workers[POOL_STATUS_WORKERS_MAX];
        bool stopping;
        char scale_up_hold[96]; /* the hold's reason, "" when none */
        char compaction_hold[96];
        uint64_t spawns, deaths;
} PoolStatus;

/* Parses a status.json document. 0, or -EBADMSG when it is not the shape the commander writes (a
 * missing optional field is fine; unknown fields are skipped). */
int pool_status_parse(const char *json, size_t n, PoolStatus *ret);

/* A /state answer: {"user":"U","counter":N,"worker":"W",...}. Returns 0 with the counter and the
 * worker (NUL-terminated, truncated to size-1) set, -EBADMSG when it is not one. */
int state_reply_parse(const char *body, size_t n, uint64_t *ret_counter, char *ret_worker, size_t size);
