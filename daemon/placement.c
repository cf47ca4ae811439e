/* SPDX-License-Identifier: MIT */
#include "placement.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "journal-ids.h"
#include "log.h"
#include "macro.h"
#include "policy.h"

static Worker *routable_worker(Placement *pl, unsigned id) {
        Worker *w = id > 0 ? pool_get_worker(pl->pool, id) : NULL;

        return w && worker_is_routable(w) ? w : NULL;
}

static ssize_t policy_index(const PolicyInput *in, unsigned worker) {
        for (size_t i = 0; i < in->n_workers; i++)
                if (in->workers[i].id == worker)
                        return (ssize_t) i;
        return -1;
}

/* Where a user who logs in on `current` (or, placed again, on the reception) goes: reception-first. */
static unsigned place(Placement *pl, unsigned current, bool *ret_over) {
        PolicyInput in;
        ssize_t i;
        int r;

        capacity_policy_input(pl->capacity, &in);
        i = policy_index(&in, current);
        if (i < 0 && pl->pool->reception)
                i = policy_index(&in, pl->pool->reception->id);
        if (i < 0)
                return 0;
        r = policy_place(&in, &pl->capacity->policy, (size_t) i, ret_over);
        if (r < 0)
                return 0;
        return in.workers[r].id;
}

/* A user with a valid cookie whose worker is gone (or who predates this commander): placed again;
 * whatever state it had on a dead worker is gone. */
static SurfaceUser *place_again(Placement *pl, const char *name, const char *why) {
        SurfaceUser *u = NULL;
        bool over = false;
        unsigned to;

        to = place(pl, 0, &over);
        if (to == 0 || surface_user_place(pl->surface, name, to, now_usec(CLOCK_MONOTONIC), &u) < 0)
                return NULL;
        log_struct(LOG_NOTICE, LOG_FIELDS(.message_id = MESSAGE_ID_PLACE, .event = "place", .worker = (int) to,
                                          .user = name),
                   "User %s re-placed on w%u: %s (its state there is lost)%s", name, to, why,
                   over ? "; every worker is over the admission threshold" : "");
        return u;
}

static unsigned route_guest(void *userdata) {
        Placement *pl = userdata;
        Worker *w = pl->pool->reception;

        return w && worker_is_routable(w) ? w->id : 0;
}

static void route_user(void *userdata, const char *user, const char *unknown_why, Route *ret) {
        Placement *pl = userdata;
        SurfaceUser *u = surface_user_get(pl->surface, user);
        Worker *w;

        *ret = (Route) {};
        if (!u)
                u = place_again(pl, user, unknown_why);
        if (!u) {
                ret->worker = route_guest(pl); /* nowhere to place it: what a guest would get */
                return;
        }
        if (u->move) {
                ret->held = true;
                return;
        }
        w = routable_worker(pl, u->worker); /* one lookup on the path every sticky request takes */
        if (!w) {
                surface_user_forget(pl->surface, u);
                u = place_again(pl, user, "its worker is not routable any more");
                w = u ? routable_worker(pl, u->worker) : NULL;
        }
        ret->worker = w ? w->id : u ? 0 : route_guest(pl);
}

static uint64_t request_started(void *userdata, const char *user, usec_t now) {
        Placement *pl = userdata;

        return surface_request_started(pl->surface, user, now);
}

static void request_ended(void *userdata, const char *user, uint64_t ticket, usec_t busy) {
        Placement *pl = userdata;
        SurfaceUser *u = surface_request_ended(pl->surface, user, ticket, busy);

        if (u && u->open == 0)
                move_user_quiesced(pl->moves, u, now_usec(CLOCK_MONOTONIC));
}

static void worker_idle(void *userdata, unsigned worker) {
        Placement *pl = userdata;
        Worker *w = pool_get_worker(pl->pool, worker);

        if (w)
                pool_worker_drained(pl->pool, w);
}

/* Placement passes a login on the reception to the admitted worker by a live move. */
static void pass_on(Placement *pl, SurfaceUser *u, unsigned from, unsigned to, usec_t now) {
        int r;

        r = move_start(pl->moves, u, to, "the reception is over its keep threshold", now);
        if (r == -EOPNOTSUPP)
                log_notice("User %s stays on w%u: w%u cannot snapshot users or w%u cannot install them", u->name,
                           from, from, to);
        else if (r < 0)
                log_warning_errno(r, "Cannot move user %s to w%u, it stays on w%u: %m", u->name, to, from);
}

