/* SPDX-License-Identifier: MIT */
/* The channel codec: every message survives a round trip, any split of the byte stream decodes the same
 * frames, hostile lengths and garbage are refused without over-allocating or crashing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "frame.h"
#include "macro.h"

static ElasticPool__Capability caps[] = { ELASTIC_POOL__CAPABILITY__CAPABILITY_SNAPSHOT_USERS,
                                          ELASTIC_POOL__CAPABILITY__CAPABILITY_INSTALL_USERS };
static uint8_t blob_bytes[] = { 0, 1, 2, 3, 0xff, 0 };

/* Fills *f with the n-th kind of message, every field set. Returns false past the last kind. */
static bool make_frame(unsigned n, Frame *f, void *storage) {
        elastic_pool__frame__init(f);
        switch (n) {
        case 0: {
                ElasticPool__Hello *h = storage;
                elastic_pool__hello__init(h);
                h->group = (char *) "web";
                h->has_worker_id = true, h->worker_id = 7;
                h->has_pid = true, h->pid = 4242;
                h->has_protocol_version = true, h->protocol_version = EP_PROTOCOL_VERSION;
                h->sensor_version = (char *) "0.1.0";
                h->n_capabilities = ELEMENTSOF(caps), h->capabilities = caps;
                h->has_interval_usec = true, h->interval_usec = 5000000;
                h->cgroup = (char *) "/elastic-pool-web/w7";
                f->body_case = ELASTIC_POOL__FRAME__BODY_HELLO, f->hello = h;
                return true;
        }
        case 1: {
                struct {
                        ElasticPool__OccupancyReport r;
                        ElasticPool__Executor e;
                        ElasticPool__Pressure p;
                        ElasticPool__Backlog b;
                        ElasticPool__Load l;
                } *s = storage;
                elastic_pool__occupancy_report__init(&s->r);
                elastic_pool__executor__init(&s->e);
                elastic_pool__pressure__init(&s->p);
                elastic_pool__backlog__init(&s->b);
                elastic_pool__load__init(&s->l);
                s->e.has_busy = s->e.has_total = s->e.has_queue_depth = true;
                s->e.busy = 3, s->e.total = 8, s->e.queue_depth = 2;
                s->p.has_cpu_some_avg10 = s->p.has_memory_some_avg10 = true;
                s->p.cpu_some_avg10 = 1.5, s->p.memory_some_avg10 = 0.25;
                s->b.has_pending = s->b.has_outbox = true, s->b.pending = 11, s->b.outbox = 12;
                s->l.has_avg1 = s->l.has_avg5 = s->l.has_avg15 = true;
                s->l.avg1 = 0.5, s->l.avg5 = 0.25, s->l.avg15 = 0.125;
                s->r.has_seq = true, s->r.seq = 99;
                s->r.has_monotonic_usec = true, s->r.monotonic_usec = 123456789;
                s->r.has_users = true, s->r.users = 10;
                s->r.has_pages = true, s->r.pages = 20;
                s->r.has_connections = true, s->r.connections = 30;
                s->r.has_active_users = true, s->r.active_users = 4;
                s->r.executor = &s->e, s->r.pressure = &s->p, s->r.backlog = &s->b, s->r.load = &s->l;
                s->r.has_cpu = true, s->r.cpu = 0.75;
                s->r.has_cpu_source = true, s->r.cpu_source = ELASTIC_POOL__CPU_SOURCE__CPU_SOURCE_CGROUP2;
                s->r.has_memory_bytes = true, s->r.memory_bytes = 1ULL << 33;
                s->r.has_memory_source = true;
                s->r.memory_source = ELASTIC_POOL__MEMORY_SOURCE__MEMORY_SOURCE_CGROUP1;
                s->r.has_interval_usec = true, s->r.interval_usec = 5000000;
                f->body_case = ELASTIC_POOL__FRAME__BODY_REPORT, f->report = &s->r;
                return true;
        }
        case 2: {
                ElasticPool__SnapshotRequest *m = storage;
                elastic_pool__snapshot_request__init(m);
                m->has_move_id = true, m->move_id = 1, m->user = (char *) "alice";
                f->body_case = ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST, f->snapshot_request = m;
                return true;
        }
        case 3: {
                ElasticPool__Package *m = storage;
                elastic_pool__package__init(m);
                m->has_move_id = true, m->move_id = 2, m->user = (char *) "alice";
                m->has_blob = true, m->blob = (ProtobufCBinaryData) { sizeof blob_bytes, blob_bytes };
                m->error = (char *) "none";
                f->body_case = ELASTIC_POOL__FRAME__BODY_PACKAGE, f->package = m;
                return true;
        }
        case 4: {
                ElasticPool__Install *m = storage;
                elastic_pool__install__init(m);
                m->has_move_id = true, m->move_id = 3, m->user = (char *) "bob";
                m->has_blob = true, m->blob = (ProtobufCBinaryData) { sizeof blob_bytes, blob_bytes };
                f->body_case = ELASTIC_POOL__FRAME__BODY_INSTALL, f->install = m;
                return true;
        }
        case 5: {
                ElasticPool__InstallResult *m = storage;
                elastic_pool__install_result__init(m);
                m->has_move_id = true, m->move_id = 4, m->user = (char *) "bob";
                m->has_ok = true, m->ok = true, m->error = (char *) "";
                f->body_case = ELASTIC_POOL__FRAME__BODY_INSTALL_RESULT, f->install_result = m;
                return true;
        }
        case 6: {
                ElasticPool__Drop *m = storage;
                elastic_pool__drop__init(m);
                m->has_move_id = true, m->move_id = 5, m->user = (char *) "carol";
                f->body_case = ELASTIC_POOL__FRAME__BODY_DROP, f->drop = m;
                return true;
        }
        case 7: {
                ElasticPool__Drain *m = storage;
                elastic_pool__drain__init(m);
                m->has_deadline_usec = true, m->deadline_usec = 777, m->reason = (char *) "compaction";
                f->body_case = ELASTIC_POOL__FRAME__BODY_DRAIN, f->drain = m;
                return true;
        }
        case 8: {
                ElasticPool__Goodbye *m = storage;
                elastic_pool__goodbye__init(m);
                m->reason = (char *) "shutdown";
                f->body_case = ELASTIC_POOL__FRAME__BODY_GOODBYE, f->goodbye = m;
                return true;
        }
        default:
                return false;
        }
}

