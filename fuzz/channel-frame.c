/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the commander's end of a worker channel (daemon/channel.c) and the codec it decodes
 * with (proto/frame.c: length prefix, the per-type size and field limits, protobuf-c unpacking), fed a
 * worker's bytes over a socketpair with the limits the commander applies to every worker
 * (channel_worker_limits). Every frame that comes through is encoded again and decoded again: what the
 * commander accepted must survive the trip with its type, and what unpacking it allocated (fields at every
 * depth, repeated entries, unknown fields) must be within the limits counted before it was unpacked.
 *
 * Input: one options byte, then the worker's bytes (4-byte big-endian length + packed Frame, repeated).
 *   bits 0-2  piece size the bytes are written in (fuzz-util.h)
 *   bit  3    no per-type limits (only the frame maximum), as before a channel is set up
 *   bit  4    a 64 KiB frame maximum instead of the default 16 MiB */
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel.h"
#include "fuzz-util.h"
#include "log.h"

typedef struct Harness {
        Channel *channel;
        const ChannelLimits *limits; /* NULL: the channel has none */
        unsigned frames;
        bool closed;
} Harness;

typedef struct Count {
        size_t fields, unknown;
} Count;

/* What protobuf-c allocated for m: present fields at every depth (each repeated entry one), unknown
 * fields at every depth. */
static void count_unpacked(const ProtobufCMessage *m, Count *c) {
        const ProtobufCMessageDescriptor *d = m->descriptor;

        c->unknown += m->n_unknown_fields;
        for (unsigned i = 0; i < d->n_fields; i++) {
                const ProtobufCFieldDescriptor *f = &d->fields[i];
                const char *base = (const char *) m;

                if (f->label == PROTOBUF_C_LABEL_REPEATED) {
                        size_t n = *(const size_t *) (base + f->quantifier_offset);
                        void *const *a = *(void *const *const *) (base + f->offset);

                        c->fields += n;
                        if (f->type == PROTOBUF_C_TYPE_MESSAGE)
                                for (size_t k = 0; k < n; k++)
                                        count_unpacked(a[k], c);
                        continue;
                }
                if (f->type == PROTOBUF_C_TYPE_MESSAGE || f->type == PROTOBUF_C_TYPE_STRING) {
                        const void *p = *(const void *const *) (base + f->offset);
                        if (!p || p == f->default_value)
                                continue;
                        c->fields++;
                        if (f->type == PROTOBUF_C_TYPE_MESSAGE)
                                count_unpacked(p, c);
                        continue;
                }
                if (f->quantifier_offset && *(const protobuf_c_boolean *) (base + f->quantifier_offset))
                        c->fields++;
        }
}

/* The body of f: the one message of its oneof. */
static const ProtobufCMessage *frame_body(const Frame *f) {
        const ProtobufCFieldDescriptor *fd =
                protobuf_c_message_descriptor_get_field(&elastic_pool__frame__descriptor, (unsigned) f->body_case);

        if (!fd)
                abort();
        return *(const ProtobufCMessage *const *) ((const char *) f + fd->offset);
}

static void check_within_limits(const Harness *h, const Frame *f) {
        Count c = {};

        if (!h->limits)
                return;
        count_unpacked(frame_body(f), &c);
        if (c.fields > h->limits->frame.body[f->body_case].max_fields || c.unknown > h->limits->frame.max_unknown)
                abort(); /* unpacking allocated more than the limits counted beforehand */
}

static void check_round_trip(const Frame *f) {
        FrameDecoder d;
        uint8_t *buf = NULL;
        Frame *again = NULL;
        size_t size, used;
        int r;

        r = frame_encode(f, 0, &buf, &size);
        if (r == -EMSGSIZE)
                return;
        if (r < 0)
                abort();
        frame_decoder_init(&d, 0);
        r = frame_decoder_feed(&d, buf, size, &used, &again);
        if (r != 1 || used != size || again->body_case != f->body_case)
                abort(); /* we decoded it once: our own encoding of it must decode */
        frame_free(again);
        frame_decoder_done(&d);
        free(buf);
}

static void on_frame(Channel *c, const Frame *f, void *userdata) {
        Harness *h = userdata;

        h->frames++;
        (void) frame_body_name(f);
        check_within_limits(h, f);
        check_round_trip(f);
}

static void on_close(Channel *c, int error, const char *reason, void *userdata) {
        Harness *h = userdata;

        if (!reason || !*reason)
                abort(); /* every close names its reason */
        h->closed = true;
}

static void on_throttled(Channel *c, int body_case, unsigned per_second, void *userdata) {
}

static const ChannelCallbacks callbacks = {
        .on_frame = on_frame,
        .on_close = on_close,
        .on_throttled = on_throttled,
};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        log_set_max_level(LOG_CRIT);
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Harness h = {};
        sd_event *e = NULL;
        uint8_t options;
        int sv[2];

        if (size < 1)
                return 0;
        options = data[0];
        data++, size--;

        if (sd_event_new(&e) < 0)
                abort();
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
                abort();
        if (channel_new(e, sv[1], (options & 0x10) ? 64U * 1024U : 0, &callbacks, &h, &h.channel) < 0)
                abort();
        if (!(options & 0x08)) {
                h.limits = &channel_worker_limits;
                channel_set_limits(h.channel, h.limits);
        }

        fuzz_feed(e, sv[0], data, size, fuzz_piece_size(options), NULL, NULL);
        close(sv[0]); /* EOF: a frame cut short is a truncated one */
        fuzz_loop_settle(e, NULL, NULL);
        if (channel_is_open(h.channel))
                abort(); /* the worker hung up: the channel must have noticed */

        h.channel = channel_free(h.channel);
        sd_event_unref(e);
        return 0;
}