static int login(void *userdata, const char *name, unsigned worker, const char *prev_user, uint64_t *ticket) {
        Placement *pl = userdata;
        SurfaceUser *u = surface_user_get(pl->surface, name), *before;
        usec_t now = now_usec(CLOCK_MONOTONIC);
        bool over = false, counted = false;
        unsigned to;
        Worker *w;
        int r;

        if (u && u->worker == worker)
                return 0;
        if (u)
                /* logged in again elsewhere: the new session is where the worker says */
                move_cancel(pl->moves, u, "the user logged in again", now);
        r = surface_user_place(pl->surface, name, worker, now, &u);
        if (r < 0)
                return r;
        /* Its login request is open on worker: from now on it counts as the new user's, so a move waits
         * for it to finish. A request that came in as someone else (another cookie) stops counting as
         * theirs, or they would never quiesce. */
        if (!prev_user || !streq(prev_user, name)) {
                before = surface_request_transfer(pl->surface, prev_user, ticket, u);
                if (before)
                        move_user_quiesced(pl->moves, before, now);
                counted = true;
        }

        to = place(pl, worker, &over);
        w = pool_get_worker(pl->pool, worker);
        log_struct(LOG_INFO, LOG_FIELDS(.message_id = MESSAGE_ID_PLACE, .event = "place", .worker = (int) worker,
                                        .user = name, .has_occupancy = w != NULL,
                                        .occupancy = w ? w->reading.occupancy.value : 0),
                   "User %s logged in on w%u%s%s", name, worker,
                   to != 0 && to != worker ? "; placement passes it to " : " and stays there",
                   to != 0 && to != worker ? WORKER_NAME(pool_get_worker(pl->pool, to)) : "");
        if (over)
                log_warning("Every worker is over admission_threshold=%.2f: user %s goes to the last one until "
                            "scale-up adds room", pl->capacity->policy.admission_threshold, name);
        if (to != 0 && to != worker)
                pass_on(pl, u, worker, to, now);
        return counted;
}

static void logout(void *userdata, const char *name) {
        Placement *pl = userdata;
        SurfaceUser *u = surface_user_get(pl->surface, name);
        unsigned worker;

        if (!u)
                return;
        worker = u->worker;
        move_cancel(pl->moves, u, "the user logged out", now_usec(CLOCK_MONOTONIC));
        /* the held requests that released may have found its worker unroutable and forgotten u */
        u = surface_user_get(pl->surface, name);
        if (!u)
                return;
        log_struct(LOG_INFO, LOG_FIELDS(.message_id = MESSAGE_ID_PLACE, .event = "logout", .worker = (int) worker,
                                        .user = u->name),
                   "User %s logged out of w%u after %llu requests", u->name, worker, (unsigned long long) u->requests);
        surface_user_forget(pl->surface, u);
}

unsigned placement_expire_users(Placement *pl, usec_t expiry, usec_t now) {
        SurfaceUser *u;
        unsigned n = 0;
        char span[32];

        for (size_t i = 0; (u = surface_next_user(pl->surface, &i));) {
                if (u->open > 0 || u->move || now < u->last_seen || now - u->last_seen < expiry)
                        continue;
                log_struct(LOG_INFO, LOG_FIELDS(.message_id = MESSAGE_ID_PLACE, .event = "expire",
                                                .worker = (int) u->worker, .user = u->name),
                           "User %s expired on w%u: no request for %s (user_expiry)", u->name, u->worker,
                           format_timespan(span, sizeof span, now - u->last_seen));
                moves_send_drop(pl->moves, u->worker, u->name);
                surface_user_forget(pl->surface, u);
                n++;
        }
        return n;
}

const CommanderOps placement_ops = {
        .route_guest = route_guest,
        .route_user = route_user,
        .request_started = request_started,
        .request_ended = request_ended,
        .worker_idle = worker_idle,
        .login = login,
        .logout = logout,
};

unsigned placement_users_announced(Placement *pl, unsigned worker, char *const *users, size_t n) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        unsigned placed = 0, elsewhere = 0;
        SurfaceUser *u;

        for (size_t i = 0; i < n; i++) {
                if (!users[i] || !users[i][0])
                        continue;
                u = surface_user_get(pl->surface, users[i]);
                if (u && u->worker != worker) {
                        if (elsewhere++ == 0)
                                log_struct(LOG_WARNING, LOG_FIELDS(.event = "place", .worker = (int) worker,
                                                                   .user = users[i]),
                                           "w%u announced user %s, which lives on w%u: it stays there", worker,
                                           users[i], u->worker);
                        continue;
                }
                if (u || surface_user_place(pl->surface, users[i], worker, now, &u) < 0)
                        continue;
                placed++;
        }
        if (placed > 0 || elsewhere > 0)
                log_struct(LOG_INFO, LOG_FIELDS(.message_id = MESSAGE_ID_PLACE, .event = "place",
                                                .worker = (int) worker),
                           "w%u announced %zu users it holds: %u placed there again, %u already known there, "
                           "%u living elsewhere", worker, n, placed, (unsigned) (n - placed - elsewhere), elsewhere);
        return placed;
}
