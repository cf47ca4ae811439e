/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "time-util.h"

/* All parsers take the whole string (surrounding blanks allowed, nothing else trailing) and return 0,
 * -EINVAL for a malformed value or -ERANGE for one that does not fit. */

int parse_uint64(const char *s, uint64_t *ret);
int parse_uint32(const char *s, uint32_t *ret);
int parse_double(const char *s, double *ret);
int parse_boolean(const char *s, bool *ret);

/* "512", "64K", "1.5G" (binary multiples, K = 1024); bytes. */
int parse_size(const char *s, uint64_t *ret);

/* "500ms", "5s", "2min", "1h", "250us"; a bare number is seconds. Returns microseconds. */
int parse_duration(const char *s, usec_t *ret);
