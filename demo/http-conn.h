/* SPDX-License-Identifier: MIT */
#pragma once

/* One HTTP/1.1 connection of the demo worker: reading, parsing with http-parser, running the handler of
 * every complete request in order (pipelining), writing the responses. connection_process() runs on an
 * executor thread that owns the connection for the duration of the call; the event loop owns it
 * otherwise (see server.c for the hand-over). */

#include <http_parser.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor.h"
#include "handlers.h"
#include "time-util.h"
#include "user-store.h"
#include "websocket.h"

/* Limits of a request head; past them the answer is 414/431 and the connection is closed. */
#define REQUEST_URL_MAX 8192
#define REQUEST_HEAD_MAX 16384 /* request line + header fields and values */
#define REQUEST_HEADERS_MAX 100
/* A client that stops reading its responses loses the connection after this long. */
#define CONNECTION_WRITE_TIMEOUT_MSEC 30000

#define CONN_IN_SIZE (64 * 1024)
#define CONN_OUT_SIZE (64 * 1024)

/* Per executor thread: the buffers a connection needs only while it is being processed, so an idle
 * connection costs a parser and a little state, not buffers. */
typedef struct ConnScratch {
        char in[CONN_IN_SIZE];
        char out[CONN_OUT_SIZE];
        size_t out_len;
        HttpResponse resp;
} ConnScratch;

typedef enum HeaderKind {
        HEADER_OTHER,
        HEADER_USER,   /* X-Elastic-Pool-User */
        HEADER_EXPECT, /* Expect */
        HEADER_UPGRADE, /* Upgrade */
        HEADER_WS_KEY, /* Sec-WebSocket-Key */
} HeaderKind;

/* The request being parsed; reset at every message begin. */
typedef struct RequestState {
        char *url; /* heap, kept across requests, grown up to REQUEST_URL_MAX + 1 */
        size_t url_len, url_cap;
        size_t head_bytes;
        unsigned n_headers;
        enum { HEADER_STATE_NONE, HEADER_STATE_FIELD, HEADER_STATE_VALUE } header_state;
        char field[32];
        size_t field_len; /* may exceed sizeof(field): then the name is none we look for */
        HeaderKind kind;
        char value[USER_NAME_MAX + 2]; /* one more than a valid name, to see it is too long */
        size_t value_len;
        char user[USER_NAME_MAX + 1];
        bool user_present, user_invalid, expect_continue;
        bool upgrade_websocket; /* Upgrade: websocket */
        char ws_key[64];        /* Sec-WebSocket-Key */
        size_t ws_key_len;
        bool keep_alive;
        enum http_method method;
        uint64_t body_bytes;
        int error_status; /* set by a callback that failed the parse on purpose (413, 414, 431) */
        const char *error_reason;
} RequestState;

typedef struct Connection {
        ExecutorJob job;
        int fd;

        /* Owned by the server (server.c): list links under its lock, and the idle bookkeeping that the
         * event loop reads while the connection waits in epoll. */
        struct Connection *prev, *next;
        _Atomic usec_t armed_since; /* 0 while an executor has it */
        atomic_bool armed_partial;  /* it waits in the middle of a request */

        http_parser parser;
        RequestState req;
        bool in_message;
        bool lingering; /* answered an error and half-closed: discarding input until EOF */
        WsConn *ws;     /* after a 101 on /ws: the WebSocket echo (websocket.h) */

        /* Valid during connection_process() only. */
        App *app;
        ConnScratch *scratch;
        bool stopping;
} Connection;

/* Takes over fd (made non-blocking by the caller). 0 or -ENOMEM. */
int connection_new(int fd, Connection **ret);
/* Closes the fd and frees. Accepts NULL; returns NULL. */
Connection *connection_free(Connection *c);

/* Reads what is there, answers every complete request, writes the answers. While stopping, answers
 * carry "Connection: close". Returns true when the connection stays open (re-arm it), false when it
 * must be closed: peer gone, "Connection: close", write failure. A protocol error is answered, then the
 * connection half-closed and kept (true) until the peer closes its side. */
bool connection_process(Connection *c, App *app, ConnScratch *scratch, bool stopping);
