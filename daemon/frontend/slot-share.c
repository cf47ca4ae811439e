/* SPDX-License-Identifier: MIT */
/* The clients' shares of a worker's slots: a table of clients by key, and per held count a bucket of
 * the clients that have requests ready for a slot (see slot-share.h). Taking the head of the lowest
 * bucket and putting the client at the tail of the next one is what makes clients holding as many slots
 * take turns. */
#include "slot-share.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "list.h"
#include "macro.h"

#define TABLE_INITIAL 16U

static void key_put(ShareKey *k, const void *data, size_t len) {
        memcpy(k->bytes + k->len, data, len);
        k->len = (uint8_t) (k->len + len);
}

void share_key_from_peer(const struct sockaddr_storage *peer, bool per_connection, ShareKey *ret) {
        uint8_t family = (uint8_t) peer->ss_family;

        *ret = (ShareKey) {};
        key_put(ret, &family, 1);
        if (peer->ss_family == AF_INET) {
                const struct sockaddr_in *sin = (const struct sockaddr_in *) peer;

                key_put(ret, &sin->sin_addr, sizeof(sin->sin_addr));
                if (per_connection)
                        key_put(ret, &sin->sin_port, sizeof(sin->sin_port));
        } else if (peer->ss_family == AF_INET6) {
                const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *) peer;
                const uint8_t *a = sin6->sin6_addr.s6_addr;

                if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
                        /* an IPv4 client of a dual-stack listener: the same client as over IPv4 */
                        ret->bytes[0] = AF_INET;
                        key_put(ret, a + 12, 4);
                } else if (per_connection)
                        key_put(ret, a, 16);
                else
                        /* one host usually has a whole /64 to pick addresses from: it is one client */
                        key_put(ret, a, 8);
                if (per_connection)
                        key_put(ret, &sin6->sin6_port, sizeof(sin6->sin6_port));
        }
        /* a Unix socket's peers carry no address: they are one client */
}

int slot_share_init(SlotShare *s, unsigned slots, unsigned max_queued, double share) {
        double quota = (double) max_queued * share;

        *s = (SlotShare) {};
        s->n_buckets = MAX(slots, 1U) + 1;
        s->buckets = calloc(s->n_buckets, sizeof(*s->buckets));
        s->table = calloc(TABLE_INITIAL, sizeof(*s->table));
        if (!s->buckets || !s->table) {
                slot_share_done(s);
                return -ENOMEM;
        }
        s->capacity = TABLE_INITIAL;
        s->queue_quota = quota < 1 ? 1 : (unsigned) quota;
        s->seed = hash_seed(s);
        return 0;
}

void slot_share_done(SlotShare *s) {
        for (size_t i = 0; i < s->capacity; i++)
                free(s->table[i]);
        while (s->spare) {
                ShareClient *c = s->spare;
                s->spare = c->next;
                free(c);
        }
        free(s->table);
        free(s->buckets);
        *s = (SlotShare) {};
}

static size_t table_find(const SlotShare *s, const ShareKey *k, uint64_t hash) {
        size_t mask = s->capacity - 1, i = hash & mask;

        for (; s->table[i]; i = (i + 1) & mask) {
                const ShareClient *c = s->table[i];
                if (c->hash == hash && c->key.len == k->len && memcmp(c->key.bytes, k->bytes, k->len) == 0)
                        break;
        }
        return i;
}

static int table_grow(SlotShare *s) {
        size_t capacity = s->capacity * 2, mask = capacity - 1;
        ShareClient **t = calloc(capacity, sizeof(*t));

        if (!t)
                return -ENOMEM;
        for (size_t i = 0; i < s->capacity; i++) {
                ShareClient *c = s->table[i];
                size_t j;

                if (!c)
                        continue;
                for (j = c->hash & mask; t[j]; j = (j + 1) & mask)
                        ;
                t[j] = c;
        }
        free(s->table);
        s->table = t;
        s->capacity = capacity;
        return 0;
}

/* Backward-shift deletion: later members of the probe run move up, so lookups never need tombstones. */
static void table_remove(SlotShare *s, const ShareClient *c) {
        size_t mask = s->capacity - 1, i = c->hash & mask;

        while (s->table[i] != c)
                i = (i + 1) & mask;
        for (size_t j = i;;) {
                s->table[i] = NULL;
                for (;;) {
                        j = (j + 1) & mask;
                        if (!s->table[j])
                                return;
                        /* the entry at j may fill the hole at i if its home is not between them */
                        if (((j - (s->table[j]->hash & mask)) & mask) >= ((j - i) & mask))
                                break;
                }
                s->table[i] = s->table[j];
                i = j;
        }
}

