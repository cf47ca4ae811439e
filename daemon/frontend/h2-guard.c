/* SPDX-License-Identifier: MIT */
#include "h2-guard.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"

static const char *const overhead_names[_H2_OVERHEAD_MAX] = {
        [H2_OVERHEAD_EMPTY_DATA] = "empty DATA",
        [H2_OVERHEAD_PRIORITY] = "PRIORITY",
        [H2_OVERHEAD_WINDOW_UPDATE] = "WINDOW_UPDATE",
        [H2_OVERHEAD_PING] = "PING",
        [H2_OVERHEAD_SETTINGS] = "SETTINGS",
        [H2_OVERHEAD_RST_STREAM] = "RST_STREAM",
        [H2_OVERHEAD_UNKNOWN] = "unknown type",
        [H2_OVERHEAD_REFUSED] = "refused HEADERS",
        [H2_OVERHEAD_INVALID] = "invalid",
};

const char *h2_overhead_to_string(H2Overhead k) {
        if (k < 0 || k >= _H2_OVERHEAD_MAX)
                return NULL;
        return overhead_names[k];
}

/* RFC 9113 3.4: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" */
#define CLIENT_MAGIC_LEN 24U

/* Frame types (RFC 9113 6, RFC 9218 7.1) and flags, spelled out so this file needs no nghttp2. */
enum {
        FRAME_DATA = 0x0,
        FRAME_HEADERS = 0x1,
        FRAME_PRIORITY = 0x2,
        FRAME_RST_STREAM = 0x3,
        FRAME_SETTINGS = 0x4,
        FRAME_PUSH_PROMISE = 0x5,
        FRAME_PING = 0x6,
        FRAME_GOAWAY = 0x7,
        FRAME_WINDOW_UPDATE = 0x8,
        FRAME_CONTINUATION = 0x9,
        FRAME_PRIORITY_UPDATE = 0x10,
        FLAG_END_STREAM = 0x1,
        FLAG_ACK = 0x1, /* on SETTINGS and PING */
};

void h2_guard_init(H2Guard *g, usec_t now) {
        *g = (H2Guard){
                .tokens = H2_GUARD_BURST,
                .refilled = now,
                .skip = CLIENT_MAGIC_LEN,
        };
}

static void refill(H2Guard *g, usec_t now) {
        uint64_t earned;

        if (now <= g->refilled)
                return;
        /* Whole tokens only; the remainder of the interval stays for the next call. */
        earned = (now - g->refilled) * H2_GUARD_REFILL_PER_SEC / USEC_PER_SEC;
        if (earned == 0)
                return;
        g->refilled += earned * USEC_PER_SEC / H2_GUARD_REFILL_PER_SEC;
        g->tokens = MIN(g->tokens + earned, (uint64_t) H2_GUARD_BURST);
}

int h2_guard_charge(H2Guard *g, H2Overhead kind, usec_t now) {
        if (kind >= 0 && kind < _H2_OVERHEAD_MAX)
                g->count[kind]++;
        g->overhead++;

        if (g->flooded)
                return -EBUSY;
        refill(g, now);
        if (g->tokens == 0) {
                g->flooded = true;
                return -EBUSY;
        }
        g->tokens--;
        return 0;
}

void h2_guard_credit(H2Guard *g, uint64_t payload) {
        g->payload += payload;
        g->tokens = MIN(g->tokens + payload, (uint64_t) H2_GUARD_BURST);
}

/* Which overhead a frame header is, or -1 for frames that carry (or start) requests. */
static int classify(uint32_t length, uint8_t type, uint8_t flags) {
        switch (type) {
        case FRAME_DATA:
                /* An empty DATA frame with END_STREAM ends a request body: once per stream, fine. */
                return length == 0 && !(flags & FLAG_END_STREAM) ? H2_OVERHEAD_EMPTY_DATA : -1;
        case FRAME_HEADERS:
        case FRAME_CONTINUATION:
        case FRAME_GOAWAY:
        case FRAME_PUSH_PROMISE: /* a connection error from a client; nghttp2 says so */
                return -1;
        case FRAME_PRIORITY:
        case FRAME_PRIORITY_UPDATE:
                return H2_OVERHEAD_PRIORITY;
        case FRAME_RST_STREAM:
                return H2_OVERHEAD_RST_STREAM;
        case FRAME_SETTINGS:
                return H2_OVERHEAD_SETTINGS;
        case FRAME_PING:
                return H2_OVERHEAD_PING;
        case FRAME_WINDOW_UPDATE:
                return H2_OVERHEAD_WINDOW_UPDATE;
        default:
                return H2_OVERHEAD_UNKNOWN;
        }
}

int h2_guard_scan(H2Guard *g, const uint8_t *data, size_t size, usec_t now) {
        int r = 0;

        g->wire += size;
        while (size > 0) {
                size_t n;

                if (g->skip > 0) {
                        n = MIN((size_t) g->skip, size);
                        g->skip -= (uint32_t) n;
                        data += n;
                        size -= n;
                        continue;
                }

                n = MIN(sizeof(g->header) - g->header_len, size);
                memcpy(g->header + g->header_len, data, n);
                g->header_len += (uint8_t) n;
                data += n;
                size -= n;
                if (g->header_len < sizeof(g->header))
                        break;

                uint32_t length =
                        (uint32_t) g->header[0] << 16 | (uint32_t) g->header[1] << 8 | g->header[2];
                int kind = classify(length, g->header[3], g->header[4]);
                if (kind >= 0 && h2_guard_charge(g, kind, now) < 0)
                        r = -EBUSY;
                if ((kind == H2_OVERHEAD_PING || kind == H2_OVERHEAD_SETTINGS) &&
                    !(g->header[4] & FLAG_ACK) && ++g->unanswered > H2_GUARD_UNANSWERED_MAX) {
                        g->flooded = true;
                        r = -EBUSY;
                }
                g->skip = length;
                g->header_len = 0;
        }

        if (g->wire / H2_GUARD_WIRE_RATIO > g->payload + H2_GUARD_WIRE_GRACE)
                g->flooded = true;
        return r < 0 || g->flooded ? -EBUSY : 0;
}

char *h2_guard_format(const H2Guard *g, char *buf, size_t size) {
        size_t n = 0;
        int k;
        bool first = true;

        k = snprintf(buf, size, "%" PRIu64 " overhead frames (", g->overhead);
        n = k > 0 ? MIN((size_t) k, size) : 0;
        for (H2Overhead i = 0; i < _H2_OVERHEAD_MAX; i++) {
                if (g->count[i] == 0 || n >= size)
                        continue;
                k = snprintf(buf + n, size - n, "%s%" PRIu32 " %s", first ? "" : ", ", g->count[i],
                             overhead_names[i]);
                n += k > 0 ? MIN((size_t) k, size - n) : 0;
                first = false;
        }
        if (n < size)
                (void) snprintf(buf + n, size - n,
                                "%s) against %" PRIu64 " payload bytes, %" PRIu64 " bytes read",
                                first ? "none" : "", g->payload, g->wire);
        return buf;
}
