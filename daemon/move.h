/* SPDX-License-Identifier: MIT */
#pragma once

/* Moving user U from worker A to worker B, live: (1) flag U moving, so its new requests are held (the
 * front end holds them while the commander answers "held"); (2) quiesce: wait until U has no open
 * request; (3) snapshot: ask A for U's package over the channel; (4) install it on B, which answers ok;
 * (5) switch U → B, drop the flag, release the held requests (to B) and tell A to drop U. B silent or
 * failing past the timeout → abort, U stays on A. A dying mid-move is an ordinary death. Guests never
 * move.
 *
 * A commander service on the surface: it reaches workers (their capabilities, their channels) and the
 * front end (the held requests) only through MoveHooks, and is told the time (`now`), so its state
 * machine runs the same under a test as under the loop. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "frame.h"
#include "surface.h"
#include "time-util.h"

typedef enum MoveState {
        MOVE_QUIESCE,
        MOVE_SNAPSHOT,
        MOVE_INSTALL,
        _MOVE_STATE_MAX,
        _MOVE_STATE_INVALID = -EINVAL,
} MoveState;

const char *move_state_to_string(MoveState s);

typedef struct Moves Moves;

struct Move {
        Moves *moves;
        Move *prev, *next;
        uint64_t id;
        SurfaceUser *user;
        unsigned from, to;
        MoveState state;
        bool repoint;   /* A keeps no state to carry: switch once quiesced, no snapshot, no install */
        bool fresh;     /* a re-point across package formats: B is told to start the user fresh (an
                         * Install without a package) before the switch */
        usec_t started; /* the user's flag went up: its pause starts */
        uint64_t bytes; /* the package's size, once A sent it */
        sd_event_source *timer;
        char *why;
};

/* How a move ended, as its journal line says it. */
typedef struct MoveEnd {
        uint64_t id;
        const char *user;    /* valid during the call only */
        unsigned from, to;
        bool switched;       /* the user lives on `to` now */
        bool repointed;      /* switched without state (A cannot snapshot users or holds none, or another format) */
        bool target_failed;  /* aborted for the target's sake (silent, refused, unreachable, gone) */
        uint64_t bytes;      /* package size; 0 for a re-point or before A answered */
        usec_t pause;        /* the user's requests were held from the flag to this end */
        const char *outcome; /* "done", "re-pointed" or the abort's reason */
} MoveEnd;

/* What a move needs to know of a worker. */
typedef struct MoveWorker {
        bool routable;           /* it takes users */
        unsigned capabilities;   /* bitmask of 1 << ElasticPool__Capability */
        const char *package_format; /* as its Hello named it; NULL: unnamed */
} MoveWorker;

typedef struct MoveHooks {
        /* What a move needs to know of wN: false when there is no such worker. */
        bool (*worker)(unsigned worker, MoveWorker *ret, void *userdata);
        /* Sends f on wN's channel: 0, -ENOTCONN when it has none open, -errno. */
        int (*send)(unsigned worker, const Frame *f, void *userdata);
        /* Requests of user held while it moves (for the journal line of the move's end). */
        unsigned (*held_requests)(const char *user, void *userdata);
        /* The move of user ended, either way: its held requests go wherever it lives now. */
        void (*release_held)(const char *user, void *userdata);
        /* A move of user began (its flag is up): the front end ends what would keep it from quiescing (its
         * WebSocket tunnels). May be NULL. */
        void (*started)(const char *user, void *userdata);
        /* A move ended (before its held requests are released): who started it may start the next. */
        void (*ended)(const MoveEnd *e, void *userdata);
        void *userdata;
} MoveHooks;

/* A move that ended, as the status surfaces show it. */
typedef struct MoveRecord {
        uint64_t id;
        char user[129];      /* cut short past 128 bytes */
        unsigned from, to;
        bool switched, repointed;
        uint64_t bytes;
        usec_t pause;
        usec_t ended;
        char outcome[160];
} MoveRecord;

#define MOVES_RECENT 16U

struct Moves {
        sd_event *event;     /* arms each move's timeout; NULL: the caller runs moves_expire() itself */
        Surface *surface;    /* where users live */
        usec_t timeout;      /* a move gives up past this */
        MoveHooks hooks;
        Move *list;          /* in progress */
        uint64_t next_id;    /* also: moves started */

        /* for the status surfaces: the last MOVES_RECENT ends (a ring; recent_head is the next slot) and
         * how every move ended */
        MoveRecord recent[MOVES_RECENT];
        unsigned n_recent, recent_head;
        uint64_t done, repointed, aborted;
};

/* timeout: how long a move may take before it is aborted; keep it under the front end's hold timeout,
 * so a held request is released (to A or B) before it would be answered 503. */
void moves_init(Moves *m, sd_event *event, Surface *surface, usec_t timeout, const MoveHooks *hooks);
/* Ends every move without releasing anything (shutdown). */
void moves_done(Moves *m);

/* Starts moving u to worker `to` at now. 0, -EBUSY when u already moves, -ENOENT when A is unknown or B
 * does not take users, -EOPNOTSUPP when A cannot snapshot or B cannot install users (the caller keeps u
 * where it is), -errno. */
int move_start(Moves *m, SurfaceUser *u, unsigned to, const char *why, usec_t now);
/* As move_start(), but a user whose worker cannot snapshot users (a stateless app: nothing to carry) is
 * re-pointed instead: flagged, quiesced and switched to `to`. -EOPNOTSUPP only when A can snapshot and B
 * cannot install (A's state would be lost). */
int move_start_or_repoint(Moves *m, SurfaceUser *u, unsigned to, const char *why, usec_t now);
/* Tells wN to forget user (it left the surface: logged out elsewhere, expired). Best effort. */
void moves_send_drop(Moves *m, unsigned worker, const char *user);
/* u's open requests reached zero: a move waiting to quiesce goes on. */
void move_user_quiesced(Moves *m, SurfaceUser *u, usec_t now);
/* A Package or InstallResult frame from wN's channel. */
void move_on_frame(Moves *m, unsigned worker, const Frame *f, usec_t now);
/* wN is gone: moves from or to it end (from: U's state is gone with it; to: U stays). */
void move_worker_gone(Moves *m, unsigned worker, usec_t now);
/* u logs out or leaves: its move is cancelled (the held requests are released first). */
void move_cancel(Moves *m, SurfaceUser *u, const char *why, usec_t now);
/* The age-th most recent end (0: the latest); NULL past the ones kept. */
const MoveRecord *moves_recent(const Moves *m, unsigned age);

/* Aborts every move that has not ended timeout after it started (each move's timer calls this). */
void moves_expire(Moves *m, usec_t now);
