/* SPDX-License-Identifier: MIT */
#pragma once

/* The sticky cookie: the user id, an expiry and the stamp of its issue, signed with HMAC-SHA256 under a
 * per-group key kept in the state directory (created 0600 on first start). Value:
 * <base64url(user)>.<expiry>.<issued>.<base64url(mac)>, the MAC over everything before its dot. An
 * unsigned, expired or forged cookie makes a guest; so does one that a logout of its user revoked
 * (CookieRevocations below). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exchange.h"
#include "hashmap.h"

#define COOKIE_KEY_SIZE 32
#define COOKIE_NAME "ep_user"
#define COOKIE_USER_MAX 256
/* base64url(256) = 342 + '.' + 20 digits + '.' + 20 digits + '.' + base64url(32) = 43 + NUL */
#define COOKIE_VALUE_MAX 429

typedef struct CookieKey {
        uint8_t key[COOKIE_KEY_SIZE];
} CookieKey;

/* Reads <state_dir>/cookie.key, creating it with fresh random bytes (mode 0600) when absent. A key is
 * created complete under a temporary name and then linked into place, so a commander starting at the
 * same time reads either no key or the whole of it, never a part; whoever links first wins and the
 * other reads that key. An existing file must be a regular file owned by the effective uid and grant
 * nothing to group or others: anyone who can read the key can sign cookies for any user.
 * 0; -EPERM for a wrong owner or mode, -EBADMSG for a wrong size or type, -errno otherwise. On error
 * *ret_error (when not NULL) gets one malloc()ed sentence naming the file and what is wrong with it
 * (NULL on -ENOMEM). */
int cookie_key_load(const char *state_dir, CookieKey *ret, char **ret_error);

/* Turns the key read from cookie.key into the key of one group: HMAC-SHA256 keyed with it over
 * "elastic-pool cookie key", a NUL and the group's name. Two groups that share a state directory (and so
 * cookie.key) then sign with different keys and take each other's cookies for forged ones. 0 or -EIO. */
int cookie_key_bind(CookieKey *k, const char *group);

/* Writes the cookie value for user, issued at stamp `issued` (see cookie_stamp()) and valid until
 * expires_at (seconds since the epoch), into buf (at least COOKIE_VALUE_MAX bytes). Returns the length,
 * -EINVAL for an empty or over-long user, -ENOBUFS when buf is too small. */
int cookie_sign(const CookieKey *k, const char *user, uint64_t issued, uint64_t expires_at, char *buf,
                size_t size);

/* Checks a cookie value. 0 with the user copied into ret_user (NUL-terminated, ret_size >=
 * COOKIE_USER_MAX + 1) and its issue stamp in *ret_issued (when not NULL), -EBADMSG when malformed or
 * the signature does not match, -ETIME when expired. A cookie of the earlier format
 * <user>.<expiry>.<mac> (signed before issue stamps existed) is accepted with issued 0: older than
 * any logout. */
int cookie_verify(const CookieKey *k, const char *value, size_t len, uint64_t now, char *ret_user,
                  size_t ret_size, uint64_t *ret_issued);

/* Finds cookie `name` in the Cookie fields (several fields, "; "-separated pairs). 1 with the value
 * (not NUL-terminated) when found, 0 when not. */
int cookie_find(const HeaderField *fields, size_t n, const char *name, const char **ret_value, size_t *ret_len);

/* Logouts. A logout voids every cookie issued to its user up to that moment, and no later one: each
 * cookie carries the stamp of its issue and each logout records the stamp it happened at, both from
 * cookie_stamp(), which never hands out the same stamp twice and never goes back. So a login in the
 * same microsecond as the logout, or after the wall clock stepped back, still gets a stamp above the
 * logout's and a valid cookie.
 *
 * The records live in memory, one per user (a later logout replaces the earlier), and are bounded
 * twice: a record is dropped once every cookie it voids has expired anyway (`until`), and past `max`
 * records the oldest is forgotten (its user's earlier cookies are then valid again until they expire;
 * the caller is told, to warn). Keyed by user, like the surface, so they shard with it. */
typedef struct CookieRevocation CookieRevocation;

typedef struct CookieRevocations {
        StrMap users;                       /* name → CookieRevocation */
        CookieRevocation *oldest, *newest;  /* in the order recorded, which is the order of their stamps */
        size_t n, max;
        uint64_t last_stamp;
        uint64_t forgotten_through; /* the latest stamp of a record forgotten to stay within max */
} CookieRevocations;

/* max >= 1 records. */
void cookie_revocations_init(CookieRevocations *r, size_t max);
void cookie_revocations_done(CookieRevocations *r);

/* The stamp of a cookie issued, or a logout recorded, at now (CLOCK_REALTIME, microseconds): now, or
 * one above the last stamp handed out when the clock has not moved past it. Strictly increasing. */
uint64_t cookie_stamp(CookieRevocations *r, uint64_t now);

/* Records that every cookie of user issued at or before stamp (from cookie_stamp()) is void, until
 * `until` (CLOCK_REALTIME µs) when the last of them has expired; records already past `now` are dropped
 * first. 0; > 0, the number of oldest records forgotten to stay within max (more than 1 only when max
 * was lowered), with the user of the oldest in *ret_evicted (malloc()ed) when ret_evicted is not NULL;
 * -ENOMEM (nothing changed). */
int cookie_revoke(CookieRevocations *r, const char *user, uint64_t stamp, uint64_t until, uint64_t now,
                  char **ret_evicted);

/* A cookie of user issued at stamp `issued` was voided by a logout still on record. */
bool cookie_revoked(const CookieRevocations *r, const char *user, uint64_t issued);

/* Drops the records whose `until` is at or before now; returns how many. */
size_t cookie_revocations_expire(CookieRevocations *r, uint64_t now);
