/* SPDX-License-Identifier: MIT */
/* The clients' shares of a worker's slots: a freed slot goes to the waiting client holding the fewest,
 * clients holding as many take turns, a client's own requests keep their order, a client alone gets
 * every slot, the queue share bounds one client's backlog, records are forgotten when unused and
 * recycled, and keys tell addresses (and, per connection, ports) apart. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "slot-share.h"

static SlotShare s;

static int setup(void **state) {
        assert_int_equal(slot_share_init(&s, 4, 10, 0.5), 0);
        return 0;
}

static int teardown(void **state) {
        slot_share_done(&s);
        return 0;
}

static ShareKey key_v4(const char *addr, uint16_t port, bool per_connection) {
        struct sockaddr_storage ss = {};
        struct sockaddr_in *sin = (struct sockaddr_in *) &ss;
        ShareKey k;

        sin->sin_family = AF_INET;
        sin->sin_port = htons(port);
        assert_int_equal(inet_pton(AF_INET, addr, &sin->sin_addr), 1);
        share_key_from_peer(&ss, per_connection, &k);
        return k;
}

static ShareKey key_v6(const char *addr, uint16_t port, bool per_connection) {
        struct sockaddr_storage ss = {};
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *) &ss;
        ShareKey k;

        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(port);
        assert_int_equal(inet_pton(AF_INET6, addr, &sin6->sin6_addr), 1);
        share_key_from_peer(&ss, per_connection, &k);
        return k;
}

static bool key_equal(const ShareKey *a, const ShareKey *b) {
        return a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;
}

static ShareClient *client(const char *addr) {
        ShareKey k = key_v4(addr, 1000, false);
        ShareClient *c;

        assert_int_equal(slot_share_client(&s, &k, &c), 0);
        return c;
}

/* A ready request of c, as the forward side's waiter would be. */
typedef struct Req {
        ShareLink link;
        ShareClient *c;
        int id;
} Req;

static void wait_ready(Req *r, ShareClient *c, int id) {
        r->c = c;
        r->id = id;
        slot_share_queue(&s, c);
        slot_share_ready(&s, c, &r->link);
}

/* The id of the request the next free slot goes to (-1: none), taken. */
static int take_next(void) {
        ShareClient *c;
        ShareLink *l = slot_share_next(&s, &c);
        Req *r;

        if (!l)
                return -1;
        r = (Req *) ((char *) l - offsetof(Req, link));
        assert_ptr_equal(r->c, c);
        slot_share_take(&s, c, l);
        return r->id;
}

static void test_share_key_from_peer_address_and_port(void **state) {
        ShareKey a = key_v4("127.0.0.1", 1, false), b = key_v4("127.0.0.1", 2, false);
        ShareKey c = key_v4("127.0.0.2", 1, false), d = key_v4("127.0.0.1", 2, true);
        ShareKey e = key_v4("127.0.0.1", 1, true);

        assert_int_equal(a.len, b.len);
        assert_memory_equal(a.bytes, b.bytes, a.len);   /* the port does not count */
        assert_memory_not_equal(a.bytes, c.bytes, a.len);
        assert_int_equal(d.len, a.len + 2);               /* per connection: it does */
        assert_memory_not_equal(d.bytes, e.bytes, d.len);
}

static void test_share_key_from_peer_ipv6_prefix_and_mapped(void **state) {
        ShareKey a = key_v6("2001:db8:1:2::1", 1, false), b = key_v6("2001:db8:1:2:ffff::9", 2, false);
        ShareKey c = key_v6("2001:db8:1:3::1", 1, false), m = key_v6("::ffff:192.0.2.7", 5, false);
        ShareKey v4 = key_v4("192.0.2.7", 6, false), m2 = key_v6("::ffff:192.0.2.8", 5, false);

        assert_true(key_equal(&a, &b));   /* one /64: one client */
        assert_false(key_equal(&a, &c));
        assert_true(key_equal(&m, &v4));  /* IPv4-mapped: the IPv4 client */
        assert_false(key_equal(&m, &m2)); /* not all IPv4 clients in one /64 */
        a = key_v6("2001:db8:1:2::1", 1, true);
        b = key_v6("2001:db8:1:2::2", 1, true);
        assert_false(key_equal(&a, &b));  /* per connection: the whole address */
}

static void test_slot_share_client_same_key_same_record(void **state) {
        ShareClient *a = client("10.0.0.1"), *b = client("10.0.0.1"), *c = client("10.0.0.2");

        assert_ptr_equal(a, b);
        assert_ptr_not_equal(a, c);
        assert_int_equal(s.count, 2);
        slot_share_put(&s, a);
        slot_share_put(&s, c);
        assert_int_equal(s.count, 0);
}

static void test_slot_share_next_fewest_held_first(void **state) {
        ShareClient *greedy = client("10.0.0.1"), *polite;
        Req g[6], p[2];

        /* the greedy client got all four slots while alone, and queued more */
        for (int i = 0; i < 4; i++)
                slot_share_hold(&s, greedy);
        for (int i = 0; i < 6; i++)
                wait_ready(&g[i], greedy, 100 + i);
        polite = client("10.0.0.2");
        wait_ready(&p[0], polite, 1);
        wait_ready(&p[1], polite, 2);

        /* freed slots go to the polite client, although the greedy one queued first */
        slot_share_release(&s, greedy);
        assert_int_equal(take_next(), 1);
        slot_share_release(&s, greedy);
        assert_int_equal(take_next(), 2);
        /* the polite client waits for nothing more: the greedy one, in its own order */
        slot_share_release(&s, greedy);
        assert_int_equal(take_next(), 100);
        assert_int_equal(take_next(), 101);
        assert_int_equal(greedy->held, 3);
        assert_int_equal(polite->held, 2);
}

