/* SPDX-License-Identifier: MIT */
#include "hashmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

typedef struct StrMapSlot {
        const char *key; /* NULL: empty; TOMBSTONE: removed */
        uint64_t hash;
        void *value;
} StrMapSlot;

static const char tombstone_marker;
#define TOMBSTONE (&tombstone_marker)

static uint64_t hash_finalize(uint64_t h) {
        h ^= h >> 30;
        h *= 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 27;
        h *= 0x94d049bb133111ebULL;
        h ^= h >> 31;
        return h;
}

/* FNV-1a over the key, mixed with the seed and finalised (splitmix64): fast for the short keys we have
 * (user ids, request ids) and unpredictable to whoever picks them. */
static uint64_t hash_key(uint64_t seed, const char *key) {
        uint64_t h = 0xcbf29ce484222325ULL ^ seed;

        for (const unsigned char *p = (const unsigned char *) key; *p; p++) {
                h ^= *p;
                h *= 0x100000001b3ULL;
        }
        return hash_finalize(h);
}

uint64_t hash_bytes(uint64_t seed, const void *data, size_t len) {
        uint64_t h = 0xcbf29ce484222325ULL ^ seed;

        for (const unsigned char *p = data, *end = p + len; p < end; p++) {
                h ^= *p;
                h *= 0x100000001b3ULL;
        }
        return hash_finalize(h);
}

uint64_t hash_seed(const void *salt) {
        uint64_t seed;

        if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != sizeof seed)
                seed = (uint64_t) (uintptr_t) salt ^ 0x9e3779b97f4a7c15ULL;
        return seed;
}

void strmap_init(StrMap *m) {
        *m = (StrMap) {};
        m->seed = hash_seed(m);
}

void strmap_done(StrMap *m) {
        free(m->slots);
        m->slots = NULL;
        m->capacity = m->count = m->tombstones = 0;
}

size_t strmap_size(const StrMap *m) {
        return m->count;
}

static StrMapSlot *find(const StrMap *m, const char *key, uint64_t h) {
        if (m->capacity == 0)
                return NULL;
        for (size_t i = h & (m->capacity - 1), n = 0; n < m->capacity; i = (i + 1) & (m->capacity - 1), n++) {
                StrMapSlot *s = &m->slots[i];
                if (!s->key)
                        return NULL;
                if (s->key != TOMBSTONE && s->hash == h && strcmp(s->key, key) == 0)
                        return s;
        }
        return NULL;
}

void *strmap_get(const StrMap *m, const char *key) {
        StrMapSlot *s = find(m, key, hash_key(m->seed, key));
        return s ? s->value : NULL;
}

static int resize(StrMap *m, size_t capacity) {
        StrMapSlot *old = m->slots, *slots;
        size_t old_capacity = m->capacity;

        slots = calloc(capacity, sizeof *slots);
        if (!slots)
                return -ENOMEM;
        m->slots = slots;
        m->capacity = capacity;
        m->tombstones = 0;
        for (size_t i = 0; i < old_capacity; i++) {
                if (!old[i].key || old[i].key == TOMBSTONE)
                        continue;
                size_t k = old[i].hash & (capacity - 1);
                while (slots[k].key)
                        k = (k + 1) & (capacity - 1);
                slots[k] = old[i];
        }
        free(old);
        return 0;
}

int strmap_put(StrMap *m, const char *key, void *value, void **ret_old) {
        uint64_t h = hash_key(m->seed, key);
        StrMapSlot *s = find(m, key, h);
        int r;

        if (s) {
                if (ret_old)
                        *ret_old = s->value;
                s->key = key;
                s->value = value;
                return 1;
        }
        /* keep the load (tombstones included) under 3/4 */
        if ((m->count + m->tombstones + 1) * 4 > m->capacity * 3) {
                size_t capacity = m->capacity ? m->capacity : 16;
                while ((m->count + 1) * 2 > capacity)
                        capacity *= 2;
                r = resize(m, capacity);
                if (r < 0)
                        return r;
        }
        size_t i = h & (m->capacity - 1);
        while (m->slots[i].key && m->slots[i].key != TOMBSTONE)
                i = (i + 1) & (m->capacity - 1);
        if (m->slots[i].key == TOMBSTONE)
                m->tombstones--;
        m->slots[i] = (StrMapSlot) { .key = key, .hash = h, .value = value };
        m->count++;
        return 0;
}

void *strmap_remove(StrMap *m, const char *key) {
        StrMapSlot *s = find(m, key, hash_key(m->seed, key));
        void *v;

        if (!s)
                return NULL;
        v = s->value;
        s->key = TOMBSTONE;
        s->value = NULL;
        m->count--;
        m->tombstones++;
        return v;
}

bool strmap_next(const StrMap *m, size_t *i, const char **ret_key, void **ret_value) {
        for (; *i < m->capacity; (*i)++) {
                StrMapSlot *s = &m->slots[*i];
                if (!s->key || s->key == TOMBSTONE)
                        continue;
                if (ret_key)
                        *ret_key = s->key;
                if (ret_value)
                        *ret_value = s->value;
                (*i)++;
                return true;
        }
        return false;
}
