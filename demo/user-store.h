/* SPDX-License-Identifier: MIT */
#pragma once

/* Per-user state of the demo worker: a counter and an optional blob, kept so that a live move can
 * prove the user arrived intact. The store is a hash table under one mutex (executor threads and the
 * sensor's move callbacks share it); no function calls out while holding that lock.
 *
 * The package a snapshot produces (little-endian, version 1):
 *   0  "EPDU"    magic
 *   4  u16       version (1)
 *   6  u16       flags (0)
 *   8  u64       counter
 *   16 u32       blob size
 *   20 u32       CRC-32 (IEEE) of the blob
 *   24 ...       blob
 * Return convention: 0 or a positive count on success, negative errno on failure. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define USER_NAME_MAX 128
#define USER_BLOB_MAX ((size_t) 1 << 30)
#define USER_PACKAGE_HEADER_SIZE 24
#define USER_PACKAGE_VERSION 1

typedef struct UserStore UserStore;

typedef struct UserInfo {
        const char *name;
        uint64_t counter;
        size_t blob_size;
        uint32_t blob_crc;
} UserInfo;

/* [A-Za-z0-9._@-], 1..USER_NAME_MAX characters. */
bool user_name_is_valid(const char *name, size_t len);

/* Fills a blob deterministically from the user name (a moved copy can be checked against a fresh one). */
void user_blob_fill(const char *name, uint8_t *blob, size_t size);
uint32_t user_crc32(const void *data, size_t size);

/* Package (de)serialisation. user_package_parse() returns -EBADMSG for anything but a complete,
 * consistent version-1 package; *ret_blob points into data. */
int user_package_build(uint64_t counter, const void *blob, size_t blob_size, void **ret, size_t *ret_size);
int user_package_parse(const void *data, size_t size, uint64_t *ret_counter, const void **ret_blob,
                       size_t *ret_blob_size);

/* blob_size: the size of the blob a login creates (0: none). */
int user_store_new(size_t blob_size, UserStore **ret);
UserStore *user_store_free(UserStore *s);
static inline void user_store_freep(UserStore **s) {
        user_store_free(*s);
}

/* Number of users; lock-free (an atomic mirror of the table's count). */
size_t user_store_count(UserStore *s);

/* Creates the user with counter 0 and a fresh blob; a user that exists keeps its state. Returns 1 when
 * created, 0 when it existed, -EINVAL for an invalid name, -ENOMEM. */
int user_store_login(UserStore *s, const char *name);
/* Forgets the user: 0, or -ENOENT. */
int user_store_drop(UserStore *s, const char *name);
/* 0 when the user exists, else -ENOENT. */
int user_store_exists(UserStore *s, const char *name);
/* Increments the counter and returns the user after the increment; -ENOENT when unknown. */
int user_store_bump(UserStore *s, const char *name, uint64_t *ret_counter, uint32_t *ret_crc);

/* Serialises the user into a malloc()ed package: 0, -ENOENT, -ENOMEM. */
int user_store_snapshot(UserStore *s, const char *name, void **ret, size_t *ret_size);
/* Creates or replaces the user from a package: 0, -EINVAL (name), -EBADMSG (package), -ENOMEM. */
int user_store_install(UserStore *s, const char *name, const void *package, size_t size);

/* Calls f for every user under the lock, in no particular order; f must not call into the store.
 * Stops at and returns the first negative value f returns, else 0. */
int user_store_foreach(UserStore *s, int (*f)(const UserInfo *u, void *userdata), void *userdata);
