/* SPDX-License-Identifier: MIT */
#include "user-store.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "cleanup.h"
#include "macro.h"

typedef struct User {
        struct User *next; /* bucket chain */
        uint64_t hash;
        uint64_t counter;
        uint8_t *blob;
        size_t blob_size;
        uint32_t blob_crc;
        char name[];
} User;

struct UserStore {
        pthread_mutex_t lock;
        User **buckets;
        size_t n_buckets; /* a power of two */
        size_t n_users;
        atomic_size_t n_users_mirror;
        size_t blob_size;
};

#define INITIAL_BUCKETS 64

bool user_name_is_valid(const char *name, size_t len) {
        if (len == 0 || len > USER_NAME_MAX)
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = name[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '@' || c == '-'))
                        return false;
        }
        return true;
}

static uint64_t fnv1a(const char *s) {
        uint64_t h = 0xcbf29ce484222325ULL;

        for (; *s; s++)
                h = (h ^ (uint8_t) *s) * 0x100000001b3ULL;
        return h;
}

void user_blob_fill(const char *name, uint8_t *blob, size_t size) {
        /* xorshift64 seeded by the name: cheap, deterministic, and different for every user. */
        uint64_t x = fnv1a(name) | 1;

        for (size_t i = 0; i < size; i += 8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                memcpy(blob + i, &x, MIN(size - i, (size_t) 8));
        }
}

static uint32_t crc32_table[256];
static pthread_once_t crc32_once = PTHREAD_ONCE_INIT;

static void crc32_init(void) {
        for (uint32_t i = 0; i < 256; i++) {
                uint32_t c = i;
                for (int k = 0; k < 8; k++)
                        c = c & 1 ? 0xedb88320U ^ (c >> 1) : c >> 1;
                crc32_table[i] = c;
        }
}

uint32_t user_crc32(const void *data, size_t size) {
        const uint8_t *p = data;
        uint32_t crc = UINT32_MAX;

        (void) pthread_once(&crc32_once, crc32_init);
        for (size_t i = 0; i < size; i++)
                crc = crc32_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
        return crc ^ UINT32_MAX;
}

