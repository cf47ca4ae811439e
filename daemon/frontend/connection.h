/* SPDX-License-Identifier: MIT */
#pragma once

/* Client connections as the front end sees them, whatever their protocol: the common head each one
 * registers while it is open (so shutdown and the counts reach all of them), what the protocol sides may
 * read of the front end, and the entry points of the two protocols. Per-connection state belongs to the
 * loop that accepted it (so a later version can run one front-end loop per core with SO_REUSEPORT). */

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <systemd/sd-event.h>

#include "config.h"
#include "exchange.h"
#include "io-batch.h"

/* The common head of every client connection, so the front end can reach all of them (shutdown,
 * counts) without knowing their protocol. */
typedef struct FrontendConnection FrontendConnection;
typedef struct FrontendConnectionOps {
        const char *protocol; /* "http/1.1", "h2c" */
        /* SIGTERM: HTTP/1 answers with Connection: close and gives an idle connection up to 1 s for a
         * next request; HTTP/2 sends GOAWAY with the last stream id. Nothing accepted is dropped. */
        void (*shutdown)(FrontendConnection *c);
        /* The hard deadline passed: close now. */
        void (*close)(FrontendConnection *c);
} FrontendConnectionOps;

struct FrontendConnection {
        const FrontendConnectionOps *ops;
        Frontend *frontend;
        FrontendConnection *prev, *next;
        struct sockaddr_storage peer;
        bool peer_trusted; /* peer is in trusted_proxies: its X-Forwarded-Proto is believed */
        usec_t opened;
};

/* Client connections register while open, unregister when closing. */
void frontend_connection_register(Frontend *fe, FrontendConnection *c, const FrontendConnectionOps *ops,
                                  const struct sockaddr_storage *peer);
void frontend_connection_unregister(Frontend *fe, FrontendConnection *c);
/* Open connections whose protocol is `protocol` ("h2c"), for the status surfaces: a walk, not for the
 * request path. */
unsigned frontend_connections_speaking(const Frontend *fe, const char *protocol);

sd_event *frontend_event(Frontend *fe);
/* The loop's batch of sockets (io-batch.h): where client and worker connections add their sources. */
IoBatch *frontend_io_batch(Frontend *fe);
const Config *frontend_config(Frontend *fe);
bool frontend_shutting_down(Frontend *fe);

/* Hand-over from the HTTP/1.1 side to HTTP/2 (h2-connection.c): prior-knowledge preface seen, or an
 * Upgrade: h2c request answered with 101. `initial` holds bytes already read from the socket that
 * belong to HTTP/2 (the preface onwards). For an upgrade, settings/settings_len is the decoded
 * HTTP2-Settings payload and upgrade_req the head of the request that becomes stream 1 (copied).
 * Takes fd in all cases (closes it on failure). 0 or -errno. */
int frontend_h2_accept(Frontend *fe, int fd, const struct sockaddr_storage *peer, const uint8_t *initial,
                       size_t initial_len, const uint8_t *settings, size_t settings_len,
                       const RequestHead *upgrade_req);

/* HTTP/2's per-loop free lists (write buffers, streams, response blocks: up to about 9 MiB after a
 * burst), emptied; the next connections fill them again. Once a burst is over (frontend-trim.c), never on
 * the request path. */
void frontend_h2_release_pools(void);

/* A new client socket from a listener: starts as HTTP/1.1 (which hands over to h2 on a preface).
 * Takes fd in all cases (closes it on failure), like frontend_h2_accept(). 0 or -errno. */
int frontend_h1_accept(Frontend *fe, int fd, const struct sockaddr_storage *peer);

/* Once shutting down: when the last connection closed, the front end's on_drained runs (once). */
void frontend_maybe_drained(Frontend *fe);
