/* SPDX-License-Identifier: MIT */
#pragma once

/* A small pull reader for the JSON the load generator reads: the commander's status.json (once a
 * second) and the demo worker's /state answers (on the request path). It walks caller-owned bytes with
 * a cursor and never allocates, so the request path stays allocation-free; values that are not
 * wanted are skipped with their nesting checked. Not a validator of everything RFC 8259 allows to be
 * refused (it accepts any number strtod() takes), but it never reads past `end` and never recurses
 * deeper than JSON_DEPTH_MAX.
 *
 * Every function returns 0 (or 1 where said) on success, -EBADMSG on malformed input (the cursor is
 * then somewhere inside the value and should be abandoned), -ENOBUFS when a string does not fit. */

#include <stdbool.h>
#include <stddef.h>

#define JSON_DEPTH_MAX 32

typedef struct JsonCursor {
        const char *p, *end;
} JsonCursor;

static inline JsonCursor json_cursor(const char *s, size_t n) {
        return (JsonCursor){s, s + n};
}

/* The next significant character without consuming it; 0 at the end. */
char json_peek(JsonCursor *c);

/* Reads a string into buf (NUL-terminated; \uXXXX escapes above U+007F become '?': nothing we read
 * needs them). -ENOBUFS when it does not fit in size-1 bytes; the string is consumed all the same. */
int json_read_string(JsonCursor *c, char *buf, size_t size);
int json_read_number(JsonCursor *c, double *ret);
int json_read_bool(JsonCursor *c, bool *ret);
/* 1 and consumed when the next value is null, 0 (nothing consumed) otherwise. */
int json_read_null(JsonCursor *c);
/* Consumes one value of any kind. */
int json_skip_value(JsonCursor *c);

/* Object and array iteration:
 *
 *         r = json_enter(&c, '{');
 *         while ((r = json_next_key(&c, &first, key, sizeof key)) > 0)
 *                 ... read or skip the value ...
 *
 * json_next_key() returns 1 with the key read and the cursor on its value, 0 after the closing '}'.
 * A key longer than the buffer is truncated (a key we look for is never that long), not an error.
 * json_next_element() likewise returns 1 on an element of an array, 0 after the closing ']'. `first`
 * starts true and is kept by the functions. */
int json_enter(JsonCursor *c, char open);
int json_next_key(JsonCursor *c, bool *first, char *key, size_t size);
int json_next_element(JsonCursor *c, bool *first);
