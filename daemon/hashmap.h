/* SPDX-License-Identifier: MIT */
#pragma once

/* A small open-addressing hash map from NUL-terminated string keys to pointers. Keys are borrowed: the
 * caller keeps them alive while they are in the map (typically the key lives in the value). The hash is
 * keyed with a per-map random seed, so keys chosen by a client cannot force collisions. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct StrMap {
        struct StrMapSlot *slots;
        size_t capacity; /* power of two, or 0 */
        size_t count;
        size_t tombstones;
        uint64_t seed;
} StrMap;

/* The map's hash for other keyed tables: FNV-1a over len bytes with seed, finalised (splitmix64). */
uint64_t hash_bytes(uint64_t seed, const void *data, size_t len);
/* A random seed (from getrandom; salt's address mixed in when the kernel has none to give yet). */
uint64_t hash_seed(const void *salt);

void strmap_init(StrMap *m);
void strmap_done(StrMap *m);
size_t strmap_size(const StrMap *m);

void *strmap_get(const StrMap *m, const char *key);
/* Inserts or replaces; 0, 1 when it replaced (the old value in *ret_old when not NULL), -ENOMEM. */
int strmap_put(StrMap *m, const char *key, void *value, void **ret_old);
/* Returns the removed value or NULL. */
void *strmap_remove(StrMap *m, const char *key);

/* Iteration: for (size_t i = 0; strmap_next(m, &i, &key, &value); ) — do not insert while iterating;
 * removing the current entry is allowed. */
bool strmap_next(const StrMap *m, size_t *i, const char **ret_key, void **ret_value);
