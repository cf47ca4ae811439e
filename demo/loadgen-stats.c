/* SPDX-License-Identifier: MIT */
#include "loadgen-stats.h"

#include <math.h>
#include <string.h>

#include "macro.h"

#define SUB_BUCKETS (1u << HISTOGRAM_SUB_BITS)

void histogram_reset(Histogram *h) {
        memset(h, 0, sizeof *h);
}

/* Values below SUB_BUCKETS get one bucket each; above, the bucket is (exponent, top bits after the
 * leading one), so every bucket spans at most 1/SUB_BUCKETS of its value. */
static unsigned bucket_of(usec_t v) {
        unsigned msb, shift;

        if (v < SUB_BUCKETS)
                return (unsigned) v;
        msb = 63u - (unsigned) __builtin_clzll(v);
        shift = msb - HISTOGRAM_SUB_BITS;
        return (shift + 1) * SUB_BUCKETS + (unsigned) ((v >> shift) & (SUB_BUCKETS - 1));
}

/* The largest value that falls in bucket b. */
static usec_t bucket_top(unsigned b) {
        unsigned shift;

        if (b < SUB_BUCKETS)
                return b;
        shift = b / SUB_BUCKETS - 1;
        return ((((usec_t) SUB_BUCKETS | (b % SUB_BUCKETS)) + 1) << shift) - 1;
}

void histogram_add(Histogram *h, usec_t value) {
        unsigned b = bucket_of(value);

        if (b >= HISTOGRAM_BUCKETS)
                b = HISTOGRAM_BUCKETS - 1;
        h->buckets[b]++;
        if (h->count == 0 || value < h->min)
                h->min = value;
        if (value > h->max)
                h->max = value;
        h->count++;
}

void histogram_merge(Histogram *into, const Histogram *from) {
        if (from->count == 0)
                return;
        if (into->count == 0 || from->min < into->min)
                into->min = from->min;
        into->max = MAX(into->max, from->max);
        into->count += from->count;
        for (unsigned b = 0; b < HISTOGRAM_BUCKETS; b++)
                into->buckets[b] += from->buckets[b];
}

usec_t histogram_quantile(const Histogram *h, double q) {
        uint64_t rank, seen = 0;

        if (h->count == 0)
                return 0;
        if (q <= 0)
                return h->min;
        q = MIN(q, 1.0);
        /* nearest rank: the smallest value with at least q of the samples at or below it */
        rank = (uint64_t) ceil(q * (double) h->count);
        rank = CLAMP(rank, (uint64_t) 1, h->count);
        for (unsigned b = 0; b < HISTOGRAM_BUCKETS; b++) {
                seen += h->buckets[b];
                if (seen >= rank)
                        return CLAMP(bucket_top(b), h->min, h->max);
        }
        return h->max;
}

const char *error_kind_to_string(ErrorKind k) {
        static const char *const table[_ERROR_KIND_MAX] = {
                [ERROR_CONNECT] = "connect",   [ERROR_RESET] = "reset",        [ERROR_TIMEOUT] = "timeout",
                [ERROR_PROTOCOL] = "protocol", [ERROR_HTTP_502] = "502",       [ERROR_HTTP_503] = "503",
                [ERROR_HTTP_504] = "504",      [ERROR_HTTP_5XX] = "other-5xx", [ERROR_HTTP_4XX] = "4xx",
        };

        return k >= 0 && k < _ERROR_KIND_MAX ? table[k] : NULL;
}

ErrorKind error_kind_from_status(unsigned status) {
        switch (status) {
        case 502:
                return ERROR_HTTP_502;
        case 503:
                return ERROR_HTTP_503;
        case 504:
                return ERROR_HTTP_504;
        default:
                if (status >= 500)
                        return ERROR_HTTP_5XX;
                if (status >= 400)
                        return ERROR_HTTP_4XX;
                return _ERROR_KIND_INVALID;
        }
}

uint64_t stats_errors_total(const Stats *s) {
        uint64_t n = 0;

        for (ErrorKind k = 0; k < _ERROR_KIND_MAX; k++)
                n += s->errors[k];
        return n;
}
