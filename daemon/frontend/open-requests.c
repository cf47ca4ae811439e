/* SPDX-License-Identifier: MIT */
#include "open-requests.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

void open_requests_init(OpenRequests *o) {
        *o = (OpenRequests) {};
        strmap_init(&o->dict);
}

void open_requests_done(OpenRequests *o) {
        strmap_done(&o->dict);
        free(o->worker_open);
        *o = (OpenRequests) {};
}

static int ensure_worker_slot(OpenRequests *o, unsigned worker) {
        uint32_t *a;
        unsigned n;

        if (worker < o->worker_slots)
                return 0;
        n = MAX(worker + 1, o->worker_slots * 2);
        n = MAX(n, 16U);
        a = reallocarray(o->worker_open, n, sizeof *a);
        if (!a)
                return -ENOMEM;
        memset(a + o->worker_slots, 0, (n - o->worker_slots) * sizeof *a);
        o->worker_open = a;
        o->worker_slots = n;
        return 0;
}

int open_requests_add(OpenRequests *o, Exchange *x) {
        int r;

        r = ensure_worker_slot(o, x->worker);
        if (r < 0)
                return r;
        snprintf(x->key, sizeof x->key, "%llx", (unsigned long long) ++o->next_key);
        r = strmap_put(&o->dict, x->key, x, NULL);
        if (r < 0) {
                x->key[0] = 0;
                return r;
        }
        o->worker_open[x->worker]++;
        return 0;
}

static void entry_gone(OpenRequests *o, Exchange *x) {
        if (x->worker < o->worker_slots && o->worker_open[x->worker] > 0)
                o->worker_open[x->worker]--;
        x->key[0] = 0;
}

bool open_requests_remove(OpenRequests *o, Exchange *x) {
        if (!x->key[0] || strmap_get(&o->dict, x->key) != x)
                return false;
        (void) strmap_remove(&o->dict, x->key);
        entry_gone(o, x);
        return true;
}

unsigned open_requests_worker(const OpenRequests *o, unsigned worker) {
        return worker < o->worker_slots ? o->worker_open[worker] : 0;
}

bool open_requests_sweep(OpenRequests *o, size_t *cursor, usec_t now, usec_t max_age, Exchange **ret) {
        const char *k;
        void *v;

        while (strmap_next(&o->dict, cursor, &k, &v)) {
                Exchange *x = v;

                /* started after now (a caller's stale clock) is young, not 2^64 us old */
                if (x->started >= now || now - x->started < max_age)
                        continue;
                (void) strmap_remove(&o->dict, k);
                entry_gone(o, x);
                *ret = x;
                return true;
        }
        return false;
}
