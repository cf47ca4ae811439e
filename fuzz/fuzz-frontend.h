/* SPDX-License-Identifier: MIT */
#pragma once

/* The client of the two front-end targets (h1-request, h2-session): each has its own fake Frontend (the
 * unit tests' fake-router.c or fake-router-h2.c), so what they share takes the parts it needs. */

#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "connection.h"
#include "fuzz-util.h"

/* The client's address: 192.0.2.1:40000, as in the unit tests. */
static inline struct sockaddr_storage fuzz_client_peer(void) {
        struct sockaddr_in in = {
                .sin_family = AF_INET, .sin_port = htons(40000), .sin_addr.s_addr = htonl(0xc0000201) };
        struct sockaddr_storage ss = {};

        memcpy(&ss, &in, sizeof in);
        return ss;
}

/* What the front end does on SIGTERM: every connection told to shut down. */
static inline void fuzz_frontend_shut_down(bool *shutting_down, FrontendConnection *connections) {
        *shutting_down = true;
        for (FrontendConnection *c = connections, *next; c; c = next) {
                next = c->next;
                c->ops->shutdown(c);
        }
}

typedef struct FuzzClient {
        sd_event *event;
        int fd;                  /* the client's end of the socketpair; closed by fuzz_client_run() */
        size_t piece;            /* fuzz_piece_size() */
        bool shut_down_midway;   /* the front end shuts down after the first piece */
        bool half_close;         /* the client half-closes after its last byte */
        bool *shutting_down;     /* the fake Frontend's */
        FrontendConnection **connections;
        void (*step)(void *userdata);
        void *userdata;
} FuzzClient;

/* The client's whole life: its bytes in pieces, its end, the socket closed and the loop settled. */
static inline void fuzz_client_run(const FuzzClient *c, const uint8_t *data, size_t size) {
        if (c->shut_down_midway) {
                size_t first = size < c->piece ? size : c->piece;

                fuzz_feed(c->event, c->fd, data, first, c->piece, c->step, c->userdata);
                fuzz_frontend_shut_down(c->shutting_down, *c->connections);
                data += first, size -= first;
        }
        fuzz_feed(c->event, c->fd, data, size, c->piece, c->step, c->userdata);
        if (c->half_close)
                (void) shutdown(c->fd, SHUT_WR);
        fuzz_loop_settle(c->event, c->step, c->userdata);
        fuzz_drain(c->fd);
        close(c->fd);
        fuzz_loop_settle(c->event, c->step, c->userdata);
}
