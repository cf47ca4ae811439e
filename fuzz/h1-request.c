/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the HTTP/1.1 client side (h1-connection.c, h1-request.c, h1-head.c, h1-response.c,
 * request-check.c) fed a client's bytes over a socketpair on a real sd-event loop, against the unit
 * tests' fake router (tests/unit/fake-router.c). Every request that reaches exchange_begin is answered
 * from the loop, as the forward side would, so pipelined and keep-alive requests go on being parsed.
 *
 * Input: one options byte, then the client's bytes.
 *   bits 0-2  piece size the bytes are written in (fuzz-util.h)
 *   bit  3    answer as soon as the head is begun, not after the request ended
 *   bit  4    answer without Content-Length (chunked, or close-delimited for HTTP/1.0)
 *   bit  5    answer with an error of ours (response_error 502) instead of a worker's 200
 *   bit  6    the front end shuts down after the first piece
 *   bit  7    the client half-closes (EOF) after its last byte */
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "fake-router.h"
#include "fuzz-frontend.h"
#include "h1-internal.h"
#include "log.h"

typedef struct Harness {
        Frontend *fe;
        uint8_t options;
        unsigned next; /* index of the first exchange not yet answered (h1 runs them one at a time) */
} Harness;

static void answer(Harness *h, Exchange *x) {
        if (h->options & 0x20) {
                x->client->response_error(x, 502, 0, "fuzz: worker unreachable");
                return;
        }
        (void) fake_respond(x, 200, "ok\n", !(h->options & 0x10));
}

static void step(void *userdata) {
        Harness *h = userdata;

        while (h->next < h->fe->n_exchanges) {
                FakeExchange *f = h->fe->exchanges[h->next];

                if (!f->freed && !f->begun)
                        return; /* still parsing its head */
                if (!f->freed && !f->request_ended && !(h->options & 0x08))
                        return; /* its body is still coming */
                h->next++;
                if (f->x)
                        answer(h, f->x);
        }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        log_set_max_level(LOG_CRIT); /* client errors are logged at notice: thousands a second */
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct sockaddr_storage peer = fuzz_client_peer();
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
        if (frontend_h1_accept(h.fe, sv[1], &peer) < 0)
                abort();
        fuzz_client_run(&(FuzzClient) {
                                .event = h.fe->event, .fd = sv[0], .piece = fuzz_piece_size(h.options),
                                .shut_down_midway = h.options & 0x40, .half_close = h.options & 0x80,
                                .shutting_down = &h.fe->shutting_down, .connections = &h.fe->connections,
                                .step = step, .userdata = &h },
                        data, size);
        h.fe = fake_frontend_free(h.fe);
        return 0;
}
