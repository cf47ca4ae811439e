/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef uint64_t usec_t;

#define USEC_INFINITY ((usec_t) UINT64_MAX)
#define USEC_PER_MSEC ((usec_t) 1000ULL)
#define USEC_PER_SEC ((usec_t) 1000000ULL)
#define NSEC_PER_USEC ((uint64_t) 1000ULL)

usec_t now_usec(clockid_t clock);
usec_t timespec_to_usec(const struct timespec *ts);

/* Formats a span as "17s", "250ms", "1min 5s" into buf (at least 32 bytes); returns buf. */
char *format_timespan(char *buf, size_t size, usec_t span);
