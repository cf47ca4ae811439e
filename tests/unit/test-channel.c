/* SPDX-License-Identifier: MIT */
/* The commander's end of a channel over a socketpair() with a real sd-event loop: frames dispatched in
 * order whatever the split of the byte stream (down to one byte per read), every way a peer can end it
 * (oversize, garbage, truncated at EOF, orderly EOF, a write that fails) closing it once with its error
 * and a reason, and channel_send() queueing what a full socket does not take and flushing it in order
 * as the peer reads; and an owner that frees the channel from inside its own callbacks. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "channel.h"
#include "cleanup.h"
#include "fd-util.h"
#include "macro.h"

typedef struct Seen {
        Channel *channel;
        unsigned n_frames;
        uint64_t seq[64];
        unsigned n_close;
        int error;
        char reason[256];
        bool reply; /* answer each report with a Drop carrying its seq */
        bool free_on_frame; /* the owner drops the channel from inside its frame callback */
        bool free_on_close; /* ... or from inside its close callback */
        unsigned n_throttled;
        int throttled_body;
        unsigned n_readable;
        unsigned frames_at_readable[8]; /* n_frames when each on_readable came */
} Seen;

static sd_event *event;
static Channel *channel;
static int peer = -EBADF;
static Seen seen;

static void on_frame(Channel *c, const Frame *f, void *userdata) {
        Seen *s = userdata;

        assert_ptr_equal(c, s->channel);
        assert_int_equal(f->body_case, ELASTIC_POOL__FRAME__BODY_REPORT);
        if (s->n_frames < ELEMENTSOF(s->seq))
                s->seq[s->n_frames] = f->report->seq;
        s->n_frames++;
        if (s->free_on_frame) {
                /* what pool.c does with a Hello of a foreign protocol: the channel goes mid-dispatch */
                channel = s->channel = channel_free(c);
                return;
        }
        if (s->reply) {
                ElasticPool__Drop d = ELASTIC_POOL__DROP__INIT;
                Frame r = ELASTIC_POOL__FRAME__INIT;
                d.has_move_id = true, d.move_id = f->report->seq;
                r.body_case = ELASTIC_POOL__FRAME__BODY_DROP, r.drop = &d;
                assert_int_equal(channel_send(c, &r), 0);
        }
}

static void on_close(Channel *c, int error, const char *reason, void *userdata) {
        Seen *s = userdata;

        assert_ptr_equal(c, s->channel);
        assert_false(channel_is_open(c)); /* already closed when told */
        s->n_close++;
        s->error = error;
        snprintf(s->reason, sizeof s->reason, "%s", reason);
        if (s->free_on_close)
                channel = s->channel = channel_free(c);
}

static void on_throttled(Channel *c, int body_case, unsigned per_second, void *userdata) {
        Seen *s = userdata;

        s->n_throttled++;
        s->throttled_body = body_case;
        assert_int_equal(per_second, CHANNEL_REPORTS_PER_SECOND);
}

static void on_readable(Channel *c, void *userdata) {
        Seen *s = userdata;

        assert_ptr_equal(c, s->channel);
        if (s->n_readable < ELEMENTSOF(s->frames_at_readable))
                s->frames_at_readable[s->n_readable] = s->n_frames;
        s->n_readable++;
}

static const ChannelCallbacks callbacks = {
        .on_frame = on_frame, .on_close = on_close, .on_throttled = on_throttled, .on_readable = on_readable,
};

