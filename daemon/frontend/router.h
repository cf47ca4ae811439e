/* SPDX-License-Identifier: MIT */
#pragma once

/* Where a request goes: the commander names the worker (the user's, or the reception for a guest);
 * while its user moves the request is held here, body included; otherwise it starts on that worker's
 * forward pool and is counted open until it ends. Every refusal is answered with its status (503 with
 * Retry-After when no worker can take it). */

#include "exchange.h"
#include "time-util.h"

/* x's head is complete and its user resolved: forward it, hold it, or answer it. */
void router_dispatch(Frontend *fe, Exchange *x);

/* Answers x without a worker: status (400..599), Retry-After when retry_after > 0. */
void router_fail_early(Frontend *fe, Exchange *x, unsigned status, unsigned retry_after, const char *reason);

/* Body bytes of a held request wait with it: 0, 1 over the high-water mark (the client side pauses),
 * -errno. end: the body ended. */
int router_hold_body(Exchange *x, const void *data, size_t size, bool end);
/* Hands the body bytes kept for x (held, or a WebSocket handshake's before the worker's 101) to body and,
 * when the body had ended, calls end; then resumes the client side if it was paused. */
void router_replay_held_body(Exchange *x, int (*body)(Exchange *x, const void *data, size_t size),
                             int (*end)(Exchange *x));
/* x goes away while held: it leaves its user's queue. */
void router_unhold(Frontend *fe, Exchange *x);

/* Re-dispatches the held requests of user, in the order they came (its move ended either way). */
void router_release_held(Frontend *fe, const char *user);
/* Answers every held request of user with 503 (the user left). */
void router_fail_held(Frontend *fe, const char *user, const char *reason);

/* x's request ended (answered, failed or abandoned): it leaves the open requests, and the commander is
 * told (its user's consumption; a worker with nothing open). Once per exchange. */
void router_request_closed(Frontend *fe, Exchange *x);

/* Takes out open entries older than max_age (an exchange leaked them); returns how many. */
unsigned router_sweep(Frontend *fe, usec_t now, usec_t max_age);
