/* SPDX-License-Identifier: MIT */
/* The registry of client connections, whatever their protocol, and what the protocol sides read of the
 * front end. */

#include "connection.h"

#include "frontend-internal.h"
#include "log.h"

sd_event *frontend_event(Frontend *fe) {
        return fe->event;
}

const Config *frontend_config(Frontend *fe) {
        return fe->config;
}

bool frontend_shutting_down(Frontend *fe) {
        return fe->shutting_down;
}

void frontend_connection_register(Frontend *fe, FrontendConnection *c, const FrontendConnectionOps *ops,
                                  const struct sockaddr_storage *peer) {
        c->ops = ops;
        c->frontend = fe;
        c->peer = *peer;
        c->opened = now_usec(CLOCK_MONOTONIC);
        c->prev = NULL;
        c->next = fe->connections;
        if (fe->connections)
                fe->connections->prev = c;
        fe->connections = c;
        fe->n_connections++;
}

void frontend_connection_unregister(Frontend *fe, FrontendConnection *c) {
        if (c->prev)
                c->prev->next = c->next;
        else if (fe->connections == c)
                fe->connections = c->next;
        if (c->next)
                c->next->prev = c->prev;
        c->prev = c->next = NULL;
        if (fe->n_connections > 0)
                fe->n_connections--;
        if (fe->shutting_down)
                frontend_maybe_drained(fe);
}

unsigned frontend_connections_speaking(const Frontend *fe, const char *protocol) {
        unsigned n = 0;

        for (const FrontendConnection *c = fe->connections; c; c = c->next)
                n += streq(c->ops->protocol, protocol);
        return n;
}

void frontend_maybe_drained(Frontend *fe) {
        void (*cb)(void *userdata) = fe->on_drained;

        if (fe->n_connections > 0 || !cb)
                return;
        fe->on_drained = NULL;
        fe->shutdown_deadline = sd_event_source_disable_unref(fe->shutdown_deadline);
        log_info("Front end drained: every client connection closed");
        cb(fe->on_drained_userdata);
}
