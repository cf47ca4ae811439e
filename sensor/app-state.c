/* SPDX-License-Identifier: MIT */
#include "app-state.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

enum {
        APP_FIELD_USERS = 1U << 0,
        APP_FIELD_PAGES = 1U << 1,
        APP_FIELD_CONNECTIONS = 1U << 2,
        APP_FIELD_ACTIVE_USERS = 1U << 3,
        APP_FIELD_EXECUTOR = 1U << 4,
        APP_FIELD_BACKLOG = 1U << 5,
};

#define ACTIVE_SET_MIN 64U
/* 4 Mi slots (32 MiB) hold 2 Mi distinct users per interval; past that the count is reported absent
 * rather than the process growing without bound. */
#define ACTIVE_SET_MAX (4U * 1024U * 1024U)
/* A set that grew for a burst is given back once it sits mostly empty. */
#define ACTIVE_SET_KEEP 4096U

void app_state_init(AppState *a) {
        *a = (AppState) {};
        pthread_mutex_init(&a->active_lock, NULL);
}

void app_state_done(AppState *a) {
        free(a->active.slots);
        a->active = (ActiveSet) {};
        pthread_mutex_destroy(&a->active_lock);
}

/* Value first, then the presence bit with release order: a snapshot that sees the bit sees the value. */
static void set_u32(AppState *a, _Atomic uint32_t *field, uint32_t v, uint32_t bit) {
        atomic_store_explicit(field, v, memory_order_relaxed);
        atomic_fetch_or_explicit(&a->present, bit, memory_order_release);
}

static void dec_saturating(_Atomic uint32_t *v) {
        uint32_t old = atomic_load_explicit(v, memory_order_relaxed);

        while (old > 0 && !atomic_compare_exchange_weak_explicit(v, &old, old - 1, memory_order_relaxed,
                                                                 memory_order_relaxed))
                ;
}

static void mark(AppState *a, uint32_t bit) {
        atomic_fetch_or_explicit(&a->present, bit, memory_order_release);
}

void app_state_set_users(AppState *a, uint32_t v) {
        set_u32(a, &a->users, v, APP_FIELD_USERS);
}

void app_state_set_pages(AppState *a, uint32_t v) {
        set_u32(a, &a->pages, v, APP_FIELD_PAGES);
}

void app_state_set_connections(AppState *a, uint32_t v) {
        set_u32(a, &a->connections, v, APP_FIELD_CONNECTIONS);
}

void app_state_set_executor(AppState *a, uint32_t busy, uint32_t total, uint32_t queue_depth) {
        atomic_store_explicit(&a->busy, busy, memory_order_relaxed);
        atomic_store_explicit(&a->total, total, memory_order_relaxed);
        atomic_store_explicit(&a->queue_depth, queue_depth, memory_order_relaxed);
        mark(a, APP_FIELD_EXECUTOR);
}

void app_state_set_executor_total(AppState *a, uint32_t total) {
        set_u32(a, &a->total, total, APP_FIELD_EXECUTOR);
}

void app_state_request_queued(AppState *a) {
        atomic_fetch_add_explicit(&a->queue_depth, 1, memory_order_relaxed);
        mark(a, APP_FIELD_EXECUTOR);
}

void app_state_request_begin(AppState *a) {
        dec_saturating(&a->queue_depth);
        atomic_fetch_add_explicit(&a->busy, 1, memory_order_relaxed);
        mark(a, APP_FIELD_EXECUTOR);
}

void app_state_request_end(AppState *a) {
        dec_saturating(&a->busy);
        mark(a, APP_FIELD_EXECUTOR);
}

void app_state_set_backlog(AppState *a, uint64_t pending, uint64_t outbox) {
        atomic_store_explicit(&a->pending, pending, memory_order_relaxed);
        atomic_store_explicit(&a->outbox, outbox, memory_order_relaxed);
        mark(a, APP_FIELD_BACKLOG);
}

bool app_state_any_set(AppState *a) {
        return atomic_load_explicit(&a->present, memory_order_acquire) != 0;
}

