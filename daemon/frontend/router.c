/* SPDX-License-Identifier: MIT */
#include "router.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "frontend-internal.h"
#include "log.h"
#include "macro.h"
#include "session.h"

/* A held request's body is buffered up to this much while it waits (the client side pauses). */
#define HELD_BODY_MAX (256U * 1024U)

struct HeldBody {
        size_t size;
        bool ended;
        uint8_t data[];
};

void router_fail_early(Frontend *fe, Exchange *x, unsigned status, unsigned retry_after, const char *reason) {
        x->state = EXCHANGE_DONE;
        x->status = status;
        fe->errors++;
        /* rate-limited: an overloaded pool answers 503 to everyone; what is left out is counted by status */
        frontend_log_request(fe, x, status, "Request %s %.*s %.*s: %u %s", x->id, (int) x->req.method_len,
                             x->req.method, (int) MIN(x->req.target_len, 200U), x->req.target, status,
                             reason);
        x->client->response_error(x, status, retry_after, reason);
}

/* ---- open requests ---- */

static void request_opened(Frontend *fe, Exchange *x) {
        if (x->user)
                x->ticket = fe->commander->request_started(fe->commander_userdata, x->user, x->started);
}

/* The commander hears of the end once: a request swept before its end was told then. */
static void request_ended(Frontend *fe, Exchange *x, usec_t now) {
        if (x->user)
                fe->commander->request_ended(fe->commander_userdata, x->user, x->ticket, now - x->started);
        if (fe->n_tunnels > 0 && fe->tunnel_request_ended)
                fe->tunnel_request_ended(fe, x->worker);
        if (open_requests_worker(&fe->open, x->worker) == 0)
                fe->commander->worker_idle(fe->commander_userdata, x->worker);
}

void router_request_closed(Frontend *fe, Exchange *x) {
        if (!open_requests_remove(&fe->open, x))
                return; /* closed already, swept, or never opened */
        request_ended(fe, x, frontend_now(fe));
}

unsigned router_sweep(Frontend *fe, usec_t now, usec_t max_age) {
        unsigned n = 0;
        Exchange *x;

        open_requests_sweep_begin(&fe->open);
        while (open_requests_sweep_next(&fe->open, now, max_age, &x)) {
                request_ended(fe, x, now);
                n++;
        }
        return n;
}

/* ---- forwarding ---- */

static void start_on(Frontend *fe, Exchange *x, unsigned worker, ForwardPool *pool) {
        int r;

        x->worker = worker;
        r = open_requests_add(&fe->open, x);
        if (r < 0) {
                router_fail_early(fe, x, 503, 1, "out of memory");
                return;
        }
        request_opened(fe, x);
        x->state = EXCHANGE_FORWARDING;
        r = forward_start(pool, x);
        if (r < 0) {
                router_request_closed(fe, x);
                x->state = EXCHANGE_NEW;
                if (r == -EBADMSG || r == -EINVAL)
                        router_fail_early(fe, x, 400, 0, "the request carries bytes that cannot be forwarded");
                else
                        router_fail_early(fe, x, 503, 1,
                                          r == -EBUSY ? "the worker's connections are all busy and its queue is full"
                                          : r == -EDQUOT ? "this client has its share of the worker's queue waiting"
                                          : r == -ESHUTDOWN ? "the worker is draining"
                                                            : "cannot reach the worker");
                return;
        }
        if (x->req.expect_continue && x->client->request_continue)
                x->client->request_continue(x);
}

void router_replay_held_body(Exchange *x, int (*body)(Exchange *x, const void *data, size_t size),
                             int (*end)(Exchange *x)) {
        HeldBody *b = TAKE_PTR(x->held_body);
        bool ended;

        if (!b)
                return;
        ended = b->ended;
        if (b->size > 0)
                (void) body(x, b->data, b->size);
        if (ended)
                (void) end(x);
        free(b);
        if (x->request_body_paused) {
                x->request_body_paused = false;
                x->client->request_body_resume(x);
        }
}

/* Replays body bytes that arrived while the exchange was held. A WebSocket handshake's wait for the
 * worker's 101 (its tunnel replays them). */
static void flush_held_body(Exchange *x) {
        if (!x->req.websocket)
                router_replay_held_body(x, forward_request_body, forward_request_end);
}

/* ---- held requests ---- */

static void held_queue_free(HeldQueue *q) {
        q->timer = sd_event_source_disable_unref(q->timer);
        free(q->user);
        free(q);
}

static int on_hold_timeout(sd_event_source *s, uint64_t usec, void *userdata);

/* The queue's timer goes off when its first exchange has waited hold_timeout. */
static int held_queue_arm(HeldQueue *q) {
        usec_t at = q->first->held_since + q->fe->config->hold_timeout;

        if (q->timer) {
                (void) sd_event_source_set_time(q->timer, at);
                return sd_event_source_set_enabled(q->timer, SD_EVENT_ONESHOT);
        }
        return sd_event_add_time(q->fe->event, &q->timer, CLOCK_MONOTONIC, at, 10 * USEC_PER_MSEC,
                                 on_hold_timeout, q);
}

