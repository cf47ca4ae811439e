/* SPDX-License-Identifier: MIT */
#include "frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "macro.h"

/* A buffer kept from a large frame is given back once idle, so one big Package does not pin memory. */
#define BODY_KEEP_MAX (64U * 1024U)

void frame_decoder_init(FrameDecoder *d, size_t max_size) {
        *d = (FrameDecoder) { .max_size = max_size > 0 ? max_size : FRAME_MAX_SIZE_DEFAULT };
}

void frame_decoder_done(FrameDecoder *d) {
        free(d->body);
        frame_decoder_init(d, d->max_size);
}

bool frame_decoder_pending(const FrameDecoder *d) {
        return d->header_have > 0;
}

Frame *frame_free(Frame *f) {
        if (f)
                elastic_pool__frame__free_unpacked(f, NULL);
        return NULL;
}

static int unpack(const uint8_t *data, size_t size, Frame **ret) {
        Frame *f;

        f = elastic_pool__frame__unpack(NULL, size, data);
        if (!f)
                return -EBADMSG;
        /* An empty or unknown body is a peer we do not understand: refuse it rather than guess. */
        if (f->body_case == ELASTIC_POOL__FRAME__BODY__NOT_SET) {
                frame_free(f);
                return -EBADMSG;
        }
        *ret = f;
        return 1;
}

static void reset_for_next(FrameDecoder *d) {
        d->header_have = 0;
        d->body_size = d->body_have = 0;
        if (d->body_allocated > BODY_KEEP_MAX) {
                free(d->body);
                d->body = NULL;
                d->body_allocated = 0;
        }
}

static int take_header(FrameDecoder *d) {
        uint32_t len = (uint32_t) d->header[0] << 24 | (uint32_t) d->header[1] << 16 |
                       (uint32_t) d->header[2] << 8 | (uint32_t) d->header[3];

        /* kept even when refused, so the caller can say what was announced */
        d->body_size = len;
        if (len > d->max_size)
                return -EMSGSIZE;
        d->body_have = 0;
        return 0;
}

/* Room for the body's next n bytes. It grows with what arrives (doubling, from 64 KiB) rather than to the
 * announced size at once, so a peer that announces 16 MiB and sends 5 bytes pins 64 KiB, not 16 MiB. */
static int reserve_body(FrameDecoder *d, size_t n) {
        size_t want = d->body_have + n, cap;
        uint8_t *p;

        if (d->body_allocated >= want)
                return 0;
        cap = MIN(d->body_size, MAX(want, MAX(2 * d->body_allocated, (size_t) BODY_KEEP_MAX)));
        p = realloc(d->body, cap);
        if (!p)
                return -ENOMEM;
        d->body = p;
        d->body_allocated = cap;
        return 0;
}

static int feed(FrameDecoder *d, const uint8_t *p, size_t size, size_t *ret_consumed, Frame **ret_frame) {
        size_t used = 0, n;
        int r;

        while (d->header_have < FRAME_HEADER_SIZE) {
                if (used == size)
                        return 0;
                d->header[d->header_have++] = p[used++];
                *ret_consumed = used;
                if (d->header_have < FRAME_HEADER_SIZE)
                        continue;
                r = take_header(d);
                if (r < 0)
                        return r;
                /* the common case: the whole body is already here, decode in place without copying */
                if (size - used >= d->body_size) {
                        r = unpack(p + used, d->body_size, ret_frame);
                        *ret_consumed = used + d->body_size;
                        reset_for_next(d);
                        return r;
                }
        }

        n = MIN(size - used, d->body_size - d->body_have);
        r = reserve_body(d, n);
        if (r < 0)
                return r;
        if (n > 0)
                memcpy(d->body + d->body_have, p + used, n);
        d->body_have += n;
        used += n;
        *ret_consumed = used;
        if (d->body_have < d->body_size)
                return 0;

        r = unpack(d->body, d->body_size, ret_frame);
        reset_for_next(d);
        return r;
}

int frame_decoder_feed(FrameDecoder *d, const void *data, size_t size, size_t *ret_consumed, Frame **ret_frame) {
        int r;

        *ret_consumed = 0;
        *ret_frame = NULL;
        /* an error leaves the stream out of step (or a buffer short of the announced size): it sticks */
        if (d->error < 0)
                return d->error;
        r = feed(d, data, size, ret_consumed, ret_frame);
        if (r < 0)
                d->error = r;
        return r;
}

