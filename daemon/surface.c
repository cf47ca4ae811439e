/* SPDX-License-Identifier: MIT */
#include "surface.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "id-array.h"
#include "macro.h"

void surface_init(Surface *s) {
        *s = (Surface) {};
        strmap_init(&s->users);
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
        free(s->worker_users);
        *s = (Surface) {};
}

SurfaceUser *surface_user_get(const Surface *s, const char *name) {
        return strmap_get(&s->users, name);
}

static int user_new(Surface *s, const char *name, usec_t now, SurfaceUser **ret) {
        SurfaceUser *u;
        int r;

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
        u->incarnation = ++s->next_incarnation;
        u->logged_in_at = now;
        *ret = u;
        return 0;
}

int surface_user_place(Surface *s, const char *name, unsigned worker, usec_t now, SurfaceUser **ret) {
        SurfaceUser *u = surface_user_get(s, name);
        int r;

        r = ID_ARRAY_ENSURE(s->worker_users, s->worker_slots, worker);
        if (r < 0)
                return r;
        if (u) {
                if (u->worker < s->worker_slots && s->worker_users[u->worker] > 0)
                        s->worker_users[u->worker]--;
        } else {
                r = user_new(s, name, now, &u);
                if (r < 0)
                        return r;
                u->last_seen = now;
        }
        /* a move of a known user is no request of it: were it one, an abandoned user that drains and
         * reliefs move now and then would never expire */
        s->version++;
        u->worker = worker;
        u->placed_at = now;
        s->worker_users[worker]++;
        if (ret)
                *ret = u;
        return 0;
}

static void user_remove(Surface *s, SurfaceUser *u) {
        s->version++;
        if (u->worker < s->worker_slots && s->worker_users[u->worker] > 0)
                s->worker_users[u->worker]--;
        (void) strmap_remove(&s->users, u->name);
        user_free(u);
}

void surface_user_forget(Surface *s, SurfaceUser *u) {
        if (u)
                user_remove(s, u);
}

unsigned surface_worker_gone(Surface *s, unsigned worker) {
        unsigned n = 0;
        const char *k;
        void *v;

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

SurfaceUser *surface_next_user(const Surface *s, size_t *cursor) {
        const char *k;
        void *v;

        return strmap_next(&s->users, cursor, &k, &v) ? v : NULL;
}

uint64_t surface_request_started(Surface *s, const char *name, usec_t now) {
        SurfaceUser *u = name ? surface_user_get(s, name) : NULL;

        if (!u)
                return 0;
        s->version++;
        u->open++;
        u->last_seen = now;
        return u->incarnation;
}

SurfaceUser *surface_request_ended(Surface *s, const char *name, uint64_t ticket, usec_t busy) {
        SurfaceUser *u = name ? surface_user_get(s, name) : NULL;

        if (!u || ticket != u->incarnation)
                return u;
        s->version++;
        if (u->open > 0)
                u->open--;
        u->requests++;
        u->busy_usec += busy;
        return u;
}

SurfaceUser *surface_request_transfer(Surface *s, const char *from, uint64_t *ticket, SurfaceUser *u) {
        SurfaceUser *before = from ? surface_user_get(s, from) : NULL;
        bool quiesced = false;

        if (before && *ticket == before->incarnation && before->open > 0)
                quiesced = --before->open == 0;
        *ticket = u->incarnation;
        u->open++;
        s->version++;
        return quiesced ? before : NULL;
}