static HeldQueue *held_queue(Frontend *fe, const char *user, bool create) {
        HeldQueue *q = strmap_get(&fe->held, user);

        if (q || !create)
                return q;
        q = calloc(1, sizeof *q);
        if (!q)
                return NULL;
        q->fe = fe;
        q->user = strdup(user);
        if (!q->user || strmap_put(&fe->held, q->user, q, NULL) < 0) {
                held_queue_free(q);
                return NULL;
        }
        return q;
}

/* Takes the queue out of the map: what is in it is the caller's now. */
static Exchange *held_take(Frontend *fe, const char *user) {
        HeldQueue *q = strmap_remove(&fe->held, user);
        Exchange *first;

        if (!q)
                return NULL;
        first = q->first;
        held_queue_free(q);
        return first;
}

static void hold(Frontend *fe, Exchange *x) {
        HeldQueue *q = held_queue(fe, x->user, true);

        if (!q) {
                router_fail_early(fe, x, 503, 1, "out of memory");
                return;
        }
        x->state = EXCHANGE_HELD;
        x->held_since = now_usec(CLOCK_MONOTONIC);
        fe->holds++;
        x->held_next = NULL;
        if (q->last)
                q->last->held_next = x;
        else
                q->first = x;
        q->last = x;
        x->upstream = NULL;
        q->n++;
        if (q->n == 1 && held_queue_arm(q) < 0)
                log_warning("Cannot time the hold of %s's requests: they wait for the end of its move",
                            x->user);
}

void router_unhold(Frontend *fe, Exchange *x) {
        HeldQueue *q = x->user ? strmap_get(&fe->held, x->user) : NULL;
        Exchange *prev = NULL;

        if (q)
                for (Exchange *e = q->first; e; prev = e, e = e->held_next) {
                        if (e != x)
                                continue;
                        if (prev)
                                prev->held_next = x->held_next;
                        else
                                q->first = x->held_next;
                        if (q->last == x)
                                q->last = prev;
                        q->n--;
                        break;
                }
        x->held_next = NULL;
        if (q && q->n == 0)
                (void) held_take(fe, x->user); /* empty: nothing to hand over */
}

int router_hold_body(Exchange *x, const void *data, size_t size, bool end) {
        HeldBody *b = x->held_body;
        size_t have = b ? b->size : 0;

        if (have + size > HELD_BODY_MAX + 65536)
                return -ENOBUFS;
        b = realloc(b, sizeof *b + have + size);
        if (!b)
                return -ENOMEM;
        if (!x->held_body)
                b->ended = false;
        if (size > 0)
                memcpy(b->data + have, data, size);
        b->size = have + size;
        b->ended = b->ended || end;
        x->held_body = b;
        if (b->size >= HELD_BODY_MAX) {
                x->request_body_paused = true;
                return 1;
        }
        return 0;
}

void router_dispatch(Frontend *fe, Exchange *x) {
        Route route = {};
        ForwardPool *pool;

        if (x->user)
                fe->commander->route_user(fe->commander_userdata, x->user, session_unknown_user_reason(fe, x),
                                          &route);
        else
                route.worker = fe->commander->route_guest(fe->commander_userdata);
        if (route.held) {
                hold(fe, x);
                return;
        }
        pool = frontend_forward_pool(fe, route.worker);
        if (route.worker == 0 || !pool) {
                router_fail_early(fe, x, 503, 1, "no routable worker");
                return;
        }
        start_on(fe, x, route.worker, pool);
        if (x->state == EXCHANGE_FORWARDING)
                flush_held_body(x);
}

/* What waited hold_timeout gets 503 with Retry-After, whether or not the move has ended; the rest waits
 * on. Answering one may close its connection and unhold others of the queue: the queue is looked up
 * again each time. */
static int on_hold_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        HeldQueue *q = userdata;
        Frontend *fe = q->fe;
        _cleanup_free_ char *user = strdup(q->user);
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (!user)
                return 0; /* tried again on the release */
        while ((q = strmap_get(&fe->held, user)) && q->first &&
               now - q->first->held_since >= fe->config->hold_timeout) {
                Exchange *x = q->first;

                router_unhold(fe, x);
                x->state = EXCHANGE_NEW;
                router_fail_early(fe, x, 503, 1, "held past hold_timeout while its user moved");
        }
        if (q && q->first)
                (void) held_queue_arm(q);
        return 0;
}

void router_release_held(Frontend *fe, const char *user) {
        Exchange *x = held_take(fe, user);

        while (x) {
                Exchange *next = x->held_next;
                x->held_next = NULL;
                x->state = EXCHANGE_NEW;
                if (now_usec(CLOCK_MONOTONIC) - x->held_since > fe->config->hold_timeout)
                        router_fail_early(fe, x, 503, 1, "held past hold_timeout while its user moved");
                else
                        router_dispatch(fe, x);
                x = next;
        }
}

void router_fail_held(Frontend *fe, const char *user, const char *reason) {
        Exchange *x = held_take(fe, user);

        while (x) {
                Exchange *next = x->held_next;
                x->held_next = NULL;
                x->state = EXCHANGE_NEW;
                router_fail_early(fe, x, 503, 1, reason);
                x = next;
        }
}
