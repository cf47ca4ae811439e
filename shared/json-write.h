/* SPDX-License-Identifier: MIT */
#pragma once

/* Writing JSON by hand, the two pieces that need care: strings (quotes, backslashes and control
 * characters escaped; the rest is passed as it is, UTF-8 included) and numbers that may be absent
 * (null, never a made-up 0 or a NaN JSON cannot carry). For status.json and elastic-poolctl --json. */

#include <stdbool.h>
#include <stdio.h>

/* s as a JSON string; NULL as "". */
void json_write_string(FILE *f, const char *s);
/* v with 4 decimals, or null when !has or v is not finite. */
void json_write_number_or_null(FILE *f, bool has, double v);
