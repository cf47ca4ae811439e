/* SPDX-License-Identifier: MIT */
#pragma once

/* A fake worker for the forward side's tests: an HTTP/1.1 keep-alive server on a real Unix socket in a
 * temporary directory, run by the test's own sd-event loop, scripted per test (answer, answer and
 * close, stay silent, close instead of answering, answer late, echo the body back). It records every
 * byte it got per connection, so tests compare what really went over the wire. */

#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-event.h>

#include "time-util.h"

typedef enum FakeAction {
        FAKE_ANSWER,       /* write the canned response, keep the connection */
        FAKE_ANSWER_CLOSE, /* write it, then close */
        FAKE_SILENT,       /* never answer */
        FAKE_CLOSE,        /* close instead of answering */
} FakeAction;

typedef struct FakeWorker FakeWorker;
typedef struct FakeConn FakeConn;

struct FakeConn {
        FakeWorker *w;
        FakeConn *next;
        int fd;
        sd_event_source *io, *delay;
        unsigned index;    /* accept order, from 0 */
        unsigned requests; /* complete requests seen on it */
        http_parser parser;
        char *raw, *body, *out;
        size_t raw_len, raw_cap, body_len, body_cap, out_len, out_off, out_cap;
        bool eof, closed, close_after_flush, read_paused, answer_close;
};

struct FakeWorker {
        sd_event *event;
        char dir[64], path[128];
        int listen_fd;
        sd_event_source *accept_io;
        unsigned accepts, open, max_open, requests, parse_errors;
        FakeConn *conns;
        const char *response;              /* the canned answer */
        FakeAction (*decide)(FakeConn *c); /* per complete request; NULL: FAKE_ANSWER */
        usec_t delay;                      /* answer this long after the request */
        bool echo;                         /* answer with the request body, as it arrives */
        int sndbuf;                        /* > 0: send buffer of accepted sockets (forced when root) */
};

/* Bound to path dir/w.sock; listening (and accepting) or bound only (connect is refused). */
void fake_worker_init(FakeWorker *w, sd_event *event, bool listening);
/* Listening with a backlog of 0 and not accepting yet: further connects get EAGAIN. */
void fake_worker_init_backlogged(FakeWorker *w, sd_event *event);
void fake_worker_start_accepting(FakeWorker *w);
void fake_worker_done(FakeWorker *w);
/* The connection accepted index-th (from 0), NULL before. */
FakeConn *fake_conn(FakeWorker *w, unsigned index);
void fake_conn_close(FakeConn *c);
