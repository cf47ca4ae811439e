/* SPDX-License-Identifier: MIT */
#pragma once

/* The front end's open requests: a dict (key → exchange), not a counter, so an exchange that leaks its
 * entry is found and swept by its age; and per worker, how many are open (what a draining worker waits
 * for, and a row's in-flight measure). Keys are unique per request (client request ids may repeat). */

#include <stdbool.h>
#include <stdint.h>

#include "exchange.h"
#include "hashmap.h"
#include "time-util.h"

typedef struct OpenRequests {
        StrMap dict;            /* Exchange.key → Exchange */
        uint32_t *worker_open;  /* index by worker id */
        unsigned worker_slots;
        uint64_t next_key;
} OpenRequests;

void open_requests_init(OpenRequests *o);
void open_requests_done(OpenRequests *o);

/* x (x->worker set) is open: x->key is assigned. 0 or -ENOMEM (x->key stays empty). */
int open_requests_add(OpenRequests *o, Exchange *x);
/* x ended: true when its entry was still there (it is gone now, and its worker counts one less). */
bool open_requests_remove(OpenRequests *o, Exchange *x);
unsigned open_requests_worker(const OpenRequests *o, unsigned worker);

/* Takes out the next entry, from *cursor on (start at 0), that started before now - max_age (a leak
 * would otherwise inflate the in-flight counts forever): true with it in *ret, false when no more are
 * that old. Nothing may be added between the calls of one sweep. */
bool open_requests_sweep(OpenRequests *o, size_t *cursor, usec_t now, usec_t max_age, Exchange **ret);
