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

/* A worker that stops reading may have this much queued before we call it stuck. */
#define CHANNEL_OUTBOX_LIMIT (64U * 1024U * 1024U)
#define CHANNEL_READ_CHUNK 65536

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

/* Feeds bytes to the decoder and dispatches each complete frame. Returns false once closed, which a
 * callback may have done (channel_close() or channel_free()): hence c->open after every frame. */
static bool feed(Channel *c, const uint8_t *p, size_t n) {
        while (n > 0 && c->open) {
                Frame *f = NULL;
                size_t used;
                int r;

                r = frame_decoder_feed(&c->decoder, p, n, &used, &f);
                if (r == -EMSGSIZE) {
                        char reason[128];
                        snprintf(reason, sizeof reason, "frame announces %zu bytes, over the %zu byte maximum",
                                 c->decoder.body_size, c->max_frame);
                        channel_close(c, r, reason);
                        return false;
                }
                if (r == -EBADMSG) {
                        channel_close(c, r, "undecodable frame (not an elastic_pool.Frame)");
                        return false;
                }
                if (r < 0) {
                        channel_close(c, r, "out of memory decoding a frame");
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