/* Two frames are equal when they pack to the same bytes (protobuf-c packs fields in a fixed order). */
static void assert_same_frame(const Frame *a, const Frame *b) {
        _cleanup_free_ uint8_t *pa = NULL, *pb = NULL;
        size_t la, lb;

        assert_int_equal(frame_encode(a, 0, &pa, &la), 0);
        assert_int_equal(frame_encode(b, 0, &pb, &lb), 0);
        assert_int_equal(la, lb);
        assert_memory_equal(pa, pb, la);
}

static void test_frame_roundtrip_every_message(void **state) {
        _Alignas(max_align_t) uint8_t storage[1024];
        Frame f;

        for (unsigned n = 0; make_frame(n, &f, storage); n++) {
                _cleanup_free_ uint8_t *buf = NULL;
                FrameDecoder d;
                Frame *out = NULL;
                size_t len, used;

                assert_int_equal(frame_encode(&f, 0, &buf, &len), 0);
                frame_decoder_init(&d, 0);
                assert_int_equal(frame_decoder_feed(&d, buf, len, &used, &out), 1);
                assert_int_equal(used, len);
                assert_int_equal(out->body_case, f.body_case);
                assert_same_frame(&f, out);
                frame_free(out);
                frame_decoder_done(&d);
        }
}

static void test_frame_report_absent_fields_stay_absent(void **state) {
        ElasticPool__OccupancyReport r = ELASTIC_POOL__OCCUPANCY_REPORT__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT, *out = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        FrameDecoder d;
        size_t len, used;

        /* a reading of exactly 0 must arrive as a present 0, and an unset one as absent */
        r.has_cpu = true, r.cpu = 0.0;
        r.has_seq = true, r.seq = 1;
        f.body_case = ELASTIC_POOL__FRAME__BODY_REPORT, f.report = &r;
        assert_int_equal(frame_encode(&f, 0, &buf, &len), 0);
        frame_decoder_init(&d, 0);
        assert_int_equal(frame_decoder_feed(&d, buf, len, &used, &out), 1);
        assert_true(out->report->has_cpu);
        assert_true(out->report->cpu == 0.0);
        assert_false(out->report->has_memory_bytes);
        assert_false(out->report->has_users);
        assert_null(out->report->executor);
        assert_null(out->report->pressure);
        frame_free(out);
        frame_decoder_done(&d);
}

