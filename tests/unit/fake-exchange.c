/* SPDX-License-Identifier: MIT */
/* The router, as far as forward.c can tell: records what the forward side calls. */
#include "fake-exchange.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "forward.h"

unsigned fake_exchanges_finished;

/* Exactly n bytes: the sources are not NUL-terminated (strndup may look past n). */
static char *strndup_or_die(const char *s, size_t n) {
        char *d = malloc(s ? n + 1 : 1);

        assert_non_null(d);
        if (s)
                memcpy(d, s, n);
        d[s ? n : 0] = 0;
        return d;
}

static void on_request_body_resume(Exchange *x) {
        FakeExchange *f = (FakeExchange *) x;

        f->request_resumes++;
        if (f->on_request_body_resume)
                f->on_request_body_resume(f);
}

static const ClientOps fake_client_ops = {
        .request_body_resume = on_request_body_resume,
};

static const ExchangeReplies fake_replies;

void fake_exchange_init(FakeExchange *f, const char *method, const char *target, const char *authority) {
        memset(f, 0, sizeof(*f));
        f->x.client = &fake_client_ops;
        f->x.client_data = f;
        f->x.replies = &fake_replies;
        f->x.req.method = method;
        f->x.req.method_len = strlen(method);
        f->x.req.target = target;
        f->x.req.target_len = strlen(target);
        if (authority) {
                f->x.req.authority = authority;
                f->x.req.authority_len = strlen(authority);
        }
        f->x.req.http_major = f->x.req.http_minor = 1;
        f->x.req.fields = f->req_fields;
        f->x.req.head_method = strcmp(method, "HEAD") == 0;
        f->x.state = EXCHANGE_FORWARDING;
}

void fake_exchange_add_field(FakeExchange *f, const char *name, const char *value) {
        assert_true(f->x.req.n_fields < EXCHANGE_FIELDS_MAX);
        f->req_fields[f->x.req.n_fields++] = (HeaderField) {
                .name = name,
                .name_len = strlen(name),
                .value = value,
                .value_len = strlen(value),
        };
}

void fake_exchange_set_body(FakeExchange *f, const char *body, size_t len, bool with_content_length,
                            size_t chunk) {
        f->x.req.has_body = true;
        f->x.req.has_content_length = with_content_length;
        f->x.req.content_length = with_content_length ? len : 0;
        f->req_body = body;
        f->req_body_len = len;
        f->req_chunk = chunk ? chunk : 16384;
}

void fake_exchange_pump(FakeExchange *f) {
        while (f->req_body_sent < f->req_body_len) {
                size_t k = f->req_body_len - f->req_body_sent;
                int r;

                if (k > f->req_chunk)
                        k = f->req_chunk;
                r = forward_request_body(&f->x, f->req_body + f->req_body_sent, k);
                if (r < 0)
                        return; /* the exchange went away (its test checks why) */
                f->req_body_sent += k;
                if (r > 0) {
                        f->request_pauses++;
                        return;
                }
        }
        if (!f->req_ended) {
                f->req_ended = true;
                (void) forward_request_end(&f->x);
        }
}

void fake_exchange_done(FakeExchange *f) {
        forward_detach(&f->x);
        for (size_t i = 0; i < f->n_fields; i++) {
                free(f->fields[i].name);
                free(f->fields[i].value);
        }
        f->n_fields = 0;
        free(f->user);
        free(f->body);
        free(f->fail_reason);
        f->user = f->body = f->fail_reason = NULL;
}

bool fake_exchange_finished(const FakeExchange *f) {
        return f->ends + f->fails > 0;
}

const char *fake_exchange_field(const FakeExchange *f, const char *name) {
        for (size_t i = 0; i < f->n_fields; i++)
                if (strcasecmp(f->fields[i].name, name) == 0)
                        return f->fields[i].value;
        return NULL;
}

static void finish(FakeExchange *f) {
        assert_int_equal(f->ends + f->fails, 1); /* exactly one outcome per exchange */
        f->finished_seq = ++fake_exchanges_finished;
        f->x.state = EXCHANGE_DONE;
        if (f->on_finish)
                f->on_finish(f);
}

static int on_response_head(Exchange *x, ResponseHead *h, const char *user, size_t user_len) {
        FakeExchange *f = (FakeExchange *) x;

        assert_int_equal(f->heads, 0);
        assert_int_equal(f->ends + f->fails, 0);
        assert_non_null(x->upstream); /* still on its worker connection */
        f->heads++;
        f->status = h->status;
        f->has_body = h->has_body;
        f->has_content_length = h->has_content_length;
        f->content_length = h->content_length;
        assert_true(h->n_fields <= EXCHANGE_FIELDS_MAX);
        for (size_t i = 0; i < h->n_fields; i++) {
                f->fields[i].name = strndup_or_die(h->fields[i].name, h->fields[i].name_len);
                f->fields[i].value = strndup_or_die(h->fields[i].value, h->fields[i].value_len);
        }
        f->n_fields = h->n_fields;
        f->has_user = user != NULL;
        if (user)
                f->user = strndup_or_die(user, user_len);
        f->x.state = EXCHANGE_RESPONDING;
        f->x.status = h->status;
        return f->head_return;
}

static int on_response_body(Exchange *x, const void *data, size_t size) {
        FakeExchange *f = (FakeExchange *) x;

        assert_int_equal(f->heads, 1);
        assert_int_equal(f->ends + f->fails, 0);
        assert_true(size > 0);
        if (f->body_len + size > f->body_cap) {
                size_t cap = (f->body_len + size) * 2;
                f->body = realloc(f->body, cap);
                assert_non_null(f->body);
                f->body_cap = cap;
        }
        memcpy(f->body + f->body_len, data, size);
        f->body_len += size;
        f->x.response_bytes += size;
        return f->on_body ? f->on_body(f, data, size) : 0;
}

static int on_response_end(Exchange *x) {
        FakeExchange *f = (FakeExchange *) x;

        assert_int_equal(f->heads, 1);
        assert_null(x->upstream); /* the forward side let go before telling us */
        f->ends++;
        finish(f);
        return 0;
}

static void on_fail(Exchange *x, unsigned status, const char *reason) {
        FakeExchange *f = (FakeExchange *) x;

        assert_null(x->upstream);
        assert_non_null(reason);
        f->fails++;
        f->fail_status = status;
        f->failed_after_head = f->heads > 0;
        f->fail_reason = strdup(reason);
        assert_non_null(f->fail_reason);
        finish(f);
}

/* What the forward side calls back, in place of the router's. */
static const ExchangeReplies fake_replies = {
        .response_head = on_response_head,
        .response_body = on_response_body,
        .response_end = on_response_end,
        .response_fail = on_fail,
};
