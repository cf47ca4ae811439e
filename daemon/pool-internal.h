/* SPDX-License-Identifier: MIT */
#pragma once

/* What the pool's files (pool.c, pool-adopt.c) share and nobody else calls. */

#include <signal.h>

#include "pool.h"

/* Every change the policies can see goes through here: a summary of the pool no longer holds. */
void pool_changed(Pool *p);
void pool_set_state(Worker *w, WorkerState state);

/* w's channel is now fd (a sensor that reconnected): the old one, if any, is closed. Takes fd. */
int pool_attach_channel(Pool *p, Worker *w, int fd);
/* w's process ended: si as waitid() gave it, or NULL when it is not our child (adopted) and the status
 * is unknown. */
void pool_worker_exited(Pool *p, Worker *w, const siginfo_t *si);

/* pool-adopt.c: an adopted worker stopped being awaited (its users are known, or it died). */
void pool_adopt_settled(Pool *p, Worker *w);