int slot_share_client(SlotShare *s, const ShareKey *key, ShareClient **ret) {
        /* seeded per table: clients choose their IPv6 addresses, and must not pick ones that collide */
        uint64_t hash = hash_bytes(s->seed, key->bytes, key->len);
        size_t i = table_find(s, key, hash);
        ShareClient *c;

        if (s->table[i]) {
                *ret = s->table[i];
                return 0;
        }
        if ((s->count + 1) * 2 > s->capacity) {
                int r = table_grow(s);
                if (r < 0)
                        return r;
                i = table_find(s, key, hash);
        }
        c = s->spare;
        if (c)
                s->spare = c->next;
        else {
                c = malloc(sizeof(*c));
                if (!c)
                        return -ENOMEM;
        }
        *c = (ShareClient) { .key = *key, .hash = hash };
        s->table[i] = c;
        s->count++;
        *ret = c;
        return 0;
}

void slot_share_put(SlotShare *s, ShareClient *c) {
        if (c->held > 0 || c->queued > 0)
                return;
        table_remove(s, c);
        s->count--;
        c->next = s->spare;
        s->spare = c;
}

static ShareBucket *bucket_of(SlotShare *s, const ShareClient *c) {
        return &s->buckets[MIN(c->held, s->n_buckets - 1)];
}

static void bucket_unlink(SlotShare *s, ShareClient *c) {
        ShareBucket *b = bucket_of(s, c);

        QUEUE_REMOVE(b->head, b->tail, c, prev, next);
}

static void bucket_leave(SlotShare *s, ShareClient *c) {
        if (c->ready_head)
                bucket_unlink(s, c);
}

static void bucket_enter(SlotShare *s, ShareClient *c) {
        ShareBucket *b = bucket_of(s, c);

        if (!c->ready_head)
                return;
        QUEUE_APPEND(b->head, b->tail, c, prev, next);
        s->lowest = MIN(s->lowest, (unsigned) (b - s->buckets));
}

void slot_share_hold(SlotShare *s, ShareClient *c) {
        bucket_leave(s, c);
        c->held++;
        bucket_enter(s, c);
}

void slot_share_release(SlotShare *s, ShareClient *c) {
        if (c->held == 0)
                return;
        bucket_leave(s, c);
        c->held--;
        bucket_enter(s, c);
        slot_share_put(s, c);
}

bool slot_share_may_queue(const SlotShare *s, const ShareClient *c) {
        return c->queued < s->queue_quota;
}

void slot_share_queue(SlotShare *s, ShareClient *c) {
        c->queued++;
}

void slot_share_ready(SlotShare *s, ShareClient *c, ShareLink *l) {
        bool first = !c->ready_head;

        QUEUE_APPEND(c->ready_head, c->ready_tail, l, prev, next);
        if (first)
                bucket_enter(s, c); /* it has a turn now */
        s->ready++;
}

static void ready_remove(SlotShare *s, ShareClient *c, ShareLink *l) {
        QUEUE_REMOVE(c->ready_head, c->ready_tail, l, prev, next);
        s->ready--;
}

void slot_share_unqueue(SlotShare *s, ShareClient *c, ShareLink *l) {
        if (l) {
                ready_remove(s, c, l);
                if (!c->ready_head)
                        bucket_unlink(s, c); /* else it keeps its turn */
        }
        if (c->queued > 0)
                c->queued--;
        slot_share_put(s, c);
}

ShareLink *slot_share_next(SlotShare *s, ShareClient **ret_client) {
        if (s->ready == 0)
                return NULL;
        for (; s->lowest < s->n_buckets; s->lowest++) {
                ShareClient *c = s->buckets[s->lowest].head;

                if (c) {
                        *ret_client = c;
                        return c->ready_head;
                }
        }
        return NULL; /* not reached: ready > 0 means some client is in a bucket */
}

void slot_share_take(SlotShare *s, ShareClient *c, ShareLink *l) {
        bucket_leave(s, c);
        ready_remove(s, c, l);
        if (c->queued > 0)
                c->queued--;
        c->held++;
        bucket_enter(s, c);
}
