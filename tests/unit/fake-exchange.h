/* SPDX-License-Identifier: MIT */
#pragma once

/* A fake router for the forward side's tests: its ExchangeReplies record every call of
 * exchange_response_head/body/end/fail on a FakeExchange, with hooks a test sets to script the client
 * (pause on body, resume later, push request body when resumed). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exchange.h"

typedef struct FakeField {
        char *name;
        char *value;
} FakeField;

typedef struct FakeExchange FakeExchange;

struct FakeExchange {
        Exchange x; /* first: the forward side only ever sees &f->x */

        /* recorded */
        unsigned heads, ends, fails, request_resumes;
        unsigned status;
        bool has_body, has_content_length;
        uint64_t content_length;
        FakeField fields[EXCHANGE_FIELDS_MAX];
        size_t n_fields;
        bool has_user;
        char *user;
        char *body;
        size_t body_len, body_cap;
        unsigned fail_status;
        char *fail_reason;
        bool failed_after_head;
        unsigned finished_seq; /* order in which exchanges finished (1-based) */

        /* scripted */
        int head_return;
        int (*on_body)(FakeExchange *f, const void *data, size_t size); /* returns what body returns */
        void (*on_finish)(FakeExchange *f);                              /* after end or fail */
        void (*on_request_body_resume)(FakeExchange *f);
        void *userdata;

        /* request body pump (fake_exchange_pump) */
        const char *req_body;
        size_t req_body_len, req_body_sent, req_chunk;
        bool req_ended;
        unsigned request_pauses;

        /* storage for the request head */
        HeaderField req_fields[EXCHANGE_FIELDS_MAX];
};

/* Counts finished exchanges (end or fail) across all fakes. */
extern unsigned fake_exchanges_finished;

/* A GET-like exchange; fields are copied by pointer (keep them alive). */
void fake_exchange_init(FakeExchange *f, const char *method, const char *target, const char *authority);
void fake_exchange_add_field(FakeExchange *f, const char *name, const char *value);
void fake_exchange_set_body(FakeExchange *f, const char *body, size_t len, bool with_content_length,
                            size_t chunk);
/* Pushes request body until forward_request_body() returns 1 or all is sent (then ends it). */
void fake_exchange_pump(FakeExchange *f);
void fake_exchange_done(FakeExchange *f);
bool fake_exchange_finished(const FakeExchange *f);
const char *fake_exchange_field(const FakeExchange *f, const char *name);