/* Concatenates every message kind, then feeds the stream in pieces of `step` bytes. */
static void feed_in_steps(size_t step) {
        _Alignas(max_align_t) uint8_t storage[1024];
        uint8_t stream[8192];
        size_t stream_len = 0;
        unsigned kinds = 0, got = 0;
        FrameDecoder d;
        Frame f;

        for (; make_frame(kinds, &f, storage); kinds++) {
                _cleanup_free_ uint8_t *buf = NULL;
                size_t len;
                assert_int_equal(frame_encode(&f, 0, &buf, &len), 0);
                assert_true(stream_len + len <= sizeof stream);
                memcpy(stream + stream_len, buf, len);
                stream_len += len;
        }

        frame_decoder_init(&d, 0);
        for (size_t off = 0; off < stream_len;) {
                size_t n = MIN(step, stream_len - off), used;
                while (n > 0) {
                        Frame *out = NULL;
                        int r = frame_decoder_feed(&d, stream + off, n, &used, &out);
                        assert_true(r >= 0);
                        assert_true(used <= n);
                        off += used;
                        n -= used;
                        if (r == 1) {
                                assert_true(make_frame(got, &f, storage));
                                assert_same_frame(&f, out);
                                frame_free(out);
                                got++;
                        }
                }
        }
        assert_int_equal(got, kinds);
        assert_false(frame_decoder_pending(&d));
        frame_decoder_done(&d);
}

static void test_frame_decoder_feed_byte_by_byte(void **state) {
        feed_in_steps(1);
}

static void test_frame_decoder_feed_odd_splits(void **state) {
        for (size_t step = 2; step < 64; step++)
                feed_in_steps(step);
        feed_in_steps(8192);
}

static void test_frame_decoder_feed_oversize(void **state) {
        /* announces 4 GiB - 1: refused from the header alone */
        const uint8_t hostile[] = { 0xff, 0xff, 0xff, 0xff, 0x0a };
        FrameDecoder d;
        Frame *out = NULL;
        size_t used;

        frame_decoder_init(&d, 0);
        assert_int_equal(frame_decoder_feed(&d, hostile, sizeof hostile, &used, &out), -EMSGSIZE);
        assert_null(out);
        assert_null(d.body); /* nothing was allocated for it */
        /* the error sticks: the stream is out of step, nothing after it is taken for a frame */
        assert_int_equal(frame_decoder_feed(&d, hostile + 4, 1, &used, &out), -EMSGSIZE);
        assert_int_equal(used, 0);
        frame_decoder_done(&d);

        /* just over a small configured maximum */
        const uint8_t over[] = { 0, 0, 0x01, 0x01 };
        frame_decoder_init(&d, 256);
        assert_int_equal(frame_decoder_feed(&d, over, sizeof over, &used, &out), -EMSGSIZE);
        frame_decoder_done(&d);
}

/* A length at the maximum with a few bytes behind it: the buffer grows with what arrives, so a peer that
 * announces much and sends little holds little. */
static void test_frame_decoder_feed_announced_large_allocates_what_arrives(void **state) {
        const uint8_t big[] = { 0x01, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x12 }; /* 16 MiB announced */
        FrameDecoder d;
        Frame *out = NULL;
        size_t used;

        frame_decoder_init(&d, 0);
        assert_int_equal(frame_decoder_feed(&d, big, sizeof big, &used, &out), 0);
        assert_int_equal(used, sizeof big);
        assert_true(d.body_allocated <= 64U * 1024U);
        frame_decoder_done(&d);
}

static void test_frame_encode_oversize(void **state) {
        static uint8_t big[4096];
        ElasticPool__Package p = ELASTIC_POOL__PACKAGE__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        _cleanup_free_ uint8_t *buf = NULL;
        FrameOutbox o;
        size_t len;

        p.has_blob = true, p.blob = (ProtobufCBinaryData) { sizeof big, big };
        f.body_case = ELASTIC_POOL__FRAME__BODY_PACKAGE, f.package = &p;
        assert_int_equal(frame_encode(&f, 1024, &buf, &len), -EMSGSIZE);
        frame_outbox_init(&o, 0);
        assert_int_equal(frame_outbox_push(&o, &f, 1024), -EMSGSIZE);
        assert_int_equal(frame_outbox_queued(&o), 0);
        frame_outbox_done(&o);
}

