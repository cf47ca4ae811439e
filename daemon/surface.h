/* SPDX-License-Identifier: MIT */
#pragma once

/* The surface: who is where and what is open. user → worker (sticky placement), the dict of open
 * requests (key → user, worker, start; swept by timestamp, never a bare counter), per-user consumption
 * (requests, seconds) forgotten when the user leaves, and per-worker indexes derived from those. */

#include <stdbool.h>
#include <stdint.h>

#include "exchange.h"
#include "hashmap.h"
#include "time-util.h"

typedef struct Move Move;

typedef struct SurfaceUser {
        char *name;
        unsigned worker;     /* wN the user lives on */
        usec_t placed_at;
        uint64_t requests;   /* consumption since it logged in */
        usec_t busy_usec;
        unsigned open;       /* its open requests (entries of the dict) */
        Move *move;          /* non-NULL while it moves: its new requests are held */
        Exchange *held_first, *held_last;
        unsigned n_held;
} SurfaceUser;

typedef struct Surface {
        StrMap users;        /* name → SurfaceUser */
        StrMap open;         /* Exchange.key → Exchange */
        StrMap orphaned;     /* Exchange.key → Exchange: open entries whose user was forgotten since (logout,
                              * its worker gone); they count for their worker, never for a later login of
                              * the same name */
        uint32_t *worker_users; /* index by worker id */
        uint32_t *worker_open;
        unsigned worker_slots;
        uint64_t next_key;
} Surface;

int surface_init(Surface *s);
void surface_done(Surface *s);

SurfaceUser *surface_user_get(Surface *s, const char *name);
/* Places (or re-places) name on worker. 0 or -ENOMEM. */
int surface_user_place(Surface *s, const char *name, unsigned worker, usec_t now, SurfaceUser **ret);
/* Forgets the user (logout). Held requests must have been released by the caller. Its open requests
 * keep their entries (and their worker's count) but are no longer the user's: when the same name logs
 * in again, they neither count as its open requests nor add to its consumption. */
void surface_user_forget(Surface *s, SurfaceUser *u);
/* The worker died: every user on it is forgotten; returns how many (callers log it). */
unsigned surface_worker_gone(Surface *s, unsigned worker);
unsigned surface_worker_users(const Surface *s, unsigned worker);
unsigned surface_worker_open(const Surface *s, unsigned worker);

/* Open-requests dict. open: x->key is assigned, x->worker and x->user must be set. close: removes the
 * entry (if it is still there) and attributes the consumption to x->user. */
int surface_request_open(Surface *s, Exchange *x);
void surface_request_close(Surface *s, Exchange *x, usec_t now);
/* Drops entries started before now - max_age (a leak would otherwise inflate in-flight counts
 * forever); returns how many. */
unsigned surface_sweep(Surface *s, usec_t now, usec_t max_age);
