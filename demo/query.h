/* SPDX-License-Identifier: MIT */
#pragma once

/* Request-target handling for the demo worker: splitting "/path?query", looking up and
 * percent-decoding query parameters, and the bounded numeric parameters of /work. Pure functions on
 * caller-owned memory, no allocation: they run on every request. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Target {
        const char *path; /* not NUL-terminated */
        size_t path_len;
        const char *query; /* after '?', without a '#fragment'; NULL when there is none */
        size_t query_len;
} Target;

/* Splits an origin-form target ("/a/b?x=1"). Returns 0, or -EINVAL when it does not start with '/'
 * (absolute-form "http://host/..." is accepted and reduced to its path). */
int target_split(const char *url, size_t len, Target *ret);

/* True when the path equals s exactly. */
bool target_path_is(const Target *t, const char *s);

/* Finds parameter `name` in the query and percent-decodes its value ('+' is a space) into buf,
 * NUL-terminated. Returns the decoded length, -ENOENT when absent, -EINVAL for a bad %-escape or an
 * embedded NUL, -ENOBUFS when it does not fit in size-1 bytes. The first occurrence wins. */
int query_get(const char *query, size_t query_len, const char *name, char *buf, size_t size);

/* Reads unsigned decimal parameter `name` bounded by max: 0 with *ret set, 0 with *ret = def when
 * absent, -EINVAL when not a plain decimal number, -ERANGE when above max. */
int query_get_uint64(const char *query, size_t query_len, const char *name, uint64_t max, uint64_t def,
                     uint64_t *ret);
