/* SPDX-License-Identifier: MIT */
/* WebSocket tunnels: the bytes of an upgraded exchange, followed frame by frame both ways, and their
 * ending with close 1001 at frame boundaries (see tunnel.h). The client side and the forward side do
 * not know about frames: they carry the tunnel's bytes as request and response body, with the buffers
 * and back-pressure they have for any body. */

#include "tunnel.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "frontend-internal.h"
#include "id-array.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "router.h"
#include "ws-frame.h"

struct Tunnel {
        Exchange *x;
        Frontend *fe;
        Tunnel *prev, *next;     /* fe->tunnels */
        WsFollower to_worker;    /* the client's frames */
        WsFollower to_client;    /* the worker's frames */
        usec_t last_activity;    /* a byte passed either way (the loop's time) */
        sd_event_source *timer;  /* the idle timeout; while ending, the close grace */
        const char *why;         /* why it ends (static text), for the log */
        bool ending;             /* going away: the steps of tunnel.h are under way */
        bool worker_told;        /* step 1 done: our close went to the worker */
        bool finish_at_boundary; /* the grace is over: step 3 at the next boundary of the worker's frames */
};

static void finish(Tunnel *t);
static void tunnel_end(Tunnel *t, const char *why);

static usec_t tunnel_now(Tunnel *t) {
        return frontend_now(t->fe);
}

static void timer_at(Tunnel *t, usec_t when) {
        if (!t->timer)
                return;
        if (sd_event_source_set_time(t->timer, when) < 0 ||
            sd_event_source_set_enabled(t->timer, SD_EVENT_ONESHOT) < 0)
                log_debug("Request %s: cannot arm the tunnel's timer; it ends only with its peers", t->x->id);
}

/* Idle: checked when the timer fires, not moved per byte (a tunnel's busy path stores a time, nothing
 * else). While ending: the grace for the worker's close is over. */
static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Tunnel *t = userdata;
        usec_t idle = t->fe->config->websocket_idle_timeout, now = tunnel_now(t);

        if (t->ending) {
                if (!t->finish_at_boundary)
                        log_debug("Request %s: w%u did not answer the close of its tunnel within %s s, telling "
                                  "the client anyway", t->x->id, t->x->worker, "2");
                t->finish_at_boundary = true;
                if (ws_follower_at_boundary(&t->to_client))
                        finish(t);
                return 0;
        }
        if (now - t->last_activity >= idle) {
                tunnel_end(t, "nothing passed for websocket_idle_timeout");
                return 0;
        }
        timer_at(t, t->last_activity + idle);
        return 0;
}

int tunnel_open(Exchange *x) {
        Frontend *fe = x->frontend;
        Tunnel *t;
        int r;

        if (x->tunnel)
                return 0;
        t = calloc(1, sizeof *t);
        if (!t)
                return -ENOMEM;
        t->x = x;
        t->fe = fe;
        t->last_activity = frontend_now(fe);
        if (fe->event) {
                r = sd_event_add_time(fe->event, &t->timer, CLOCK_MONOTONIC,
                                      t->last_activity + fe->config->websocket_idle_timeout, USEC_PER_SEC,
                                      on_timer, t);
                if (r < 0) {
                        free(t);
                        return r;
                }
        }
        LIST_PREPEND(fe->tunnels, t, prev, next);
        fe->n_tunnels++;
        x->tunnel = t;
        log_debug("Request %s: WebSocket tunnel to w%u open", x->id, x->worker);
        return 0;
}

void tunnel_close(Exchange *x) {
        Tunnel *t = x ? x->tunnel : NULL;
        Frontend *fe;

        if (!t)
                return;
        fe = t->fe;
        x->tunnel = NULL;
        LIST_REMOVE(fe->tunnels, t, prev, next);
        fe->n_tunnels--;
        t->timer = sd_event_source_disable_unref(t->timer);
        log_debug("Request %s: WebSocket tunnel to w%u closed (%" PRIu64 " frames to the worker, %" PRIu64
                  " to the client)",
                  x->id, x->worker, t->to_worker.frames, t->to_client.frames);
        free(t);
}

/* Step 1: our close, masked as a client's must be, goes to the worker. */
static void tell_worker(Tunnel *t) {
        uint8_t frame[WS_CLOSE_FRAME_MAX], mask[4];
        size_t n;

        /* The mask guards intermediaries against bytes a client script chose (RFC 6455 10.3); ours are a
         * fixed text, so the request id's bytes do. */
        memcpy(mask, t->x->id, sizeof mask);
        n = ws_close_frame(frame, WS_CLOSE_GOING_AWAY, "going away", mask);
        t->worker_told = true;
        (void) forward_request_body(t->x, frame, n);
}

/* Step 3: at a boundary of the worker's frames, our close goes to the client and the exchange ends; the
 * worker connection is closed (never reused). t and the tunnel are gone on return. */
static void finish(Tunnel *t) {
        Exchange *x = t->x;
        uint8_t frame[WS_CLOSE_FRAME_MAX];
        size_t n = ws_close_frame(frame, WS_CLOSE_GOING_AWAY, "going away", NULL);

        log_debug("Request %s: WebSocket tunnel to w%u ends with 1001 (%s)", x->id, x->worker, strna(t->why));
        (void) x->client->response_body(x, frame, n);
        if (x->upstream)
                forward_detach(x);
        tunnel_close(x);
        x->state = EXCHANGE_DONE;
        x->frontend->responses++;
        router_request_closed(x->frontend, x);
        (void) x->client->response_end(x);
}

