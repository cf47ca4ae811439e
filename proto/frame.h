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

typedef struct FrameDecoder {
        size_t max_size;
        uint8_t header[FRAME_HEADER_SIZE];
        size_t header_have;
        size_t body_size; /* announced by the current header */
        size_t body_have;
        uint8_t *body;
        size_t body_allocated;
        int error; /* the first error, returned again by every later feed */
} FrameDecoder;

void frame_decoder_init(FrameDecoder *d, size_t max_size);
void frame_decoder_done(FrameDecoder *d);

/* Consumes bytes from data until one frame completes or the input ends; *ret_consumed says how many.
 * Returns 1 with *ret_frame set (free with frame_free()) when a frame completed, 0 when more input is
 * needed, -EMSGSIZE when the announced length exceeds max_size, -EBADMSG when the body does not decode
 * or carries no known body. An error sticks: every later call returns it until frame_decoder_done(). */
int frame_decoder_feed(FrameDecoder *d, const void *data, size_t size, size_t *ret_consumed, Frame **ret_frame);

/* True while a frame is partially received (a peer closing now truncated it). */
bool frame_decoder_pending(const FrameDecoder *d);

Frame *frame_free(Frame *f);

/* Packs f with its header into a new buffer; -EMSGSIZE when it exceeds max_size, -ENOMEM. */
int frame_encode(const Frame *f, size_t max_size, uint8_t **ret, size_t *ret_size);

/* Name of the body, for logs: "hello", "report", ...; "none" for an unset body. */
const char *frame_body_name(const Frame *f);

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
