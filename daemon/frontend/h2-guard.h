/* SPDX-License-Identifier: MIT */
#pragma once

/* Flood accounting of one HTTP/2 client connection (h2-connection.c): what Debian's nghttp2 1.52 does not
 * count for us. Frames that carry no request or response bytes (empty DATA, PRIORITY, WINDOW_UPDATE,
 * PING, SETTINGS, RST_STREAM, unknown types, streams we had to refuse) are "overhead"; each costs the
 * server a parse, often a reply, sometimes a walk of the priority tree, and the client next to nothing.
 *
 * Two budgets, both pure (the caller passes the clock):
 *  - a token bucket of overhead frames: H2_GUARD_BURST tokens to start with, one spent per overhead frame,
 *    one earned back per byte of payload moved for the application (request DATA and headers delivered,
 *    response DATA sent: WINDOW_UPDATEs acknowledge our DATA) and H2_GUARD_REFILL_PER_SEC per second of
 *    wall time, never more than the burst. So more than 10 000 such frames with less than ~1 KiB of payload
 *    per 1 000 of them, within a window of about 100 s, empty it;
 *  - the wire ratio (as nginx does): bytes read from the socket over H2_GUARD_WIRE_RATIO times the payload
 *    plus H2_GUARD_WIRE_GRACE: big frames that carry nothing (padding, header blocks we refuse).
 *
 * The frames are counted on the wire, by walking the frame headers of what was read before nghttp2 sees
 * it: nghttp2 drops some frames without any callback (DATA on streams it already forgot, unknown frame
 * types), and those must cost the client too. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "time-util.h"

#define H2_GUARD_BURST          10000U
#define H2_GUARD_REFILL_PER_SEC 100U
#define H2_GUARD_WIRE_RATIO     8U
#define H2_GUARD_WIRE_GRACE     (1024U * 1024U)
/* PING and SETTINGS (without ACK) each queue an acknowledgement. nghttp2 gives up past 1000 queued
 * (max_outbound_ack) without a word; more than this many before our answers went out is a flood we
 * name, with a GOAWAY. Legitimate clients send a handful. */
#define H2_GUARD_UNANSWERED_MAX 500U

typedef enum H2Overhead {
        H2_OVERHEAD_EMPTY_DATA, /* DATA without payload and without END_STREAM (padding only counts) */
        H2_OVERHEAD_PRIORITY,   /* PRIORITY, PRIORITY_UPDATE */
        H2_OVERHEAD_WINDOW_UPDATE,
        H2_OVERHEAD_PING,
        H2_OVERHEAD_SETTINGS,
        H2_OVERHEAD_RST_STREAM,
        H2_OVERHEAD_UNKNOWN, /* extension frame types we do not speak */
        H2_OVERHEAD_REFUSED, /* HEADERS of a stream we refused or answered ourselves (431, 405) */
        H2_OVERHEAD_INVALID, /* a frame nghttp2 rejected without closing the connection */
        _H2_OVERHEAD_MAX,
        _H2_OVERHEAD_INVALID = -EINVAL,
} H2Overhead;

typedef struct H2Guard {
        uint64_t tokens;   /* overhead frames still allowed, <= H2_GUARD_BURST */
        usec_t refilled;   /* when time was last turned into tokens */
        uint64_t overhead; /* totals over the connection's life, for the log line */
        uint64_t payload;
        uint64_t wire;
        uint32_t count[_H2_OVERHEAD_MAX];
        bool flooded;
        uint32_t unanswered; /* PING/SETTINGS since the connection last wrote everything out; the
                              * connection resets it */

        /* the frame walker: bytes of the current payload (or of the preface) still to skip, and the part
         * of the next frame header seen so far */
        uint32_t skip;
        uint8_t header[9];
        uint8_t header_len;
} H2Guard;

/* "empty DATA", "PRIORITY", …; NULL for an out-of-range kind. */
const char *h2_overhead_to_string(H2Overhead k);

/* preface: the 24-byte client magic comes first (prior knowledge and h2c upgrade alike). */
void h2_guard_init(H2Guard *g, usec_t now);
/* One overhead frame of this kind at now. 0 while within budget, -EBUSY once the budget is spent (and
 * from then on; g->flooded tells). */
int h2_guard_charge(H2Guard *g, H2Overhead kind, usec_t now);
/* Payload bytes moved for the application: earns tokens back (up to the burst) and offsets wire bytes. */
void h2_guard_credit(H2Guard *g, uint64_t payload);
/* Bytes read from the socket, the client connection preface first: walks the frame headers, charges the
 * overhead frames among them and checks the wire ratio and the unanswered count. 0, or -EBUSY once any
 * budget is spent. */
int h2_guard_scan(H2Guard *g, const uint8_t *data, size_t size, usec_t now);
/* "12001 overhead frames (10000 empty DATA, 2001 PING) against 0 payload bytes, 108009 bytes read" into
 * buf; returns buf. */
char *h2_guard_format(const H2Guard *g, char *buf, size_t size);
