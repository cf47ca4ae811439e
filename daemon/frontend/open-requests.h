/* SPDX-License-Identifier: MIT */
#pragma once

/* The front end's open requests: a list (in the order they opened), not a counter, so an exchange that
 * leaks its entry is found and swept by its age; and per worker, how many are open (what a draining
 * worker waits for, and a row's in-flight measure). The links live in the exchange: opening and ending a
 * request allocates, formats and hashes nothing. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exchange.h"
#include "time-util.h"

typedef struct OpenRequests {
        Exchange *head, *tail;  /* through Exchange.open_prev/open_next, oldest first */
        Exchange *sweep_next;   /* where a sweep goes on; an ending request moves it past itself */
        uint32_t *worker_open;  /* index by worker id */
        unsigned worker_slots;
} OpenRequests;

void open_requests_init(OpenRequests *o);
void open_requests_done(OpenRequests *o);

/* x (x->worker set) is open; one already open moves to the end, counted for x->worker now. 0 or -ENOMEM
 * (x stays as it was). */
int open_requests_add(OpenRequests *o, Exchange *x);
/* x ended: true when its entry was still there (it is gone now, and its worker counts one less). */
bool open_requests_remove(OpenRequests *o, Exchange *x);
unsigned open_requests_worker(const OpenRequests *o, unsigned worker);
/* A walk: for tests and reports, never the request path. */
size_t open_requests_count(const OpenRequests *o);

/* A sweep: open_requests_sweep_begin(), then open_requests_sweep_next() until it says false. Each call
 * takes out the next entry that started before now - max_age (a leak would otherwise inflate the
 * in-flight counts forever): true with it in *ret. Requests may end between the calls; none may open. */
void open_requests_sweep_begin(OpenRequests *o);
bool open_requests_sweep_next(OpenRequests *o, usec_t now, usec_t max_age, Exchange **ret);
