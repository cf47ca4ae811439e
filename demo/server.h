/* SPDX-License-Identifier: MIT */
#pragma once

/* The demo worker's event loop: one thread in epoll_wait() that accepts, watches idle connections, and
 * drives the sensor (its channel fd and timeout sit in the same epoll set); readable connections go to a
 * fixed executor pool. A connection is owned by exactly one side at a time: EPOLLONESHOT hands it from
 * the loop to an executor, which re-arms it (handing it back) or closes it. The loop never closes a
 * connection itself: to end one it may not own, it shutdown()s the socket and lets the owner see EOF. */

#include "handlers.h"
#include "time-util.h"

typedef struct ServerConfig {
        unsigned threads;
        usec_t idle_timeout;     /* a keep-alive connection idle this long is closed */
        usec_t shutdown_timeout; /* after SIGTERM, in-flight requests get this long */
} ServerConfig;

typedef struct Server Server;

/* Takes over listen_fd. Blocks SIGTERM/SIGINT in the calling thread (and so in the executor threads it
 * starts) to receive them on a signalfd. Returns 0 or -errno. */
int server_new(int listen_fd, App *app, const ServerConfig *config, Server **ret);
/* Runs until SIGTERM/SIGINT and the following drain. Returns 0, or -errno on a fatal loop failure. */
int server_run(Server *s);
/* Stops the executors and closes every connection. Accepts NULL; returns NULL. */
Server *server_free(Server *s);
