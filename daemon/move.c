/* SPDX-License-Identifier: MIT */
#include "move.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "journal-ids.h"
#include "log.h"
#include "macro.h"

const char *move_state_to_string(MoveState s) {
        static const char *const table[_MOVE_STATE_MAX] = {
                [MOVE_QUIESCE] = "quiesce",
                [MOVE_SNAPSHOT] = "snapshot",
                [MOVE_INSTALL] = "install",
        };
        return s >= 0 && s < _MOVE_STATE_MAX ? table[s] : NULL;
}

static bool can(unsigned capabilities, ElasticPool__Capability cap) {
        return capabilities & (1U << cap);
}

static void move_free(Move *mv) {
        Moves *m = mv->moves;

        if (mv->prev)
                mv->prev->next = mv->next;
        else
                m->list = mv->next;
        if (mv->next)
                mv->next->prev = mv->prev;
        if (mv->user && mv->user->move == mv)
                mv->user->move = NULL;
        mv->timer = sd_event_source_disable_unref(mv->timer);
        free(mv->why);
        free(mv);
}

/* Ends the move; the user stays on A unless switched. Held requests go wherever the user now is. */
static void finish(Move *mv, bool switched, const char *outcome, usec_t now) {
        Moves *m = mv->moves;
        SurfaceUser *u = mv->user;
        unsigned held = m->hooks.held_requests ? m->hooks.held_requests(u->name, m->hooks.userdata) : 0;
        char span[32];

        log_struct(switched ? LOG_INFO : LOG_WARNING,
                   LOG_FIELDS(.message_id = MESSAGE_ID_MOVE, .event = "move", .worker = (int) mv->from,
                              .user = u->name),
                   "Move %llu of user %s from w%u to w%u %s after %s (%s; %u held requests released)",
                   (unsigned long long) mv->id, u->name, mv->from, mv->to, outcome,
                   format_timespan(span, sizeof span, now - mv->started), mv->why,
                   held);
        u->move = NULL;
        mv->user = NULL;
        move_free(mv);
        /* u itself may be forgotten by what this releases (a request that finds its worker gone): the
         * front end looks the name up once, before it dispatches anything */
        if (m->hooks.release_held)
                m->hooks.release_held(u->name, m->hooks.userdata);
}

static void abort_move(Move *mv, const char *why, usec_t now) {
        char outcome[512];

        /* the reason may quote a worker's error text: truncating it is fine, it is a log line */
        (void) !snprintf(outcome, sizeof outcome, "aborted in %s: %.300s; the user stays on w%u",
                         move_state_to_string(mv->state), why, mv->from);
        finish(mv, false, outcome, now);
}

static int send_frame(Moves *m, unsigned worker, const Frame *f) {
        return m->hooks.send ? m->hooks.send(worker, f, m->hooks.userdata) : -ENOTCONN;
}

static void snapshot(Move *mv, usec_t now) {
        ElasticPool__SnapshotRequest req = ELASTIC_POOL__SNAPSHOT_REQUEST__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        int r;

        mv->state = MOVE_SNAPSHOT;
        req.has_move_id = true;
        req.move_id = mv->id;
        req.user = mv->user->name;
        f.body_case = ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST;
        f.snapshot_request = &req;
        r = send_frame(mv->moves, mv->from, &f);
        if (r < 0)
                abort_move(mv, "cannot reach the source worker's channel", now);
}

static void timed_out(Move *mv, usec_t now) {
        char why[96];

        snprintf(why, sizeof why, "no answer from w%u within the move timeout",
                 mv->state == MOVE_INSTALL ? mv->to : mv->from);
        abort_move(mv, mv->state == MOVE_QUIESCE ? "the user's open requests did not finish in time" : why, now);
}

void moves_expire(Moves *m, usec_t now) {
        for (Move *mv = m->list, *next; mv; mv = next) {
                next = mv->next;
                if (now - mv->started >= m->timeout)
                        timed_out(mv, now);
        }
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Move *mv = userdata;
        usec_t now = usec;

        (void) sd_event_now(sd_event_source_get_event(s), CLOCK_MONOTONIC, &now);
        timed_out(mv, now);
        return 0;
}

int move_start(Moves *m, SurfaceUser *u, unsigned to, const char *why, usec_t now) {
        unsigned caps_a = 0, caps_b = 0;
        bool routable_a, routable_b = false;
        Move *mv;
        int r;

        if (u->move)
                return -EBUSY;
        if (!m->hooks.worker || !m->hooks.worker(u->worker, &routable_a, &caps_a, m->hooks.userdata) ||
            !m->hooks.worker(to, &routable_b, &caps_b, m->hooks.userdata) || !routable_b)
                return -ENOENT;
        if (!can(caps_a, ELASTIC_POOL__CAPABILITY__CAPABILITY_SNAPSHOT_USERS) ||
            !can(caps_b, ELASTIC_POOL__CAPABILITY__CAPABILITY_INSTALL_USERS))
                return -EOPNOTSUPP;
        mv = calloc(1, sizeof *mv);
        if (!mv)
                return -ENOMEM;
        *mv = (Move) {
                .moves = m,
                .id = ++m->next_id,
                .user = u,
                .from = u->worker,
                .to = to,
                .state = MOVE_QUIESCE,
                .started = now,
                .why = strdup(why),
                .next = m->list,
        };
        if (m->list)
                m->list->prev = mv;
        m->list = mv;
        u->move = mv;
        if (m->event) {
                r = sd_event_add_time(m->event, &mv->timer, CLOCK_MONOTONIC, now + m->timeout, USEC_PER_MSEC,
                                      on_timeout, mv);
                if (r < 0) {
                        move_free(mv);
                        return r;
                }
        }
        log_struct(LOG_INFO, LOG_FIELDS(.message_id = MESSAGE_ID_MOVE, .event = "move", .worker = (int) mv->from,
                                        .user = u->name),
                   "Moving user %s from w%u to w%u (move %llu: %s)", u->name, mv->from, mv->to,
                   (unsigned long long) mv->id, why);
        if (u->open == 0)
                snapshot(mv, now);
        return 0;
}

