/* SPDX-License-Identifier: MIT */
#pragma once

/* WebSocket framing (RFC 6455 5.2), followed but never decoded: a tunnel passes the bytes of both
 * directions through unchanged, and only needs to know where one frame ends and the next begins, so that
 * a close frame of ours goes in between two frames and never into the middle of one. Pure: no I/O, no
 * allocation; the follower keeps at most a frame header (14 bytes) of state, whatever the frame's size. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum WsOpcode {
        WS_OPCODE_CONTINUATION = 0x0,
        WS_OPCODE_TEXT = 0x1,
        WS_OPCODE_BINARY = 0x2,
        WS_OPCODE_CLOSE = 0x8,
        WS_OPCODE_PING = 0x9,
        WS_OPCODE_PONG = 0xa,
} WsOpcode;

/* RFC 6455 7.4.1 */
#define WS_CLOSE_NORMAL 1000
#define WS_CLOSE_GOING_AWAY 1001

/* A close frame with a 2-byte code and a reason of up to this many bytes, masked or not. */
#define WS_CLOSE_REASON_MAX 64
#define WS_CLOSE_FRAME_MAX (2 + 4 + 2 + WS_CLOSE_REASON_MAX)

typedef struct WsFollower {
        uint8_t head[14];   /* the current frame's header as far as it came */
        uint8_t head_len;   /* its bytes seen; 0 between frames */
        uint8_t head_need;  /* its full length, known from its second byte on (2 until then) */
        bool in_payload;    /* the header is complete, payload bytes follow */
        uint64_t remaining; /* payload bytes of the current frame still to come */
        uint64_t frames;    /* frames that ended, for tests and logs */
} WsFollower;

/* No byte of a next frame has come: a frame of ours may go in here. */
static inline bool ws_follower_at_boundary(const WsFollower *f) {
        return f->head_len == 0 && !f->in_payload;
}

/* The opcode of a frame whose first byte is b (the byte that follows a boundary). */
static inline WsOpcode ws_opcode_of(uint8_t b) {
        return (WsOpcode) (b & 0x0f);
}

/* Follows the n bytes at p, as far as the end of the frame they are in. Returns how many of them belong
 * to that frame: fewer than n when it ends inside them (the follower is then at a boundary, and the rest
 * begins the next frame), n when the frame goes on or ends with them. Call it in a loop to walk a buffer
 * frame by frame. A 64-bit length with its top bit set (RFC 6455 forbids it) is followed as written. */
size_t ws_follow(WsFollower *f, const uint8_t *p, size_t n);

/* Follows all n bytes (ws_follow() until they are used up). */
void ws_follow_all(WsFollower *f, const uint8_t *p, size_t n);

/* Writes a close frame with code and reason (truncated to WS_CLOSE_REASON_MAX bytes) into out; with mask
 * (4 bytes, NULL: unmasked) the payload is masked, as frames towards a server must be (RFC 6455 5.3).
 * Returns its length, at most WS_CLOSE_FRAME_MAX. */
size_t ws_close_frame(uint8_t out[static WS_CLOSE_FRAME_MAX], uint16_t code, const char *reason,
                      const uint8_t *mask);

/* The status code of a close frame's payload (unmasked); 1005 (none given) when it has fewer than 2
 * bytes. */
uint16_t ws_close_code(const uint8_t *payload, size_t n);
