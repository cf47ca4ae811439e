/* SPDX-License-Identifier: MIT */
#pragma once

/* One request/response exchange of the front end: a client stream (a request on an HTTP/1.1
 * connection, or an HTTP/2 stream) on one side, a worker's keep-alive HTTP/1.1 connection on the other.
 *
 *   client side (h1-*.c, h2-*.c)         exchange.c / router.c / session.c      forward side (forward*.c)
 *   parses the request head, fills x->req --> exchange_begin(x):
 *                                             user from cookie (session.c), worker
 *                                             from the commander, holds, 503s
 *                                             (router.c)                    -----> forward_start(x)
 *   body bytes  --> exchange_request_body() ---------------------------------------> upstream socket
 *                                                                                    response head parsed
 *   ClientOps.response_head <---------------- exchange_response_head():  <--------- (through x->replies)
 *                                             login/logout, Set-Cookie
 *   ClientOps.response_body <------------------------------------------------------- body bytes
 *
 * Calls go one way, down the picture: the client side and the forward side are each reached back only
 * through a table of function pointers (ClientOps, ExchangeReplies), so neither depends on the router.
 *
 * Ownership: the client side allocates the Exchange (exchange_new) and frees it (exchange_free) once
 * it is done with it, which detaches the forward side first. The forward side never frees it.
 * Flow control is by return values: a sink that takes bytes over its high-water mark returns 1 and
 * later calls the matching resume function; bytes handed over are always taken (copied if needed),
 * so no parser ever has to "unconsume" input. Nothing here blocks. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "time-util.h"

typedef struct Exchange Exchange;
typedef struct Frontend Frontend;
typedef struct Upstream Upstream;
typedef struct HeldBody HeldBody;
typedef struct Tunnel Tunnel;

/* Field names and values point into memory owned by whoever filled the head (the client side's
 * buffer or arena, the forward side's buffer) and stay valid for the exchange's life or, for the
 * response head, for the duration of the response_head call. Not NUL-terminated. */
typedef struct HeaderField {
        const char *name;
        size_t name_len;
        const char *value;
        size_t value_len;
} HeaderField;

#define EXCHANGE_FIELDS_MAX 128

typedef struct RequestHead {
        const char *method;
        size_t method_len;
        const char *target; /* origin-form: path and query */
        size_t target_len;
        const char *authority; /* Host (HTTP/1.1) or :authority (HTTP/2); may be NULL */
        size_t authority_len;
        unsigned http_major, http_minor; /* what the client spoke: 1.0, 1.1 or 2.0 */
        const HeaderField *fields; /* end-to-end fields as received, pseudo-headers and Host excluded */
        size_t n_fields;
        bool has_body;
        bool has_content_length;   /* else a body of unknown length (chunked / h2 without length) */
        uint64_t content_length;
        bool expect_continue;      /* the client waits for 100 Continue before sending the body */
        bool head_method;          /* HEAD: the response has no body whatever it says */
        bool websocket;            /* a WebSocket opening handshake (h1 Upgrade: websocket, h2 extended
                                      CONNECT): goes to the worker as an HTTP/1.1 upgrade; after its 101 the
                                      exchange is a tunnel (tunnel.h) */
} RequestHead;

typedef struct ResponseHead {
        unsigned status;
        const HeaderField *fields; /* end-to-end, already filtered: hop-by-hop fields and
                                      Elastic-Pool-User removed, Set-Cookie of ours added */
        size_t n_fields;
        const HeaderField *extra;  /* added by the router (Set-Cookie), sent after fields */
        size_t n_extra;
        bool has_body;             /* false for HEAD requests, 204, 304 */
        bool has_content_length;
        uint64_t content_length;
        bool close;                /* the front end should end the client connection after it (h1) */
} ResponseHead;

/* What the router and the forward side call on the client side. Every function is called at most in
 * this order: response_head, response_body*, response_end — or response_error instead of all of them
 * when no head was sent yet, or response_abort once a head was sent and the rest cannot come. */
typedef struct ClientOps {
        /* 0, or 1 when the client side is over its high-water mark (call forward later via
         * exchange_response_resume()), or -errno (the client is gone: the forward side stops). */
        int (*response_head)(Exchange *x, const ResponseHead *h);
        int (*response_body)(Exchange *x, const void *data, size_t size);
        int (*response_end)(Exchange *x);
        /* No head was sent: answer with this status (400..599) and a short text body; retry_after > 0
         * adds Retry-After. */
        void (*response_error)(Exchange *x, unsigned status, unsigned retry_after, const char *reason);
        /* A head was sent but the response broke: h1 closes the connection, h2 resets the stream. */
        void (*response_abort)(Exchange *x, const char *reason);
        /* The forward side can take request body again (after exchange_request_body returned 1). */
        void (*request_body_resume)(Exchange *x);
        /* The router accepted the request and will forward its body: send 100 Continue now if the
         * client asked for it. May be NULL. */
        void (*request_continue)(Exchange *x);
} ClientOps;

/* What the forward side calls back on an exchange (the router's, set by exchange_new(); a fake in the
 * forward side's unit test), through the inline exchange_response_*() and exchange_fail() below. */