/* FNV-1a with a splitmix64 finish. Distinct users are counted by 64-bit hash: two users colliding (about
 * 1e-11 for 10 000 users) undercount by one, which a drift-tolerant occupancy never notices. */
static uint64_t user_hash(const char *s) {
        uint64_t h = 0xcbf29ce484222325ULL;

        for (; *s; s++) {
                h ^= (uint8_t) *s;
                h *= 0x100000001b3ULL;
        }
        h ^= h >> 30;
        h *= 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 27;
        h *= 0x94d049bb133111ebULL;
        h ^= h >> 31;
        return h != 0 ? h : 1;
}

static void set_insert(uint64_t *slots, size_t capacity, uint64_t h, size_t *count) {
        size_t mask = capacity - 1;

        for (size_t i = h & mask;; i = (i + 1) & mask) {
                if (slots[i] == h)
                        return;
                if (slots[i] == 0) {
                        slots[i] = h;
                        (*count)++;
                        return;
                }
        }
}

static int set_grow(ActiveSet *s) {
        size_t capacity = MAX(s->capacity * 2, (size_t) ACTIVE_SET_MIN), count = 0;
        uint64_t *slots;

        if (capacity > ACTIVE_SET_MAX)
                return -ENOBUFS;
        slots = calloc(capacity, sizeof *slots);
        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < s->capacity; i++)
                if (s->slots[i] != 0)
                        set_insert(slots, capacity, s->slots[i], &count);
        free(s->slots);
        s->slots = slots;
        s->capacity = capacity;
        s->count = count;
        return 0;
}

static void set_add(ActiveSet *s, uint64_t h) {
        /* at most half full keeps the linear probes short */
        if ((s->count + 1) * 2 > s->capacity && set_grow(s) < 0) {
                s->overflow = true;
                return;
        }
        set_insert(s->slots, s->capacity, h, &s->count);
}

static void set_reset(ActiveSet *s) {
        if (s->capacity > ACTIVE_SET_KEEP && s->count * 16 < s->capacity) {
                free(s->slots);
                *s = (ActiveSet) {};
                return;
        }
        if (s->count > 0)
                memset(s->slots, 0, s->capacity * sizeof *s->slots);
        s->count = 0;
        s->overflow = false;
}

void app_state_user_active(AppState *a, const char *user, bool system) {
        if (!system && user) {
                uint64_t h = user_hash(user); /* hashed outside the lock */

                pthread_mutex_lock(&a->active_lock);
                set_add(&a->active, h);
                pthread_mutex_unlock(&a->active_lock);
        }
        mark(a, APP_FIELD_ACTIVE_USERS);
}

void app_state_snapshot(AppState *a, AppFields *ret) {
        uint32_t present = atomic_load_explicit(&a->present, memory_order_acquire);
        bool overflow;
        size_t active;

        pthread_mutex_lock(&a->active_lock);
        active = a->active.count;
        overflow = a->active.overflow;
        set_reset(&a->active);
        pthread_mutex_unlock(&a->active_lock);

        *ret = (AppFields) {
                .has_users = present & APP_FIELD_USERS,
                .has_pages = present & APP_FIELD_PAGES,
                .has_connections = present & APP_FIELD_CONNECTIONS,
                .has_active_users = (present & APP_FIELD_ACTIVE_USERS) && !overflow,
                .has_executor = present & APP_FIELD_EXECUTOR,
                .has_backlog = present & APP_FIELD_BACKLOG,
                .users = atomic_load_explicit(&a->users, memory_order_relaxed),
                .pages = atomic_load_explicit(&a->pages, memory_order_relaxed),
                .connections = atomic_load_explicit(&a->connections, memory_order_relaxed),
                .active_users = (uint32_t) MIN(active, (size_t) UINT32_MAX),
                .busy = atomic_load_explicit(&a->busy, memory_order_relaxed),
                .total = atomic_load_explicit(&a->total, memory_order_relaxed),
                .queue_depth = atomic_load_explicit(&a->queue_depth, memory_order_relaxed),
                .pending = atomic_load_explicit(&a->pending, memory_order_relaxed),
                .outbox = atomic_load_explicit(&a->outbox, memory_order_relaxed),
        };
}
