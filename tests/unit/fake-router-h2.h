/* SPDX-License-Identifier: MIT */
#pragma once

/* A fake of what h2-connection.c calls on the router and front end (exchange_*, frontend_*), so the HTTP/2
 * client side links and runs alone: exchanges are recorded, their request body collected, and the test
 * answers them through the ClientOps the client side registered, as the forward side would. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "config.h"
#include "exchange.h"
#include "connection.h"
#include "error-log.h"

typedef struct FakeExchange FakeExchange;
struct FakeExchange {
        Exchange x; /* first: exchange_new() hands out &fx->x */
        FakeExchange *prev, *next;
        bool begun;
        bool ended; /* exchange_request_end() */
        uint8_t *body;
        size_t body_len, body_allocated;
        int verdict;      /* what exchange_request_body() returns */
        unsigned resumes; /* exchange_response_resume() calls */
};

struct Frontend {
        sd_event *event;
        IoBatch *batch;
        Config config;
        bool shutting_down;
        FrontendConnection *connections;
        unsigned n_connections;

        FakeExchange *exchanges;
        unsigned n_new, n_begun, n_freed, n_live;
        unsigned n_client_errors; /* frontend_log_client_error() lines */
        /* exchange_begin() leaves the exchange queued for a worker connection (x->on_worker false) */
        bool queue_begun;
        /* exchange_begin(): called after the exchange is recorded and set FORWARDING. */
        void (*on_begin)(Exchange *x, void *userdata);
        void *userdata;
};

int fake_frontend_new(Frontend **ret);
Frontend *fake_frontend_free(Frontend *fe);

FakeExchange *fake_exchange_of(Exchange *x);
/* The live exchange whose request target is target, or NULL. */
FakeExchange *fake_exchange_find(Frontend *fe, const char *target);

/* As the forward side would: head (status, fields, Content-Length when body != NULL), body, end. */
int fake_respond_head(Exchange *x, unsigned status, const HeaderField *fields, size_t n_fields,
                      bool has_body, bool has_content_length, uint64_t content_length);
int fake_respond_body(Exchange *x, const void *data, size_t size);
int fake_respond_end(Exchange *x);
int fake_respond(Exchange *x, unsigned status, const char *body);