static void put_le(uint8_t *p, uint64_t v, int n) {
        for (int i = 0; i < n; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n) {
        uint64_t v = 0;

        for (int i = n - 1; i >= 0; i--)
                v = v << 8 | p[i];
        return v;
}

int user_package_build(uint64_t counter, const void *blob, size_t blob_size, void **ret, size_t *ret_size) {
        uint8_t *p;

        if (blob_size > USER_BLOB_MAX)
                return -EFBIG;
        p = malloc(USER_PACKAGE_HEADER_SIZE + blob_size);
        if (!p)
                return -ENOMEM;
        memcpy(p, "EPDU", 4);
        put_le(p + 4, USER_PACKAGE_VERSION, 2);
        put_le(p + 6, 0, 2);
        put_le(p + 8, counter, 8);
        put_le(p + 16, blob_size, 4);
        put_le(p + 20, user_crc32(blob, blob_size), 4);
        if (blob_size > 0)
                memcpy(p + USER_PACKAGE_HEADER_SIZE, blob, blob_size);
        *ret = p;
        *ret_size = USER_PACKAGE_HEADER_SIZE + blob_size;
        return 0;
}

int user_package_parse(const void *data, size_t size, uint64_t *ret_counter, const void **ret_blob,
                       size_t *ret_blob_size) {
        const uint8_t *p = data;
        uint64_t blob_size;

        if (!p || size < USER_PACKAGE_HEADER_SIZE || memcmp(p, "EPDU", 4) != 0)
                return -EBADMSG;
        if (get_le(p + 4, 2) != USER_PACKAGE_VERSION || get_le(p + 6, 2) != 0)
                return -EBADMSG; /* a newer format we cannot read: refuse rather than guess */
        blob_size = get_le(p + 16, 4);
        if (blob_size > USER_BLOB_MAX || size - USER_PACKAGE_HEADER_SIZE != blob_size)
                return -EBADMSG;
        if (user_crc32(p + USER_PACKAGE_HEADER_SIZE, blob_size) != (uint32_t) get_le(p + 20, 4))
                return -EBADMSG;
        *ret_counter = get_le(p + 8, 8);
        *ret_blob = p + USER_PACKAGE_HEADER_SIZE;
        *ret_blob_size = blob_size;
        return 0;
}

static User *user_free(User *u) {
        if (!u)
                return NULL;
        free(u->blob);
        free(u);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(User *, user_free);

/* blob == NULL with blob_size > 0: fill the blob from the name (a login). */
static int user_new(const char *name, uint64_t counter, const void *blob, size_t blob_size, User **ret) {
        size_t l = strlen(name);
        _cleanup_(user_freep) User *u = NULL;

        u = calloc(1, sizeof(User) + l + 1);
        if (!u)
                return -ENOMEM;
        memcpy(u->name, name, l + 1);
        u->hash = fnv1a(name);
        u->counter = counter;
        if (blob_size > 0) {
                u->blob = malloc(blob_size);
                if (!u->blob)
                        return -ENOMEM;
                if (blob)
                        memcpy(u->blob, blob, blob_size);
                else
                        user_blob_fill(name, u->blob, blob_size);
                u->blob_size = blob_size;
        }
        /* The blob never changes afterwards, so its checksum is computed once, from the bytes held. */
        u->blob_crc = user_crc32(u->blob, u->blob_size);
        *ret = TAKE_PTR(u);
        return 0;
}

int user_store_new(size_t blob_size, UserStore **ret) {
        _cleanup_free_ UserStore *s = NULL;

        if (blob_size > USER_BLOB_MAX)
                return -ERANGE;
        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->buckets = calloc(INITIAL_BUCKETS, sizeof(User *));
        if (!s->buckets)
                return -ENOMEM;
        s->n_buckets = INITIAL_BUCKETS;
        s->blob_size = blob_size;
        pthread_mutex_init(&s->lock, NULL);
        *ret = TAKE_PTR(s);
        return 0;
}

UserStore *user_store_free(UserStore *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_buckets; i++)
                while (s->buckets[i]) {
                        User *u = s->buckets[i];
                        s->buckets[i] = u->next;
                        user_free(u);
                }
        free(s->buckets);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
}

size_t user_store_count(UserStore *s) {
        return atomic_load_explicit(&s->n_users_mirror, memory_order_relaxed);
}

/* Returns the link that points at the user, or at the NULL ending its chain. Lock held. */
static User **lookup(UserStore *s, const char *name, uint64_t hash) {
        User **link = &s->buckets[hash & (s->n_buckets - 1)];

        for (; *link; link = &(*link)->next)
                if ((*link)->hash == hash && streq((*link)->name, name))
                        break;
        return link;
}

static void set_count(UserStore *s, size_t n) {
        s->n_users = n;
        atomic_store_explicit(&s->n_users_mirror, n, memory_order_relaxed);
}

/* Doubles the table once the load passes 1; a failed allocation just leaves the chains longer. */
static void maybe_grow(UserStore *s) {
        size_t n = s->n_buckets * 2;
        User **b;

        if (s->n_users <= s->n_buckets)
                return;
        b = calloc(n, sizeof(User *));
        if (!b)
                return;
        for (size_t i = 0; i < s->n_buckets; i++)
                while (s->buckets[i]) {
                        User *u = s->buckets[i];
                        s->buckets[i] = u->next;
                        u->next = b[u->hash & (n - 1)];
                        b[u->hash & (n - 1)] = u;
                }
        free(s->buckets);
        s->buckets = b;
        s->n_buckets = n;
}

/* Puts u where *link points. With replace, an existing user is unlinked and returned (to be freed
 * outside the lock); without, an existing user stays and u is returned instead. Lock held. */
static User *link_user(UserStore *s, User **link, User *u, bool replace) {
        User *old = *link;

        if (old && !replace)
                return u;
        if (old) {
                u->next = old->next;
                *link = u;
                return old;
        }
        u->next = NULL;
        *link = u;
        set_count(s, s->n_users + 1);
        maybe_grow(s);
        return NULL;
}

/* Allocation and blob filling happen outside the lock: a large blob must not stall other users. */
static int store_put(UserStore *s, User *u, bool replace) {
        _cleanup_(user_freep) User *loser = NULL;

        pthread_mutex_lock(&s->lock);
        loser = link_user(s, lookup(s, u->name, u->hash), u, replace);
        pthread_mutex_unlock(&s->lock);
        return loser != u; /* 1: u is in the table */
}

int user_store_login(UserStore *s, const char *name) {
        User *u;
        int r;

        if (!user_name_is_valid(name, strlen(name)))
                return -EINVAL;
        if (user_store_exists(s, name) == 0)
                return 0; /* the common re-login: no need to build a blob only to throw it away */
        r = user_new(name, 0, NULL, s->blob_size, &u);
        if (r < 0)
                return r;
        return store_put(s, u, false);
}

int user_store_install(UserStore *s, const char *name, const void *package, size_t size) {
        const void *blob;
        size_t blob_size;
        uint64_t counter;
        User *u;
        int r;

        if (!user_name_is_valid(name, strlen(name)))
                return -EINVAL;
        r = user_package_parse(package, size, &counter, &blob, &blob_size);
        if (r < 0)
                return r;
        r = user_new(name, counter, blob, blob_size, &u); /* blob points into the package: never NULL */
        if (r < 0)
                return r;
        (void) store_put(s, u, true); /* the package is authoritative: it replaces a stale copy */
        return 0;
}

int user_store_drop(UserStore *s, const char *name) {
        User **link, *u;

        pthread_mutex_lock(&s->lock);
        link = lookup(s, name, fnv1a(name));
        u = *link;
        if (u) {
                *link = u->next;
                set_count(s, s->n_users - 1);
        }
        pthread_mutex_unlock(&s->lock);
        if (!u)
                return -ENOENT;
        user_free(u);
        return 0;
}

int user_store_exists(UserStore *s, const char *name) {
        bool found;

        pthread_mutex_lock(&s->lock);
        found = *lookup(s, name, fnv1a(name));
        pthread_mutex_unlock(&s->lock);
        return found ? 0 : -ENOENT;
}

int user_store_bump(UserStore *s, const char *name, uint64_t *ret_counter, uint32_t *ret_crc) {
        uint64_t h = fnv1a(name);
        User *u;

        pthread_mutex_lock(&s->lock);
        u = *lookup(s, name, h);
        if (u) {
                *ret_counter = ++u->counter;
                *ret_crc = u->blob_crc;
        }
        pthread_mutex_unlock(&s->lock);
        return u ? 0 : -ENOENT;
}

int user_store_snapshot(UserStore *s, const char *name, void **ret, size_t *ret_size) {
        User *u;
        int r;

        /* Copying the blob under the lock is the price of a consistent package; moves are rare. */
        pthread_mutex_lock(&s->lock);
        u = *lookup(s, name, fnv1a(name));
        r = u ? user_package_build(u->counter, u->blob, u->blob_size, ret, ret_size) : -ENOENT;
        pthread_mutex_unlock(&s->lock);
        return r;
}

int user_store_foreach(UserStore *s, int (*f)(const UserInfo *u, void *userdata), void *userdata) {
        int r = 0;

        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->n_buckets && r >= 0; i++)
                for (User *u = s->buckets[i]; u && r >= 0; u = u->next)
                        r = f(&(const UserInfo) { .name = u->name,
                                                  .counter = u->counter,
                                                  .blob_size = u->blob_size,
                                                  .blob_crc = u->blob_crc },
                              userdata);
        pthread_mutex_unlock(&s->lock);
        return MIN(r, 0);
}