static void test_frame_decoder_feed_truncated(void **state) {
        _Alignas(max_align_t) uint8_t storage[1024];
        _cleanup_free_ uint8_t *buf = NULL;
        FrameDecoder d;
        Frame f, *out = NULL;
        size_t len, used;

        assert_true(make_frame(1, &f, storage));
        assert_int_equal(frame_encode(&f, 0, &buf, &len), 0);
        for (size_t cut = 1; cut < len; cut++) {
                frame_decoder_init(&d, 0);
                assert_int_equal(frame_decoder_feed(&d, buf, cut, &used, &out), 0);
                assert_int_equal(used, cut);
                assert_true(frame_decoder_pending(&d)); /* the reader sees a truncated frame at EOF */
                frame_decoder_done(&d);
        }

        /* a whole frame whose body ends mid-field does not decode */
        uint8_t bad[16] = { 0, 0, 0, 3, 0x0a, 0x05, 0x08 };
        frame_decoder_init(&d, 0);
        assert_int_equal(frame_decoder_feed(&d, bad, 7, &used, &out), -EBADMSG);
        frame_decoder_done(&d);
}

static void test_frame_decoder_feed_empty_body(void **state) {
        const uint8_t empty[] = { 0, 0, 0, 0 };
        FrameDecoder d;
        Frame *out = NULL;
        size_t used;

        frame_decoder_init(&d, 0);
        assert_int_equal(frame_decoder_feed(&d, empty, sizeof empty, &used, &out), -EBADMSG);
        frame_decoder_done(&d);
}

static uint32_t xorshift(uint32_t *s) {
        *s ^= *s << 13;
        *s ^= *s >> 17;
        *s ^= *s << 5;
        return *s;
}

static void test_frame_decoder_feed_random_garbage(void **state) {
        uint32_t seed = 0x9e3779b9;
        unsigned errors = 0, frames = 0;

        for (unsigned i = 0; i < 20000; i++) {
                uint8_t buf[512];
                size_t len = xorshift(&seed) % sizeof buf;
                FrameDecoder d;

                for (size_t k = 0; k < len; k++)
                        buf[k] = (uint8_t) xorshift(&seed);
                /* half the cases carry a plausible length so the body decoder sees the garbage */
                if (i % 2 == 0 && len >= 4) {
                        uint32_t body = (uint32_t) (len - 4);
                        buf[0] = 0, buf[1] = 0, buf[2] = (uint8_t) (body >> 8), buf[3] = (uint8_t) body;
                }
                frame_decoder_init(&d, 4096);
                for (size_t off = 0; off < len;) {
                        Frame *out = NULL;
                        size_t used, chunk = 1 + xorshift(&seed) % 64;
                        int r = frame_decoder_feed(&d, buf + off, MIN(chunk, len - off), &used, &out);
                        if (r < 0) {
                                assert_true(r == -EMSGSIZE || r == -EBADMSG);
                                errors++;
                                break;
                        }
                        if (r == 1) {
                                frames++;
                                frame_free(out);
                        }
                        off += used;
                }
                frame_decoder_done(&d);
        }
        /* garbage mostly fails; the point is that nothing crashed or leaked under ASan */
        assert_true(errors > 10000);
        print_message("garbage: %u refused, %u happened to decode\n", errors, frames);
}

/* Garbage that looks like frames: every kind of message, encoded, then bytes flipped, replaced, dropped or
 * added behind a length prefix that matches, so protobuf-c's decoder sees nearly valid input. Whatever
 * decodes must encode again (no half-built message escapes); nothing may crash or leak under ASan. */
