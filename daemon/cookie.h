/* SPDX-License-Identifier: MIT */
#pragma once

/* The sticky cookie: the user id plus an expiry, signed with HMAC-SHA256 under a per-group key kept in
 * the state directory (created 0600 on first start). Value: <base64url(user)>.<expiry>.<base64url(mac)>.
 * An unsigned, expired or forged cookie makes a guest. */

#include <stddef.h>
#include <stdint.h>

#include "exchange.h"

#define COOKIE_KEY_SIZE 32
#define COOKIE_NAME "ep_user"
#define COOKIE_USER_MAX 256
/* base64url(256) = 342 + '.' + 20 digits + '.' + base64url(32) = 43 + NUL */
#define COOKIE_VALUE_MAX 408

typedef struct CookieKey {
        uint8_t key[COOKIE_KEY_SIZE];
} CookieKey;

/* Reads <state_dir>/cookie.key, creating it with fresh random bytes (mode 0600) when absent.
 * -EBADMSG when the file exists with the wrong size, -errno otherwise. */
int cookie_key_load(const char *state_dir, CookieKey *ret);

/* Writes the cookie value for user, valid until expires_at (seconds since the epoch), into buf (at least
 * COOKIE_VALUE_MAX bytes). Returns the length, -EINVAL for an empty or over-long user, -ENOBUFS when buf
 * is too small. */
int cookie_sign(const CookieKey *k, const char *user, uint64_t expires_at, char *buf, size_t size);

/* Checks a cookie value. 0 with the user copied into ret_user (NUL-terminated, ret_size >=
 * COOKIE_USER_MAX + 1), -EBADMSG when malformed or the signature does not match, -ETIME when expired. */
int cookie_verify(const CookieKey *k, const char *value, size_t len, uint64_t now, char *ret_user, size_t ret_size);

/* Finds cookie `name` in the Cookie fields (several fields, "; "-separated pairs). 1 with the value
 * (not NUL-terminated) when found, 0 when not. */
int cookie_find(const HeaderField *fields, size_t n, const char *name, const char **ret_value, size_t *ret_len);
