/* SPDX-License-Identifier: MIT */
#include "move.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "journal-ids.h"
#include "list.h"
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

        LIST_REMOVE(m->list, mv, prev, next);
        if (mv->user && mv->user->move == mv)
                mv->user->move = NULL;
        mv->timer = sd_event_source_disable_unref(mv->timer);
        free(mv->why);
        free(mv);
}

/* The move's journal line: user, from, to, package bytes, the pause from flag to release, outcome. */
static void journal_end(const Move *mv, const MoveEnd *e, unsigned held) {
        _cleanup_free_ char *extra = NULL;
        char span[32];

        if (asprintf(&extra,
                     "EP_MOVE_ID=%llu\nEP_MOVE_FROM=w%u\nEP_MOVE_TO=w%u\nEP_MOVE_BYTES=%llu\n"
                     "EP_MOVE_PAUSE_USEC=%llu\nEP_MOVE_OUTCOME=%s",
                     (unsigned long long) e->id, e->from, e->to, (unsigned long long) e->bytes,
                     (unsigned long long) e->pause,
                     e->switched ? (e->repointed ? "re-pointed" : "done") : "aborted") < 0)
                extra = NULL;
        log_struct(
                e->switched ? LOG_INFO : LOG_WARNING,
                LOG_FIELDS(.message_id = MESSAGE_ID_MOVE, .event = "move", .worker = (int) e->from,
                           .user = e->user, .extra = extra),
                "Move %llu of user %s from w%u to w%u %s after %s (%s; %llu package bytes; %u held requests "
                "released)",
                (unsigned long long) e->id, e->user, e->from, e->to, e->outcome,
                format_timespan(span, sizeof span, e->pause), mv->why, (unsigned long long) e->bytes, held);
}

static void remember_end(Moves *m, const MoveEnd *e, usec_t now) {
        MoveRecord *r = &m->recent[m->recent_head];

        *r = (MoveRecord) {
                .id = e->id,
                .from = e->from,
                .to = e->to,
                .switched = e->switched,
                .repointed = e->repointed,
                .bytes = e->bytes,
                .pause = e->pause,
                .ended = now,
        };
        snprintf(r->user, sizeof r->user, "%s", e->user);
        snprintf(r->outcome, sizeof r->outcome, "%s", e->outcome);
        m->recent_head = (m->recent_head + 1) % MOVES_RECENT;
        if (m->n_recent < MOVES_RECENT)
                m->n_recent++;
        if (!e->switched)
                m->aborted++;
        else if (e->repointed)
                m->repointed++;
        else
                m->done++;
}

const MoveRecord *moves_recent(const Moves *m, unsigned age) {
        if (age >= m->n_recent)
                return NULL;
        return &m->recent[(m->recent_head + MOVES_RECENT - 1 - age) % MOVES_RECENT];
}

/* Ends the move; the user stays on A unless switched. Held requests go wherever the user now is. */
static void finish(Move *mv, bool switched, bool target_failed, const char *outcome, usec_t now) {
        Moves *m = mv->moves;
        SurfaceUser *u = mv->user;
        unsigned held = m->hooks.held_requests ? m->hooks.held_requests(u->name, m->hooks.userdata) : 0;
        const MoveEnd e = {
                .id = mv->id,
                .user = u->name,
                .from = mv->from,
                .to = mv->to,
                .switched = switched,
                .repointed = switched && mv->repoint,
                .target_failed = target_failed,
                .bytes = mv->bytes,
                .pause = now - mv->started,
                .outcome = outcome,
        };

        journal_end(mv, &e, held);
        remember_end(m, &e, now);
        m->surface->version++; /* the user's "moving" ends */
        u->move = NULL;
        mv->user = NULL;
        move_free(mv);
        if (m->hooks.ended)
                m->hooks.ended(&e, m->hooks.userdata);
        /* u itself may be forgotten by what this releases (a request that finds its worker gone): the
         * front end looks the name up once, before it dispatches anything */
        if (m->hooks.release_held)
                m->hooks.release_held(u->name, m->hooks.userdata);
}

static int send_frame(Moves *m, unsigned worker, const Frame *f) {
        return m->hooks.send ? m->hooks.send(worker, f, m->hooks.userdata) : -ENOTCONN;
}

