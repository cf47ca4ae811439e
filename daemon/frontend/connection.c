/* SPDX-License-Identifier: MIT */
/* The registry of client connections, whatever their protocol, and what the protocol sides read of the
 * front end. */

#include "connection.h"

#include "frontend-internal.h"
#include "list.h"
#include "log.h"

sd_event *frontend_event(Frontend *fe) {
        return fe->event;
}

IoBatch *frontend_io_batch(Frontend *fe) {
        return fe->batch;
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
        LIST_PREPEND(fe->connections, c, prev, next);
        fe->n_connections++;
        trim_schedule_opened(&fe->trim, fe->n_connections);
}

/* A burst just ended: frontend-trim.c's timer gives its memory back at `at` (the timer is the front
 * end's; arming it is a set_time on the rare close that ends a burst, not one per close). */
static void trim_arm(Frontend *fe, usec_t at) {
        if (!fe->trim_timer)
                return;
        if (sd_event_source_set_time(fe->trim_timer, at) < 0 ||
            sd_event_source_set_enabled(fe->trim_timer, SD_EVENT_ONESHOT) < 0) {
                log_debug("Failed to arm the memory trim timer, ignoring");
                fe->trim.armed = false; /* the next close that ends a burst tries again */
        }
}

void frontend_connection_unregister(Frontend *fe, FrontendConnection *c) {
        usec_t trim_at;

        if (c->prev || fe->connections == c) /* registered */
                LIST_REMOVE(fe->connections, c, prev, next);
        if (fe->n_connections > 0)
                fe->n_connections--;
        trim_at = trim_schedule_closed(&fe->trim, fe->n_connections, frontend_now(fe));
        if (trim_at != 0)
                trim_arm(fe, trim_at);
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
