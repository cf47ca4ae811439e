/* SPDX-License-Identifier: MIT */
#include "io-uring-mode.h"
#include "fake-router.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cleanup.h"
#include "macro.h"

/* The heads point into the connection's arena, not NUL-terminated: copy exactly n bytes (strndup may
 * look for a NUL past n, which ASan's strict_string_checks reports). */
static char *strndup_or_null(const char *s, size_t n) {
        char *c;

        if (!s)
                return NULL;
        c = malloc(n + 1);
        if (c) {
                memcpy(c, s, n);
                c[n] = 0;
        }
        return c;
}

static void fake_head_copy(FakeHead *dst, const RequestHead *h) {
        *dst = (FakeHead) {
                .method = strndup_or_null(h->method, h->method_len),
                .target = strndup_or_null(h->target, h->target_len),
                .authority = strndup_or_null(h->authority, h->authority_len),
                .http_major = h->http_major,
                .http_minor = h->http_minor,
                .n_fields = MIN(h->n_fields, (size_t) FAKE_FIELDS_MAX),
                .has_body = h->has_body,
                .has_content_length = h->has_content_length,
                .content_length = h->content_length,
                .expect_continue = h->expect_continue,
                .head_method = h->head_method,
        };
        for (size_t i = 0; i < dst->n_fields; i++) {
                dst->names[i] = strndup_or_null(h->fields[i].name, h->fields[i].name_len);
                dst->values[i] = strndup_or_null(h->fields[i].value, h->fields[i].value_len);
        }
}

static void fake_head_done(FakeHead *h) {
        free(h->method);
        free(h->target);
        free(h->authority);
        for (size_t i = 0; i < h->n_fields; i++) {
                free(h->names[i]);
                free(h->values[i]);
        }
        *h = (FakeHead) {};
}

const char *fake_head_field(const FakeHead *h, const char *name) {
        for (size_t i = 0; i < h->n_fields; i++)
                if (strcasecmp(h->names[i], name) == 0)
                        return h->values[i];
        return NULL;
}

int fake_frontend_new(Frontend **ret) {
        Frontend *fe;
        int r;

        fe = calloc(1, sizeof *fe);
        if (!fe)
                return -ENOMEM;
        r = sd_event_new(&fe->event);
        if (r < 0) {
                free(fe);
                return r;
        }
        r = io_batch_new(fe->event, &fe->batch);
        if (r < 0) {
                sd_event_unref(fe->event);
                free(fe);
                return r;
        }
        io_uring_mode_apply(fe->batch);
        fe->config = (Config) {
                .header_timeout = 10 * USEC_PER_SEC,
                .idle_timeout = 60 * USEC_PER_SEC,
                .response_timeout = 60 * USEC_PER_SEC,
                .hold_timeout = 10 * USEC_PER_SEC,
                .shutdown_timeout = 30 * USEC_PER_SEC,
                .max_header_size = 64 * 1024,
                .max_header_fields = 100,
                .max_connections = 10000,
                .h2_max_concurrent_streams = 100,
        };
        fe->h2_fd = -EBADF;
        *ret = fe;
        return 0;
}

Frontend *fake_frontend_free(Frontend *fe) {
        if (!fe)
                return NULL;
        /* whatever is still open is closed the way the front end's hard deadline does it */
        while (fe->connections)
                fe->connections->ops->close(fe->connections);
        for (unsigned i = 0; i < fe->n_exchanges; i++) {
                fake_head_done(&fe->exchanges[i]->head);
                free(fe->exchanges[i]->body);
                free(fe->exchanges[i]);
        }
        free(fe->exchanges);
        fake_head_done(&fe->h2_req);
        free(fe->h2_initial);
        free(fe->h2_settings);
        safe_close(fe->h2_fd);
        io_batch_unref(fe->batch);
        sd_event_unref(fe->event);
        free(fe);
        return NULL;
}

FakeExchange *fake_exchange_of(Frontend *fe, const Exchange *x) {
        /* the fake is the router, so the router-owned upstream slot holds the record */
        FakeExchange *f = x ? (FakeExchange *) x->upstream : NULL;

        return f && f->x == x ? f : NULL;
}

FakeExchange *fake_begun(Frontend *fe, unsigned n) {
        for (unsigned i = 0; i < fe->n_exchanges; i++)
                if (fe->exchanges[i]->begun && fe->exchanges[i]->order == n + 1)
                        return fe->exchanges[i];
        return NULL;
}

Exchange *fake_live(Frontend *fe) {
        for (unsigned i = 0; i < fe->n_exchanges; i++)
                if (fe->exchanges[i]->x)
                        return fe->exchanges[i]->x;
        return NULL;
}

int fake_respond(Exchange *x, unsigned status, const char *body, bool with_length) {
        size_t len = body ? strlen(body) : 0;
        ResponseHead h = {
                .status = status,
                .has_body = len > 0,
                .has_content_length = with_length,
                .content_length = len,
        };
        int r;

        r = x->client->response_head(x, &h);
        if (r < 0)
                return r;
        if (len > 0) {
                r = x->client->response_body(x, body, len);
                if (r < 0)
                        return r;
        }
        return x->client->response_end(x);
}