void moves_send_drop(Moves *m, unsigned worker, const char *user) {
        ElasticPool__Drop drop = ELASTIC_POOL__DROP__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;

        drop.user = (char *) user;
        f.body_case = ELASTIC_POOL__FRAME__BODY_DROP;
        f.drop = &drop;
        (void) send_frame(m, worker, &f);
}

static void abort_move(Move *mv, bool target_failed, const char *why, usec_t now) {
        char outcome[512];

        /* B may still install what it got after we gave up: it must not keep a second copy */
        if (mv->state == MOVE_INSTALL)
                moves_send_drop(mv->moves, mv->to, mv->user->name);
        /* the reason may quote a worker's error text: truncating it is fine, it is a log line */
        (void) !snprintf(outcome, sizeof outcome, "aborted in %s: %.300s; the user stays on w%u",
                         move_state_to_string(mv->state), why, mv->from);
        finish(mv, false, target_failed, outcome, now);
}

/* Switches the user to B: from now on its requests go there. */
static int switch_user(Move *mv, usec_t now) {
        return surface_user_place(mv->moves->surface, mv->user->name, mv->to, now, NULL);
}

/* Quiesced, a re-point is done: there is no state to carry. */
static void repoint(Move *mv, usec_t now) {
        mv->repoint = true;
        if (switch_user(mv, now) < 0) {
                abort_move(mv, false, "out of memory", now);
                return;
        }
        finish(mv, true, false, "re-pointed", now);
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
                abort_move(mv, false, "cannot reach the source worker's channel", now);
}

static void install(Move *mv, const ProtobufCBinaryData *blob, usec_t now);

static void quiesced(Move *mv, usec_t now) {
        if (mv->fresh)
                install(mv, NULL, now); /* B starts it over: there is no package it could read */
        else if (mv->repoint)
                repoint(mv, now);
        else
                snapshot(mv, now);
}

static void timed_out(Move *mv, usec_t now) {
        char why[96];

        snprintf(why, sizeof why, "no answer from w%u within the move timeout",
                 mv->state == MOVE_INSTALL ? mv->to : mv->from);
        abort_move(mv, mv->state == MOVE_INSTALL,
                   mv->state == MOVE_QUIESCE ? "the user's open requests did not finish in time" : why, now);
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

/* Live when A can snapshot and B install, in one package format; a re-point (when allowed) when A keeps
 * no state to carry, or B could not read A's package (a deploy changed the format): the user starts over
 * on B rather than get state B misreads. */
static int move_kind(Moves *m, const SurfaceUser *u, unsigned to, bool repoint_ok, bool *ret_repoint,
                     bool *ret_fresh) {
        MoveWorker a = {}, b = {};

        if (u->move)
                return -EBUSY;
        if (to == u->worker || !m->hooks.worker || !m->hooks.worker(u->worker, &a, m->hooks.userdata) ||
            !m->hooks.worker(to, &b, m->hooks.userdata) || !b.routable)
                return -ENOENT;
        *ret_repoint = !can(a.capabilities, ELASTIC_POOL__CAPABILITY__CAPABILITY_SNAPSHOT_USERS) ||
                       !streq_ptr(a.package_format, b.package_format);
        /* across formats B is told the user arrives without state, when it can be told anything */
        *ret_fresh = *ret_repoint && can(a.capabilities, ELASTIC_POOL__CAPABILITY__CAPABILITY_SNAPSHOT_USERS) &&
                     can(b.capabilities, ELASTIC_POOL__CAPABILITY__CAPABILITY_INSTALL_USERS);
        if (*ret_repoint)
                return repoint_ok ? 0 : -EOPNOTSUPP;
        return can(b.capabilities, ELASTIC_POOL__CAPABILITY__CAPABILITY_INSTALL_USERS) ? 0 : -EOPNOTSUPP;
}

static int start(Moves *m, SurfaceUser *u, unsigned to, const char *why, bool repoint_ok, usec_t now) {
        bool repoint = false, fresh = false;
        Move *mv;
        int r;

        r = move_kind(m, u, to, repoint_ok, &repoint, &fresh);
        if (r < 0)
                return r;
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
                .repoint = repoint,
                .fresh = fresh,
                .started = now,
                .why = strdup(why),
        };
        LIST_PREPEND(m->list, mv, prev, next);
        u->move = mv;
        m->surface->version++;
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
                   "%s user %s from w%u to w%u (move %llu: %s)", repoint ? "Re-pointing" : "Moving", u->name,
                   mv->from, mv->to, (unsigned long long) mv->id, why);
        if (m->hooks.started)
                m->hooks.started(u->name, m->hooks.userdata);
        if (u->open == 0 && u->move == mv)
                quiesced(mv, now);
        return 0;
}

