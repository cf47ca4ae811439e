/* SPDX-License-Identifier: MIT */
#include "surface.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "macro.h"

int surface_init(Surface *s) {
        *s = (Surface) {};
        strmap_init(&s->users);
        strmap_init(&s->open);
        strmap_init(&s->orphaned);
        return 0;
}

static void user_free(SurfaceUser *u) {
        if (!u)
                return;
        free(u->name);
        free(u);
}

void surface_done(Surface *s) {
        const char *k;
        void *v;

        for (size_t i = 0; strmap_next(&s->users, &i, &k, &v);)
                user_free(v);
        strmap_done(&s->users);
        strmap_done(&s->open);
        strmap_done(&s->orphaned);
        free(s->worker_users);
        free(s->worker_open);
        *s = (Surface) {};
}

static int ensure_worker_slot(Surface *s, unsigned worker) {
        unsigned n;
        uint32_t *a, *b;

        if (worker < s->worker_slots)
                return 0;
        n = MAX(worker + 1, s->worker_slots * 2);
        n = MAX(n, 16U);
        a = reallocarray(s->worker_users, n, sizeof *a);
        if (!a)
                return -ENOMEM;
        s->worker_users = a;
        b = reallocarray(s->worker_open, n, sizeof *b);
        if (!b)
                return -ENOMEM;
        s->worker_open = b;
        memset(a + s->worker_slots, 0, (n - s->worker_slots) * sizeof *a);
        memset(b + s->worker_slots, 0, (n - s->worker_slots) * sizeof *b);
        s->worker_slots = n;
        return 0;
}

SurfaceUser *surface_user_get(Surface *s, const char *name) {
        return strmap_get(&s->users, name);
}

int surface_user_place(Surface *s, const char *name, unsigned worker, usec_t now, SurfaceUser **ret) {
        SurfaceUser *u = surface_user_get(s, name);
        int r;

        r = ensure_worker_slot(s, worker);
        if (r < 0)
                return r;
        if (u) {
                if (u->worker < s->worker_slots && s->worker_users[u->worker] > 0)
                        s->worker_users[u->worker]--;
        } else {
                u = calloc(1, sizeof *u);
                if (!u)
                        return -ENOMEM;
                u->name = strdup(name);
                if (!u->name) {
                        free(u);
                        return -ENOMEM;
                }
                r = strmap_put(&s->users, u->name, u, NULL);
                if (r < 0) {
                        user_free(u);
                        return r;
                }
        }
        u->worker = worker;
        u->placed_at = now;
        s->worker_users[worker]++;
        if (ret)
                *ret = u;
        return 0;
}

/* Open entries are attributed by user name. Those of a user about to be forgotten must stop being
 * attributed, or a new login of the same name would be counted down by requests it never opened (and
 * look quiesced to a move while one of its own is still in flight). With only != NULL, the entries of
 * that user; else those of every user on worker. One walk over the open requests: logouts are rare
 * next to requests, and a dying worker's users are handled in the same single walk. 0, or -ENOMEM when
 * some entries could not be set aside (those stay attributed by name). */
static int orphan_entries(Surface *s, const SurfaceUser *only, unsigned worker) {
        const char *k;
        void *v;
        int r = 0;

        for (size_t i = 0; strmap_next(&s->open, &i, &k, &v);) {
                Exchange *x = v;
                const SurfaceUser *u;

                if (!x->user)
                        continue;
                if (only) {
                        if (!streq(x->user, only->name))
                                continue;
                } else {
                        u = surface_user_get(s, x->user);
                        if (!u || u->worker != worker)
                                continue;
                }
                if (strmap_put(&s->orphaned, x->key, x, NULL) < 0)
                        r = -ENOMEM;
        }
        return r;
}

static void user_remove(Surface *s, SurfaceUser *u) {
        if (u->worker < s->worker_slots && s->worker_users[u->worker] > 0)
                s->worker_users[u->worker]--;
        (void) strmap_remove(&s->users, u->name);
        user_free(u);
}

void surface_user_forget(Surface *s, SurfaceUser *u) {
        if (!u)
                return;
        (void) orphan_entries(s, u, 0);
        user_remove(s, u);
}

unsigned surface_worker_gone(Surface *s, unsigned worker) {
        unsigned n = 0;
        const char *k;
        void *v;

        (void) orphan_entries(s, NULL, worker);
        for (size_t i = 0; strmap_next(&s->users, &i, &k, &v);) {
                SurfaceUser *u = v;
                if (u->worker != worker)
                        continue;
                user_remove(s, u);
                n++;
        }
        return n;
}

unsigned surface_worker_users(const Surface *s, unsigned worker) {
        return worker < s->worker_slots ? s->worker_users[worker] : 0;
}

unsigned surface_worker_open(const Surface *s, unsigned worker) {
        return worker < s->worker_slots ? s->worker_open[worker] : 0;
}

int surface_request_open(Surface *s, Exchange *x) {
        SurfaceUser *u;
        int r;

        r = ensure_worker_slot(s, x->worker);
        if (r < 0)
                return r;
        snprintf(x->key, sizeof x->key, "%llx", (unsigned long long) ++s->next_key);
        r = strmap_put(&s->open, x->key, x, NULL);
        if (r < 0) {
                x->key[0] = 0;
                return r;
        }
        s->worker_open[x->worker]++;
        u = x->user ? surface_user_get(s, x->user) : NULL;
        if (u)
                u->open++;
        return 0;
}

/* Takes x's entry out of the per-worker and per-user counts; returns the user it was attributed to (NULL
 * for a guest, or when its user was forgotten since). */
static SurfaceUser *entry_removed(Surface *s, Exchange *x) {
        SurfaceUser *u = NULL;

        if (x->worker < s->worker_slots && s->worker_open[x->worker] > 0)
                s->worker_open[x->worker]--;
        if (strmap_remove(&s->orphaned, x->key) != x && x->user)
                u = surface_user_get(s, x->user);
        if (u && u->open > 0)
                u->open--;
        x->key[0] = 0;
        return u;
}

void surface_request_close(Surface *s, Exchange *x, usec_t now) {
        SurfaceUser *u;

        if (x->key[0] && strmap_get(&s->open, x->key) == x) {
                (void) strmap_remove(&s->open, x->key);
                u = entry_removed(s, x);
        } else
                /* swept already (or never opened): attributed by name */
                u = x->user ? surface_user_get(s, x->user) : NULL;
        if (u) {
                u->requests++;
                u->busy_usec += now - x->started;
        }
}

unsigned surface_sweep(Surface *s, usec_t now, usec_t max_age) {
        unsigned n = 0;
        const char *k;
        void *v;

        for (size_t i = 0; strmap_next(&s->open, &i, &k, &v);) {
                Exchange *x = v;
                /* started after now (a caller's stale clock) is young, not 2^64 us old */
                if (x->started >= now || now - x->started < max_age)
                        continue;
                (void) strmap_remove(&s->open, k);
                (void) entry_removed(s, x);
                n++;
        }
        return n;
}
