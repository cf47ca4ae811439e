/* SPDX-License-Identifier: MIT */
#pragma once

/* The demo worker's WebSocket echo endpoint (GET /ws with Upgrade: websocket): the server side of RFC
 * 6455, minimal but whole — the handshake's accept key, masked client frames of any size up to
 * WS_MESSAGE_MAX, fragmented messages, ping (answered with pong), close (answered with a close of the same
 * code, then the connection ends). Every text or binary message counts one more on its user's counter,
 * the one /state counts and a live move carries (a guest's connection has a counter of its own), and is
 * answered with a message of the same type: "N W PAYLOAD", N the counter after the increment and W this
 * worker. Tests check with it that a tunnel through the commander neither loses nor repeats a message,
 * across moves and retirements. Nothing here knows about sockets: replies leave through emit(). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "user-store.h"

/* The largest message (and control frame payload) accepted; a bigger one closes with 1009. */
#define WS_MESSAGE_MAX (1024U * 1024U)
/* "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=": base64 of a SHA-1, NUL-terminated. */
#define WS_ACCEPT_SIZE 29

typedef struct WsConn WsConn;

/* Sec-WebSocket-Accept for the client's Sec-WebSocket-Key (RFC 6455 4.2.2). 0 or -EINVAL (no key). */
int ws_accept_key(const char *key, size_t key_len, char out[static WS_ACCEPT_SIZE]);

/* user: the connection's user (NULL: a guest); worker: what replies name. 0 or -ENOMEM. */
int ws_conn_new(const char *user, const char *worker, WsConn **ret);
WsConn *ws_conn_free(WsConn *w);

typedef int (*WsEmit)(void *ctx, const void *data, size_t size);

/* Takes n bytes of the client's: complete frames are answered through emit (0 or -errno, which ends the
 * connection). Returns 1 while the connection goes on, 0 once a close was answered (close the
 * connection), -errno (a protocol error was answered with its close code; close the connection). */
int ws_conn_feed(WsConn *w, UserStore *users, const uint8_t *data, size_t n, WsEmit emit, void *ctx);
