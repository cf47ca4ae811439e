/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the HTTP/2 client side (h2-connection.c, h2-session.c, h2-stream.c, h2-response.c,
 * h2-guard.c, request-check.c, through nghttp2) fed a client's raw bytes after the connection preface,
 * on a real sd-event loop against the unit tests' fake router (tests/unit/fake-router-h2.c). The
 * connection is handed over the way h1-connection.c does it: the preface as the bytes it already read
 * (prior knowledge), or an h2c upgrade whose request becomes stream 1. Requests that reach exchange_begin
 * are answered from the loop, as the forward side would.
 *
 * Input: one options byte, then the client's bytes (frames: the preface is prepended here).
 *   bits 0-2  piece size the bytes are written in (fuzz-util.h)
 *   bit  3    answer as soon as the head is begun, not after the request ended
 *   bit  4    answer with a 100 KiB body (past the initial flow-control window) and response fields
 *   bit  5    answer with an error of ours (response_error 502) instead of a worker's 200
 *   bit  6    an h2c upgrade (GET / becomes stream 1) instead of prior knowledge
 *   bit  7    the front end shuts down (GOAWAY) after the first piece */
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "fake-router-h2.h"
#include "fuzz-frontend.h"
#include "log.h"

#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define BIG_BODY (100U * 1024U)

typedef struct Harness {
        Frontend *fe;
        uint8_t options;
} Harness;

static const HeaderField response_fields[] = {
        { "content-type", 12, "text/plain", 10 },
        { "cache-control", 13, "no-store", 8 },
};

static void answer(Harness *h, Exchange *x) {
        static uint8_t big[BIG_BODY];

        if (h->options & 0x20) {
                x->state = EXCHANGE_DONE;
                x->client->response_error(x, 502, 0, "fuzz: worker unreachable");
                return;
        }
        if (!(h->options & 0x10)) {
                (void) fake_respond(x, 200, "ok\n");
                return;
        }
        if (fake_respond_head(x, 200, response_fields, 2, true, true, sizeof big) < 0)
                return;
        /* the client side takes what it is handed (exchange.h): its window decides what goes out */
        if (fake_respond_body(x, big, sizeof big) < 0)
                return;
        (void) fake_respond_end(x);
}

static void step(void *userdata) {
        Harness *h = userdata;
        bool again = true;

        /* an answer may free exchanges (a reset stream): restart the walk after each */
        while (again) {
                again = false;
                for (FakeExchange *fx = h->fe->exchanges; fx; fx = fx->next) {
                        if (!fx->begun || fx->x.state != EXCHANGE_FORWARDING)
                                continue;
                        if (!fx->ended && !(h->options & 0x08))
                                continue;
                        answer(h, &fx->x);
                        again = true;
                        break;
                }
        }
}

static int accept_connection(Harness *h, int fd) {
        struct sockaddr_storage peer = fuzz_client_peer();
        RequestHead upgrade = {
                .method = "GET", .method_len = 3, .target = "/", .target_len = 1,
                .authority = "app.test", .authority_len = 8, .http_major = 1, .http_minor = 1,
        };

        return frontend_h2_accept(h->fe, fd, &peer, (const uint8_t *) PREFACE, strlen(PREFACE), NULL, 0,
                                  (h->options & 0x40) ? &upgrade : NULL);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        log_set_max_level(LOG_CRIT); /* protocol errors are logged at notice: thousands a second */
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Harness h = {};
        int sv[2];

        if (size < 1)
                return 0;
        h.options = data[0];
        data++, size--;

        if (fake_frontend_new(&h.fe) < 0)
                abort();
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
                abort();
        if (accept_connection(&h, sv[1]) < 0)
                abort();
        fuzz_loop_settle(h.fe->event, step, &h);
        fuzz_client_run(&(FuzzClient) {
                                .event = h.fe->event, .fd = sv[0], .piece = fuzz_piece_size(h.options),
                                .shut_down_midway = h.options & 0x80, .shutting_down = &h.fe->shutting_down,
                                .connections = &h.fe->connections, .step = step, .userdata = &h },
                        data, size);
        h.fe = fake_frontend_free(h.fe);
        return 0;
}
