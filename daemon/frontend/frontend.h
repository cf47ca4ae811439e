/* SPDX-License-Identifier: MIT */
#pragma once

/* The front end wing of the commander: listeners, client connections (HTTP/1.1 and h2c), the routing of
 * each request to a worker (sticky by signed cookie), forwarding over the workers' sockets. What the
 * commander sees of it: made with the CommanderOps it may call, reached through the FrontendHooks it
 * registers (frontend-port.h), stopped with frontend_begin_shutdown(). */

#include <systemd/sd-event.h>

#include "config.h"
#include "frontend-port.h"

typedef struct Frontend Frontend;

typedef struct FrontendOptions {
        sd_event *event;
        const Config *config;
        const char *group;
        const char *state_dir;           /* NULL: $STATE_DIRECTORY, /var/lib/elastic-pool/<group>, $XDG_STATE_HOME/... */
        const CommanderOps *commander;   /* what the front end may ask of the commander */
        void *commander_userdata;
        /* sockets systemd passed (LISTEN_FDS), taken over: those named "listen-..." are listen= sockets
         * of an earlier run kept in the fd store; any other is a socket unit's and replaces listen= */
        const int *fds;
        char *const *fd_names;
        size_t n_fds;
} FrontendOptions;

/* Opens the listeners (listen=, or the sockets passed in the options) and loads the cookie key; every
 * listen= socket goes to systemd's fd store, so a restart finds it with its queue. 0 or -errno (logged). */
int frontend_new(const FrontendOptions *o, Frontend **ret);
Frontend *frontend_free(Frontend *fe);

/* The front end's hooks; the frontend is their first argument. */
extern const FrontendHooks frontend_hooks;

/* SIGTERM: stop accepting, let every connection finish what it accepted; calls on_drained(userdata)
 * once the last connection closed or shutdown_timeout passed (then the rest are closed). */
void frontend_begin_shutdown(Frontend *fe, void (*on_drained)(void *userdata), void *userdata);

/* A restarted commander takes its workers back: until frontend_release_listeners(), no listener accepts
 * (clients wait in the queues), so every user with a cookie finds the worker that holds its state. */
void frontend_hold_listeners(Frontend *fe);
void frontend_release_listeners(Frontend *fe, const char *why);

/* The configuration (the same Config, reloaded in place) changed: listen= addresses that left close and
 * new ones open (the others go on untouched), trusted_proxies are read again; timeouts and limits are
 * read where they are used. 0, or -errno when a new address could not be opened (logged). */
int frontend_reload(Frontend *fe);

/* The state directory resolution rule (exposed for tests). */
int frontend_state_dir(const char *group, const char *override, char **ret);