int move_start(Moves *m, SurfaceUser *u, unsigned to, const char *why, usec_t now) {
        return start(m, u, to, why, false, now);
}

int move_start_or_repoint(Moves *m, SurfaceUser *u, unsigned to, const char *why, usec_t now) {
        return start(m, u, to, why, true, now);
}

void move_user_quiesced(Moves *m, SurfaceUser *u, usec_t now) {
        if (u->move && u->move->state == MOVE_QUIESCE)
                quiesced(u->move, now);
}

static Move *find(Moves *m, uint64_t id) {
        for (Move *mv = m->list; mv; mv = mv->next)
                if (mv->id == id)
                        return mv;
        return NULL;
}

/* Sends the package (NULL: none, the user starts fresh on B) to B and waits for its InstallResult. */
static void install(Move *mv, const ProtobufCBinaryData *blob, usec_t now) {
        ElasticPool__Install req = ELASTIC_POOL__INSTALL__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        int r;

        mv->state = MOVE_INSTALL;
        mv->bytes = blob ? blob->len : 0;
        req.has_move_id = true;
        req.move_id = mv->id;
        req.user = mv->user->name;
        req.has_blob = blob != NULL;
        if (blob)
                req.blob = *blob;
        f.body_case = ELASTIC_POOL__FRAME__BODY_INSTALL;
        f.install = &req;
        r = send_frame(mv->moves, mv->to, &f);
        /* a channel backed up (channel.c queues at most 64 MiB) is a slow target, not a broken one */
        if (r == -ENOBUFS)
                abort_move(mv, false, "the target worker's channel is backed up (too much queued for it)",
                           now);
        else if (r < 0)
                abort_move(mv, true, "cannot reach the target worker's channel", now);
}

static void on_package(Moves *m, unsigned worker, const ElasticPool__Package *p, usec_t now) {
        Move *mv = p->has_move_id ? find(m, p->move_id) : NULL;
        char why[256];

        if (!mv || mv->state != MOVE_SNAPSHOT || worker != mv->from) {
                log_debug("Ignoring a stray package from w%u (move %llu)", worker,
                          (unsigned long long) (p->has_move_id ? p->move_id : 0));
                return;
        }
        /* A user placed again after its worker died, who never came back, is in our table on A but not
         * in A's: there is nothing to carry, and refusing would keep it on A, and A from draining, for ever */
        if (p->has_unknown_user && p->unknown_user) {
                log_struct(LOG_INFO,
                           LOG_FIELDS(.message_id = MESSAGE_ID_MOVE, .event = "move", .worker = (int) worker,
                                      .user = mv->user->name),
                           "w%u holds no state for user %s (lost with an earlier worker, or never made): "
                           "re-pointing it to w%u (move %llu)",
                           worker, mv->user->name, mv->to, (unsigned long long) mv->id);
                repoint(mv, now);
                return;
        }
        if (p->error || !p->has_blob) {
                snprintf(why, sizeof why, "w%u could not snapshot the user: %s", worker, strna(p->error));
                abort_move(mv, false, why, now);
                return;
        }
        install(mv, &p->blob, now);
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
                abort_move(mv, true, why, now);
                return;
        }
        u = mv->user;
        from = mv->from;
        id = mv->id;
        r = switch_user(mv, now);
        if (r < 0) {
                abort_move(mv, false, "out of memory", now);
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
        finish(mv, true, false, mv->fresh ? "re-pointed" : "done", now);
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
                        abort_move(mv, true, "the target worker is gone", now);
                else if (mv->from == worker)
                        abort_move(mv, false, "the source worker is gone (the user's state with it)", now);
        }
}

void move_cancel(Moves *m, SurfaceUser *u, const char *why, usec_t now) {
        if (u->move)
                abort_move(u->move, false, why, now);
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
