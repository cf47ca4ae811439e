/* SPDX-License-Identifier: MIT */
#pragma once

/* A WebSocket tunnel: an exchange whose worker answered its upgrade with 101. From then on the bytes of
 * both ways pass through unchanged (the client side and the forward side carry them as request and
 * response body, with their bounded buffers and back-pressure), while a WsFollower per direction keeps
 * track of where frames end. The tunnel is an open request of its user, and of its worker, for as long
 * as it lives.
 *
 * Ending it ("going away": its worker retires once its HTTP requests are done, its user moves, the front
 * end shuts down, or nothing passed for websocket_idle_timeout) is a closing handshake with the worker on
 * the client's behalf, then one with the client on the worker's:
 *   1. at the next boundary of the client's frames, a masked close 1001 goes to the worker; what the
 *      client sends after that is dropped (the worker never sees it, so a client that sends it again
 *      after reconnecting duplicates nothing);
 *   2. the worker's frames go on to the client up to the worker's own close frame, which is swallowed:
 *      every message the worker took is answered before the end;
 *   3. a close 1001 goes to the client, the worker connection is closed, and the client side ends the
 *      response (HTTP/1.1: the connection drains and closes; HTTP/2: END_STREAM).
 * A worker that does not answer within TUNNEL_CLOSE_GRACE gets step 3 at the next boundary of its
 * frames. A frame is never cut: a peer stuck in the middle of one keeps the tunnel until the worker is
 * stopped (drain_timeout), which aborts it like any request. */

#include <stdbool.h>
#include <stddef.h>

#include "exchange.h"
#include "time-util.h"

/* How long the worker gets to answer our close before the client is told anyway. */
#define TUNNEL_CLOSE_GRACE (2 * USEC_PER_SEC)

/* x's worker answered its handshake with 101: x becomes a tunnel (x->tunnel), counted open until it
 * ends. Body bytes the client sent before the 101 are passed on now. 0 or -ENOMEM. */
int tunnel_open(Exchange *x);
/* The exchange ends (either side closed, failed, or is freed): the tunnel's state goes. Accepts x
 * without a tunnel. */
void tunnel_close(Exchange *x);

/* Bytes of the client for the worker, and the client's end of them: as exchange_request_body() and
 * exchange_request_end(). */
int tunnel_from_client(Exchange *x, const void *data, size_t size);
int tunnel_client_end(Exchange *x);
/* Bytes of the worker for the client: as ExchangeReplies.response_body. */
int tunnel_from_worker(Exchange *x, const void *data, size_t size);

/* Ends every tunnel (of worker; of user) with 1001, as above; why goes to the log. */
void tunnels_end_all(Frontend *fe, const char *why);
void tunnels_end_user(Frontend *fe, const char *user, const char *why);
/* worker retires: its tunnels end once its other requests (the HTTP drain) are done. */
void tunnels_worker_draining(Frontend *fe, unsigned worker);
/* A request on worker ended: when the worker drains and only tunnels are left on it, they end now. */
void tunnels_request_ended(Frontend *fe, unsigned worker);
/* Tunnels open now (all; on worker). */
unsigned tunnels_count(const Frontend *fe, unsigned worker);
