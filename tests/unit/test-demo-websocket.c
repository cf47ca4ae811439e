/* SPDX-License-Identifier: MIT */
/* The demo worker's WebSocket echo (demo/websocket.c): the handshake's accept key (RFC 6455's own
 * example), masked frames answered (in pieces, fragmented, ping, close), and the user's counter counting
 * one per message. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "websocket.h"

typedef struct Out {
        uint8_t buf[4096];
        size_t len;
} Out;

static int emit(void *ctx, const void *data, size_t size) {
        Out *o = ctx;

        assert_true(o->len + size <= sizeof o->buf);
        memcpy(o->buf + o->len, data, size);
        o->len += size;
        return 0;
}

/* A masked client frame. */
static size_t client_frame(uint8_t *out, uint8_t b0, const char *payload, size_t len) {
        static const uint8_t mask[4] = { 9, 8, 7, 6 };

        out[0] = b0;
        out[1] = 0x80 | (uint8_t) len;
        memcpy(out + 2, mask, 4);
        for (size_t i = 0; i < len; i++)
                out[6 + i] = (uint8_t) payload[i] ^ mask[i % 4];
        return 6 + len;
}

static void test_ws_accept_key_rfc_example(void **state) {
        char out[WS_ACCEPT_SIZE];

        assert_int_equal(ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", 24, out), 0);
        assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert_int_equal(ws_accept_key("", 0, out), -EINVAL);
}

static void test_ws_conn_feed_echo_counts_per_user(void **state) {
        UserStore *users;
        WsConn *w;
        uint8_t in[256];
        size_t n;
        Out o = {};

        assert_int_equal(user_store_new(0, &users), 0);
        assert_int_equal(user_store_login(users, "ann"), 1);
        assert_int_equal(ws_conn_new("ann", "7", &w), 0);

        /* one text message, its bytes in three pieces */
        n = client_frame(in, 0x81, "hi", 2);
        assert_int_equal(ws_conn_feed(w, users, in, 1, emit, &o), 1);
        assert_int_equal(ws_conn_feed(w, users, in + 1, 4, emit, &o), 1);
        assert_int_equal(o.len, 0);
        assert_int_equal(ws_conn_feed(w, users, in + 5, n - 5, emit, &o), 1);
        assert_int_equal(o.len, 2 + 6);
        assert_memory_equal(o.buf, "\x81\x06" "1 7 hi", 8);

        /* fragmented: "ab" + "cd", a ping in between answered at once */
        o.len = 0;
        n = client_frame(in, 0x01, "ab", 2);
        n += client_frame(in + n, 0x89, "p", 1);
        n += client_frame(in + n, 0x80, "cd", 2);
        assert_int_equal(ws_conn_feed(w, users, in, n, emit, &o), 1);
        assert_memory_equal(o.buf, "\x8a\x01p" "\x81\x08" "2 7 abcd", 3 + 10);

        /* close 1001: answered with 1001, and the end */
        o.len = 0;
        n = client_frame(in, 0x88, "\x03\xe9", 2);
        assert_int_equal(ws_conn_feed(w, users, in, n, emit, &o), 0);
        assert_memory_equal(o.buf, "\x88\x02\x03\xe9", 4);

        ws_conn_free(w);
        user_store_free(users);
}

static void test_ws_conn_feed_refuses_unmasked(void **state) {
        UserStore *users;
        WsConn *w;
        Out o = {};

        assert_int_equal(user_store_new(0, &users), 0);
        assert_int_equal(ws_conn_new(NULL, "1", &w), 0);
        assert_int_equal(ws_conn_feed(w, users, (const uint8_t *) "\x81\x02hi", 4, emit, &o), -EPROTO);
        assert_memory_equal(o.buf, "\x88\x02\x03\xea", 4); /* 1002 protocol error */
        ws_conn_free(w);
        user_store_free(users);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ws_accept_key_rfc_example),
                cmocka_unit_test(test_ws_conn_feed_echo_counts_per_user),
                cmocka_unit_test(test_ws_conn_feed_refuses_unmasked),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
