/* SPDX-License-Identifier: MIT */
#include "channel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "macro.h"
#include "time-util.h"

/* A worker that stops reading may have this much queued before we call it stuck. */
#define CHANNEL_OUTBOX_LIMIT (64U * 1024U * 1024U)
#define CHANNEL_READ_CHUNK 65536

/* A report is about 150 bytes and 40 fields with every reading present; a Hello carries a few strings
 * (a cgroup path at most PATH_MAX); a Users frame holds up to the sensor's 1 MiB budget of names
 * (USER_LIST_FRAME_BUDGET) plus one name; only a Package's blob reaches the frame maximum. Field counts
 * bound what unpacking allocates whatever the size: one entry per user name, a few per message
 * otherwise. A newer sensor may add fields we do not know: a few dozen of them, not millions. */
const ChannelLimits channel_worker_limits = {
        .frame = {
                .body = {
                        [ELASTIC_POOL__FRAME__BODY_HELLO] = { 64U * 1024U, 256 },
                        [ELASTIC_POOL__FRAME__BODY_REPORT] = { 4096, 128 },
                        [ELASTIC_POOL__FRAME__BODY_PACKAGE] = { FRAME_MAX_SIZE_DEFAULT, 64 },
                        [ELASTIC_POOL__FRAME__BODY_INSTALL_RESULT] = { 64U * 1024U, 64 },
                        [ELASTIC_POOL__FRAME__BODY_GOODBYE] = { 4096, 16 },
                        [ELASTIC_POOL__FRAME__BODY_USERS] = { 2U * 1024U * 1024U, 256U * 1024U },
                },
                .max_unknown = 64,
        },
        /* a sensor reports once per interval (seconds; 200 ms in tests), plus an early one now and then */
        .per_second = {
                [ELASTIC_POOL__FRAME__BODY_REPORT] = CHANNEL_REPORTS_PER_SECOND,
                [ELASTIC_POOL__FRAME__BODY_HELLO] = 10,
        },
};

struct Channel {
        /* The owner's reference, plus one held by each of our entry points that calls out: an owner may
         * free the channel from inside its own callback, and the object must outlive that callback. */
        unsigned n_ref;
        sd_event_source *io;
        int fd;
        size_t max_frame;
        FrameDecoder decoder;
        FrameOutbox outbox;
        ChannelCallbacks cb;
        void *userdata;
        uint64_t frames_received;
        uint64_t frames_dropped;
        const ChannelLimits *limits;
        /* token buckets of the rated body types: tokens are scaled by USEC_PER_SEC, so that one frame
         * costs USEC_PER_SEC and a microsecond earns per_second */
        uint64_t tokens[FRAME_BODY_CASES];
        usec_t refilled_at[FRAME_BODY_CASES];
        bool throttle_told;
        bool open;
};

static Channel *channel_ref(Channel *c) {
        c->n_ref++;
        return c;
}

static Channel *channel_unref(Channel *c) {
        if (!c || --c->n_ref > 0)
                return NULL;
        free(c);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Channel *, channel_unref);

/* Drops the socket and the buffers; what is left is a shell that reads as closed. */
static void release_io(Channel *c) {
        c->open = false;
        c->io = sd_event_source_disable_unref(c->io);
        c->fd = safe_close(c->fd);
        frame_decoder_done(&c->decoder);
        frame_outbox_done(&c->outbox);
}

static void channel_close(Channel *c, int error, const char *reason) {
        if (!c->open)
                return;
        release_io(c);
        if (c->cb.on_close)
                c->cb.on_close(c, error, reason, c->userdata);
}

static int update_events(Channel *c) {
        uint32_t events = EPOLLIN | (frame_outbox_queued(&c->outbox) > 0 ? EPOLLOUT : 0);

        return sd_event_source_set_io_events(c->io, events);
}

static int flush(Channel *c) {
        int r;

        r = frame_outbox_flush(&c->outbox, c->fd);
        if (r < 0) {
                char reason[128];
                snprintf(reason, sizeof reason, "write failed: %s", strerror(-r));
                channel_close(c, r, reason);
                return r;
        }
        return update_events(c);
}

static void refusal_reason(const Channel *c, int r, char *buf, size_t size) {
        const FrameDecoder *d = &c->decoder;
        const char *type = frame_body_case_name(d->body_case);

        switch (r) {
        case -EMSGSIZE:
                if (d->body_case > 0 && c->limits)
                        snprintf(buf, size, "%s frame of %zu bytes, over the %zu byte maximum of its type", type,
                                 d->body_size, c->limits->frame.body[d->body_case].max_size);
                else
                        snprintf(buf, size, "frame announces %zu bytes, over the %zu byte maximum", d->body_size,
                                 c->max_frame);
                break;
        case -E2BIG:
                snprintf(buf, size, "%s frame with more fields than its type allows (%zu, %zu unknown)", type,
                         c->limits ? c->limits->frame.body[d->body_case].max_fields : 0,
                         c->limits ? c->limits->frame.max_unknown : 0);
                break;
        case -EPROTOTYPE:
                if (d->body_case > 0)
                        snprintf(buf, size, "%s frame (field %d), which a worker does not send", type, d->body_case);
                else
                        snprintf(buf, size, "frame of a type we do not know");
                break;
        case -EBADMSG:
                snprintf(buf, size, "undecodable frame (not an elastic_pool.Frame)");
                break;
        default:
                snprintf(buf, size, "out of memory decoding a frame");
                break;
        }
}

