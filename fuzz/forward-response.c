/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the worker side of the front end reading a worker's response (forward-response.c,
 * with forward.c and forward-conn.c around it): a real ForwardPool connects to a Unix socket this harness
 * listens on, sends one request, and gets the fuzz input back as the worker's bytes. The router is a
 * recorder here that checks the contract of exchange.h on every call: a head before any body, nothing
 * after the end or a failure, and, once the worker hung up, the exchange finished one way or the other.
 *
 * Input: one options byte, then the worker's bytes.
 *   bits 0-2  piece size the bytes are written in (fuzz-util.h)
 *   bit  3    the worker keeps its connection open after its bytes (else it closes it)
 *   bit  4    the request is a HEAD
 *   bit  5    the request is a WebSocket handshake (a 101 turns the connection into a tunnel)
 *   bit  6    the client is slow: every head and body call returns 1 (over high-water) until resumed
 *   bit  7    the request carries a 5-byte body */
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "forward-internal.h"
#include "forward.h"
#include "io-batch.h"
#include "fuzz-util.h"
#include "log.h"

typedef struct Recorder {
        Exchange x; /* first: the forward side only sees &r->x */
        uint8_t options;
        bool head, ended, failed, paused;
        uint64_t body_bytes;
        HeaderField fields[2];
} Recorder;

static char socket_path[sizeof(((struct sockaddr_un *) NULL)->sun_path)];

/* Reads every byte the forward side hands over, so that ASan sees any that lies outside its buffer. */
static unsigned touch(const void *p, size_t n) {
        const volatile uint8_t *b = p;
        unsigned sum = 0;

        for (size_t i = 0; i < n; i++)
                sum += b[i];
        return sum;
}

static int flow(Recorder *r) {
        if (!(r->options & 0x40))
                return 0;
        r->paused = true;
        return 1;
}

static int on_head(Exchange *x, ResponseHead *h, const char *user, size_t user_len) {
        Recorder *r = (Recorder *) x;

        if (r->head || r->ended || r->failed)
                abort();
        r->head = true;
        for (size_t i = 0; i < h->n_fields; i++)
                (void) (touch(h->fields[i].name, h->fields[i].name_len) +
                        touch(h->fields[i].value, h->fields[i].value_len));
        if (user)
                (void) touch(user, user_len);
        if (h->status < 100 || h->status > 999)
                abort();
        return flow(r);
}

static int on_body(Exchange *x, const void *data, size_t size) {
        Recorder *r = (Recorder *) x;

        if (!r->head || r->ended || r->failed)
                abort();
        (void) touch(data, size);
        r->body_bytes += size;
        return flow(r);
}

static int on_end(Exchange *x) {
        Recorder *r = (Recorder *) x;

        if (!r->head || r->ended || r->failed)
                abort();
        r->ended = true;
        return 0;
}

static void on_fail(Exchange *x, unsigned status, const char *reason) {
        Recorder *r = (Recorder *) x;

        if (r->ended || r->failed || !reason)
                abort();
        r->failed = true;
}

static const ExchangeReplies replies = {
        .response_head = on_head,
        .response_body = on_body,
        .response_end = on_end,
        .response_fail = on_fail,
};

static void on_request_body_resume(Exchange *x) {
}

static const ClientOps client_ops = {
        .request_body_resume = on_request_body_resume,
};

static void recorder_init(Recorder *r, uint8_t options) {
        struct sockaddr_in *sin = (struct sockaddr_in *) &r->x.peer;
        bool websocket = options & 0x20;

        *r = (Recorder) { .options = options };
        r->x.client = &client_ops;
        r->x.replies = &replies;
        r->x.req.method = (options & 0x10) ? "HEAD" : (options & 0x80) ? "POST" : "GET";
        r->x.req.method_len = strlen(r->x.req.method);
        r->x.req.target = "/fuzz";
        r->x.req.target_len = 5;
        r->x.req.authority = "app.test";
        r->x.req.authority_len = 8;
        r->x.req.http_major = r->x.req.http_minor = 1;
        r->x.req.head_method = options & 0x10;
        r->x.req.websocket = websocket;
        if (websocket) {
                r->fields[0] = (HeaderField) { "Sec-WebSocket-Key", 17, "dGhlIHNhbXBsZSBub25jZQ==", 24 };
                r->fields[1] = (HeaderField) { "Sec-WebSocket-Version", 21, "13", 2 };
                r->x.req.fields = r->fields;
                r->x.req.n_fields = 2;
        }
        r->x.req.has_body = options & 0x80;
        r->x.req.has_content_length = options & 0x80;
        r->x.req.content_length = (options & 0x80) ? 5 : 0;
        sin->sin_family = AF_INET;
        sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        (void) snprintf(r->x.id, sizeof r->x.id, "fuzz1");
        r->x.state = EXCHANGE_FORWARDING;
}

static int listen_worker(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                abort();
        (void) unlink(socket_path);
        memcpy(sa.sun_path, socket_path, sizeof socket_path);
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(fd, 4) < 0)
                abort();
        return fd;
}

/* The slow client drains between pieces: resumed whenever it paused. */
static void step(void *userdata) {
        Recorder *r = userdata;

        if (r->paused && r->x.upstream) {
                r->paused = false;
                forward_response_resume(&r->x);
        }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        log_set_max_level(LOG_CRIT);
        (void) snprintf(socket_path, sizeof socket_path, "%s", fuzz_scratch_path("forward", "w.sock"));
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ForwardOptions o = {
                .max_connections = 2, .response_timeout = 60 * USEC_PER_SEC,
                .idle_timeout = 10 * USEC_PER_SEC, .cookie_name = "ep_session", .worker_id = 1,
        };
        ForwardPool *pool = NULL;
        sd_event *e = NULL;
        IoBatch *batch = NULL;
        Recorder r;
        int listen_fd, worker;

        if (size < 1)
                return 0;
        recorder_init(&r, data[0]);
        data++, size--;

        if (sd_event_new(&e) < 0 || io_batch_new(e, &batch) < 0)
                abort();
        listen_fd = listen_worker();
        if (forward_pool_new(batch, socket_path, &o, &pool) < 0)
                abort();
        if (forward_start(pool, &r.x) < 0)
                abort();
        if ((r.options & 0x80) && (forward_request_body(&r.x, "hello", 5) < 0 || forward_request_end(&r.x) < 0))
                abort();
        fuzz_loop_settle(e, step, &r);
        worker = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (worker < 0)
                abort(); /* the pool connects at once: a Unix socket with room in its backlog */

        fuzz_drain(worker);
        fuzz_feed(e, worker, data, size, fuzz_piece_size(r.options), step, &r);
        if (!(r.options & 0x08)) {
                close(worker);
                worker = -1;
        }
        fuzz_loop_settle(e, step, &r);
        if (worker < 0 && !r.ended && !r.failed)
                abort(); /* the worker is gone: the exchange cannot still be waiting for it */

        if (r.x.upstream)
                forward_detach(&r.x);
        pool = forward_pool_free(pool);
        if (worker >= 0)
                close(worker);
        close(listen_fd);
        io_batch_unref(batch);
        sd_event_unref(e);
        return 0;
}
