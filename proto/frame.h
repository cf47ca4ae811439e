/* SPDX-License-Identifier: MIT */
#pragma once

/* The channel codec shared by the commander and the sensor: a 4-byte big-endian length followed by one
 * packed elastic_pool.Frame. Decoding is incremental (any split of the byte stream works) and checks
 * the announced length against the maximum before it allocates anything, so a hostile prefix can never
 * make it allocate more than max_size. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elastic_pool.pb-c.h"

#define EP_PROTOCOL_VERSION 1U
#define FRAME_HEADER_SIZE 4U
#define FRAME_MAX_SIZE_DEFAULT (16U * 1024U * 1024U)

typedef ElasticPool__Frame Frame;

/* Body types are the Frame's oneof field numbers; this many entries index them all (0 is unused). */
#define FRAME_BODY_CASES 16

/* What one body type may cost, checked before anything of it is unpacked: protobuf-c allocates per
 * field (unknown fields are kept, each in its own allocation; repeated entries in arrays), so a frame's
 * size alone does not bound what decoding it costs. */
typedef struct FrameBodyLimit {
        size_t max_size;   /* bytes after the length prefix; 0: this body type is refused */
        size_t max_fields; /* fields at every depth, each entry of a repeated field counted */
} FrameBodyLimit;

typedef struct FrameLimits {
        FrameBodyLimit body[FRAME_BODY_CASES]; /* by ElasticPool__Frame__BodyCase */
        size_t max_unknown;                    /* fields this side does not know, at every depth */
} FrameLimits;

/* Asked once a frame's body type is known (its first byte), before the body is buffered or decoded:
 * 0 to decode it, 1 to skip it unread, or a negative errno that refuses it (and sticks). */
typedef int (*FrameAdmit)(int body_case, size_t size, void *userdata);

typedef struct FrameDecoder {
        size_t max_size;
        uint8_t header[FRAME_HEADER_SIZE];
        size_t header_have;
        size_t body_size; /* announced by the current header */
        size_t body_have;
        uint8_t *body;
        size_t body_allocated;
        int error; /* the first error, returned again by every later feed */
        int body_case; /* of the current (or refused) frame, once its first body byte came; 0 before */
        bool begun;    /* the current body's first byte was seen (and its type checked) */
        bool skipping; /* the current body is consumed unread (FrameAdmit said 1) */
        const FrameLimits *limits; /* NULL: only max_size */
        FrameAdmit admit;
        void *admit_userdata;
} FrameDecoder;

void frame_decoder_init(FrameDecoder *d, size_t max_size);
void frame_decoder_done(FrameDecoder *d);
/* Checks every frame against limits (kept by reference; NULL for none) and asks admit (may be NULL)
 * about each. With limits, a body must start with its one-byte oneof tag. Survives done(). */
void frame_decoder_set_limits(FrameDecoder *d, const FrameLimits *limits, FrameAdmit admit, void *userdata);

/* Checks a packed Frame body against limits without unpacking it: 0, -EMSGSIZE (over its type's size),
 * -E2BIG (too many fields or unknown fields), -EPROTOTYPE (a body type refused by the limits, or none
 * known), -EBADMSG (not a well-formed Frame with one body). *ret_body_case is set once the type is
 * known (0 before). */
int frame_check_limits(const FrameLimits *limits, const uint8_t *data, size_t size, int *ret_body_case);

/* Consumes bytes from data until one frame completes or the input ends; *ret_consumed says how many.
 * Returns 1 with *ret_frame set (free with frame_free()) when a frame completed, 0 when more input is
 * needed, -EMSGSIZE when the announced length exceeds max_size (or, with limits, its type's size),
 * -E2BIG when it has more fields than its type's limit, -EPROTOTYPE when the limits refuse its type,
 * -EBADMSG when the body does not decode or carries no known body; a frame FrameAdmit skipped returns 0.
 * d->body_case names the type of a refused frame where known. An error sticks: every later call
 * returns it until frame_decoder_done(). */
int frame_decoder_feed(FrameDecoder *d, const void *data, size_t size, size_t *ret_consumed, Frame **ret_frame);

/* True while a frame is partially received (a peer closing now truncated it). */
bool frame_decoder_pending(const FrameDecoder *d);

Frame *frame_free(Frame *f);

/* Packs f with its header into a new buffer; -EMSGSIZE when it exceeds max_size, -ENOMEM. */
int frame_encode(const Frame *f, size_t max_size, uint8_t **ret, size_t *ret_size);

/* Name of the body, for logs: "hello", "report", ...; "none" for an unset body. */
const char *frame_body_name(const Frame *f);
/* The same for a body case number: "none" for 0 or one this side does not know. */
const char *frame_body_case_name(int body_case);

/* Outgoing bytes for a non-blocking fd. Frames are queued whole; flush writes what the fd takes. */
typedef struct FrameOutbox {
        uint8_t *data;
        size_t start, end, allocated;
        size_t limit; /* queued bytes beyond this refuse new frames with -ENOBUFS */
} FrameOutbox;

void frame_outbox_init(FrameOutbox *o, size_t limit);
void frame_outbox_done(FrameOutbox *o);
/* Queues f; -EMSGSIZE (over max_size), -ENOBUFS (queue over limit), -ENOMEM. */
int frame_outbox_push(FrameOutbox *o, const Frame *f, size_t max_size);
/* Writes queued bytes; 0 when the queue is empty, 1 when bytes remain (wait for POLLOUT), -errno. */
int frame_outbox_flush(FrameOutbox *o, int fd);
size_t frame_outbox_queued(const FrameOutbox *o);
