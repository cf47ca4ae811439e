/* SPDX-License-Identifier: MIT */
/* The WebSocket echo endpoint of the demo worker: see websocket.h. */
#include "websocket.h"

#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
/* a frame header: 2 bytes, an 8-byte length, a 4-byte mask */
#define WS_HEAD_MAX 14

enum {
        OP_CONTINUATION = 0x0,
        OP_TEXT = 0x1,
        OP_BINARY = 0x2,
        OP_CLOSE = 0x8,
        OP_PING = 0x9,
        OP_PONG = 0xa,
};

struct WsConn {
        char *user;            /* NULL: a guest, counted per connection */
        char *worker;
        uint64_t guest_counter;
        uint8_t *in;           /* bytes of a frame not complete yet */
        size_t in_len, in_cap;
        uint8_t *msg;          /* a fragmented message being gathered */
        size_t msg_len, msg_cap;
        uint8_t msg_opcode;    /* 0: none under way */
};

int ws_accept_key(const char *key, size_t key_len, char out[static WS_ACCEPT_SIZE]) {
        unsigned char digest[SHA_DIGEST_LENGTH];
        char buf[128];

        if (key_len == 0 || key_len + strlen(WS_GUID) >= sizeof buf)
                return -EINVAL;
        memcpy(buf, key, key_len);
        memcpy(buf + key_len, WS_GUID, strlen(WS_GUID));
        SHA1((const unsigned char *) buf, key_len + strlen(WS_GUID), digest);
        (void) EVP_EncodeBlock((unsigned char *) out, digest, SHA_DIGEST_LENGTH);
        return 0;
}

int ws_conn_new(const char *user, const char *worker, WsConn **ret) {
        WsConn *w = calloc(1, sizeof *w);

        if (!w)
                return -ENOMEM;
        w->user = user ? strdup(user) : NULL;
        w->worker = strdup(worker ? worker : "-");
        if ((user && !w->user) || !w->worker) {
                ws_conn_free(w);
                return -ENOMEM;
        }
        *ret = w;
        return 0;
}

WsConn *ws_conn_free(WsConn *w) {
        if (!w)
                return NULL;
        free(w->user);
        free(w->worker);
        free(w->in);
        free(w->msg);
        free(w);
        return NULL;
}

static int grow(uint8_t **buf, size_t *cap, size_t need) {
        uint8_t *b;
        size_t c;

        if (need <= *cap)
                return 0;
        c = MAX(need, MAX(*cap * 2, (size_t) 4096));
        b = realloc(*buf, c);
        if (!b)
                return -ENOMEM;
        *buf = b;
        *cap = c;
        return 0;
}

/* An unmasked frame from the server (FIN set). */
static int send_frame(uint8_t opcode, const void *head, size_t head_len, const void *payload, size_t len,
                      WsEmit emit, void *ctx) {
        uint8_t h[10];
        size_t n = 2;
        uint64_t total = head_len + len;
        int r;

        h[0] = 0x80 | opcode;
        if (total < 126)
                h[1] = (uint8_t) total;
        else if (total <= 0xffff) {
                h[1] = 126;
                h[2] = (uint8_t) (total >> 8);
                h[3] = (uint8_t) total;
                n = 4;
        } else {
                h[1] = 127;
                for (int i = 0; i < 8; i++)
                        h[2 + i] = (uint8_t) (total >> (56 - 8 * i));
                n = 10;
        }
        r = emit(ctx, h, n);
        if (r >= 0 && head_len > 0)
                r = emit(ctx, head, head_len);
        if (r >= 0 && len > 0)
                r = emit(ctx, payload, len);
        return r;
}

static int send_close(uint16_t code, WsEmit emit, void *ctx) {
        uint8_t p[2] = { (uint8_t) (code >> 8), (uint8_t) code };

        return send_frame(OP_CLOSE, NULL, 0, p, sizeof p, emit, ctx);
}

/* A whole message: one more on the counter, and its echo. */
static int echo(WsConn *w, UserStore *users, uint8_t opcode, const uint8_t *p, size_t len, WsEmit emit, void *ctx) {
        char head[64 + USER_NAME_MAX];
        uint64_t counter;
        uint32_t crc;
        int n;

        if (w->user) {
                if (user_store_bump(users, w->user, &counter, &crc) < 0)
                        counter = 0; /* its state is not here (any more): 0 says so */
        } else
                counter = ++w->guest_counter;
        n = snprintf(head, sizeof head, "%" PRIu64 " %s ", counter, w->worker);
        return send_frame(opcode, head, (size_t) n, p, len, emit, ctx);
}