static void open_channel(size_t max_frame) {
        int sv[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        peer = sv[1];
        assert_int_equal(channel_new(event, sv[0], max_frame, &callbacks, &seen, &channel), 0);
        seen.channel = channel;
        assert_true(fcntl(sv[0], F_GETFL) & O_NONBLOCK);
}

static int setup(void **state) {
        seen = (Seen) {};
        if (sd_event_new(&event) < 0)
                return -1;
        open_channel(0);
        return 0;
}

static int teardown(void **state) {
        channel = channel_free(channel);
        peer = safe_close(peer);
        event = sd_event_unref(event);
        return 0;
}

/* Runs the loop until cond holds (bounded: a stuck test fails instead of hanging). */
#define RUN_UNTIL(cond)                                                          \
        do {                                                                     \
                for (unsigned _i = 0; !(cond); _i++) {                           \
                        if (_i > 500)                                            \
                                fail_msg("timed out waiting for %s", #cond);     \
                        assert_true(sd_event_run(event, 10 * 1000) >= 0);        \
                }                                                                \
        } while (0)

/* A few loop iterations with nothing expected to change. */
static void run_idle(void) {
        for (int i = 0; i < 3; i++)
                assert_true(sd_event_run(event, 1000) >= 0);
}

static size_t report_bytes(uint64_t seq, uint8_t *out, size_t size) {
        ElasticPool__OccupancyReport r = ELASTIC_POOL__OCCUPANCY_REPORT__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        _cleanup_free_ uint8_t *buf = NULL;
        size_t n;

        r.has_seq = true, r.seq = seq;
        r.has_cpu = true, r.cpu = 0.25;
        f.body_case = ELASTIC_POOL__FRAME__BODY_REPORT, f.report = &r;
        assert_int_equal(frame_encode(&f, 0, &buf, &n), 0);
        assert_true(n <= size);
        memcpy(out, buf, n);
        return n;
}

static void peer_write(const void *p, size_t n) {
        assert_int_equal(loop_write(peer, p, n), 0);
}

static void test_channel_frames_dispatched_in_order(void **state) {
        uint8_t buf[4096];
        size_t n = 0;

        for (uint64_t seq = 1; seq <= 10; seq++)
                n += report_bytes(seq, buf + n, sizeof buf - n);
        peer_write(buf, n); /* all ten in one write, most likely one read */
        RUN_UNTIL(seen.n_frames == 10);
        for (unsigned i = 0; i < 10; i++)
                assert_true(seen.seq[i] == i + 1);
        assert_true(channel_frames_received(channel) == 10);
        assert_true(channel_is_open(channel));
        assert_int_equal(seen.n_close, 0);
}

/* The owner hears of bytes before their frames are decoded (pool.c warms the worker's state then), once
 * per readable wake-up, not per frame. */
static void test_channel_readable_told_before_frames(void **state) {
        uint8_t buf[4096];
        size_t n = 0;

        for (uint64_t seq = 1; seq <= 5; seq++)
                n += report_bytes(seq, buf + n, sizeof buf - n);
        run_idle();
        assert_int_equal(seen.n_readable, 0); /* nothing to read, nothing told */
        peer_write(buf, n);
        RUN_UNTIL(seen.n_frames == 5);
        assert_int_equal(seen.n_readable, 1);
        assert_int_equal(seen.frames_at_readable[0], 0);

        n = report_bytes(6, buf, sizeof buf);
        peer_write(buf, n);
        RUN_UNTIL(seen.n_frames == 6);
        assert_int_equal(seen.n_readable, 2);
        assert_int_equal(seen.frames_at_readable[1], 5);
}

static void test_channel_byte_by_byte(void **state) {
        uint8_t buf[256];
        size_t n = report_bytes(42, buf, sizeof buf);

        n += report_bytes(43, buf + n, sizeof buf - n);
        for (size_t i = 0; i < n; i++) {
                peer_write(buf + i, 1);
                /* each byte is read on its own before the next is written */
                for (int k = 0; k < 5; k++)
                        assert_true(sd_event_run(event, 0) >= 0);
                if (i < n / 2 - 1)
                        assert_int_equal(seen.n_frames, 0);
        }
        RUN_UNTIL(seen.n_frames == 2);
        assert_true(seen.seq[0] == 42);
        assert_true(seen.seq[1] == 43);
        assert_int_equal(seen.n_close, 0);
}

static void test_channel_any_split(void **state) {
        uint8_t buf[512];
        size_t n = 0;

        for (uint64_t seq = 1; seq <= 4; seq++)
                n += report_bytes(seq, buf + n, sizeof buf - n);
        /* header split from its body, a body split from its end, two frames glued by a third's start */
        size_t cuts[] = { 3, 9, 2 * n / 4 + 1, 3 * n / 4 - 2, n };
        size_t at = 0;
        for (size_t i = 0; i < ELEMENTSOF(cuts); i++) {
                peer_write(buf + at, cuts[i] - at);
                at = cuts[i];
                run_idle();
        }
        RUN_UNTIL(seen.n_frames == 4);
        for (unsigned i = 0; i < 4; i++)
                assert_true(seen.seq[i] == i + 1);
}

static void assert_closed_once(int error) {
        uint8_t c;

        assert_int_equal(seen.n_close, 1);
        assert_int_equal(seen.error, error);
        assert_false(channel_is_open(channel));
        /* our end is closed: the peer sees EOF (or a reset) */
        assert_true(read(peer, &c, 1) <= 0);
}

static void test_channel_oversize_closes(void **state) {
        uint8_t buf[512];
        size_t n;

        channel = channel_free(channel);
        peer = safe_close(peer);
        open_channel(1024);

        /* one good frame, then a header announcing 2048 bytes: the good one still arrives */
        n = report_bytes(1, buf, sizeof buf);
        memcpy(buf + n, (uint8_t[]) { 0, 0, 0x08, 0x00 }, 4);
        n += 4;
        memset(buf + n, 0, 100);
        peer_write(buf, n + 100);
        RUN_UNTIL(seen.n_close > 0);
        assert_int_equal(seen.n_frames, 1);
        assert_closed_once(-EMSGSIZE);
        assert_string_equal(seen.reason, "frame announces 2048 bytes, over the 1024 byte maximum");
        /* what the peer sends after it changes nothing */
        (void) send(peer, buf, n, MSG_NOSIGNAL);
        run_idle();
        assert_int_equal(seen.n_close, 1);
        assert_int_equal(seen.n_frames, 1);
}

static void test_channel_hostile_length(void **state) {
        /* 4 GiB announced: refused on the header alone, nothing allocated for it */
        peer_write((uint8_t[]) { 0xff, 0xff, 0xff, 0xff }, 4);
        RUN_UNTIL(seen.n_close > 0);
        assert_closed_once(-EMSGSIZE);
        assert_non_null(strstr(seen.reason, "4294967295 bytes"));
}

static void test_channel_garbage_closes(void **state) {
        peer_write((uint8_t[]) { 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0xff }, 9);
        RUN_UNTIL(seen.n_close > 0);
        assert_int_equal(seen.n_frames, 0);
        assert_closed_once(-EBADMSG);
        assert_non_null(strstr(seen.reason, "undecodable"));
}

static void test_channel_empty_frame_closes(void **state) {
        /* a zero-length frame decodes to a Frame without a body: a peer we do not understand */
        peer_write((uint8_t[]) { 0, 0, 0, 0 }, 4);
        RUN_UNTIL(seen.n_close > 0);
        assert_closed_once(-EBADMSG);
}

static void test_channel_truncated_at_eof(void **state) {
        uint8_t buf[256];
        size_t n = report_bytes(7, buf, sizeof buf);

        peer_write(buf, n - 3);
        run_idle();
        assert_int_equal(seen.n_frames, 0);
        assert_int_equal(shutdown(peer, SHUT_WR), 0);
        RUN_UNTIL(seen.n_close > 0);
        assert_int_equal(seen.n_frames, 0);
        assert_closed_once(-EPIPE);
        assert_non_null(strstr(seen.reason, "truncated"));
}

static void test_channel_truncated_in_header(void **state) {
        peer_write((uint8_t[]) { 0, 0 }, 2);
        run_idle();
        peer = safe_close(peer);
        RUN_UNTIL(seen.n_close > 0);
        assert_int_equal(seen.n_close, 1);
        assert_int_equal(seen.error, -EPIPE);
}

static void test_channel_orderly_eof(void **state) {
        uint8_t buf[256];
        size_t n = report_bytes(9, buf, sizeof buf);

        peer_write(buf, n);
        assert_int_equal(shutdown(peer, SHUT_WR), 0);
        RUN_UNTIL(seen.n_close > 0);
        /* the last whole frame before EOF is dispatched, then an orderly close: error 0 */
        assert_int_equal(seen.n_frames, 1);
        assert_closed_once(0);
        assert_string_equal(seen.reason, "channel closed by the worker");
        assert_true(channel_frames_received(channel) == 1);
}

/* Reads frames from the peer end, blocking, until n arrived; returns them decoded in ret. */
static void peer_read_frames(Frame **ret, unsigned n, bool run_loop) {
        _cleanup_free_ uint8_t *buf = malloc(65536);
        FrameDecoder d;
        unsigned got = 0;

        assert_non_null(buf);
        frame_decoder_init(&d, 0);
        while (got < n) {
                struct pollfd p = { .fd = peer, .events = POLLIN };
                if (run_loop) /* our side flushes only from the loop once the socket was full */
                        assert_true(sd_event_run(event, 0) >= 0);
                if (poll(&p, 1, run_loop ? 10 : 5000) == 0) {
                        assert_true(run_loop);
                        continue;
                }
                ssize_t k = read(peer, buf, 65536);
                assert_true(k > 0);
                for (size_t at = 0; at < (size_t) k;) {
                        size_t used;
                        Frame *f;
                        int r = frame_decoder_feed(&d, buf + at, (size_t) k - at, &used, &f);
                        assert_true(r >= 0);
                        at += used;
                        if (r == 1) {
                                assert_true(got < n);
                                ret[got++] = f;
                        }
                }
        }
        frame_decoder_done(&d);
}

static void test_channel_send_flushes(void **state) {
        ElasticPool__Drain drain = ELASTIC_POOL__DRAIN__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT, *got[1];

        drain.has_deadline_usec = true, drain.deadline_usec = 123;
        drain.reason = (char *) "compaction";
        f.body_case = ELASTIC_POOL__FRAME__BODY_DRAIN, f.drain = &drain;
        assert_int_equal(channel_send(channel, &f), 0);
        /* a small frame goes out at once, without the loop */
        peer_read_frames(got, 1, false);
        assert_int_equal(got[0]->body_case, ELASTIC_POOL__FRAME__BODY_DRAIN);
        assert_true(got[0]->drain->deadline_usec == 123);
        assert_string_equal(got[0]->drain->reason, "compaction");
        frame_free(got[0]);
}

static void test_channel_send_queues_and_flushes_in_order(void **state) {
        static uint8_t blob[3][300000];
        ElasticPool__Install in[3];
        Frame f[3], *got[3];
        int small = 4096;

        /* a socket that takes a fraction of one frame: the rest waits in the outbox for EPOLLOUT */
        assert_int_equal(setsockopt(peer, SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
        for (unsigned i = 0; i < 3; i++) {
                for (size_t k = 0; k < sizeof blob[i]; k++)
                        blob[i][k] = (uint8_t) (k * (i + 3));
                elastic_pool__install__init(&in[i]);
                in[i].has_move_id = true, in[i].move_id = i + 1;
                in[i].has_blob = true, in[i].blob.len = sizeof blob[i], in[i].blob.data = blob[i];
                elastic_pool__frame__init(&f[i]);
                f[i].body_case = ELASTIC_POOL__FRAME__BODY_INSTALL, f[i].install = &in[i];
                assert_int_equal(channel_send(channel, &f[i]), 0);
        }
        peer_read_frames(got, 3, true);
        for (unsigned i = 0; i < 3; i++) {
                assert_int_equal(got[i]->body_case, ELASTIC_POOL__FRAME__BODY_INSTALL);
                assert_true(got[i]->install->move_id == i + 1);
                assert_int_equal(got[i]->install->blob.len, sizeof blob[i]);
                assert_memory_equal(got[i]->install->blob.data, blob[i], sizeof blob[i]);
                frame_free(got[i]);
        }
        assert_true(channel_is_open(channel));
}

static void test_channel_send_from_callback(void **state) {
        uint8_t buf[512];
        Frame *got[2];
        size_t n;

        seen.reply = true;
        n = report_bytes(5, buf, sizeof buf);
        n += report_bytes(6, buf + n, sizeof buf - n);
        peer_write(buf, n);
        RUN_UNTIL(seen.n_frames == 2);
        peer_read_frames(got, 2, false);
        for (unsigned i = 0; i < 2; i++) {
                assert_int_equal(got[i]->body_case, ELASTIC_POOL__FRAME__BODY_DROP);
                assert_true(got[i]->drop->move_id == 5 + i);
                frame_free(got[i]);
        }
}

static void test_channel_send_oversize(void **state) {
        static uint8_t blob[2000];
        ElasticPool__Package p = ELASTIC_POOL__PACKAGE__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;

        channel = channel_free(channel);
        peer = safe_close(peer);
        open_channel(1024);
        p.has_blob = true, p.blob.len = sizeof blob, p.blob.data = blob;
        f.body_case = ELASTIC_POOL__FRAME__BODY_PACKAGE, f.package = &p;
        assert_int_equal(channel_send(channel, &f), -EMSGSIZE);
        assert_true(channel_is_open(channel)); /* refused, not fatal */
        p.blob.len = 100;
        assert_int_equal(channel_send(channel, &f), 0);
}

static void test_channel_send_over_outbox_limit(void **state) {
        ElasticPool__Package p = ELASTIC_POOL__PACKAGE__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        size_t len = 65U * 1024U * 1024U;
        _cleanup_free_ uint8_t *blob = calloc(1, len); /* never touched: the size is refused first */

        assert_non_null(blob);
        channel = channel_free(channel);
        peer = safe_close(peer);
        open_channel(128U * 1024U * 1024U);
        p.has_blob = true, p.blob.len = len, p.blob.data = blob;
        f.body_case = ELASTIC_POOL__FRAME__BODY_PACKAGE, f.package = &p;
        assert_int_equal(channel_send(channel, &f), -ENOBUFS);
        assert_true(channel_is_open(channel));
}

static void test_channel_send_write_fails(void **state) {
        ElasticPool__Drop d = ELASTIC_POOL__DROP__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;

        f.body_case = ELASTIC_POOL__FRAME__BODY_DROP, f.drop = &d;
        /* the worker died and the loop has not noticed yet: the write fails (no SIGPIPE) and closes */
        peer = safe_close(peer);
        assert_int_equal(channel_send(channel, &f), -EPIPE);
        assert_int_equal(seen.n_close, 1);
        assert_int_equal(seen.error, -EPIPE);
        assert_non_null(strstr(seen.reason, "write failed"));
        run_idle();
        assert_int_equal(seen.n_close, 1); /* closed once */
}

static void test_channel_send_after_close(void **state) {
        ElasticPool__Drop d = ELASTIC_POOL__DROP__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;

        f.body_case = ELASTIC_POOL__FRAME__BODY_DROP, f.drop = &d;
        peer = safe_close(peer);
        RUN_UNTIL(seen.n_close > 0);
        assert_int_equal(seen.error, 0);
        assert_int_equal(channel_send(channel, &f), -ENOTCONN);
        assert_int_equal(channel_send(NULL, &f), -ENOTCONN);
        assert_false(channel_is_open(NULL));
        assert_true(channel_frames_received(NULL) == 0);
        assert_int_equal(seen.n_close, 1);
}

static void test_channel_free_from_frame_callback(void **state) {
        uint8_t buf[512], c;
        size_t n = 0;

        /* three frames in one write: the first one's callback frees the channel while the decoder loop
         * still has the other two in hand; they must not be dispatched, and nothing may touch the freed
         * object (under AddressSanitizer a read of it aborts the test) */
        seen.free_on_frame = true;
        for (uint64_t seq = 1; seq <= 3; seq++)
                n += report_bytes(seq, buf + n, sizeof buf - n);
        peer_write(buf, n);
        RUN_UNTIL(seen.n_frames > 0);
        run_idle();
        assert_null(channel);
        assert_int_equal(seen.n_frames, 1);
        assert_int_equal(seen.n_close, 0); /* freed, not closed: the owner already knows */
        assert_true(read(peer, &c, 1) <= 0);
        /* more bytes reach nobody */
        (void) send(peer, buf, n, MSG_NOSIGNAL);
        run_idle();
        assert_int_equal(seen.n_frames, 1);
}

static void test_channel_free_from_close_callback(void **state) {
        uint8_t buf[256];
        size_t n = report_bytes(1, buf, sizeof buf);

        /* a good frame and garbage in one read: the close callback frees the channel mid-feed */
        seen.free_on_close = true;
        memcpy(buf + n, (uint8_t[]) { 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0xff }, 9);
        peer_write(buf, n + 9);
        RUN_UNTIL(seen.n_close > 0);
        run_idle();
        assert_null(channel);
        assert_int_equal(seen.n_frames, 1);
        assert_int_equal(seen.n_close, 1);
        assert_int_equal(seen.error, -EBADMSG);
}

static void test_channel_new_failure_takes_fd(void **state) {
        char path[] = "/tmp/test-channel.XXXXXX";
        Channel *c = NULL;
        int fd = mkostemp(path, O_CLOEXEC);

        assert_true(fd >= 0);
        assert_int_equal(unlink(path), 0);
        /* epoll refuses regular files: channel_new() fails, and the fd it owns is closed, not leaked */
        assert_true(channel_new(event, fd, 0, &callbacks, &seen, &c) < 0);
        assert_null(c);
        assert_int_equal(fcntl(fd, F_GETFD), -1);
        assert_int_equal(errno, EBADF);
}

static void test_channel_free_null(void **state) {
        assert_null(channel_free(NULL));
}

static void test_channel_worker_limits_report_rate(void **state) {
        uint8_t buf[100 * 64];
        size_t n = 0;

        /* a flood of valid reports: the burst passes, the rest is dropped unread, and it is told once */
        channel_set_limits(channel, &channel_worker_limits);
        for (uint64_t seq = 1; seq <= 100; seq++)
                n += report_bytes(seq, buf + n, sizeof buf - n);
        peer_write(buf, n);
        RUN_UNTIL(seen.n_frames + channel_frames_dropped(channel) >= 100);
        assert_true(seen.n_frames >= CHANNEL_REPORTS_PER_SECOND * CHANNEL_RATE_BURST_SECONDS);
        assert_true(seen.n_frames <= CHANNEL_REPORTS_PER_SECOND * CHANNEL_RATE_BURST_SECONDS + 2);
        assert_int_equal(seen.seq[0], 1); /* the first ones pass, in order */
        assert_int_equal(seen.seq[1], 2);
        assert_int_equal(seen.n_throttled, 1);
        assert_int_equal(seen.throttled_body, ELASTIC_POOL__FRAME__BODY_REPORT);
        assert_true(channel_is_open(channel));
        assert_int_equal(seen.n_close, 0);
}

static void test_channel_worker_limits_report_size(void **state) {
        ElasticPool__OccupancyReport r = ELASTIC_POOL__OCCUPANCY_REPORT__INIT;
        ElasticPool__Hello h = ELASTIC_POOL__HELLO__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        _cleanup_free_ uint8_t *buf = NULL;
        ElasticPool__Capability *caps;
        size_t n;

        /* a Hello of 8000 capabilities packs in ~8 KB, under its size, over its field count */
        channel_set_limits(channel, &channel_worker_limits);
        caps = calloc(8000, sizeof *caps);
        assert_non_null(caps);
        for (size_t i = 0; i < 8000; i++)
                caps[i] = ELASTIC_POOL__CAPABILITY__CAPABILITY_DROP_USERS;
        h.n_capabilities = 8000, h.capabilities = caps;
        f.body_case = ELASTIC_POOL__FRAME__BODY_HELLO, f.hello = &h;
        assert_int_equal(frame_encode(&f, 0, &buf, &n), 0);
        free(caps);
        peer_write(buf, n);
        RUN_UNTIL(seen.n_close > 0);
        assert_int_equal(seen.error, -E2BIG);
        assert_string_equal(seen.reason, "hello frame with more fields than its type allows (256, 64 unknown)");

        channel = channel_free(channel);
        peer = safe_close(peer);
        seen = (Seen) {};
        open_channel(0);
        channel_set_limits(channel, &channel_worker_limits);
        /* a report the size of a package: refused on its type alone */
        buf = mfree(buf);
        r.has_seq = true, r.seq = 1;
        f = (Frame) ELASTIC_POOL__FRAME__INIT;
        f.body_case = ELASTIC_POOL__FRAME__BODY_REPORT, f.report = &r;
        assert_int_equal(frame_encode(&f, 0, &buf, &n), 0);
        uint8_t head[] = { 0, 1, 0, 0, buf[4] };
        peer_write(head, sizeof head);
        RUN_UNTIL(seen.n_close > 0);
        assert_int_equal(seen.error, -EMSGSIZE);
        assert_string_equal(seen.reason, "report frame of 65536 bytes, over the 4096 byte maximum of its type");
}

static void test_channel_worker_limits_commander_only_type(void **state) {
        ElasticPool__Drain m = ELASTIC_POOL__DRAIN__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        _cleanup_free_ uint8_t *buf = NULL;
        size_t n;

        channel_set_limits(channel, &channel_worker_limits);
        f.body_case = ELASTIC_POOL__FRAME__BODY_DRAIN, f.drain = &m;
        assert_int_equal(frame_encode(&f, 0, &buf, &n), 0);
        peer_write(buf, n);
        RUN_UNTIL(seen.n_close > 0);
        assert_int_equal(seen.error, -EPROTOTYPE);
        assert_string_equal(seen.reason, "drain frame (field 8), which a worker does not send");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_channel_frames_dispatched_in_order, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_readable_told_before_frames, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_byte_by_byte, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_any_split, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_oversize_closes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_hostile_length, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_garbage_closes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_empty_frame_closes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_truncated_at_eof, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_truncated_in_header, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_orderly_eof, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_send_flushes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_send_queues_and_flushes_in_order, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_send_from_callback, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_send_oversize, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_send_over_outbox_limit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_send_write_fails, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_send_after_close, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_free_from_frame_callback, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_free_from_close_callback, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_worker_limits_report_rate, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_worker_limits_report_size, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_worker_limits_commander_only_type, setup, teardown),
                cmocka_unit_test_setup_teardown(test_channel_new_failure_takes_fd, setup, teardown),
                cmocka_unit_test(test_channel_free_null),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