/* FrameAdmit: a token bucket per rated type. Dropped frames are skipped unread by the decoder. */
static int admit(int body_case, size_t size, void *userdata) {
        Channel *c = userdata;
        unsigned rate = c->limits->per_second[body_case];
        uint64_t cap = (uint64_t) rate * CHANNEL_RATE_BURST_SECONDS * USEC_PER_SEC;
        usec_t now;

        if (rate == 0)
                return 0;
        if (sd_event_now(sd_event_source_get_event(c->io), CLOCK_MONOTONIC, &now) < 0)
                now = now_usec(CLOCK_MONOTONIC);
        if (c->refilled_at[body_case] == 0)
                c->tokens[body_case] = cap; /* a new channel starts with its burst */
        else
                c->tokens[body_case] = MIN(cap, c->tokens[body_case] + (now - c->refilled_at[body_case]) * rate);
        c->refilled_at[body_case] = now;
        if (c->tokens[body_case] >= USEC_PER_SEC) {
                c->tokens[body_case] -= USEC_PER_SEC;
                return 0;
        }
        c->frames_dropped++;
        if (!c->throttle_told && c->cb.on_throttled) {
                c->throttle_told = true;
                c->cb.on_throttled(c, body_case, rate, c->userdata);
        }
        return 1;
}

/* Feeds bytes to the decoder and dispatches each complete frame. Returns false once closed, which a
 * callback may have done (channel_close() or channel_free()): hence c->open after every frame. */
static bool feed(Channel *c, const uint8_t *p, size_t n) {
        while (n > 0 && c->open) {
                Frame *f = NULL;
                size_t used;
                int r;

                r = frame_decoder_feed(&c->decoder, p, n, &used, &f);
                if (r < 0) {
                        char reason[160];
                        refusal_reason(c, r, reason, sizeof reason);
                        channel_close(c, r, reason);
                        return false;
                }
                p += used;
                n -= used;
                if (r == 1) {
                        c->frames_received++;
                        if (c->cb.on_frame)
                                c->cb.on_frame(c, f, c->userdata);
                        frame_free(f);
                }
        }
        return c->open;
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        /* held until we return: a callback below may free the channel (a Hello we cannot speak) */
        _cleanup_(channel_unrefp) Channel *c = channel_ref(userdata);
        uint8_t buf[CHANNEL_READ_CHUNK];

        if (revents & EPOLLOUT)
                if (flush(c) < 0)
                        return 0;
        if (!(revents & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                return 0;
        if (c->cb.on_readable)
                c->cb.on_readable(c, c->userdata);

        /* Bounded: one worker cannot keep the loop to itself. */
        for (int rounds = 0; rounds < 16 && c->open; rounds++) {
                ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        char reason[128];
                        snprintf(reason, sizeof reason, "read failed: %s", strerror(errno));
                        channel_close(c, -errno, reason);
                        return 0;
                }
                if (n == 0) {
                        if (frame_decoder_pending(&c->decoder))
                                channel_close(c, -EPIPE, "channel closed in the middle of a frame (truncated)");
                        else
                                channel_close(c, 0, "channel closed by the worker");
                        return 0;
                }
                if (!feed(c, buf, (size_t) n))
                        return 0;
        }
        return 0;
}

int channel_new(sd_event *event, int fd, size_t max_frame, const ChannelCallbacks *cb, void *userdata,
                Channel **ret) {
        _cleanup_close_ int owned = fd; /* ours from here on, also when we fail */
        _cleanup_free_ Channel *c = NULL;
        int r;

        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->n_ref = 1;
        c->fd = -EBADF;
        c->max_frame = max_frame > 0 ? max_frame : FRAME_MAX_SIZE_DEFAULT;
        c->cb = *cb;
        c->userdata = userdata;
        frame_decoder_init(&c->decoder, c->max_frame);
        frame_outbox_init(&c->outbox, CHANNEL_OUTBOX_LIMIT);

        r = fd_set_nonblock(owned, true);
        if (r < 0)
                return r;
        r = sd_event_add_io(event, &c->io, owned, EPOLLIN, on_io, c);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(c->io, "channel");
        c->fd = TAKE_FD(owned);
        c->open = true;
        *ret = TAKE_PTR(c);
        return 0;
}

void channel_set_limits(Channel *c, const ChannelLimits *limits) {
        c->limits = limits;
        frame_decoder_set_limits(&c->decoder, limits ? &limits->frame : NULL, limits ? admit : NULL, c);
}

Channel *channel_free(Channel *c) {
        if (!c)
                return NULL;
        /* the owner is done with it: no callback reaches the owner again, even from a dispatch that is
         * still on the stack (that one holds its own reference and frees the shell when it returns) */
        c->cb = (ChannelCallbacks) {};
        release_io(c);
        return channel_unref(c);
}

int channel_send(Channel *c, const Frame *f) {
        _cleanup_(channel_unrefp) Channel *ref = NULL;
        int r;

        if (!c || !c->open)
                return -ENOTCONN;
        /* a failed write closes the channel, and the close callback may free it */
        ref = channel_ref(c);
        r = frame_outbox_push(&c->outbox, f, c->max_frame);
        if (r < 0)
                return r;
        return flush(c);
}

bool channel_is_open(const Channel *c) {
        return c && c->open;
}

uint64_t channel_frames_received(const Channel *c) {
        return c ? c->frames_received : 0;
}

uint64_t channel_frames_dropped(const Channel *c) {
        return c ? c->frames_dropped : 0;
}