static void tunnel_end(Tunnel *t, const char *why) {
        if (t->ending)
                return;
        t->ending = true;
        t->why = why;
        timer_at(t, tunnel_now(t) + TUNNEL_CLOSE_GRACE);
        if (ws_follower_at_boundary(&t->to_worker))
                tell_worker(t);
}

int tunnel_from_client(Exchange *x, const void *data, size_t size) {
        Tunnel *t = x->tunnel;
        size_t k;
        int r = 0;

        t->last_activity = tunnel_now(t);
        if (t->worker_told)
                return 0; /* after our close: never reaches the worker */
        if (!t->ending) {
                ws_follow_all(&t->to_worker, data, size);
                return forward_request_body(x, data, size);
        }
        /* the rest of the frame under way, then our close */
        k = ws_follow(&t->to_worker, data, size);
        if (k > 0)
                r = forward_request_body(x, data, k);
        if (ws_follower_at_boundary(&t->to_worker))
                tell_worker(t);
        return r < 0 ? r : 0;
}

int tunnel_client_end(Exchange *x) {
        Tunnel *t = x->tunnel;

        if (t->worker_told)
                return 0;
        return forward_request_end(x);
}

/* Ending: the worker's frames go on to the client one by one, up to its close (swallowed) or, once the
 * grace is over, up to the next boundary; then step 3. */
static int from_worker_ending(Tunnel *t, const uint8_t *p, size_t size) {
        Exchange *x = t->x;
        const uint8_t *start = p;
        size_t n = size;

        while (n > 0) {
                size_t k;

                if (ws_follower_at_boundary(&t->to_client) &&
                    (t->finish_at_boundary || ws_opcode_of(p[0]) == WS_OPCODE_CLOSE)) {
                        if (p > start)
                                (void) x->client->response_body(x, start, (size_t) (p - start));
                        finish(t);
                        return 0;
                }
                k = ws_follow(&t->to_client, p, n);
                p += k;
                n -= k;
        }
        return x->client->response_body(x, start, size);
}

int tunnel_from_worker(Exchange *x, const void *data, size_t size) {
        Tunnel *t = x->tunnel;

        t->last_activity = tunnel_now(t);
        if (!t->ending) {
                ws_follow_all(&t->to_client, data, size);
                return x->client->response_body(x, data, size);
        }
        return from_worker_ending(t, data, size);
}

/* ---- many tunnels at once ---- */

/* Ends the tunnels that match. Nothing is freed under the walk: tunnel_end() only sends (the forward side
 * calls nobody back from inside forward_request_body()), the ends come from the loop. Returns how many
 * were asked to end. */
static unsigned end_matching(Frontend *fe, bool (*match)(const Tunnel *t, const void *what), const void *what,
                             const char *why) {
        unsigned n = 0;

        for (Tunnel *t = fe->tunnels, *next; t; t = next) {
                next = t->next;
                if (t->ending || !match(t, what))
                        continue;
                n++;
                tunnel_end(t, why);
        }
        return n;
}

static bool match_all(const Tunnel *t, const void *what) {
        return true;
}

static bool match_user(const Tunnel *t, const void *what) {
        return t->x->user && streq(t->x->user, what);
}

static bool match_worker(const Tunnel *t, const void *what) {
        return t->x->worker == *(const unsigned *) what;
}

void tunnels_end_all(Frontend *fe, const char *why) {
        unsigned n = end_matching(fe, match_all, NULL, why);

        if (n > 0)
                log_info("Ending %u WebSocket tunnels with close 1001: %s", n, why);
}

void tunnels_end_user(Frontend *fe, const char *user, const char *why) {
        unsigned n = end_matching(fe, match_user, user, why);

        if (n > 0)
                log_struct(LOG_INFO, LOG_FIELDS(.event = "tunnel-end", .user = user),
                           "Ending %u WebSocket tunnels of user %s with close 1001: %s", n, user, why);
}

unsigned tunnels_count(const Frontend *fe, unsigned worker) {
        unsigned n = 0;

        for (const Tunnel *t = fe->tunnels; t; t = t->next)
                if (t->x->worker == worker)
                        n++;
        return n;
}

void tunnels_worker_draining(Frontend *fe, unsigned worker) {
        if (ID_ARRAY_ENSURE(fe->tunnels_draining, fe->tunnels_draining_slots, worker) < 0) {
                /* cannot wait for the HTTP drain: end them now rather than hold the worker */
                (void) end_matching(fe, match_worker, &worker, "their worker retires");
                return;
        }
        fe->tunnels_draining[worker] = true;
        tunnels_request_ended(fe, worker);
}

void tunnels_request_ended(Frontend *fe, unsigned worker) {
        unsigned n;

        if (worker >= fe->tunnels_draining_slots || !fe->tunnels_draining[worker])
                return;
        n = tunnels_count(fe, worker);
        if (open_requests_worker(&fe->open, worker) > n)
                return; /* HTTP requests still run on it: they finish first */
        fe->tunnels_draining[worker] = false;
        if (n == 0)
                return;
        log_struct(LOG_INFO, LOG_FIELDS(.event = "tunnel-end", .worker = (int) worker),
                   "w%u retires and its HTTP requests are done: ending its %u WebSocket tunnels with close 1001",
                   worker, n);
        (void) end_matching(fe, match_worker, &worker, "their worker retires");
}
