/* SPDX-License-Identifier: MIT */
#pragma once

/* Health: a worker whose reports stopped (hung, stopped, swapping to death) is taken out of new work
 * while the rest of the pool serves, and stopped and replaced once silent for hung_timeout. Missing is
 * never zero for the policies (they hold); for routing, silence is reason enough not to send new work. */

#include "capacity.h"
#include "pool.h"

/* One look at every routable worker (the manager's status timer, once a second). */
void health_check(Pool *p, Capacity *c, usec_t now);
