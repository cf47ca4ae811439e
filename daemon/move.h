/* SPDX-License-Identifier: MIT */
#pragma once

/* Moving user U from worker A to worker B, live: (1) flag U moving, so its new requests are held in the
 * commander; (2) quiesce: wait until U has no open request; (3) snapshot: ask A for U's package over
 * the channel; (4) install it on B, which answers ok; (5) switch U → B, drop the flag, release the held
 * requests to B and tell A to drop U. B silent or failing past the timeout → abort, U stays on A. A
 * dying mid-move is an ordinary death. Guests never move. */

#include "frontend-manager.h"

typedef enum MoveState {
        MOVE_QUIESCE,
        MOVE_SNAPSHOT,
        MOVE_INSTALL,
        _MOVE_STATE_MAX,
        _MOVE_STATE_INVALID = -EINVAL,
} MoveState;

struct Move {
        Frontend *frontend;
        Move *prev, *next;
        uint64_t id;
        SurfaceUser *user;
        unsigned from, to;
        MoveState state;
        usec_t started;
        sd_event_source *timer;
        char *why;
};

/* Starts moving u to worker `to`. 0, -EBUSY when u already moves, -EOPNOTSUPP when A cannot snapshot or
 * B cannot install users (the caller keeps u where it is), -errno. */
int move_start(Frontend *fe, SurfaceUser *u, unsigned to, const char *why);
/* u's open requests reached zero: a move waiting to quiesce goes on. */
void move_user_quiesced(Frontend *fe, SurfaceUser *u);
/* Package and InstallResult frames from a worker's channel. */
void move_on_frame(Frontend *fe, Worker *w, const Frame *f);
/* The worker is gone: moves from or to it end (from: U's state is gone with it; to: U stays). */
void move_worker_gone(Frontend *fe, unsigned worker);
/* U logs out or leaves: its move is cancelled. */
void move_cancel(Frontend *fe, SurfaceUser *u, const char *why);
void move_free_all(Frontend *fe);