static void test_slot_share_next_round_robin_among_equals(void **state) {
        ShareClient *a = client("10.0.0.1"), *b = client("10.0.0.2"), *c = client("10.0.0.3");
        Req ra[3], rb[3], rc[1];
        int order[7];

        for (int i = 0; i < 3; i++) {
                wait_ready(&ra[i], a, 10 + i);
                wait_ready(&rb[i], b, 20 + i);
        }
        wait_ready(&rc[0], c, 30);
        for (int i = 0; i < 7; i++)
                order[i] = take_next();
        assert_int_equal(order[0], 10);
        assert_int_equal(order[1], 20);
        assert_int_equal(order[2], 30);
        assert_int_equal(order[3], 11);
        assert_int_equal(order[4], 21);
        assert_int_equal(order[5], 12);
        assert_int_equal(order[6], 22);
        assert_int_equal(take_next(), -1);
        assert_int_equal(slot_share_ready_count(&s), 0);
}

static void test_slot_share_next_lone_client_gets_every_slot(void **state) {
        ShareClient *a = client("10.0.0.1");
        Req r[8];

        for (int i = 0; i < 8; i++)
                wait_ready(&r[i], a, i);
        for (int i = 0; i < 8; i++)
                assert_int_equal(take_next(), i);
        assert_int_equal(a->held, 8); /* past the last bucket: still counted */
        for (int i = 0; i < 8; i++)
                slot_share_release(&s, a);
        assert_int_equal(s.count, 0);
}

static void test_slot_share_unqueue_drops_a_waiting_request(void **state) {
        ShareClient *a = client("10.0.0.1"), *b = client("10.0.0.2");
        Req ra[3], rb[1];

        slot_share_hold(&s, b);
        for (int i = 0; i < 3; i++)
                wait_ready(&ra[i], a, i);
        wait_ready(&rb[0], b, 9);
        slot_share_unqueue(&s, a, &ra[0].link); /* reset by its client: never gets a slot */
        assert_int_equal(a->queued, 2);
        assert_int_equal(take_next(), 1);
        assert_int_equal(take_next(), 9); /* a and b now hold one each: b's turn */
        slot_share_unqueue(&s, a, &ra[2].link);
        assert_int_equal(take_next(), -1);
        /* a request that never became ready */
        slot_share_queue(&s, a);
        slot_share_unqueue(&s, a, NULL);
        assert_int_equal(a->queued, 0);
        assert_int_equal(a->held, 1);
}

static void test_slot_share_may_queue_its_share_of_the_queue(void **state) {
        ShareClient *a = client("10.0.0.1"), *b;
        Req r[5];

        for (int i = 0; i < 5; i++) {
                assert_true(slot_share_may_queue(&s, a));
                wait_ready(&r[i], a, i);
        }
        assert_false(slot_share_may_queue(&s, a)); /* half of 10 */
        b = client("10.0.0.2");
        assert_true(slot_share_may_queue(&s, b));
        slot_share_put(&s, b);
        assert_int_equal(take_next(), 0);
        assert_true(slot_share_may_queue(&s, a));
}

static void test_slot_share_put_recycles_records(void **state) {
        ShareClient *a = client("10.0.0.1"), *again;

        slot_share_hold(&s, a);
        slot_share_put(&s, a); /* holds a slot: kept */
        assert_int_equal(s.count, 1);
        slot_share_release(&s, a);
        assert_int_equal(s.count, 0);
        again = client("10.0.0.9");
        assert_ptr_equal(again, a); /* the same memory, no allocation */
        assert_int_equal(again->held, 0);
        slot_share_put(&s, again);
}

static void test_slot_share_client_many_grow_and_remove(void **state) {
        enum { N = 1000 };
        ShareClient *c[N];
        char addr[32];

        for (int i = 0; i < N; i++) {
                snprintf(addr, sizeof(addr), "10.%d.%d.1", i / 256, i % 256);
                c[i] = client(addr);
                slot_share_hold(&s, c[i]);
        }
        assert_int_equal(s.count, N);
        /* every other one leaves: the rest are still found (backward-shift deletion keeps probe runs) */
        for (int i = 0; i < N; i += 2)
                slot_share_release(&s, c[i]);
        for (int i = 1; i < N; i += 2) {
                snprintf(addr, sizeof(addr), "10.%d.%d.1", i / 256, i % 256);
                assert_ptr_equal(client(addr), c[i]);
        }
        assert_int_equal(s.count, N / 2);
        for (int i = 1; i < N; i += 2)
                slot_share_release(&s, c[i]);
        assert_int_equal(s.count, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_share_key_from_peer_address_and_port, setup, teardown),
                cmocka_unit_test_setup_teardown(test_share_key_from_peer_ipv6_prefix_and_mapped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_slot_share_client_same_key_same_record, setup, teardown),
                cmocka_unit_test_setup_teardown(test_slot_share_next_fewest_held_first, setup, teardown),
                cmocka_unit_test_setup_teardown(test_slot_share_next_round_robin_among_equals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_slot_share_next_lone_client_gets_every_slot, setup, teardown),
                cmocka_unit_test_setup_teardown(test_slot_share_unqueue_drops_a_waiting_request, setup, teardown),
                cmocka_unit_test_setup_teardown(test_slot_share_may_queue_its_share_of_the_queue, setup, teardown),
                cmocka_unit_test_setup_teardown(test_slot_share_put_recycles_records, setup, teardown),
                cmocka_unit_test_setup_teardown(test_slot_share_client_many_grow_and_remove, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
