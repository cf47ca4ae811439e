/* SPDX-License-Identifier: MIT */
/* Following WebSocket frames through a byte stream: see ws-frame.h. */
#include "ws-frame.h"

#include <string.h>

#include "macro.h"

/* The header's length once its second byte is known: 2, plus the extended length (2 or 8), plus the
 * masking key (4). */
static uint8_t head_length(uint8_t second) {
        uint8_t len = 2, base = second & 0x7f;

        if (base == 126)
                len += 2;
        else if (base == 127)
                len += 8;
        if (second & 0x80)
                len += 4;
        return len;
}

static uint64_t payload_length(const uint8_t *h) {
        uint8_t base = h[1] & 0x7f;
        uint64_t len = 0;

        if (base < 126)
                return base;
        if (base == 126)
                return (uint64_t) h[2] << 8 | h[3];
        for (size_t i = 2; i < 10; i++)
                len = len << 8 | h[i];
        return len;
}

static void frame_ended(WsFollower *f) {
        f->head_len = 0;
        f->head_need = 2;
        f->in_payload = false;
        f->remaining = 0;
        f->frames++;
}

size_t ws_follow(WsFollower *f, const uint8_t *p, size_t n) {
        size_t used = 0;

        if (f->head_need == 0)
                f->head_need = 2;
        while (!f->in_payload && used < n) {
                f->head[f->head_len++] = p[used++];
                if (f->head_len == 2)
                        f->head_need = head_length(f->head[1]);
                if (f->head_len < f->head_need)
                        continue;
                f->remaining = payload_length(f->head);
                f->in_payload = true;
        }
        if (!f->in_payload)
                return used; /* the header goes on in the next bytes */
        if ((uint64_t) (n - used) >= f->remaining) {
                used += (size_t) f->remaining;
                frame_ended(f);
                return used;
        }
        f->remaining -= n - used;
        return n;
}

void ws_follow_all(WsFollower *f, const uint8_t *p, size_t n) {
        while (n > 0) {
                size_t k = ws_follow(f, p, n);
                p += k;
                n -= k;
        }
}

size_t ws_close_frame(uint8_t out[static WS_CLOSE_FRAME_MAX], uint16_t code, const char *reason,
                      const uint8_t *mask) {
        size_t reason_len = reason ? MIN(strlen(reason), (size_t) WS_CLOSE_REASON_MAX) : 0;
        size_t payload_len = 2 + reason_len, at = 2;
        uint8_t *payload;

        out[0] = 0x80 | WS_OPCODE_CLOSE; /* FIN: control frames are never fragmented */
        out[1] = (uint8_t) payload_len | (mask ? 0x80 : 0);
        if (mask) {
                memcpy(out + at, mask, 4);
                at += 4;
        }
        payload = out + at;
        payload[0] = (uint8_t) (code >> 8);
        payload[1] = (uint8_t) code;
        if (reason_len > 0)
                memcpy(payload + 2, reason, reason_len);
        if (mask)
                for (size_t i = 0; i < payload_len; i++)
                        payload[i] ^= mask[i % 4];
        return at + payload_len;
}

uint16_t ws_close_code(const uint8_t *payload, size_t n) {
        if (n < 2)
                return 1005;
        return (uint16_t) (payload[0] << 8 | payload[1]);
}
