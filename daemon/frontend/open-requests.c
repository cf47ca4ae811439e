/* SPDX-License-Identifier: MIT */
#include "open-requests.h"

#include <errno.h>
#include <stdlib.h>

#include "id-array.h"
#include "list.h"
#include "macro.h"

void open_requests_init(OpenRequests *o) {
        *o = (OpenRequests) {};
}

/* The exchanges still listed are not touched: they may be gone already. */
void open_requests_done(OpenRequests *o) {
        free(o->worker_open);
        *o = (OpenRequests) {};
}

static void unlink_entry(OpenRequests *o, Exchange *x) {
        if (o->sweep_next == x)
                o->sweep_next = x->open_next;
        QUEUE_REMOVE(o->head, o->tail, x, open_prev, open_next);
        x->open = false;
        if (x->open_worker < o->worker_slots && o->worker_open[x->open_worker] > 0)
                o->worker_open[x->open_worker]--;
}

int open_requests_add(OpenRequests *o, Exchange *x) {
        int r;

        r = ID_ARRAY_ENSURE(o->worker_open, o->worker_slots, x->worker);
        if (r < 0)
                return r;
        if (x->open) /* opened again, on x->worker now: once in the list, counted for that worker */
                unlink_entry(o, x);
        QUEUE_APPEND(o->head, o->tail, x, open_prev, open_next);
        x->open = true;
        x->open_worker = x->worker;
        o->worker_open[x->worker]++;
        return 0;
}

bool open_requests_remove(OpenRequests *o, Exchange *x) {
        if (!x->open)
                return false;
        unlink_entry(o, x);
        return true;
}

size_t open_requests_count(const OpenRequests *o) {
        size_t n = 0;

        for (const Exchange *x = o->head; x; x = x->open_next)
                n++;
        return n;
}

unsigned open_requests_worker(const OpenRequests *o, unsigned worker) {
        return worker < o->worker_slots ? o->worker_open[worker] : 0;
}

void open_requests_sweep_begin(OpenRequests *o) {
        o->sweep_next = o->head;
}

bool open_requests_sweep_next(OpenRequests *o, usec_t now, usec_t max_age, Exchange **ret) {
        while (o->sweep_next) {
                Exchange *x = o->sweep_next;

                o->sweep_next = x->open_next;
                /* started after now (a caller's stale clock) is young, not 2^64 us old */
                if (x->started >= now || now - x->started < max_age)
                        continue;
                unlink_entry(o, x);
                *ret = x;
                return true;
        }
        return false;
}