static void test_frame_decoder_feed_mutated_frames(void **state) {
        _Alignas(max_align_t) uint8_t storage[1024];
        uint32_t seed = 0x2545f491;
        unsigned refused = 0, decoded = 0;

        for (unsigned i = 0; i < 20000; i++) {
                _cleanup_free_ uint8_t *enc = NULL;
                uint8_t buf[1024];
                size_t len, body;
                FrameDecoder d;
                Frame f, *out = NULL;
                int r;

                assert_true(make_frame(i % 9, &f, storage));
                assert_int_equal(frame_encode(&f, 0, &enc, &len), 0);
                assert_true(len + 8 <= sizeof buf);
                memcpy(buf, enc, len);
                for (unsigned m = 1 + xorshift(&seed) % 4; m > 0; m--) {
                        size_t at = FRAME_HEADER_SIZE + xorshift(&seed) % (len - FRAME_HEADER_SIZE);
                        switch (xorshift(&seed) % 4) {
                        case 0:
                                buf[at] ^= (uint8_t) (1U << (xorshift(&seed) % 8));
                                break;
                        case 1:
                                buf[at] = (uint8_t) xorshift(&seed);
                                break;
                        case 2: /* cut the body short */
                                len = MAX(at, (size_t) FRAME_HEADER_SIZE + 1);
                                break;
                        default: /* a stray byte */
                                if (len < sizeof buf) {
                                        memmove(buf + at + 1, buf + at, len - at);
                                        buf[at] = (uint8_t) xorshift(&seed);
                                        len++;
                                }
                        }
                }
                body = len - FRAME_HEADER_SIZE;
                buf[0] = 0, buf[1] = 0, buf[2] = (uint8_t) (body >> 8), buf[3] = (uint8_t) body;

                frame_decoder_init(&d, 0);
                size_t used;
                r = frame_decoder_feed(&d, buf, len, &used, &out);
                if (r == 1) {
                        _cleanup_free_ uint8_t *again = NULL;
                        size_t again_len;
                        assert_int_equal(used, len);
                        assert_int_equal(frame_encode(out, 0, &again, &again_len), 0);
                        frame_free(out);
                        decoded++;
                } else {
                        assert_true(r == -EBADMSG);
                        refused++;
                }
                frame_decoder_done(&d);
        }
        /* both outcomes must be common, or the mutations miss the decoder's interesting paths */
        assert_true(refused > 1000);
        assert_true(decoded > 1000);
        print_message("mutated frames: %u refused, %u decoded\n", refused, decoded);
}

static void test_frame_outbox_flush_partial(void **state) {
        _Alignas(max_align_t) uint8_t storage[1024];
        static uint8_t big[300000];
        ElasticPool__Package p = ELASTIC_POOL__PACKAGE__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT, hello;
        _cleanup_close_ int a = -EBADF, b = -EBADF;
        int sv[2], r;
        FrameOutbox o;
        FrameDecoder d;
        unsigned got = 0;

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
        a = sv[0], b = sv[1];
        for (size_t i = 0; i < sizeof big; i++)
                big[i] = (uint8_t) i;
        p.has_blob = true, p.blob = (ProtobufCBinaryData) { sizeof big, big };
        f.body_case = ELASTIC_POOL__FRAME__BODY_PACKAGE, f.package = &p;
        assert_true(make_frame(0, &hello, storage));

        frame_outbox_init(&o, 700000);
        assert_int_equal(frame_outbox_push(&o, &f, 0), 0);
        assert_int_equal(frame_outbox_push(&o, &hello, 0), 0);
        assert_int_equal(frame_outbox_push(&o, &f, 0), 0);
        assert_int_equal(frame_outbox_push(&o, &f, 0), -ENOBUFS); /* over the 700 kB queue limit */

        frame_decoder_init(&d, 0);
        do {
                uint8_t chunk[65536];
                ssize_t n;

                r = frame_outbox_flush(&o, a);
                assert_true(r >= 0);
                while ((n = read(b, chunk, sizeof chunk)) > 0)
                        for (size_t off = 0; off < (size_t) n;) {
                                Frame *out = NULL;
                                size_t used;
                                int k = frame_decoder_feed(&d, chunk + off, (size_t) n - off, &used, &out);
                                assert_true(k >= 0);
                                off += used;
                                if (k == 1) {
                                        got++;
                                        if (out->body_case == ELASTIC_POOL__FRAME__BODY_PACKAGE)
                                                assert_memory_equal(out->package->blob.data, big, sizeof big);
                                        frame_free(out);
                                }
                        }
        } while (r == 1 || got < 3);
        assert_int_equal(got, 3);
        assert_int_equal(frame_outbox_queued(&o), 0);
        frame_outbox_done(&o);
        frame_decoder_done(&d);
}

/* Hand-made wire bytes: the attacks of issue 16 are frames no well-behaved encoder makes. */
typedef struct Wire {
        uint8_t *data;
        size_t size, allocated;
} Wire;

static void wire_byte(Wire *w, uint8_t b) {
        if (w->size == w->allocated) {
                w->allocated = MAX(w->allocated * 2, (size_t) 256);
                w->data = realloc(w->data, w->allocated);
                assert_non_null(w->data);
        }
        w->data[w->size++] = b;
}

static void wire_varint(Wire *w, uint64_t v) {
        while (v >= 0x80) {
                wire_byte(w, (uint8_t) (v | 0x80));
                v >>= 7;
        }
        wire_byte(w, (uint8_t) v);
}

