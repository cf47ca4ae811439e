/* SPDX-License-Identifier: MIT */
#include "latency.h"

#include <string.h>

#include "macro.h"

/* Prometheus' default buckets widened at both ends: a demo request takes well under a millisecond,
 * a held one up to hold_timeout, a slow worker up to response_timeout (60 s). */
static const usec_t bounds[LATENCY_BUCKETS - 1] = {
        500,         1000,        2500,        5000,         10000,        25000,
        50000,       100000,      250000,      500000,       1000000,      2500000,
        5000000,     10000000,    30000000,    60000000,
};

usec_t latency_bucket_bound(unsigned i) {
        return i < ELEMENTSOF(bounds) ? bounds[i] : USEC_INFINITY;
}

void latency_histogram_add(LatencyHistogram *h, usec_t duration) {
        unsigned i = 0;

        while (i < ELEMENTSOF(bounds) && duration > bounds[i])
                i++;
        h->count[i]++;
        h->total++;
        h->sum_usec += duration;
}

bool latency_histogram_delta(const LatencyHistogram *now, const LatencyHistogram *then, LatencyHistogram *ret) {
        *ret = (LatencyHistogram) {};
        if (now->total < then->total || now->sum_usec < then->sum_usec)
                return false;
        for (unsigned i = 0; i < LATENCY_BUCKETS; i++) {
                if (now->count[i] < then->count[i]) {
                        *ret = (LatencyHistogram) {};
                        return false;
                }
                ret->count[i] = now->count[i] - then->count[i];
        }
        ret->total = now->total - then->total;
        ret->sum_usec = now->sum_usec - then->sum_usec;
        return true;
}

bool latency_histogram_quantile(const LatencyHistogram *h, double q, usec_t *ret) {
        double rank, below = 0;
        usec_t lower = 0;

        if (h->total == 0 || !(q > 0 && q <= 1))
                return false;
        rank = q * (double) h->total;
        for (unsigned i = 0; i < LATENCY_BUCKETS; i++) {
                usec_t upper = latency_bucket_bound(i);

                if (h->count[i] > 0 && below + (double) h->count[i] >= rank) {
                        if (upper == USEC_INFINITY) {
                                *ret = lower;
                                return true;
                        }
                        *ret = lower + (usec_t) ((double) (upper - lower) * (rank - below) / (double) h->count[i]);
                        return true;
                }
                below += (double) h->count[i];
                lower = upper;
        }
        *ret = lower; /* rounding left rank past the last count: the top of what was seen */
        return true;
}

static unsigned newest(const LatencyRing *r) {
        return (r->head + LATENCY_RING_SIZE - 1) % LATENCY_RING_SIZE;
}

static unsigned oldest(const LatencyRing *r) {
        return (r->head + LATENCY_RING_SIZE - r->count) % LATENCY_RING_SIZE;
}

void latency_ring_push(LatencyRing *r, const LatencyHistogram *current, usec_t now) {
        if (r->count > 0) {
                const LatencyHistogram *last = &r->snapshot[newest(r)];

                if (current->total < last->total)
                        *r = (LatencyRing) {};
                else if (now - r->at[newest(r)] < LATENCY_RING_STEP)
                        return;
        }
        r->snapshot[r->head] = *current;
        r->at[r->head] = now;
        r->head = (r->head + 1) % LATENCY_RING_SIZE;
        if (r->count < LATENCY_RING_SIZE)
                r->count++;
}

bool latency_ring_recent(const LatencyRing *r, const LatencyHistogram *current, usec_t now,
                         LatencyHistogram *ret, usec_t *ret_span) {
        unsigned o;

        *ret = (LatencyHistogram) {};
        *ret_span = 0;
        if (r->count == 0)
                return false;
        o = oldest(r);
        if (!latency_histogram_delta(current, &r->snapshot[o], ret))
                return false;
        if (r->count < LATENCY_RING_SIZE)
                *ret = *current;
        *ret_span = now > r->at[o] ? now - r->at[o] : 0;
        return true;
}