void move_user_quiesced(Moves *m, SurfaceUser *u, usec_t now) {
        if (u->move && u->move->state == MOVE_QUIESCE)
                snapshot(u->move, now);
}

static Move *find(Moves *m, uint64_t id) {
        for (Move *mv = m->list; mv; mv = mv->next)
                if (mv->id == id)
                        return mv;
        return NULL;
}

static void on_package(Moves *m, unsigned worker, const ElasticPool__Package *p, usec_t now) {
        ElasticPool__Install install = ELASTIC_POOL__INSTALL__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        Move *mv = p->has_move_id ? find(m, p->move_id) : NULL;
        char why[256];

        if (!mv || mv->state != MOVE_SNAPSHOT || worker != mv->from) {
                log_debug("Ignoring a stray package from w%u (move %llu)", worker,
                          (unsigned long long) (p->has_move_id ? p->move_id : 0));
                return;
        }
        if (p->error || !p->has_blob) {
                snprintf(why, sizeof why, "w%u could not snapshot the user: %s", worker, strna(p->error));
                abort_move(mv, why, now);
                return;
        }
        mv->state = MOVE_INSTALL;
        install.has_move_id = true;
        install.move_id = mv->id;
        install.user = mv->user->name;
        install.has_blob = true;
        install.blob = p->blob;
        f.body_case = ELASTIC_POOL__FRAME__BODY_INSTALL;
        f.install = &install;
        if (send_frame(m, mv->to, &f) < 0)
                abort_move(mv, "cannot reach the target worker's channel", now);
}

static void on_install_result(Moves *m, unsigned worker, const ElasticPool__InstallResult *res, usec_t now) {
        ElasticPool__Drop drop = ELASTIC_POOL__DROP__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        Move *mv = res->has_move_id ? find(m, res->move_id) : NULL;
        SurfaceUser *u;
        char why[256];
        unsigned from;
        uint64_t id;
        int r;

        if (!mv || mv->state != MOVE_INSTALL || worker != mv->to)
                return;
        if (!res->has_ok || !res->ok) {
                snprintf(why, sizeof why, "w%u refused the install: %s", worker, strna(res->error));
                abort_move(mv, why, now);
                return;
        }
        u = mv->user;
        from = mv->from;
        id = mv->id;
        r = surface_user_place(m->surface, u->name, mv->to, now, NULL);
        if (r < 0) {
                abort_move(mv, "out of memory", now);
                return;
        }
        /* A keeps no copy: the user lives on B from now on. Before finish(): the held requests it
         * releases may find B unroutable and forget u, so u is not to be touched after it. */
        drop.has_move_id = true;
        drop.move_id = id;
        drop.user = u->name;
        f.body_case = ELASTIC_POOL__FRAME__BODY_DROP;
        f.drop = &drop;
        (void) send_frame(m, from, &f);
        finish(mv, true, "done", now);
}

void move_on_frame(Moves *m, unsigned worker, const Frame *f, usec_t now) {
        if (f->body_case == ELASTIC_POOL__FRAME__BODY_PACKAGE)
                on_package(m, worker, f->package, now);
        else if (f->body_case == ELASTIC_POOL__FRAME__BODY_INSTALL_RESULT)
                on_install_result(m, worker, f->install_result, now);
}

void move_worker_gone(Moves *m, unsigned worker, usec_t now) {
        for (Move *mv = m->list, *next; mv; mv = next) {
                next = mv->next;
                if (mv->to == worker)
                        abort_move(mv, "the target worker is gone", now);
                else if (mv->from == worker)
                        abort_move(mv, "the source worker is gone (the user's state with it)", now);
        }
}

void move_cancel(Moves *m, SurfaceUser *u, const char *why, usec_t now) {
        if (u->move)
                abort_move(u->move, why, now);
}

void moves_init(Moves *m, sd_event *event, Surface *surface, usec_t timeout, const MoveHooks *hooks) {
        *m = (Moves) { .event = event, .surface = surface, .timeout = timeout };
        if (hooks)
                m->hooks = *hooks;
}

void moves_done(Moves *m) {
        while (m->list) {
                Move *mv = m->list;
                if (mv->user)
                        mv->user->move = NULL;
                mv->user = NULL;
                move_free(mv);
        }
}
