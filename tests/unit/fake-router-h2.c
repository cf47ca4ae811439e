/* SPDX-License-Identifier: MIT */
#include "io-uring-mode.h"
#include "fake-router-h2.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "macro.h"
#include "time-util.h"

int fake_frontend_new(Frontend **ret) {
        Frontend *fe = calloc(1, sizeof(Frontend));
        int r;

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
        fe->config = (Config){
                .header_timeout = 10 * USEC_PER_SEC,
                .idle_timeout = 60 * USEC_PER_SEC,
                .max_header_size = 64 * 1024,
                .max_header_fields = 100,
                .h2_max_concurrent_streams = 100,
        };
        *ret = fe;
        return 0;
}

Frontend *fake_frontend_free(Frontend *fe) {
        if (!fe)
                return NULL;
        while (fe->connections)
                fe->connections->ops->close(fe->connections);
        while (fe->exchanges)
                exchange_free(&fe->exchanges->x);
        io_batch_unref(fe->batch);
        sd_event_unref(fe->event);
        free(fe);
        return NULL;
}

FakeExchange *fake_exchange_of(Exchange *x) {
        return (FakeExchange *) x;
}

FakeExchange *fake_exchange_find(Frontend *fe, const char *target) {
        for (FakeExchange *fx = fe->exchanges; fx; fx = fx->next)
                if (fx->x.req.target && fx->x.req.target_len == strlen(target) &&
                    memcmp(fx->x.req.target, target, fx->x.req.target_len) == 0)
                        return fx;
        return NULL;
}

void frontend_connection_register(Frontend *fe, FrontendConnection *c, const FrontendConnectionOps *ops,
                                  const struct sockaddr_storage *peer) {
        c->ops = ops;
        c->frontend = fe;
        if (peer)
                c->peer = *peer;
        c->opened = now_usec(CLOCK_MONOTONIC);
        c->prev = NULL;
        c->next = fe->connections;
        if (fe->connections)
                fe->connections->prev = c;
        fe->connections = c;
        fe->n_connections++;
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
        char buf[1024];
        va_list ap;

        fe->n_client_errors++;
        va_start(ap, format);
        (void) vsnprintf(buf, sizeof(buf), format, ap);
        va_end(ap);
        log_notice("%s", buf);
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

Exchange *exchange_new(Frontend *fe, const ClientOps *ops, void *client_data) {
        FakeExchange *fx = calloc(1, sizeof(FakeExchange));

        if (!fx)
                return NULL;
        fx->x.frontend = fe;
        fx->x.client = ops;
        fx->x.client_data = client_data;
        fx->x.state = EXCHANGE_NEW;
        fx->next = fe->exchanges;
        if (fe->exchanges)
                fe->exchanges->prev = fx;
        fe->exchanges = fx;
        fe->n_new++;
        fe->n_live++;
        return &fx->x;
}

Exchange *exchange_free(Exchange *x) {
        FakeExchange *fx = fake_exchange_of(x);
        Frontend *fe;

        if (!x)
                return NULL;
        fe = x->frontend;
        if (fx->prev)
                fx->prev->next = fx->next;
        else
                fe->exchanges = fx->next;
        if (fx->next)
                fx->next->prev = fx->prev;
        fe->n_freed++;
        fe->n_live--;
        free(fx->body);
        free(fx);
        return NULL;
}

void exchange_begin(Exchange *x) {
        FakeExchange *fx = fake_exchange_of(x);
        Frontend *fe = x->frontend;

        fx->begun = true;
        x->state = EXCHANGE_FORWARDING;
        x->worker = 1;
        x->on_worker = !fe->queue_begun; /* as if a worker connection took it at once, or none was free */
        fe->n_begun++;
        if (fe->on_begin)
                fe->on_begin(x, fe->userdata);
}

int exchange_request_body(Exchange *x, const void *data, size_t size) {
        FakeExchange *fx = fake_exchange_of(x);

        if (fx->body_len + size > fx->body_allocated) {
                size_t n = MAX(fx->body_allocated * 2, fx->body_len + size);
                uint8_t *p = realloc(fx->body, n);
                if (!p)
                        return -ENOMEM;
                fx->body = p;
                fx->body_allocated = n;
        }
        memcpy(fx->body + fx->body_len, data, size);
        fx->body_len += size;
        x->request_body_sent += size;
        return fx->verdict;
}

int exchange_request_end(Exchange *x) {
        fake_exchange_of(x)->ended = true;
        x->request_body_done = true;
        return 0;
}

void exchange_response_resume(Exchange *x) {
        fake_exchange_of(x)->resumes++;
}


int fake_respond_head(Exchange *x, unsigned status, const HeaderField *fields, size_t n_fields,
                      bool has_body, bool has_content_length, uint64_t content_length) {
        ResponseHead h = {
                .status = status,
                .fields = fields,
                .n_fields = n_fields,
                .has_body = has_body,
                .has_content_length = has_content_length,
                .content_length = content_length,
        };

        x->state = EXCHANGE_RESPONDING;
        x->status = status;
        return x->client->response_head(x, &h);
}

int fake_respond_body(Exchange *x, const void *data, size_t size) {
        x->response_bytes += size;
        return x->client->response_body(x, data, size);
}

int fake_respond_end(Exchange *x) {
        x->state = EXCHANGE_DONE;
        return x->client->response_end(x);
}

int fake_respond(Exchange *x, unsigned status, const char *body) {
        size_t n = body ? strlen(body) : 0;
        int r;

        r = fake_respond_head(x, status, NULL, 0, body != NULL, body != NULL, n);
        if (r < 0)
                return r;
        if (n > 0) {
                r = fake_respond_body(x, body, n);
                if (r < 0)
                        return r;
        }
        return fake_respond_end(x);
}
