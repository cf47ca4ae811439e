/* SPDX-License-Identifier: MIT */
#pragma once

/* The Frontend object as the commander, the router, moves and the admin surface see it. Client-side
 * protocol code uses only frontend.h. */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "cookie.h"
#include "frontend.h"
#include "manager.h"
#include "surface.h"

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

        Move *moves;          /* in progress */
        uint64_t next_move_id;

        uint64_t prng[2];     /* request ids: unique enough, not secrets */

        bool shutting_down;
        sd_event_source *shutdown_deadline;
        void (*on_drained)(Frontend *fe); /* every client connection closed after shutdown */

        sd_event_source *sweep_timer;
        sd_event_source *ready_timer;

        /* log rate limit for client-caused errors: a flood must not become a journal flood */
        usec_t log_window_start;
        unsigned log_in_window;
        unsigned log_suppressed;

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

/* Fills the commander-side measures of a report row for worker w. */
void frontend_fill_row(Frontend *fe, const Worker *w, Row *row);

/* A client-caused error worth a line, rate-limited across the front end. */
void frontend_log_client_error(Frontend *fe, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* Re-dispatches held exchanges of u (after its move ended either way). */
void router_release_held(Frontend *fe, SurfaceUser *u);
/* Answers every held exchange of u with 503 (the user left). */
void router_fail_held(Frontend *fe, SurfaceUser *u, const char *reason);

/* The state directory resolution rule (exposed for tests). */
int frontend_state_dir(const char *group, const char *override, char **ret);