/* Wraps body (the fields of one message) as the Frame's field `body_case`, behind a length prefix. */
static Wire frame_of(int body_case, const Wire *body) {
        Wire inner = {}, out = {};

        wire_varint(&inner, (uint64_t) body_case << 3 | 2);
        wire_varint(&inner, body->size);
        for (size_t i = 0; i < body->size; i++)
                wire_byte(&inner, body->data[i]);
        for (int k = 3; k >= 0; k--)
                wire_byte(&out, (uint8_t) (inner.size >> (8 * k)));
        for (size_t i = 0; i < inner.size; i++)
                wire_byte(&out, inner.data[i]);
        free(inner.data);
        return out;
}

static const FrameLimits test_limits = {
        .body = {
                [ELASTIC_POOL__FRAME__BODY_HELLO] = { 4096, 32 },
                [ELASTIC_POOL__FRAME__BODY_REPORT] = { 512, 64 },
                [ELASTIC_POOL__FRAME__BODY_PACKAGE] = { 1024U * 1024U, 16 },
                [ELASTIC_POOL__FRAME__BODY_USERS] = { 64U * 1024U, 100 },
        },
        .max_unknown = 8,
};

static int feed_limited(const Wire *w, FrameAdmit admit, void *userdata, int *ret_body_case, Frame **ret) {
        FrameDecoder d;
        size_t used;
        int r;

        frame_decoder_init(&d, 0);
        frame_decoder_set_limits(&d, &test_limits, admit, userdata);
        r = frame_decoder_feed(&d, w->data, w->size, &used, ret);
        *ret_body_case = d.body_case;
        frame_decoder_done(&d);
        return r;
}

static void test_frame_decoder_limits_pass_every_legit_message(void **state) {
        _Alignas(max_align_t) uint8_t storage[1024];
        FrameLimits all = test_limits;
        Frame f;

        for (int i = 1; i < FRAME_BODY_CASES; i++)
                if (all.body[i].max_size == 0)
                        all.body[i] = (FrameBodyLimit) { 4096, 64 };
        for (unsigned n = 0; make_frame(n, &f, storage); n++) {
                _cleanup_free_ uint8_t *buf = NULL;
                FrameDecoder d;
                Frame *out = NULL;
                size_t len, used;

                assert_int_equal(frame_encode(&f, 0, &buf, &len), 0);
                frame_decoder_init(&d, 0);
                frame_decoder_set_limits(&d, &all, NULL, NULL);
                /* byte by byte too: the type check happens on the first body byte, wherever it falls */
                for (size_t off = 0; off < len; off += used) {
                        int r = frame_decoder_feed(&d, buf + off, 1, &used, &out);
                        assert_true(r >= 0);
                }
                assert_non_null(out);
                assert_same_frame(&f, out);
                frame_free(out);
                frame_decoder_done(&d);
        }
}

static void test_frame_decoder_limits_unknown_fields_counted(void **state) {
        Wire body = {}, w;
        Frame *out = NULL;
        int bc;

        /* what took a commander to 484 MB: a package-sized frame of tiny unknown fields (field 99,
         * varint 0), each one an allocation in protobuf-c */
        for (int i = 0; i < 20000; i++) {
                wire_varint(&body, 99 << 3 | 0);
                wire_varint(&body, 0);
        }
        w = frame_of(ELASTIC_POOL__FRAME__BODY_PACKAGE, &body);
        assert_int_equal(feed_limited(&w, NULL, NULL, &bc, &out), -E2BIG);
        assert_int_equal(bc, ELASTIC_POOL__FRAME__BODY_PACKAGE);
        assert_null(out);
        free(w.data);

        /* a few are a newer sensor's fields: decoded, skipped by protobuf-c as usual */
        body.size = 0;
        for (int i = 0; i < 8; i++) {
                wire_varint(&body, 99 << 3 | 0);
                wire_varint(&body, 1);
        }
        w = frame_of(ELASTIC_POOL__FRAME__BODY_REPORT, &body);
        assert_int_equal(feed_limited(&w, NULL, NULL, &bc, &out), 1);
        assert_int_equal(out->body_case, ELASTIC_POOL__FRAME__BODY_REPORT);
        frame_free(out);
        free(w.data);
        free(body.data);
}

