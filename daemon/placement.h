/* SPDX-License-Identifier: MIT */
#pragma once

/* Where users live, as the commander answers its front end (CommanderOps, frontend-port.h): a request's
 * worker (the user's, placed again reception-first when it is unknown or its worker is gone; the
 * reception for a guest; held while the user moves), a login placed by the policies (and moved on when
 * the reception is over its keep threshold), a logout, and the requests' starts and ends that the
 * surface and the moves count. */

#include "capacity.h"
#include "frontend-port.h"
#include "move.h"
#include "pool.h"
#include "surface.h"

typedef struct Placement {
        Pool *pool;
        Capacity *capacity; /* the policies' view of the pool */
        Surface *surface;
        Moves *moves;
} Placement;

/* Forgets every user whose last request began `expiry` or longer before now and has none open, so it
 * no longer pins its worker; its worker is told to drop it. Returns how many (journaled once). */
unsigned placement_expire_users(Placement *pl, usec_t expiry, usec_t now);

/* worker announced the users it holds (its sensor's Users frame, after a reconnect or a commander
 * restart): each one the surface does not know is placed there, so it keeps its worker and state. One the
 * surface has elsewhere stays there (the journal says so: after a crash in the middle of its move, two
 * workers may hold it). Absence removes nobody: a user placed whose first request has not reached the
 * worker yet is not held there yet. Returns how many were placed. */
unsigned placement_users_announced(Placement *pl, unsigned worker, char *const *users, size_t n);

/* The operations, with a Placement as their userdata. */
extern const CommanderOps placement_ops;
