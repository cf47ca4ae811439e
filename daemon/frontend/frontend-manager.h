/* SPDX-License-Identifier: MIT */
#pragma once

/* The Frontend object as the commander, the router, moves and the admin surface see it. Client-side
 * protocol code uses only frontend.h. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "cookie.h"
#include "frontend-port.h"
#include "frontend.h"
#include "manager.h"
#include "surface.h"

/* Suppressed error lines are counted per status 400..599, plus one count for those without a status. */
#define FRONTEND_LOG_STATUSES 201

typedef struct Listener {
        int fd;
        sd_event_source *io;
        char *address; /* for logs */
        bool ours;     /* opened from listen=, not handed over by systemd (which keeps its own copy) */
} Listener;

struct Frontend {
        Manager *manager;
        sd_event *event;
        const Config *config;

        Listener *listeners;
        size_t n_listeners;
        FrontendConnection *connections;
        unsigned n_connections;

        Surface surface;
        CookieKey cookie_key;
        char *state_dir;
        ConfigPrefix *trusted;
        size_t n_trusted;
        bool trust_unix;       /* trusted_proxies has "unix": peers on a Unix socket listener are trusted */

        /* logouts, and the stamps of cookies (cookie.h) */
        CookieRevocations revocations;
        uint64_t cookie_epoch;   /* stamped at start: cookies stamped at or before it predate us */
        usec_t cookie_age_max;   /* the longest cookie_max_age any cookie of ours was given */
        unsigned revocations_evicted; /* logouts forgotten past max_revoked_users since the last warning */
        bool revocations_warned;
        usec_t revocations_warned_at;

        Move *moves;          /* in progress */
        uint64_t next_move_id;

        uint64_t prng[2];     /* request ids: unique enough, not secrets */

        bool shutting_down;
        sd_event_source *shutdown_deadline;
        void (*on_drained)(Frontend *fe); /* every client connection closed after shutdown */

        sd_event_source *sweep_timer;
        sd_event_source *ready_timer;

        /* The rate limit of error lines (request errors and client-caused ones): a flood, or an overloaded
         * pool answering 503 to everyone, must not become a journal flood. What is left out is counted by
         * status and reported when its second is over, by a timer, so it is reported even when nothing
         * follows. */
        usec_t log_window_start;
        unsigned log_in_window;
        unsigned log_suppressed[FRONTEND_LOG_STATUSES]; /* [0] without a status, [s - 399] for 400..599 */
        unsigned log_suppressed_total;
        sd_event_source *log_flush_timer;

        uint64_t requests, responses, errors, held, rejected_connections;
};

typedef struct FrontendOptions {
        const char *state_dir; /* NULL: $STATE_DIRECTORY, /var/lib/elastic-pool/<group>, $XDG_STATE_HOME/... */
} FrontendOptions;

/* Opens the listeners (listen= or LISTEN_FDS), loads the cookie key, hooks into the manager.
 * 0 or -errno (logged). */
int frontend_new(Manager *m, const FrontendOptions *o, Frontend **ret);
Frontend *frontend_free(Frontend *fe);

/* SIGTERM: stop accepting, let every connection finish what it accepted; calls on_drained once the
 * last connection closed or shutdown_timeout passed (then the rest are closed). */
void frontend_begin_shutdown(Frontend *fe, void (*on_drained)(Frontend *fe));

/* What the front end measured of worker w. */
void frontend_worker_traffic(Frontend *fe, const Worker *w, WorkerTraffic *ret);

/* A client-caused error worth a line, rate-limited across the front end. */
void frontend_log_client_error(Frontend *fe, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* A line about request x through the same rate limit: its error response (status 400..599) or, with
 * status 0, something the client did wrong in it. The message must name x->id; the entry also carries
 * EP_REQUEST_ID (and EP_STATUS), EP_WORKER and EP_USER. Lines left out are counted by status and reported
 * ("... and 180 more 503s in the last second") when the second ends. */
void frontend_log_request(Frontend *fe, const Exchange *x, unsigned status, const char *format, ...)
        __attribute__((format(printf, 4, 5)));

/* The EP_REQUEST_ID=/EP_STATUS= journal fields of x (LogFields.extra), written into buf (at least
 * REQUEST_LOG_FIELDS_MAX bytes); status 0 leaves EP_STATUS out. Returns buf. */
#define REQUEST_LOG_FIELDS_MAX 80
const char *request_log_fields(char *buf, size_t size, const Exchange *x, unsigned status);

/* Reports the error lines the rate limit left out so far, if any (the timer does it when the second
 * ends; exposed for shutdown and tests). */
void frontend_log_flush(Frontend *fe);

/* Re-dispatches held exchanges of u (after its move ended either way). */
void router_release_held(Frontend *fe, SurfaceUser *u);
/* Answers every held exchange of u with 503 (the user left). */
void router_fail_held(Frontend *fe, SurfaceUser *u, const char *reason);

/* The state directory resolution rule (exposed for tests). */
int frontend_state_dir(const char *group, const char *override, char **ret);
