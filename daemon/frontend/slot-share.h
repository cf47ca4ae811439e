/* SPDX-License-Identifier: MIT */
#pragma once

/* The clients' shares of one worker's upstream connections (its slots) and the order in which waiting
 * requests get a slot that came free: not first come first served, but the waiting client that holds
 * the fewest slots first, clients holding as many taking turns (round robin). So a client holding
 * client_worker_share of the slots or more gets a freed slot only when no client under it waits, and a
 * client alone gets every slot: the share applies only when others wait. A client also may have at most
 * its share of the request queue waiting, so that its backlog cannot fill the queue for everybody.
 *
 * A client is the peer's address (the port left out: connections of one host count together; for IPv6
 * its /64, which one host can pick addresses from), or one connection of a trusted proxy (all its
 * clients come from one address). Pure bookkeeping, no I/O: the
 * forward side (forward.c) feeds it. No allocation per request: client records are recycled, the table
 * grows only when more clients than ever before are on the worker at once.
 *
 * A waiting request is in one of two states: queued (counted against the queue share, not yet eligible
 * for a slot: its body has not shown progress) and ready (in its client's first-in first-out list). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define SHARE_KEY_MAX 20

/* family, address, and (one connection of a trusted proxy) port */
typedef struct ShareKey {
        uint8_t len;
        uint8_t bytes[SHARE_KEY_MAX];
} ShareKey;

/* A ready request's place in its client's list; owned by the caller (embedded in its waiter). */
typedef struct ShareLink {
        struct ShareLink *prev, *next;
} ShareLink;

typedef struct ShareClient {
        ShareKey key;
        uint64_t hash;
        unsigned held;                  /* slots it holds */
        unsigned queued;                /* requests it has waiting, ready or not */
        ShareLink *ready_head, *ready_tail;
        struct ShareClient *prev, *next; /* in the bucket of its held count while it has ready requests;
                                            next links the free list */
} ShareClient;

typedef struct ShareBucket {
        ShareClient *head, *tail;
} ShareBucket;

typedef struct SlotShare {
        ShareClient **table;  /* open addressing, linear probing */
        size_t capacity;      /* power of two */
        size_t count;
        uint64_t seed;
        ShareClient *spare;   /* records to recycle */
        ShareBucket *buckets; /* [held], the last one for held >= n_buckets - 1 */
        unsigned n_buckets;
        unsigned lowest;      /* no bucket under it has a client */
        unsigned ready;       /* ready requests, all clients */
        unsigned queue_quota; /* requests one client may have waiting */
} SlotShare;

/* slots: the worker's connections; max_queued: its queue; share in (0, 1]. 0 or -ENOMEM. */
int slot_share_init(SlotShare *s, unsigned slots, unsigned max_queued, double share);
void slot_share_done(SlotShare *s);

/* The key of a peer: its IPv4 address (an IPv4-mapped IPv6 one too) or IPv6 /64; the whole address and
 * the port when per_connection. */
void share_key_from_peer(const struct sockaddr_storage *peer, bool per_connection, ShareKey *ret);

/* The client of key, added (holding and waiting for nothing) when not known. 0 or -ENOMEM. Give it a
 * hold or a queued request, or hand it back with slot_share_put(); a client left holding and waiting
 * for nothing by the calls below is forgotten by them. */
int slot_share_client(SlotShare *s, const ShareKey *key, ShareClient **ret);
/* Forgets c if it holds and waits for nothing. */
void slot_share_put(SlotShare *s, ShareClient *c);

/* c takes a slot / gives one back (c may be forgotten by the latter). */
void slot_share_hold(SlotShare *s, ShareClient *c);
void slot_share_release(SlotShare *s, ShareClient *c);

/* Whether c may have one more request waiting (under its share of the queue). */
bool slot_share_may_queue(const SlotShare *s, const ShareClient *c);
/* A request of c starts waiting, not ready yet. */
void slot_share_queue(SlotShare *s, ShareClient *c);
/* That request is ready for a slot: l joins the end of c's list. */
void slot_share_ready(SlotShare *s, ShareClient *c, ShareLink *l);
/* It stops waiting without a slot (gone, timed out); l is NULL when it was not ready. c may be
 * forgotten. */
void slot_share_unqueue(SlotShare *s, ShareClient *c, ShareLink *l);

/* The ready request that gets the next free slot (the oldest of the client holding the fewest), its
 * client in *ret_client; NULL when none is ready. Nothing changes until slot_share_take(). */
ShareLink *slot_share_next(SlotShare *s, ShareClient **ret_client);
/* The ready request l of c leaves the wait for a slot of c's: unqueue and hold in one step. */
void slot_share_take(SlotShare *s, ShareClient *c, ShareLink *l);

static inline unsigned slot_share_ready_count(const SlotShare *s) {
        return s->ready;
}
