/* SPDX-License-Identifier: MIT */
#include "frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "frame-block.h"
#include "macro.h"

/* A buffer kept from a large frame is given back once idle, so one big Package does not pin memory. */
#define BODY_KEEP_MAX (64U * 1024U)

void frame_decoder_init(FrameDecoder *d, size_t max_size) {
        *d = (FrameDecoder) { .max_size = max_size > 0 ? max_size : FRAME_MAX_SIZE_DEFAULT };
}

void frame_decoder_done(FrameDecoder *d) {
        const FrameLimits *limits = d->limits;
        FrameAdmit admit = d->admit;
        void *userdata = d->admit_userdata;

        free(d->body);
        frame_decoder_init(d, d->max_size);
        frame_decoder_set_limits(d, limits, admit, userdata);
}

void frame_decoder_set_limits(FrameDecoder *d, const FrameLimits *limits, FrameAdmit admit, void *userdata) {
        d->limits = limits;
        d->admit = admit;
        d->admit_userdata = userdata;
}

bool frame_decoder_pending(const FrameDecoder *d) {
        return d->header_have > 0;
}

/* Every frame this side holds was unpacked into a block of its own (unpack()). */
Frame *frame_free(Frame *f) {
        if (f)
                frame_block_free(frame_block_of(f));
        return NULL;
}

static int unpack(const uint8_t *data, size_t size, Frame **ret) {
        FrameBlock *b;
        Frame *f;

        b = frame_block_new();
        if (!b)
                return -ENOMEM;
        f = elastic_pool__frame__unpack(frame_block_allocator(b), size, data);
        /* An empty or unknown body is a peer we do not understand: refuse it rather than guess. */
        if (!f || f->body_case == ELASTIC_POOL__FRAME__BODY__NOT_SET) {
                frame_block_free(b);
                return -EBADMSG;
        }
        /* frame_free() finds the block from the frame: a protobuf-c that allocated something else first
         * would make it free the wrong address */
        if ((void *) f != frame_block_first(b))
                abort();
        *ret = f;
        return 1;
}

/* Nesting of our messages is two deep; anything deeper is not ours. */
#define WALK_DEPTH_MAX 8
/* Protobuf's largest field number. protobuf-c reads larger ones as unknown fields, but writes their key
 * back as a 32-bit (number << 3) that wraps: such a frame, packed again (a report archived or relayed),
 * would not decode. Found by fuzz/channel-frame's round trip. */
#define FIELD_NUMBER_MAX ((UINT64_C(1) << 29) - 1)

typedef struct Budget {
        size_t fields, unknown;
} Budget;

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *ret) {
        uint64_t v = 0;

        for (unsigned shift = 0; shift < 64; shift += 7) {
                uint8_t b;

                if (*p == end)
                        return -EBADMSG;
                b = *(*p)++;
                v |= (uint64_t) (b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        *ret = v;
                        return 0;
                }
        }
        return -EBADMSG;
}

static int spend(size_t *budget, size_t n) {
        if (*budget < n)
                return -E2BIG;
        *budget -= n;
        return 0;
}

static int skip(const uint8_t **p, const uint8_t *end, uint64_t n) {
        if (n > (uint64_t) (end - *p))
                return -EBADMSG;
        *p += n;
        return 0;
}

/* Entries of a packed repeated scalar: protobuf-c unpacks each into its array. */
static size_t packed_entries(const ProtobufCFieldDescriptor *f, const uint8_t *p, size_t len) {
        size_t n = 0;

        switch (f->type) {
        case PROTOBUF_C_TYPE_FIXED32:
        case PROTOBUF_C_TYPE_SFIXED32:
        case PROTOBUF_C_TYPE_FLOAT:
                return len / 4;
        case PROTOBUF_C_TYPE_FIXED64:
        case PROTOBUF_C_TYPE_SFIXED64:
        case PROTOBUF_C_TYPE_DOUBLE:
                return len / 8;
        default: /* varints: one ends at each byte without the continuation bit */
                for (size_t i = 0; i < len; i++)
                        n += !(p[i] & 0x80);
                return n;
        }
}

/* protobuf_c_message_descriptor_get_field() bisects the descriptor's ranges of field numbers, through a
 * call into the library, for every field the walk meets: 5 % of a report's path. Every message of ours
 * numbers its fields in one run (one range), which an index answers; anything else asks the library. */
static const ProtobufCFieldDescriptor *field_of(const ProtobufCMessageDescriptor *desc, uint64_t number) {
        const ProtobufCIntRange *r = desc->field_ranges;

        if (desc->n_field_ranges == 1 && r[0].start_value >= 0 && number >= (uint64_t) r[0].start_value &&
            number - (uint64_t) r[0].start_value < desc->n_fields - r[0].orig_index)
                return &desc->fields[r[0].orig_index + (number - (uint64_t) r[0].start_value)];
        return protobuf_c_message_descriptor_get_field(desc, (unsigned) number);
}

static int walk(const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t size, unsigned depth, Budget *b);

static int walk_delimited(const ProtobufCFieldDescriptor *f, const uint8_t *p, size_t len, unsigned depth,
                          Budget *b) {
        size_t n;

        if (!f)
                return 0;
        if (f->type == PROTOBUF_C_TYPE_MESSAGE)
                return walk(f->descriptor, p, len, depth + 1, b);
        if (f->label != PROTOBUF_C_LABEL_REPEATED || f->type == PROTOBUF_C_TYPE_STRING ||
            f->type == PROTOBUF_C_TYPE_BYTES)
                return 0;
        n = packed_entries(f, p, len);
        return spend(&b->fields, n > 0 ? n - 1 : 0); /* the field itself is counted already */
}

