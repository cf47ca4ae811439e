/* SPDX-License-Identifier: MIT */
#pragma once

/* A stand-in for the router (frontend.c) and the HTTP/2 side, so that a client-side protocol file links
 * alone in a unit test: it records every call the client side makes (exchange_begin with a deep copy of
 * the head, body bytes, request end, resume, registrations, h2 hand-overs) and lets the test answer
 * through the exchange's ClientOps, as the forward side would. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "config.h"
#include "exchange.h"
#include "connection.h"
#include "error-log.h"

#define FAKE_FIELDS_MAX 128

/* A RequestHead copied when exchange_begin (or the h2 hand-over) saw it: the original lives only as long
 * as its exchange. */
typedef struct FakeHead {
        char *method, *target, *authority; /* authority NULL when the head had none */
        unsigned http_major, http_minor;
        size_t n_fields;
        char *names[FAKE_FIELDS_MAX], *values[FAKE_FIELDS_MAX];
        bool has_body, has_content_length, expect_continue, head_method;
        uint64_t content_length;
} FakeHead;

typedef struct FakeExchange {
        Exchange *x; /* NULL once freed */
        FakeHead head;
        bool begun, freed, request_ended;
        char *body; /* request body as received, de-chunked */
        size_t body_len;
        unsigned body_calls;
        unsigned response_resumes;
        unsigned order; /* sequence number of exchange_begin, from 1 */
} FakeExchange;

struct Frontend {
        sd_event *event;
        IoBatch *batch;
        Config config;
        bool shutting_down;

        FrontendConnection *connections;
        unsigned n_connections;   /* registered now */
        unsigned n_registrations; /* ever */

        FakeExchange **exchanges; /* one record per exchange ever created; records never move */
        unsigned n_exchanges;     /* created */
        unsigned n_begun;
        unsigned n_live; /* created, not yet freed */

        /* what exchange_request_body returns (0, 1 = over high-water, -errno) */
        int request_body_result;
        /* called from exchange_begin after recording, e.g. to answer at once */
        void (*on_begin)(Frontend *fe, Exchange *x, void *userdata);
        void *userdata;

        /* frontend_h2_accept */
        unsigned h2_accepts;
        int h2_fd; /* kept open so the test can see the same socket; -1 */
        uint8_t *h2_initial;
        size_t h2_initial_len;
        uint8_t *h2_settings;
        size_t h2_settings_len;
        bool h2_upgrade;
        FakeHead h2_req;

        /* frontend_log_client_error */
        unsigned n_logs;
        char last_log[1024];
};

/* A Frontend with its own sd-event loop and the configuration defaults of the [frontend] section. */
int fake_frontend_new(Frontend **ret);
Frontend *fake_frontend_free(Frontend *fe);

/* The record of x (live or freed), or NULL. */
FakeExchange *fake_exchange_of(Frontend *fe, const Exchange *x);
/* The n-th exchange that reached exchange_begin (0-based), or NULL. */
FakeExchange *fake_begun(Frontend *fe, unsigned n);
/* The exchange still live, or NULL. */
Exchange *fake_live(Frontend *fe);

const char *fake_head_field(const FakeHead *h, const char *name);

/* Answers x as the forward side would: head (with Content-Length when with_length), the body in one
 * piece, end. Returns what the last ClientOps call returned. */
int fake_respond(Exchange *x, unsigned status, const char *body, bool with_length);
