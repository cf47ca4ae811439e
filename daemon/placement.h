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

/* The operations, with a Placement as their userdata. */
extern const CommanderOps placement_ops;
