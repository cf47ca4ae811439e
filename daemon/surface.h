/* SPDX-License-Identifier: MIT */
#pragma once

/* The surface: who lives where. user → worker (sticky placement), each user's open requests and
 * consumption (requests, seconds, forgotten when the user leaves), and the per-worker count of users the
 * policies read. A pure data structure: no I/O, no clock (callers pass the time).
 *
 * A request is counted for a user by ticket: the incarnation of the user it started under. A user
 * forgotten (logout, its worker gone) and logged in again is a new incarnation, so requests of the old
 * session never count against the new one (a move's quiesce waits on these counts). The front end keeps
 * the open requests themselves (their dict and per-worker counts); the surface keeps only what is the
 * user's. */

#include <stdbool.h>
#include <stdint.h>

#include "hashmap.h"
#include "time-util.h"

typedef struct Move Move;

typedef struct SurfaceUser {
        char *name;
        unsigned worker;      /* wN the user lives on */
        usec_t placed_at;
        usec_t logged_in_at;  /* its consumption is counted since */
        usec_t last_seen;     /* its last request began (or it was first placed): what expiry measures from */
        usec_t move_not_before; /* a move of it failed: a drain leaves it be until then */
        uint64_t incarnation; /* > 0, unique among every user this surface ever had */
        uint64_t requests;    /* consumption since it logged in */
        usec_t busy_usec;
        unsigned open;        /* its requests still open */
        Move *move;           /* non-NULL while it moves: its new requests are held */
} SurfaceUser;

typedef struct Surface {
        StrMap users;            /* name → SurfaceUser */
        uint32_t *worker_users;  /* index by worker id */
        unsigned worker_slots;
        uint64_t next_incarnation;
        uint64_t version;        /* bumped on every change of a user (placed, forgotten, a request) */
} Surface;

void surface_init(Surface *s);
void surface_done(Surface *s);

SurfaceUser *surface_user_get(const Surface *s, const char *name);
/* Places (or re-places) name on worker; a user it already has keeps its incarnation, counts and
 * consumption. 0 or -ENOMEM. */
int surface_user_place(Surface *s, const char *name, unsigned worker, usec_t now, SurfaceUser **ret);
/* Forgets the user (logout). Requests it still has open end without being counted for anyone. */
void surface_user_forget(Surface *s, SurfaceUser *u);
/* The worker died: every user on it is forgotten; returns how many (callers log it). */
unsigned surface_worker_gone(Surface *s, unsigned worker);
unsigned surface_worker_users(const Surface *s, unsigned worker);
/* Every user, in no order: for (size_t i = 0; (u = surface_next_user(s, &i)); ). The current user may be
 * forgotten while iterating; nobody may be placed anew. */
SurfaceUser *surface_next_user(const Surface *s, size_t *cursor);

/* A request of name began: counted as open for the user; returns its ticket (0 for a name the surface
 * does not know: counted for nobody). */
uint64_t surface_request_started(Surface *s, const char *name, usec_t now);
/* The request with ticket ended after busy: when it was the user's, its open count drops and the
 * consumption is added. Returns the user the name has now, if any (counted or not). */
SurfaceUser *surface_request_ended(Surface *s, const char *name, uint64_t ticket, usec_t busy);
/* The request with ticket now counts for u (a login answered on it): taken from whom it counted for,
 * which is returned when that user is now without open requests (NULL otherwise). */
SurfaceUser *surface_request_transfer(Surface *s, const char *from, uint64_t *ticket, SurfaceUser *u);