typedef struct ExchangeReplies {
        int (*response_head)(Exchange *x, ResponseHead *h, const char *user, size_t user_len);
        int (*response_body)(Exchange *x, const void *data, size_t size);
        int (*response_end)(Exchange *x);
        void (*response_fail)(Exchange *x, unsigned status, const char *reason);
} ExchangeReplies;

typedef enum ExchangeState {
        EXCHANGE_NEW,
        EXCHANGE_HELD,       /* its user is moving: waits in the commander (hold_timeout → 503) */
        EXCHANGE_FORWARDING, /* on a worker connection, no response head yet */
        EXCHANGE_RESPONDING, /* head delivered, body streaming */
        EXCHANGE_DONE,       /* response complete or failed */
        _EXCHANGE_STATE_MAX,
        _EXCHANGE_STATE_INVALID = -EINVAL,
} ExchangeState;

struct Exchange {
        Frontend *frontend;
        const ClientOps *client;
        void *client_data;         /* the h1 connection or h2 stream */
        const ExchangeReplies *replies;

        RequestHead req;
        struct sockaddr_storage peer; /* the client's address, for X-Forwarded-For */
        bool via_tls_proxy;        /* trusted X-Forwarded-Proto: https */
        bool peer_trusted;         /* the peer is in trusted_proxies: its Forwarded goes on to the worker */
        char id[33];               /* X-Request-Id: kept from a trusted/valid client value or generated */
        Exchange *open_prev, *open_next; /* the front end's open requests (open-requests.h) */
        bool open;
        unsigned open_worker;      /* the worker it is counted for there */
        usec_t started;

        ExchangeState state;
        char *user;                /* resolved from the sticky cookie; NULL for a guest */
        uint64_t cookie_issued;    /* issue stamp of the sticky cookie that named user */
        uint64_t ticket;           /* the commander's ticket of the request's user (CommanderOps) */
        unsigned worker;           /* wN it was forwarded to; 0 before */
        Upstream *upstream;        /* the worker connection while forwarding */
        bool on_worker;            /* its head went onto a worker connection (not merely queued for one) */
        bool request_body_done;
        bool request_body_paused;  /* the client side stopped reading body (high-water) */
        uint64_t request_body_sent;
        uint64_t response_bytes;
        unsigned status;           /* what the client got, for logs and counters */

        /* held while the user moves */
        Exchange *held_next;
        usec_t held_since;
        HeldBody *held_body;       /* body bytes that arrived while it was held (or, for a WebSocket
                                      handshake, before the worker's 101) */
        Tunnel *tunnel;            /* after the worker's 101: the bytes of both ways pass through it */
};

/* Called by the client side. */
Exchange *exchange_new(Frontend *fe, const ClientOps *ops, void *client_data);
/* Detaches the forward side (aborting a pending worker request; the worker connection is then
 * closed, never reused) and frees. Accepts NULL; returns NULL. */
Exchange *exchange_free(Exchange *x);
/* The per-loop free list of exchanges exchange_free() keeps (up to 256), emptied. */
void exchange_pool_release(void);

/* The head in x->req is complete: route and forward it. The outcome arrives through ClientOps. */
void exchange_begin(Exchange *x);
/* Request body bytes (already de-chunked). 0, 1 over high-water (pause reading; request_body_resume
 * follows), -errno when the exchange no longer wants them (it failed; drop them). */
int exchange_request_body(Exchange *x, const void *data, size_t size);
/* The request body ended. 0 or -errno. */
int exchange_request_end(Exchange *x);
/* The client side drained what it had buffered: the forward side may deliver more response body. */
void exchange_response_resume(Exchange *x);

/* Called by the forward side. */
/* The worker's response head (fields filtered, framing decided); user/user_len is the value of its
 * Elastic-Pool-User header (NULL when absent). The router logs the user in or out, adds its
 * Set-Cookie to h->extra, and hands the head to the client. Returns what ClientOps.response_head did. */
static inline int exchange_response_head(Exchange *x, ResponseHead *h, const char *user, size_t user_len) {
        return x->replies->response_head(x, h, user, user_len);
}
static inline int exchange_response_body(Exchange *x, const void *data, size_t size) {
        return x->replies->response_body(x, data, size);
}
static inline int exchange_response_end(Exchange *x) {
        return x->replies->response_end(x);
}
/* The worker side failed: before a head went out the client gets status (502, 504 …) with reason,
 * after it the response is aborted. Logged with the request id. */
static inline void exchange_fail(Exchange *x, unsigned status, const char *reason) {
        x->replies->response_fail(x, status, reason);
}

/* The request waits in the commander (held while its user moves, or queued for a worker connection):
 * nothing of it reached a worker, so a client gone now costs nothing but dropping it. */
static inline bool exchange_waiting(const Exchange *x) {
        return x->state == EXCHANGE_HELD || (x->state == EXCHANGE_FORWARDING && !x->on_worker);
}

/* Case-insensitive field lookup helpers for both sides. */
static inline bool header_name_is(const HeaderField *f, const char *name) {
        return strlen(name) == f->name_len && strncasecmp(f->name, name, f->name_len) == 0;
}

static inline const HeaderField *header_find(const HeaderField *fields, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (header_name_is(&fields[i], name))
                        return &fields[i];
        return NULL;
}
