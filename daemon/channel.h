/* SPDX-License-Identifier: MIT */
#pragma once

/* The commander's end of one worker's channel: length-prefixed protobuf-c frames over a stream socket,
 * decoded with the shared codec. One dispatch callback per peer; a bad, oversize or truncated frame
 * closes the channel with a reason and the commander carries on. */

#include <stddef.h>
#include <systemd/sd-event.h>

#include "frame.h"

typedef struct Channel Channel;

typedef struct ChannelCallbacks {
        /* A decoded frame; it is freed after the call returns. Either callback may channel_free() the
         * channel: the object then stays valid until the callback returns, and nothing more is
         * dispatched from it (frames already read behind this one are dropped). */
        void (*on_frame)(Channel *c, const Frame *f, void *userdata);
        /* The channel is closed (error < 0 with a human reason, or 0 on an orderly EOF/Goodbye). The
         * Channel object stays allocated until channel_free(). */
        void (*on_close)(Channel *c, int error, const char *reason, void *userdata);
        /* Frames of body_case came faster than their rate and are being dropped unread; told once per
         * channel, the first time. May be NULL. */
        void (*on_throttled)(Channel *c, int body_case, unsigned per_second, void *userdata);
        /* Bytes wait to be read and decoded: the owner may warm what the frames will touch (a prefetch),
         * so that the decoding hides those fetches. Must not free the channel. May be NULL. */
        void (*on_readable)(Channel *c, void *userdata);
} ChannelCallbacks;

/* What the peer may send: the codec's per-type limits, and per type a rate in frames per second (burst
 * of CHANNEL_RATE_BURST_SECONDS worth; 0 = no rate). Frames over the rate are dropped before they are
 * buffered or decoded, so a flood costs a read, not an unpack and a dispatch. */
typedef struct ChannelLimits {
        FrameLimits frame;
        unsigned per_second[FRAME_BODY_CASES];
} ChannelLimits;

#define CHANNEL_RATE_BURST_SECONDS 2U

/* What a worker's sensor may send the commander: the sizes its frames can legitimately reach (a Package
 * up to the frame maximum; everything else small), and reports at most CHANNEL_REPORTS_PER_SECOND. The
 * types only the commander sends are refused. */
extern const ChannelLimits channel_worker_limits;
#define CHANNEL_REPORTS_PER_SECOND 20U

/* Takes ownership of fd (made non-blocking), also on failure, when it is closed. 0 or -errno. */
int channel_new(sd_event *event, int fd, size_t max_frame, const ChannelCallbacks *cb, void *userdata,
                Channel **ret);
/* Applies limits (kept by reference: they must outlive the channel) to every frame read from now on.
 * Without it only max_frame applies. */
void channel_set_limits(Channel *c, const ChannelLimits *limits);

/* Closes without calling on_close (the owner is the one closing) and drops the owner's reference.
 * Safe from inside the channel's own callbacks. Accepts NULL; returns NULL. */
Channel *channel_free(Channel *c);

/* Queues a frame and writes what the socket takes. 0, -ENOTCONN after close, -ENOBUFS when the worker
 * does not read (queue over its limit), -EMSGSIZE. */
int channel_send(Channel *c, const Frame *f);

bool channel_is_open(const Channel *c);
/* Counters for status surfaces. */
uint64_t channel_frames_received(const Channel *c);
/* Frames dropped unread for coming faster than their rate. */
uint64_t channel_frames_dropped(const Channel *c);
