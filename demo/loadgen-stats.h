/* SPDX-License-Identifier: MIT */
#pragma once

/* The load generator's counters: a latency histogram that records without allocating (fixed
 * log-linear buckets, about 3 % wide, from 1 us to hours) and the error kinds it tells apart. */

#include <errno.h>
#include <stdint.h>

#include "time-util.h"

/* 2^HISTOGRAM_SUB_BITS buckets per power of two: a recorded value is off by at most 1/32. */
#define HISTOGRAM_SUB_BITS 5
#define HISTOGRAM_BUCKETS  (64 << HISTOGRAM_SUB_BITS)

typedef struct Histogram {
        uint64_t count;
        usec_t min, max;
        uint64_t buckets[HISTOGRAM_BUCKETS];
} Histogram;

void histogram_reset(Histogram *h);
void histogram_add(Histogram *h, usec_t value);
void histogram_merge(Histogram *into, const Histogram *from);
/* The value at quantile q in [0, 1] (the upper end of its bucket, clamped to the largest recorded);
 * 0 when empty. */
usec_t histogram_quantile(const Histogram *h, double q);

typedef enum ErrorKind {
        ERROR_CONNECT,  /* connect() refused or failed */
        ERROR_RESET,    /* connection reset or closed before the response was complete */
        ERROR_TIMEOUT,  /* no complete response within --timeout */
        ERROR_PROTOCOL, /* the response did not parse, or lacked what the request promises */
        ERROR_HTTP_502,
        ERROR_HTTP_503,
        ERROR_HTTP_504,
        ERROR_HTTP_5XX, /* any other 5xx */
        ERROR_HTTP_4XX, /* a 4xx the load generator did not provoke */
        _ERROR_KIND_MAX,
        _ERROR_KIND_INVALID = -EINVAL,
} ErrorKind;

const char *error_kind_to_string(ErrorKind k);
/* The error kind of an HTTP status, or _ERROR_KIND_INVALID for one that is no error (< 400). */
ErrorKind error_kind_from_status(unsigned status);

typedef struct Stats {
        uint64_t requests; /* requests that ended: answers (of any status) and failures */
        uint64_t errors[_ERROR_KIND_MAX];
        uint64_t sticky_errors; /* a /state counter that did not go up by exactly one */
        uint64_t lost;          /* "unknown user" on the worker the user was routed to: state gone */
        uint64_t moves;         /* a user's /state answered by another worker, counter intact */
        uint64_t logins, logouts;
        uint64_t abandoned; /* users dropped still logged in: a second Ctrl-C, the drain deadline */
        /* --keep-sessions: users that left the load and were still logged in when the run closed,
         * and the /state checks of the users that left */
        uint64_t kept;
        uint64_t idle_checks;        /* answered /state of an idle session, the last check included */
        uint64_t idle_checks_ok;     /* of those, the counter rose by exactly one */
        uint64_t idle_checks_shrunk; /* of the passed ones, while the pool was smaller than at its peak */
        uint64_t idle_moves;         /* of the passed ones, answered by another worker than the last */
        uint64_t idle_lost;          /* of those, "unknown user": the session's state was gone */
        Histogram latency;
} Stats;

uint64_t stats_errors_total(const Stats *s);
