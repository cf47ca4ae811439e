/* SPDX-License-Identifier: MIT */
/* The WebSocket frame follower of the front end's tunnels: frame ends found in every way a byte stream can
 * split them (headers cut anywhere, 7-, 16- and 64-bit lengths, masked and not, many frames in one
 * buffer), and the close frames it builds (masked toward a worker, plain toward a client). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ws-frame.h"

/* A frame with payload length len (its bytes all 'x'), masked with a key when masked. */
static size_t make_frame(uint8_t *out, uint8_t opcode, uint64_t len, bool masked) {
        size_t n = 2;

        out[0] = 0x80 | opcode;
        if (len < 126)
                out[1] = (uint8_t) len;
        else if (len <= 0xffff) {
                out[1] = 126;
                out[2] = (uint8_t) (len >> 8);
                out[3] = (uint8_t) len;
                n = 4;
        } else {
                out[1] = 127;
                for (int i = 0; i < 8; i++)
                        out[2 + i] = (uint8_t) (len >> (56 - 8 * i));
                n = 10;
        }
        if (masked) {
                out[1] |= 0x80;
                memcpy(out + n, "\x01\x02\x03\x04", 4);
                n += 4;
        }
        memset(out + n, 'x', (size_t) len);
        return n + (size_t) len;
}

static void test_ws_follow_whole_frames(void **state) {
        static uint8_t buf[3 * 70000 + 64];
        size_t n = 0, k;
        WsFollower f = {};

        n += make_frame(buf + n, WS_OPCODE_TEXT, 5, true);
        n += make_frame(buf + n, WS_OPCODE_BINARY, 300, false);
        n += make_frame(buf + n, WS_OPCODE_PING, 0, true);
        n += make_frame(buf + n, WS_OPCODE_BINARY, 70000, true);

        k = ws_follow(&f, buf, n);
        assert_int_equal(k, 2 + 4 + 5);
        assert_true(ws_follower_at_boundary(&f));
        assert_int_equal(ws_opcode_of(buf[k]), WS_OPCODE_BINARY);
        ws_follow_all(&f, buf + k, n - k);
        assert_true(ws_follower_at_boundary(&f));
        assert_int_equal(f.frames, 4);
}

/* Fed one byte at a time, the follower is at a boundary exactly after each frame's last byte. */
static void test_ws_follow_byte_by_byte(void **state) {
        static uint8_t buf[2 * 70000 + 64];
        size_t n = 0, ends[4], n_ends = 0, seen = 0;
        WsFollower f = {};

        n += make_frame(buf + n, WS_OPCODE_TEXT, 125, true);
        ends[n_ends++] = n;
        n += make_frame(buf + n, WS_OPCODE_TEXT, 126, false);
        ends[n_ends++] = n;
        n += make_frame(buf + n, WS_OPCODE_CLOSE, 2, true);
        ends[n_ends++] = n;
        n += make_frame(buf + n, WS_OPCODE_BINARY, 65536, false);
        ends[n_ends++] = n;
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(ws_follow(&f, buf + i, 1), 1);
                if (ws_follower_at_boundary(&f)) {
                        assert_true(seen < n_ends);
                        assert_int_equal(i + 1, ends[seen++]);
                }
        }
        assert_int_equal(seen, n_ends);
}

/* A frame ending inside a buffer: ws_follow() stops there and the rest begins the next frame. */
static void test_ws_follow_stops_at_frame_end(void **state) {
        uint8_t buf[64];
        size_t a = make_frame(buf, WS_OPCODE_TEXT, 10, false), n = a + make_frame(buf + a, WS_OPCODE_CLOSE, 2, true);
        WsFollower f = {};

        assert_int_equal(ws_follow(&f, buf, 3), 3); /* the header and one payload byte */
        assert_false(ws_follower_at_boundary(&f));
        assert_int_equal(ws_follow(&f, buf + 3, n - 3), a - 3);
        assert_true(ws_follower_at_boundary(&f));
        assert_int_equal(ws_opcode_of(buf[a]), WS_OPCODE_CLOSE);
        assert_int_equal(ws_follow(&f, buf + a, n - a), n - a);
        assert_true(ws_follower_at_boundary(&f));
        assert_int_equal(f.frames, 2);
}

static void test_ws_close_frame_plain_and_masked(void **state) {
        uint8_t out[WS_CLOSE_FRAME_MAX], mask[4] = { 0xa1, 0xb2, 0xc3, 0xd4 }, payload[16];
        size_t n;
        WsFollower f = {};

        n = ws_close_frame(out, WS_CLOSE_GOING_AWAY, "going away", NULL);
        assert_int_equal(n, 2 + 2 + 10);
        assert_int_equal(out[0], 0x88);
        assert_int_equal(out[1], 12);
        assert_int_equal(ws_close_code(out + 2, 12), 1001);
        assert_memory_equal(out + 4, "going away", 10);
        assert_int_equal(ws_follow(&f, out, n), n);
        assert_true(ws_follower_at_boundary(&f));

        n = ws_close_frame(out, WS_CLOSE_GOING_AWAY, "going away", mask);
        assert_int_equal(n, 2 + 4 + 2 + 10);
        assert_int_equal(out[1], 0x80 | 12);
        assert_memory_equal(out + 2, mask, 4);
        for (size_t i = 0; i < 12; i++)
                payload[i] = out[6 + i] ^ mask[i % 4];
        assert_int_equal(ws_close_code(payload, 12), 1001);
        assert_memory_equal(payload + 2, "going away", 10);
        assert_int_equal(ws_close_code(payload, 1), 1005);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ws_follow_whole_frames),
                cmocka_unit_test(test_ws_follow_byte_by_byte),
                cmocka_unit_test(test_ws_follow_stops_at_frame_end),
                cmocka_unit_test(test_ws_close_frame_plain_and_masked),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