static void test_frame_decoder_limits_repeated_entries_counted(void **state) {
        Wire body = {}, w;
        Frame *out = NULL;
        int bc;

        /* packed capabilities: 200 entries in one field of 200 bytes, fine by size, not by count */
        wire_varint(&body, 6 << 3 | 2);
        wire_varint(&body, 200);
        for (int i = 0; i < 200; i++)
                wire_byte(&body, 1);
        w = frame_of(ELASTIC_POOL__FRAME__BODY_HELLO, &body);
        assert_int_equal(feed_limited(&w, NULL, NULL, &bc, &out), -E2BIG);
        free(w.data);

        /* unpacked repeated strings: each user name one entry */
        body.size = 0;
        for (int i = 0; i < 101; i++) {
                wire_varint(&body, 1 << 3 | 2);
                wire_varint(&body, 1);
                wire_byte(&body, 'u');
        }
        w = frame_of(ELASTIC_POOL__FRAME__BODY_USERS, &body);
        assert_int_equal(feed_limited(&w, NULL, NULL, &bc, &out), -E2BIG);
        assert_int_equal(bc, ELASTIC_POOL__FRAME__BODY_USERS);
        free(w.data);

        /* nested fields count too (executor's inside a report) */
        body.size = 0;
        for (int i = 0; i < 40; i++) {
                wire_varint(&body, 7 << 3 | 2);
                wire_varint(&body, 2);
                wire_varint(&body, 1 << 3 | 0);
                wire_varint(&body, 1);
        }
        w = frame_of(ELASTIC_POOL__FRAME__BODY_REPORT, &body);
        assert_int_equal(feed_limited(&w, NULL, NULL, &bc, &out), -E2BIG);
        free(w.data);
        free(body.data);
}

static void test_frame_decoder_limits_size_by_type_before_buffering(void **state) {
        uint8_t head[] = { 0, 0x10, 0, 0, ELASTIC_POOL__FRAME__BODY_REPORT << 3 | 2 };
        FrameDecoder d;
        Frame *out = NULL;
        size_t used;

        /* a 1 MiB report is refused on its first body byte: nothing of it is buffered */
        frame_decoder_init(&d, 0);
        frame_decoder_set_limits(&d, &test_limits, NULL, NULL);
        assert_int_equal(frame_decoder_feed(&d, head, sizeof head, &used, &out), -EMSGSIZE);
        assert_int_equal(d.body_case, ELASTIC_POOL__FRAME__BODY_REPORT);
        assert_int_equal(d.body_allocated, 0);
        frame_decoder_done(&d);

        /* a type the limits leave at 0 (here: drain, which only the commander sends) */
        head[1] = 0, head[3] = 2, head[4] = ELASTIC_POOL__FRAME__BODY_DRAIN << 3 | 2;
        frame_decoder_init(&d, 0);
        frame_decoder_set_limits(&d, &test_limits, NULL, NULL);
        assert_int_equal(frame_decoder_feed(&d, head, sizeof head, &used, &out), -EPROTOTYPE);
        assert_int_equal(d.body_case, ELASTIC_POOL__FRAME__BODY_DRAIN);
        frame_decoder_done(&d);
}

static void test_frame_decoder_limits_one_body_only(void **state) {
        Wire body = {}, w;
        Frame *out = NULL;
        int bc;

        /* a report, then a second oneof member in the same Frame */
        wire_varint(&body, 1 << 3 | 0);
        wire_varint(&body, 5);
        w = frame_of(ELASTIC_POOL__FRAME__BODY_REPORT, &body);
        wire_byte(&w, ELASTIC_POOL__FRAME__BODY_GOODBYE << 3 | 2);
        wire_byte(&w, 0);
        w.data[3] += 2; /* the length prefix covers both */
        assert_int_equal(feed_limited(&w, NULL, NULL, &bc, &out), -EBADMSG);
        free(w.data);
        free(body.data);
}

/* A field number past protobuf's largest (2^29 - 1) is refused: protobuf-c would keep it as an unknown
 * field and pack it back under a wrapped key, so the frame would not decode again (found by fuzzing). */