int frame_encode(const Frame *f, size_t max_size, uint8_t **ret, size_t *ret_size) {
        size_t len = elastic_pool__frame__get_packed_size(f);
        uint8_t *buf;

        if (len > (max_size > 0 ? max_size : FRAME_MAX_SIZE_DEFAULT) || len > UINT32_MAX)
                return -EMSGSIZE;
        buf = malloc(FRAME_HEADER_SIZE + len);
        if (!buf)
                return -ENOMEM;
        buf[0] = (uint8_t) (len >> 24);
        buf[1] = (uint8_t) (len >> 16);
        buf[2] = (uint8_t) (len >> 8);
        buf[3] = (uint8_t) len;
        (void) elastic_pool__frame__pack(f, buf + FRAME_HEADER_SIZE);
        *ret = buf;
        *ret_size = FRAME_HEADER_SIZE + len;
        return 0;
}

const char *frame_body_name(const Frame *f) {
        switch (f->body_case) {
        case ELASTIC_POOL__FRAME__BODY_HELLO:
                return "hello";
        case ELASTIC_POOL__FRAME__BODY_REPORT:
                return "report";
        case ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST:
                return "snapshot-request";
        case ELASTIC_POOL__FRAME__BODY_PACKAGE:
                return "package";
        case ELASTIC_POOL__FRAME__BODY_INSTALL:
                return "install";
        case ELASTIC_POOL__FRAME__BODY_INSTALL_RESULT:
                return "install-result";
        case ELASTIC_POOL__FRAME__BODY_DROP:
                return "drop";
        case ELASTIC_POOL__FRAME__BODY_DRAIN:
                return "drain";
        case ELASTIC_POOL__FRAME__BODY_GOODBYE:
                return "goodbye";
        case ELASTIC_POOL__FRAME__BODY_USERS:
                return "users";
        default:
                return "none";
        }
}

void frame_outbox_init(FrameOutbox *o, size_t limit) {
        *o = (FrameOutbox) { .limit = limit };
}

void frame_outbox_done(FrameOutbox *o) {
        free(o->data);
        frame_outbox_init(o, o->limit);
}

size_t frame_outbox_queued(const FrameOutbox *o) {
        return o->end - o->start;
}

static int outbox_reserve(FrameOutbox *o, size_t extra) {
        uint8_t *p;
        size_t need;

        if (o->start > 0 && o->allocated - o->end < extra) {
                memmove(o->data, o->data + o->start, o->end - o->start);
                o->end -= o->start;
                o->start = 0;
        }
        need = o->end + extra;
        if (need <= o->allocated)
                return 0;
        need = MAX(need, o->allocated * 2);
        p = realloc(o->data, need);
        if (!p)
                return -ENOMEM;
        o->data = p;
        o->allocated = need;
        return 0;
}

int frame_outbox_push(FrameOutbox *o, const Frame *f, size_t max_size) {
        size_t len = elastic_pool__frame__get_packed_size(f);
        uint8_t *h;
        int r;

        if (len > (max_size > 0 ? max_size : FRAME_MAX_SIZE_DEFAULT) || len > UINT32_MAX)
                return -EMSGSIZE;
        if (o->limit > 0 && frame_outbox_queued(o) + FRAME_HEADER_SIZE + len > o->limit)
                return -ENOBUFS;
        r = outbox_reserve(o, FRAME_HEADER_SIZE + len);
        if (r < 0)
                return r;
        h = o->data + o->end;
        h[0] = (uint8_t) (len >> 24);
        h[1] = (uint8_t) (len >> 16);
        h[2] = (uint8_t) (len >> 8);
        h[3] = (uint8_t) len;
        (void) elastic_pool__frame__pack(f, h + FRAME_HEADER_SIZE);
        o->end += FRAME_HEADER_SIZE + len;
        return 0;
}

int frame_outbox_flush(FrameOutbox *o, int fd) {
        while (o->start < o->end) {
                /* MSG_NOSIGNAL: a worker that died must not take its commander down with SIGPIPE */
                ssize_t n = send(fd, o->data + o->start, o->end - o->start, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 1;
                        return -errno;
                }
                o->start += (size_t) n;
        }
        o->start = o->end = 0;
        if (o->allocated > BODY_KEEP_MAX) {
                free(o->data);
                o->data = NULL;
                o->allocated = 0;
        }
        return 0;
}