/* One complete frame (payload unmasked). 1 go on, 0 closed, -errno. */
static int frame(WsConn *w, UserStore *users, uint8_t b0, uint8_t *p, size_t len, WsEmit emit, void *ctx) {
        uint8_t opcode = b0 & 0x0f;
        bool fin = b0 & 0x80;
        int r;

        switch (opcode) {
        case OP_PING:
                r = send_frame(OP_PONG, NULL, 0, p, len, emit, ctx);
                return r < 0 ? r : 1;
        case OP_PONG:
                return 1;
        case OP_CLOSE:
                /* the same code back (1000 when none was given), then the end */
                r = send_close(len >= 2 ? (uint16_t) (p[0] << 8 | p[1]) : 1000, emit, ctx);
                return r < 0 ? r : 0;
        case OP_TEXT:
        case OP_BINARY:
                if (w->msg_opcode != 0)
                        break; /* a new message inside a fragmented one */
                if (fin) {
                        r = echo(w, users, opcode, p, len, emit, ctx);
                        return r < 0 ? r : 1;
                }
                w->msg_opcode = opcode;
                w->msg_len = 0;
                __attribute__((fallthrough));
        case OP_CONTINUATION:
                if (w->msg_opcode == 0)
                        break;
                if (w->msg_len + len > WS_MESSAGE_MAX) {
                        (void) send_close(1009, emit, ctx);
                        return -EMSGSIZE;
                }
                r = grow(&w->msg, &w->msg_cap, w->msg_len + len);
                if (r < 0)
                        return r;
                memcpy(w->msg + w->msg_len, p, len);
                w->msg_len += len;
                if (!fin)
                        return 1;
                opcode = w->msg_opcode;
                w->msg_opcode = 0;
                r = echo(w, users, opcode, w->msg, w->msg_len, emit, ctx);
                return r < 0 ? r : 1;
        default:
                break;
        }
        (void) send_close(1002, emit, ctx);
        return -EPROTO;
}

/* The length of the frame at the start of w->in once its header is there: 0 when more bytes are needed
 * for the header; *ret_head the header's length. -EPROTO for a frame a client must not send. */
static int64_t frame_size(const WsConn *w, size_t *ret_head, uint64_t *ret_len) {
        const uint8_t *h = w->in;
        size_t head = 2;
        uint64_t len;

        if (w->in_len < 2)
                return 0;
        if (!(h[1] & 0x80))
                return -EPROTO; /* RFC 6455 5.1: a client's frames are masked */
        len = h[1] & 0x7f;
        if (len == 126)
                head += 2;
        else if (len == 127)
                head += 8;
        head += 4;
        if (w->in_len < head)
                return 0;
        if (len == 126)
                len = (uint64_t) h[2] << 8 | h[3];
        else if (len == 127) {
                len = 0;
                for (int i = 0; i < 8; i++)
                        len = len << 8 | h[2 + i];
        }
        if (len > WS_MESSAGE_MAX)
                return -EMSGSIZE;
        *ret_head = head;
        *ret_len = len;
        return (int64_t) (head + len);
}

int ws_conn_feed(WsConn *w, UserStore *users, const uint8_t *data, size_t n, WsEmit emit, void *ctx) {
        int r = grow(&w->in, &w->in_cap, w->in_len + n);

        if (r < 0)
                return r;
        memcpy(w->in + w->in_len, data, n);
        w->in_len += n;
        for (;;) {
                size_t head = 0;
                uint64_t len = 0;
                int64_t size = frame_size(w, &head, &len);
                uint8_t *mask, *p;

                if (size < 0) {
                        (void) send_close(size == -EMSGSIZE ? 1009 : 1002, emit, ctx);
                        return (int) size;
                }
                if (size == 0 || w->in_len < (size_t) size)
                        return 1;
                mask = w->in + head - 4;
                p = w->in + head;
                for (uint64_t i = 0; i < len; i++)
                        p[i] ^= mask[i % 4];
                r = frame(w, users, w->in[0], p, (size_t) len, emit, ctx);
                memmove(w->in, w->in + size, w->in_len - (size_t) size);
                w->in_len -= (size_t) size;
                if (r <= 0)
                        return r;
        }
}
