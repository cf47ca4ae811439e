/* SPDX-License-Identifier: MIT */
#pragma once

/* The Frontend object, shared by the wing's files (frontend.c, connection.c, error-log.c, exchange.c,
 * router.c, session.c) and their unit tests. The protocol sides (h1-*, h2-*) and the forward side do not
 * need it: they reach the front end through connection.h, error-log.h and exchange.h. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "accept-pause.h"
#include "config.h"
#include "connection.h"
#include "cookie.h"
#include "error-log.h"
#include "forward.h"
#include "frontend-port.h"
#include "frontend.h"
#include "hashmap.h"
#include "io-batch.h"
#include "open-requests.h"
#include "trim-schedule.h"

typedef struct Listener {
        int fd;
        sd_event_source *io;
        char *address; /* for logs */
        bool ours;     /* a listen= address (opened by us, or by a run of ours before a restart, and kept in
                        * systemd's fd store), not a socket unit's (which systemd keeps itself) */
        bool waited;   /* clients may have queued before we ran: accepts once a worker is routable */
} Listener;

/* The requests of one user held while it moves, in the order they came. */
typedef struct HeldQueue {
        char *user;    /* the key */
        Exchange *first, *last; /* in the order they came: the first has waited longest */
        unsigned n;
        Frontend *fe;
        sd_event_source *timer; /* the first's hold_timeout: 503 for what waited that long */
} HeldQueue;

struct Frontend {
        sd_event *event;
        IoBatch *batch; /* the client and worker sockets, dispatched many per wake-up */
        int io_uring_error; /* why the batch has no io_uring although io_uring=yes: -errno; 0 */
        const Config *config;
        const CommanderOps *commander;
        void *commander_userdata;

        Listener *listeners;
        size_t n_listeners;
        FrontendConnection *connections;
        unsigned n_connections;

        /* per worker, by id: the keep-alive connections to it, and what is open on it */
        ForwardPool **forward;
        unsigned forward_slots;
        OpenRequests open;
        StrMap held;             /* user → HeldQueue, while the user moves */

        /* WebSocket tunnels (tunnel.c), and by worker id: retiring, its tunnels end once its HTTP requests
         * are done */
        Tunnel *tunnels;
        unsigned n_tunnels;
        bool *tunnels_draining;
        unsigned tunnels_draining_slots;
        /* tunnels_request_ended(), called by the router (a hook: the tunnel calls the router, not back) */
        void (*tunnel_request_ended)(Frontend *fe, unsigned worker);

        CookieKey cookie_key;
        char *state_dir;
        ConfigPrefix *trusted;
        size_t n_trusted;
        bool trust_unix;         /* trusted_proxies has "unix": peers on a Unix socket listener are trusted */

        /* logouts, and the stamps of cookies (cookie.h) */
        CookieRevocations revocations;
        uint64_t cookie_epoch;   /* stamped at start: cookies stamped at or before it predate us */
        usec_t cookie_age_max;   /* the longest cookie_max_age any cookie of ours was given */
        unsigned revocations_evicted; /* logouts forgotten past max_revoked_users since the last warning */
        bool revocations_warned;
        usec_t revocations_warned_at;

        uint64_t prng[2];        /* request ids: unique enough, not secrets */

        bool shutting_down;
        sd_event_source *shutdown_deadline;
        void (*on_drained)(void *userdata); /* every client connection closed after shutdown */
        void *on_drained_userdata;

        sd_event_source *sweep_timer;
        /* memory given back after a burst (frontend-trim.c): armed by the close that ends one */
        TrimSchedule trim;
        sd_event_source *trim_timer;
        sd_event_source *ready_timer;
        bool listeners_held;     /* frontend_hold_listeners(): a restarted commander takes its workers back */
        AcceptPause accept_pause; /* out of file descriptors: accepting paused, retried on a timer */
        int fd_high_water;       /* an accepted descriptor at or over this leaves too few for the rest */

        /* the rate limit of error lines (error-log.c) */
        usec_t log_window_start;
        unsigned log_in_window;
        unsigned log_suppressed[FRONTEND_LOG_STATUSES]; /* [0] without a status, [s - 399] for 400..599 */
        unsigned log_suppressed_total;
        sd_event_source *log_flush_timer;

        uint64_t requests, responses, errors, holds, rejected_connections;
        unsigned exchanges_open; /* requests alive on client connections (HTTP/1.1 requests, h2 streams) */
};

/* The memory trim's timer, off until a burst ends (frontend-trim.c). 0 or -errno. */
int frontend_trim_start(Frontend *fe);

/* The loop's time of this iteration: what exchanges are stamped with, without a clock read per call. */
static inline usec_t frontend_now(const Frontend *fe) {
        return io_batch_now(fe->batch);
}

/* The forward pool of wN; NULL when it has none (not routable, or gone). */
static inline ForwardPool *frontend_forward_pool(const Frontend *fe, unsigned worker) {
        return worker < fe->forward_slots ? fe->forward[worker] : NULL;
}
