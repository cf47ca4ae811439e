/* SPDX-License-Identifier: MIT */
#include "open-requests.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "id-array.h"
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

int open_requests_add(OpenRequests *o, Exchange *x) {
        int r;

        r = ID_ARRAY_ENSURE(o->worker_open, o->worker_slots, x->worker);
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