static int walk(const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t size, unsigned depth, Budget *b) {
        const uint8_t *end = p + size;

        if (depth > WALK_DEPTH_MAX)
                return -EBADMSG;
        while (p < end) {
                const ProtobufCFieldDescriptor *f;
                uint64_t key, v;
                int r;

                r = read_varint(&p, end, &key);
                if (r < 0)
                        return r;
                if ((key >> 3) == 0 || (key >> 3) > FIELD_NUMBER_MAX)
                        return -EBADMSG;
                f = field_of(desc, key >> 3);
                r = spend(f ? &b->fields : &b->unknown, 1);
                if (r < 0)
                        return r;
                switch (key & 7) {
                case PROTOBUF_C_WIRE_TYPE_VARINT:
                        r = read_varint(&p, end, &v);
                        break;
                case PROTOBUF_C_WIRE_TYPE_64BIT:
                        r = skip(&p, end, 8);
                        break;
                case PROTOBUF_C_WIRE_TYPE_32BIT:
                        r = skip(&p, end, 4);
                        break;
                case PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED:
                        r = read_varint(&p, end, &v);
                        if (r < 0)
                                return r;
                        if (v > (uint64_t) (end - p))
                                return -EBADMSG;
                        r = walk_delimited(f, p, (size_t) v, depth, b);
                        p += v;
                        break;
                default: /* groups: protobuf-c refuses them anyway */
                        return -EBADMSG;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

int frame_check_limits(const FrameLimits *limits, const uint8_t *data, size_t size, int *ret_body_case) {
        const uint8_t *p = data, *end = data + size;
        const ProtobufCFieldDescriptor *f;
        const FrameBodyLimit *lim;
        uint64_t key, len;
        Budget b;
        int r;

        *ret_body_case = 0;
        r = read_varint(&p, end, &key);
        if (r < 0)
                return r;
        if ((key & 7) != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED)
                return -EBADMSG;
        if ((key >> 3) == 0 || (key >> 3) >= FRAME_BODY_CASES)
                return -EPROTOTYPE;
        *ret_body_case = (int) (key >> 3);
        lim = &limits->body[key >> 3];
        f = protobuf_c_message_descriptor_get_field(&elastic_pool__frame__descriptor, (unsigned) (key >> 3));
        if (lim->max_size == 0 || !f || f->type != PROTOBUF_C_TYPE_MESSAGE)
                return -EPROTOTYPE;
        if (size > lim->max_size)
                return -EMSGSIZE;
        r = read_varint(&p, end, &len);
        if (r < 0)
                return r;
        /* one body and nothing after it: a second would be unpacked (and freed) for nothing */
        if (len != (uint64_t) (end - p))
                return -EBADMSG;
        b = (Budget) { .fields = lim->max_fields, .unknown = limits->max_unknown };
        return walk(f->descriptor, p, (size_t) len, 0, &b);
}

static void reset_for_next(FrameDecoder *d) {
        d->header_have = 0;
        d->body_size = d->body_have = 0;
        d->body_case = 0;
        d->begun = d->skipping = false;
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

/* The type and size of a frame are known from its first body byte (the oneof's tag: every body type's
 * field number is under 16, so one byte). Refusing here means a 16 MiB report is never buffered. */
static int begin_body(FrameDecoder *d, uint8_t tag) {
        const FrameBodyLimit *lim;
        int r;

        d->begun = true;
        if (!d->limits)
                return 0;
        if ((tag & 7) != 2)
                return -EBADMSG;
        if ((tag & 0x80) || (tag >> 3) == 0)
                return -EPROTOTYPE;
        d->body_case = tag >> 3;
        lim = &d->limits->body[d->body_case];
        if (lim->max_size == 0)
                return -EPROTOTYPE;
        if (d->body_size > lim->max_size)
                return -EMSGSIZE;
        if (!d->admit)
                return 0;
        r = d->admit(d->body_case, d->body_size, d->admit_userdata);
        if (r < 0)
                return r;
        d->skipping = r > 0;
        return 0;
}

static int decode(FrameDecoder *d, const uint8_t *data, size_t size, Frame **ret) {
        int r, body_case;

        if (d->limits)
                r = frame_check_limits(d->limits, data, size, &body_case);
        else /* no budget, but the wire is checked all the same (field numbers, depth) */
                r = walk(&elastic_pool__frame__descriptor, data, size, 0,
                         &(Budget) { .fields = SIZE_MAX, .unknown = SIZE_MAX });
        if (r < 0)
                return r;
        return unpack(data, size, ret);
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
        }
        if (!d->begun && d->body_size > 0) {
                if (used == size)
                        return 0;
                r = begin_body(d, p[used]);
                if (r < 0)
                        return r;
        }

        n = MIN(size - used, d->body_size - d->body_have);
        if (d->skipping) {
                d->body_have += n;
                *ret_consumed = used + n;
                if (d->body_have == d->body_size)
                        reset_for_next(d);
                return 0;
        }
        /* the common case: the whole body is already here, decode in place without copying */
        if (d->body_have == 0 && n == d->body_size) {
                r = decode(d, p + used, n, ret_frame);
                *ret_consumed = used + n;
                if (r >= 0)
                        reset_for_next(d);
                return r;
        }

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

        r = decode(d, d->body, d->body_size, ret_frame);
        if (r >= 0)
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

const char *frame_body_case_name(int body_case) {
        switch (body_case) {
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

const char *frame_body_name(const Frame *f) {
        return frame_body_case_name(f->body_case);
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