static void test_frame_decoder_limits_field_number_past_max(void **state) {
        Wire body = {}, w;
        Frame *out = NULL;
        int bc;

        wire_varint(&body, (UINT64_C(1) << 29) << 3 | 0);
        wire_varint(&body, 0);
        w = frame_of(ELASTIC_POOL__FRAME__BODY_REPORT, &body);
        assert_int_equal(feed_limited(&w, NULL, NULL, &bc, &out), -EBADMSG);
        assert_null(out);
        {
                /* without limits too (the sensor's decoder): the wire is checked all the same */
                FrameDecoder d;
                size_t used;

                frame_decoder_init(&d, 0);
                assert_int_equal(frame_decoder_feed(&d, w.data, w.size, &used, &out), -EBADMSG);
                assert_null(out);
                frame_decoder_done(&d);
        }
        free(w.data);

        /* the largest one is an unknown field like any other, and survives a round trip */
        body.size = 0;
        wire_varint(&body, ((UINT64_C(1) << 29) - 1) << 3 | 0);
        wire_varint(&body, 0);
        w = frame_of(ELASTIC_POOL__FRAME__BODY_REPORT, &body);
        assert_int_equal(feed_limited(&w, NULL, NULL, &bc, &out), 1);
        {
                _cleanup_free_ uint8_t *buf = NULL;
                Frame *again = NULL;
                size_t len;

                assert_int_equal(frame_encode(out, 0, &buf, &len), 0);
                free(w.data);
                w = (Wire) { .data = TAKE_PTR(buf), .size = len, .allocated = len };
                assert_int_equal(feed_limited(&w, NULL, NULL, &bc, &again), 1);
                frame_free(again);
        }
        frame_free(out);
        free(w.data);
        free(body.data);
}

static int skip_reports(int body_case, size_t size, void *userdata) {
        unsigned *asked = userdata;

        (*asked)++;
        return body_case == ELASTIC_POOL__FRAME__BODY_REPORT ? 1 : 0;
}

static void test_frame_decoder_admit_skips_unread(void **state) {
        _Alignas(max_align_t) uint8_t storage[1024];
        uint8_t stream[4096];
        size_t n = 0;
        FrameLimits all = test_limits;
        FrameDecoder d;
        unsigned asked = 0, got = 0;
        Frame f;

        for (int i = 1; i < FRAME_BODY_CASES; i++)
                if (all.body[i].max_size == 0)
                        all.body[i] = (FrameBodyLimit) { 4096, 64 };
        /* hello, report, report, goodbye: the reports are skipped, the rest decoded, in any split */
        const unsigned kinds[] = { 0, 1, 1, 8 };
        for (size_t k = 0; k < ELEMENTSOF(kinds); k++) {
                _cleanup_free_ uint8_t *buf = NULL;
                size_t len;
                assert_true(make_frame(kinds[k], &f, storage));
                assert_int_equal(frame_encode(&f, 0, &buf, &len), 0);
                memcpy(stream + n, buf, len);
                n += len;
        }
        frame_decoder_init(&d, 0);
        frame_decoder_set_limits(&d, &all, skip_reports, &asked);
        for (size_t off = 0; off < n;) {
                Frame *out = NULL;
                size_t used;
                assert_true(frame_decoder_feed(&d, stream + off, MIN((size_t) 7, n - off), &used, &out) >= 0);
                off += used;
                if (out) {
                        assert_int_not_equal(out->body_case, ELASTIC_POOL__FRAME__BODY_REPORT);
                        got++;
                        frame_free(out);
                }
        }
        assert_int_equal(asked, 4);
        assert_int_equal(got, 2);
        assert_false(frame_decoder_pending(&d));
        frame_decoder_done(&d);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_frame_roundtrip_every_message),
                cmocka_unit_test(test_frame_report_absent_fields_stay_absent),
                cmocka_unit_test(test_frame_decoder_feed_byte_by_byte),
                cmocka_unit_test(test_frame_decoder_feed_odd_splits),
                cmocka_unit_test(test_frame_decoder_feed_oversize),
                cmocka_unit_test(test_frame_encode_oversize),
                cmocka_unit_test(test_frame_decoder_feed_truncated),
                cmocka_unit_test(test_frame_decoder_feed_empty_body),
                cmocka_unit_test(test_frame_decoder_feed_random_garbage),
                cmocka_unit_test(test_frame_decoder_feed_mutated_frames),
                cmocka_unit_test(test_frame_decoder_feed_announced_large_allocates_what_arrives),
                cmocka_unit_test(test_frame_outbox_flush_partial),
                cmocka_unit_test(test_frame_decoder_limits_pass_every_legit_message),
                cmocka_unit_test(test_frame_decoder_limits_unknown_fields_counted),
                cmocka_unit_test(test_frame_decoder_limits_field_number_past_max),
                cmocka_unit_test(test_frame_decoder_limits_repeated_entries_counted),
                cmocka_unit_test(test_frame_decoder_limits_size_by_type_before_buffering),
                cmocka_unit_test(test_frame_decoder_limits_one_body_only),
                cmocka_unit_test(test_frame_decoder_admit_skips_unread),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
