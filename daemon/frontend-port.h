/* SPDX-License-Identifier: MIT */
#pragma once

/* The door between the commander and its front end wing (daemon/frontend/), and the only header both
 * sides include. Each direction is one table of function pointers:
 *
 *   CommanderOps   what the front end asks of the commander: where a request goes, that a request began
 *                  or ended, that a worker's response logged a user in or out. The commander hands it to
 *                  frontend_new(); the front end includes nothing else of the commander.
 *   FrontendHooks  what the commander's modules may ask of or tell the front end: a worker became
 *                  routable, drains or is gone; a user's move ended; what the front end measured. The
 *                  front end registers it (frontend_hooks()); the manager hands it on.
 *
 * Workers are named by id (wN) on both sides: neither holds the other's objects. */

#include <stdbool.h>
#include <stdint.h>

#include "latency.h"
#include "time-util.h"

/* Where a request goes, as the commander answers it. */
typedef struct Route {
        unsigned worker; /* wN to forward to; 0: no routable worker (503), or held */
        bool held;       /* its user is moving: keep the request until FrontendHooks.release_held */
} Route;

typedef struct CommanderOps {
        /* The worker that takes a guest's request: the reception, 0 when it is not routable. */
        unsigned (*route_guest)(void *userdata);
        /* Where a request of a logged-in user goes: the worker the commander keeps it on, placed again
         * (reception-first, journaled with unknown_why) when the commander does not know the user or its
         * worker takes no requests any more; held while the user moves. */
        void (*route_user)(void *userdata, const char *user, const char *unknown_why, Route *ret);
        /* A request of user began on its worker at now (the front end's clock of the loop iteration):
         * returns the ticket that ties its end to this start (a later login of the same name is another
         * user). */
        uint64_t (*request_started)(void *userdata, const char *user, usec_t now);
        /* That request ended after busy (counted for user if the ticket is still its). */
        void (*request_ended)(void *userdata, const char *user, uint64_t ticket, usec_t busy);
        /* worker has no request open any more (a draining worker may stop now). */
        void (*worker_idle)(void *userdata, unsigned worker);
        /* worker's response logged user in. The request counted for prev_user (NULL: a guest) under
         * *ticket; when it now counts for user, *ticket is user's and 1 is returned, 0 when user already
         * lived on worker (nothing changed), -errno. Placement may move the user on. */
        int (*login)(void *userdata, const char *user, unsigned worker, const char *prev_user, uint64_t *ticket);
        /* user logged out: the commander forgets it (its move, if any, is cancelled first). */
        void (*logout)(void *userdata, const char *user);
} CommanderOps;

/* What the front end measured of one worker. */
typedef struct WorkerTraffic {
        unsigned inflight;  /* requests forwarded to it and not answered yet */
        unsigned queued;    /* of which wait in the commander for a free connection to it (with has_forward):
                             * the burst path's forward queue */
        bool has_forward;   /* the counters below are known: it has a forward pool */
        uint64_t requests;  /* responses completed, cumulative */
        uint64_t errors;    /* 5xx made by the front end (502/504) and aborted responses, cumulative */
        usec_t busy_usec;   /* sum of request durations, cumulative */
        unsigned connections;       /* open connections to it (its forward pool), with has_forward */
        LatencyHistogram latency;   /* durations of the completed responses, cumulative, with has_forward */
        uint64_t answers;   /* response heads it sent (any status), cumulative, with has_forward */
        unsigned unanswered; /* requests since its last answer that got no response head within
                              * response_timeout or could not connect, with has_forward */
} WorkerTraffic;

/* The front end's own totals, for the status surfaces. */
typedef struct FrontendTotals {
        uint64_t requests;     /* requests begun */
        uint64_t errors;       /* error responses made by the front end */
        unsigned connections;  /* open client connections */
        unsigned h2_connections; /* of which speak HTTP/2 (h2c) */
        unsigned streams;      /* requests open on client connections: HTTP/1.1 requests and HTTP/2 streams */
        /* the front end's socket set (daemon/frontend/io-batch.h): its wake-ups, the ready sockets they
         * dispatched, and the most one wake-up dispatched */
        uint64_t wakeups, socket_events;
        unsigned batch_largest;
        /* its batched socket reads and writes: through io_uring or one system call each ([frontend]
         * io_uring=; io_uring_error is why not when it was asked for: -errno, 0), the system calls they
         * took and how many they were */
        bool io_uring;
        int io_uring_error;
        uint64_t io_calls, io_ops;
} FrontendTotals;

typedef struct FrontendHooks {
        /* wN is routable at socket_path: the front end opens its forward pool and may start accepting. */
        void (*worker_routable)(void *frontend, unsigned worker, const char *socket_path);
        /* wN retires: no new requests; idle connections close, busy ones after their response. */
        void (*worker_draining)(void *frontend, unsigned worker);
        /* wN is gone: what is still on it is answered (502 before a head, aborted after). */
        void (*worker_gone)(void *frontend, unsigned worker);
        /* Requests of user held while it moves. */
        unsigned (*held_requests)(void *frontend, const char *user);
        /* The move of user ended, either way: its held requests go wherever it lives now. */
        void (*release_held)(void *frontend, const char *user);
        /* false when the front end knows nothing of wN; *ret is written whole either way (all zero then). */
        bool (*worker_traffic)(void *frontend, unsigned worker, WorkerTraffic *ret);
        void (*totals)(void *frontend, FrontendTotals *ret);

        /* WebSocket tunnels (daemon/frontend/tunnel.c). A tunnel is an open request of its user and of its
         * worker for as long as it lives; worker_draining ends the worker's tunnels (close 1001) once its
         * HTTP requests are done. */
        /* The move of user began (its flag is up, its new requests are held): its tunnels end with close
         * 1001, so that it quiesces; its clients reconnect, are held, and land on its new worker. The
         * move service calls it when a move or re-point of a user starts. */
        void (*user_moving)(void *frontend, const char *user);
} FrontendHooks;