/* ---- what the client side calls ---------------------------------------------------------------- */

Exchange *exchange_new(Frontend *fe, const ClientOps *ops, void *client_data) {
        FakeExchange **a, *f;
        Exchange *x;

        a = reallocarray(fe->exchanges, fe->n_exchanges + 1, sizeof *a);
        if (!a)
                return NULL;
        fe->exchanges = a;
        f = calloc(1, sizeof *f);
        x = calloc(1, sizeof *x);
        if (!f || !x) {
                free(f);
                free(x);
                return NULL;
        }
        x->frontend = fe;
        x->client = ops;
        x->client_data = client_data;
        x->state = EXCHANGE_NEW;
        f->x = x;
        x->upstream = (Upstream *) f;
        fe->exchanges[fe->n_exchanges++] = f;
        fe->n_live++;
        return x;
}

Exchange *exchange_free(Exchange *x) {
        FakeExchange *f;

        if (!x)
                return NULL;
        f = fake_exchange_of(x->frontend, x);
        if (f) {
                f->x = NULL;
                f->freed = true;
                x->frontend->n_live--;
        }
        free(x);
        return NULL;
}

void exchange_begin(Exchange *x) {
        Frontend *fe = x->frontend;
        FakeExchange *f = fake_exchange_of(fe, x);

        /* as the router does: an id, state forwarding */
        snprintf(x->id, sizeof x->id, "req%04u", fe->n_begun + 1);
        x->state = EXCHANGE_FORWARDING;
        f->begun = true;
        f->order = ++fe->n_begun;
        fake_head_copy(&f->head, &x->req);
        if (fe->on_begin)
                fe->on_begin(fe, x, fe->userdata);
}

int exchange_request_body(Exchange *x, const void *data, size_t size) {
        FakeExchange *f = fake_exchange_of(x->frontend, x);
        char *b;

        b = realloc(f->body, f->body_len + size + 1);
        if (!b)
                return -ENOMEM;
        memcpy(b + f->body_len, data, size);
        f->body = b;
        f->body_len += size;
        f->body[f->body_len] = 0;
        f->body_calls++;
        x->request_body_sent += size;
        return x->frontend->request_body_result;
}

int exchange_request_end(Exchange *x) {
        FakeExchange *f = fake_exchange_of(x->frontend, x);

        f->request_ended = true;
        x->request_body_done = true;
        return 0;
}

void exchange_response_resume(Exchange *x) {
        FakeExchange *f = fake_exchange_of(x->frontend, x);

        f->response_resumes++;
}


void frontend_connection_register(Frontend *fe, FrontendConnection *c, const FrontendConnectionOps *ops,
                                  const struct sockaddr_storage *peer) {
        c->ops = ops;
        c->frontend = fe;
        c->peer = *peer;
        c->prev = NULL;
        c->next = fe->connections;
        if (fe->connections)
                fe->connections->prev = c;
        fe->connections = c;
        fe->n_connections++;
        fe->n_registrations++;
}

void frontend_connection_unregister(Frontend *fe, FrontendConnection *c) {
        if (c->prev)
                c->prev->next = c->next;
        else
                fe->connections = c->next;
        if (c->next)
                c->next->prev = c->prev;
        c->prev = c->next = NULL;
        fe->n_connections--;
}

void frontend_log_client_error(Frontend *fe, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        vsnprintf(fe->last_log, sizeof fe->last_log, format, ap);
        va_end(ap);
        fe->n_logs++;
}

sd_event *frontend_event(Frontend *fe) {
        return fe->event;
}

IoBatch *frontend_io_batch(Frontend *fe) {
        return fe->batch;
}

const Config *frontend_config(Frontend *fe) {
        return &fe->config;
}

bool frontend_shutting_down(Frontend *fe) {
        return fe->shutting_down;
}

int frontend_h2_accept(Frontend *fe, int fd, const struct sockaddr_storage *peer, const uint8_t *initial,
                       size_t initial_len, const uint8_t *settings, size_t settings_len,
                       const RequestHead *upgrade_req) {
        fe->h2_accepts++;
        safe_close(fe->h2_fd);
        fe->h2_fd = fd;
        free(fe->h2_initial);
        fe->h2_initial = malloc(initial_len + 1);
        memcpy(fe->h2_initial, initial, initial_len);
        fe->h2_initial_len = initial_len;
        free(fe->h2_settings);
        fe->h2_settings = malloc(settings_len + 1);
        if (settings_len > 0)
                memcpy(fe->h2_settings, settings, settings_len);
        fe->h2_settings_len = settings_len;
        fe->h2_upgrade = upgrade_req != NULL;
        fake_head_done(&fe->h2_req);
        if (upgrade_req)
                fake_head_copy(&fe->h2_req, upgrade_req);
        return 0;
}
