/* SPDX-License-Identifier: MIT */
/* The live move's state machine (daemon/move.c) on a real surface, with fake workers behind MoveHooks:
 * their capabilities, a channel that records the frames sent on it (or refuses them), and a front end
 * that holds requests and records when they are released and where their user lives then. The clock
 * is a variable the tests advance; nothing runs a loop and nothing is wrapped at link time.
 *
 * flag → quiesce → snapshot → install → switch (Drop to the source, held requests released to the
 * target); the refusals before anything starts; aborts on timeout in each state, on the target's or the
 * source's death, on a refused snapshot or install, on a channel that cannot be reached, and on cancel —
 * each leaving the user where it was and releasing its held requests exactly once; stray answers
 * ignored. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "log.h"
#include "macro.h"
#include "move.h"
#include "move-frames.h"

#define T0 (1000 * USEC_PER_SEC)
#define TIMEOUT (5 * USEC_PER_SEC)
#define SNAPSHOT (1U << ELASTIC_POOL__CAPABILITY__CAPABILITY_SNAPSHOT_USERS)
#define INSTALL (1U << ELASTIC_POOL__CAPABILITY__CAPABILITY_INSTALL_USERS)
#define WORKERS_MAX 8
#define SENT_MAX 16

typedef struct FakeWorker {
        bool exists, routable, channel_open;
        unsigned capabilities;
        bool backed_up; /* its channel queues too much: sends fail with -ENOBUFS */
        const char *format; /* its package format */
} FakeWorker;

typedef struct Sent {
        unsigned worker;
        ElasticPool__Frame__BodyCase body;
        uint64_t move_id;
        char user[32];
        char blob[32]; /* of an Install */
} Sent;

/* The front end's side: requests held per user (one user is enough here), and each release. */
typedef struct Release {
        char user[32];
        unsigned lives_on; /* where the surface has the user when its held requests are released */
        unsigned held;
} Release;

static Surface surface;
static Moves moves;
static FakeWorker workers[WORKERS_MAX];
static Sent sent[SENT_MAX];
static unsigned n_sent;
static Release releases[4];
static unsigned n_releases, held;
static usec_t now;
/* The last MoveEnd the hook saw (its user copied), and how many. */
static MoveEnd ended;
static char ended_user[32];
static unsigned n_ended;

static bool fake_worker(unsigned id, MoveWorker *ret, void *userdata) {
        if (id >= WORKERS_MAX || !workers[id].exists)
                return false;
        *ret = (MoveWorker) {
                .routable = workers[id].routable,
                .capabilities = workers[id].capabilities,
                .package_format = workers[id].format,
        };
        return true;
}

static void copy_str(char *dst, size_t size, const char *s) {
        snprintf(dst, size, "%s", s ? s : "");
}

static int fake_send(unsigned id, const Frame *f, void *userdata) {
        Sent *s;

        if (id >= WORKERS_MAX || !workers[id].exists || !workers[id].channel_open)
                return -ENOTCONN;
        if (workers[id].backed_up)
                return -ENOBUFS;
        assert_true(n_sent < SENT_MAX);
        s = &sent[n_sent++];
        *s = (Sent) { .worker = id, .body = f->body_case };
        switch (f->body_case) {
        case ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST:
                s->move_id = f->snapshot_request->move_id;
                copy_str(s->user, sizeof s->user, f->snapshot_request->user);
                break;
        case ELASTIC_POOL__FRAME__BODY_INSTALL:
                s->move_id = f->install->move_id;
                copy_str(s->user, sizeof s->user, f->install->user);
                snprintf(s->blob, sizeof s->blob, "%.*s", (int) f->install->blob.len, f->install->blob.data);
                break;
        case ELASTIC_POOL__FRAME__BODY_DROP:
                s->move_id = f->drop->move_id;
                copy_str(s->user, sizeof s->user, f->drop->user);
                break;
        default:
                fail_msg("a move sent a %s frame", frame_body_name(f));
        }
        return 0;
}

static unsigned fake_held_requests(const char *user, void *userdata) {
        return held;
}

static void fake_release_held(const char *user, void *userdata) {
        SurfaceUser *u = surface_user_get(&surface, user);

        assert_true(n_releases < ELEMENTSOF(releases));
        /* by now the move has let go of the user: a released request must not be held again */
        assert_true(!u || !u->move);
        releases[n_releases++] = (Release) { .lives_on = u ? u->worker : 0, .held = held };
        copy_str(releases[n_releases - 1].user, sizeof releases[0].user, user);
        held = 0;
}

static void fake_ended(const MoveEnd *e, void *userdata) {
        SurfaceUser *u = surface_user_get(&surface, e->user);

        /* told before the held requests are released, with the user already let go of */
        assert_true(!u || !u->move);
        ended = *e;
        copy_str(ended_user, sizeof ended_user, e->user);
        ended.user = ended_user;
        ended.outcome = NULL;
        n_ended++;
}

static const MoveHooks hooks = {
        .worker = fake_worker,
        .send = fake_send,
        .held_requests = fake_held_requests,
        .release_held = fake_release_held,
        .ended = fake_ended,
};

static int setup(void **state) {
        now = T0;
        memset(workers, 0, sizeof workers);
        n_sent = n_releases = held = n_ended = 0;
        ended = (MoveEnd) {};
        /* w1 can give users away, w2 and w3 can take them */
        workers[1] = (FakeWorker) { true, true, true, SNAPSHOT | INSTALL };
        workers[2] = (FakeWorker) { true, true, true, SNAPSHOT | INSTALL };
        workers[3] = (FakeWorker) { true, true, true, INSTALL };
        surface_init(&surface);
        moves_init(&moves, NULL, &surface, TIMEOUT, &hooks);
        log_set_max_level(LOG_ERR);
        return 0;
}

static int teardown(void **state) {
        moves_done(&moves);
        surface_done(&surface);
        return 0;
}

static SurfaceUser *user_on(const char *name, unsigned worker) {
        SurfaceUser *u;

        assert_int_equal(surface_user_place(&surface, name, worker, now, &u), 0);
        return u;
}

static void package(unsigned from, uint64_t move_id, const char *blob, const char *error) {
        ElasticPool__Package p;
        Frame f;

        move_frame_package(&f, &p, move_id, blob, error);
        move_on_frame(&moves, from, &f, now);
}

static void install_result(unsigned to, uint64_t move_id, bool ok, const char *error) {
        ElasticPool__InstallResult r;
        Frame f;

        move_frame_install_result(&f, &r, move_id, ok, error);
        move_on_frame(&moves, to, &f, now);
}

static void assert_sent(unsigned i, unsigned worker, ElasticPool__Frame__BodyCase body, uint64_t move_id,
                        const char *user) {
        assert_true(i < n_sent);
        assert_int_equal(sent[i].worker, worker);
        assert_int_equal(sent[i].body, body);
        assert_true(sent[i].move_id == move_id);
        assert_string_equal(sent[i].user, user);
}

/* The move ended without switching: the user stays on `on`, unflagged, and its held requests were
 * released once, there. `on` was never told to drop it (a target that got an Install may be: it must
 * not keep a copy it might install late). */
static void assert_aborted(SurfaceUser *u, unsigned on, unsigned held_before) {
        assert_null(u->move);
        assert_null(moves.list);
        assert_int_equal(u->worker, on);
        assert_int_equal(n_releases, 1);
        assert_string_equal(releases[0].user, u->name);
        assert_int_equal(releases[0].lives_on, on);
        assert_int_equal(releases[0].held, held_before);
        for (unsigned i = 0; i < n_sent; i++)
                assert_false(sent[i].body == ELASTIC_POOL__FRAME__BODY_DROP && sent[i].worker == on);
        assert_int_equal(n_ended, 1);
        assert_false(ended.switched);
        assert_string_equal(ended.user, u->name);
        assert_int_equal(ended.from, on);
}

/* A Drop went to worker for user (a target that may still install a package it got). */
static bool drop_sent(unsigned worker, const char *user) {
        for (unsigned i = 0; i < n_sent; i++)
                if (sent[i].body == ELASTIC_POOL__FRAME__BODY_DROP && sent[i].worker == worker &&
                    streq(sent[i].user, user))
                        return true;
        return false;
}

static void test_move_state_to_string(void **state) {
        assert_string_equal(move_state_to_string(MOVE_QUIESCE), "quiesce");
        assert_string_equal(move_state_to_string(MOVE_SNAPSHOT), "snapshot");
        assert_string_equal(move_state_to_string(MOVE_INSTALL), "install");
        assert_null(move_state_to_string(_MOVE_STATE_MAX));
        assert_null(move_state_to_string(_MOVE_STATE_INVALID));
}

/* flag → quiesce → snapshot → install → switch. */
static void test_move_flag_quiesce_snapshot_install_switch(void **state) {
        SurfaceUser *u = user_on("alice", 1);
        uint64_t ticket = surface_request_started(&surface, "alice", 0), id;

        /* flag: from now on its requests are held; an open request must end first (quiesce) */
        assert_int_equal(move_start(&moves, u, 2, "test", now), 0);
        assert_non_null(u->move);
        id = u->move->id;
        assert_int_equal(u->move->state, MOVE_QUIESCE);
        assert_int_equal(n_sent, 0);
        held = 2; /* two requests came and wait */

        /* quiesce: the open request ends */
        now += USEC_PER_SEC;
        assert_ptr_equal(surface_request_ended(&surface, "alice", ticket, 5), u);
        assert_int_equal(u->open, 0);
        move_user_quiesced(&moves, u, now);
        assert_int_equal(u->move->state, MOVE_SNAPSHOT);
        assert_int_equal(n_sent, 1);
        assert_sent(0, 1, ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST, id, "alice");

        /* snapshot: A hands over the package, which goes to B as it is */
        package(1, id, "state-of-alice", NULL);
        assert_int_equal(u->move->state, MOVE_INSTALL);
        assert_int_equal(n_sent, 2);
        assert_sent(1, 2, ELASTIC_POOL__FRAME__BODY_INSTALL, id, "alice");
        assert_string_equal(sent[1].blob, "state-of-alice");
        assert_int_equal(u->worker, 1); /* still A's until B said ok */
        assert_int_equal(n_releases, 0);

        /* install ok: switch U → B, A drops its copy, the held requests go to B */
        install_result(2, id, true, NULL);
        assert_null(u->move);
        assert_null(moves.list);
        assert_int_equal(u->worker, 2);
        assert_int_equal(surface_worker_users(&surface, 1), 0);
        assert_int_equal(surface_worker_users(&surface, 2), 1);
        assert_int_equal(n_sent, 3);
        assert_sent(2, 1, ELASTIC_POOL__FRAME__BODY_DROP, id, "alice");
        assert_int_equal(n_releases, 1);
        assert_int_equal(releases[0].lives_on, 2);
        assert_int_equal(releases[0].held, 2);
        /* the journal's figures: the package's size, the pause from the flag (T0) to the release */
        assert_int_equal(n_ended, 1);
        assert_true(ended.switched && !ended.repointed && !ended.target_failed);
        assert_int_equal(ended.bytes, strlen("state-of-alice"));
        assert_int_equal(ended.pause, USEC_PER_SEC);
        assert_int_equal(ended.to, 2);
}

/* A user with nothing open is quiesced already: the snapshot is asked for at once. */
static void test_move_quiet_user_snapshots_at_once(void **state) {
        SurfaceUser *u = user_on("bob", 1);

        assert_int_equal(move_start(&moves, u, 3, "test", now), 0);
        assert_int_equal(u->move->state, MOVE_SNAPSHOT);
        assert_sent(0, 1, ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST, u->move->id, "bob");
        /* quiesced again (another request ended): nothing more is asked */
        move_user_quiesced(&moves, u, now);
        assert_int_equal(n_sent, 1);
}

/* What refuses a move before anything starts: nothing is sent, the user is not flagged. */
static void test_move_start_refused(void **state) {
        static const struct {
                const char *name;
                unsigned from, to;
                FakeWorker to_worker; /* workers[to] for this row; exists = false: none */
                unsigned from_capabilities;
                int expect;
        } cases[] = {
                { "target unknown", 1, 5, { false }, SNAPSHOT, -ENOENT },
                { "target not routable", 1, 5, { true, false, true, INSTALL }, SNAPSHOT, -ENOENT },
                { "target cannot install", 1, 5, { true, true, true, SNAPSHOT }, SNAPSHOT, -EOPNOTSUPP },
                { "source cannot snapshot", 1, 5, { true, true, true, INSTALL }, INSTALL, -EOPNOTSUPP },
                { "source unknown", 6, 2, { true, true, true, INSTALL }, SNAPSHOT, -ENOENT },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                SurfaceUser *u = user_on("carol", cases[i].from);

                workers[5] = cases[i].to_worker;
                workers[1].capabilities = cases[i].from_capabilities;
                if (move_start(&moves, u, cases[i].to, "test", now) != cases[i].expect)
                        fail_msg("%s: move_start did not return %d", cases[i].name, cases[i].expect);
                assert_null(u->move);
                assert_int_equal(n_sent, 0);
                assert_int_equal(n_releases, 0);
        }
        /* a user already moving is not moved twice */
        workers[1].capabilities = SNAPSHOT;
        assert_int_equal(move_start(&moves, user_on("dave", 1), 2, "first", now), 0);
        assert_int_equal(move_start(&moves, surface_user_get(&surface, "dave"), 3, "second", now), -EBUSY);
        assert_int_equal(surface_user_get(&surface, "dave")->move->to, 2);
}

/* B silent (or U's requests never ending) past the timeout, in each state: abort, U stays on A. */
static void test_move_abort_on_timeout(void **state) {
        static const MoveState states[] = { MOVE_QUIESCE, MOVE_SNAPSHOT, MOVE_INSTALL };

        for (size_t i = 0; i < ELEMENTSOF(states); i++) {
                SurfaceUser *u;
                char name[16];

                teardown(state);
                setup(state);
                snprintf(name, sizeof name, "u%zu", i);
                u = user_on(name, 1);
                if (states[i] == MOVE_QUIESCE)
                        (void) surface_request_started(&surface, name, 0);
                assert_int_equal(move_start(&moves, u, 2, "test", now), 0);
                if (states[i] == MOVE_INSTALL)
                        package(1, u->move->id, "blob", NULL);
                assert_int_equal(u->move->state, states[i]);
                held = 1;

                now += TIMEOUT - 1;
                moves_expire(&moves, now);
                assert_non_null(u->move); /* not yet */
                now += 1;
                moves_expire(&moves, now);
                assert_aborted(u, 1, 1);
                /* only a silent target is the target's failure; it is told to drop what it may install */
                assert_int_equal(ended.target_failed, states[i] == MOVE_INSTALL);
                assert_int_equal(drop_sent(2, name), states[i] == MOVE_INSTALL);
                assert_int_equal(ended.pause, TIMEOUT);
        }
}

/* A worker dying mid-move: the target's death leaves U on A; the source's takes U's state with it (the
 * user is left where it was, and forgotten with its worker by the caller). */
static void test_move_worker_death(void **state) {
        static const struct {
                const char *name;
                bool installing;
                unsigned dies;
        } cases[] = {
                { "target dies while A snapshots", false, 2 },
                { "target dies while B installs", true, 2 },
                { "source dies while it snapshots", false, 1 },
                { "source dies while B installs", true, 1 },
                { "another worker dies", true, 3 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                SurfaceUser *u;

                teardown(state);
                setup(state);
                u = user_on("erin", 1);
                assert_int_equal(move_start(&moves, u, 2, "test", now), 0);
                if (cases[i].installing)
                        package(1, u->move->id, "blob", NULL);
                now += USEC_PER_MSEC;
                move_worker_gone(&moves, cases[i].dies, now);
                if (cases[i].dies == 3) {
                        assert_non_null(u->move);
                        continue;
                }
                assert_aborted(u, 1, 0);
                assert_int_equal(ended.target_failed, cases[i].dies == 2);
        }
}

/* A refuses the snapshot, B refuses the install, or a channel cannot be reached: abort. */
static void test_move_abort_on_refusal(void **state) {
        static const struct {
                const char *name;
                const char *snapshot_error;   /* A answers without a package */
                bool install_refused;
                bool source_unreachable, target_unreachable, target_backed_up;
        } cases[] = {
                { "A cannot snapshot", "no such user", false, false, false, false },
                { "B refuses the install", NULL, true, false, false, false },
                { "A's channel is closed", NULL, false, true, false, false },
                { "B's channel is closed", NULL, false, false, true, false },
                { "B's channel is backed up", NULL, false, false, false, true },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                SurfaceUser *u;
                uint64_t id;

                teardown(state);
                setup(state);
                workers[1].channel_open = !cases[i].source_unreachable;
                workers[2].channel_open = !cases[i].target_unreachable;
                workers[2].backed_up = cases[i].target_backed_up;
                u = user_on("frank", 1);
                assert_int_equal(move_start(&moves, u, 2, "test", now), 0);
                if (cases[i].source_unreachable) {
                        assert_aborted(u, 1, 0);
                        assert_false(ended.target_failed);
                        continue;
                }
                id = u->move->id;
                if (cases[i].snapshot_error) {
                        package(1, id, NULL, cases[i].snapshot_error);
                        assert_aborted(u, 1, 0);
                        assert_false(ended.target_failed);
                        continue;
                }
                package(1, id, "blob", NULL);
                if (cases[i].target_unreachable || cases[i].target_backed_up) {
                        assert_aborted(u, 1, 0);
                        /* a slow target is not a broken one: a drain need not back off from it */
                        assert_int_equal(ended.target_failed, cases[i].target_unreachable);
                        continue;
                }
                install_result(2, id, false, "disk full");
                assert_aborted(u, 1, 0);
                assert_true(ended.target_failed);
                assert_int_equal(ended.bytes, 4);
        }
}

/* A user placed again after its worker died, who then never came back, is on A in the commander's
 * table but A holds nothing for it: A's "unknown user" answer re-points it to B (nothing to carry, no
 * Install), instead of an abort that kept it on A and A from ever draining (found by the fault soak:
 * a rolling reload retried two such users once a second for minutes). */
static void test_move_unknown_user_repointed(void **state) {
        SurfaceUser *u = user_on("olga", 1);
        ElasticPool__Package p;
        uint64_t id;
        Frame f;

        assert_int_equal(move_start(&moves, u, 2, "rolling reload", now), 0);
        id = u->move->id;
        assert_sent(0, 1, ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST, id, "olga");
        held = 1;
        now += USEC_PER_MSEC;
        move_frame_package_unknown(&f, &p, id);
        move_on_frame(&moves, 1, &f, now);
        assert_null(u->move);
        assert_null(moves.list);
        assert_int_equal(u->worker, 2);
        assert_int_equal(n_sent, 1); /* no Install to B, no Drop to A */
        assert_int_equal(n_releases, 1);
        assert_int_equal(releases[0].lives_on, 2);
        assert_true(ended.switched && ended.repointed);
        assert_int_equal(ended.from, 1);
        assert_int_equal(ended.to, 2);
        assert_string_equal(moves_recent(&moves, 0)->outcome, "re-pointed");
        assert_int_equal(moves.repointed, 1);
        assert_int_equal(moves.aborted, 0);
}

/* Answers that are not the move's next step change nothing. */
static void test_move_stray_answers_ignored(void **state) {
        SurfaceUser *u = user_on("gina", 1);
        uint64_t id;

        assert_int_equal(move_start(&moves, u, 2, "test", now), 0);
        id = u->move->id;
        package(1, id + 7, "blob", NULL);    /* an unknown move */
        package(2, id, "blob", NULL);        /* from the target, not the source */
        install_result(2, id, true, NULL);   /* an install before any package */
        assert_int_equal(u->move->state, MOVE_SNAPSHOT);
        assert_int_equal(n_sent, 1);
        package(1, id, "blob", NULL);
        package(1, id, "blob", NULL);        /* a second package: the move is installing */
        install_result(3, id, true, NULL);   /* from a worker that is not the target */
        assert_int_equal(u->move->state, MOVE_INSTALL);
        assert_int_equal(n_sent, 2);
        assert_int_equal(u->worker, 1);
        assert_int_equal(n_releases, 0);
}

/* The user logs out (or in again) mid-move: cancelled, its held requests released once. */
static void test_move_cancel(void **state) {
        SurfaceUser *u = user_on("hank", 1);

        assert_int_equal(move_start(&moves, u, 2, "test", now), 0);
        held = 3;
        move_cancel(&moves, u, "the user logged out", now);
        assert_aborted(u, 1, 3);
        move_cancel(&moves, u, "again", now); /* nothing moves: nothing happens */
        assert_int_equal(n_releases, 1);
}

/* Two users move at once, each on its own clock; shutdown ends them without releasing anything. */
static void test_move_concurrent_and_done(void **state) {
        SurfaceUser *a = user_on("ivy", 1), *b = user_on("jack", 1);

        assert_int_equal(move_start(&moves, a, 2, "test", now), 0);
        now += 3 * USEC_PER_SEC;
        assert_int_equal(move_start(&moves, b, 3, "test", now), 0);
        assert_true(a->move->id != b->move->id);
        now += 2 * USEC_PER_SEC;
        moves_expire(&moves, now); /* a's is 5 s old, b's 2 s */
        assert_null(a->move);
        assert_non_null(b->move);
        assert_int_equal(n_releases, 1);
        moves_done(&moves);
        assert_null(b->move);
        assert_null(moves.list);
        assert_int_equal(n_releases, 1);
}

/* A worker that cannot snapshot users keeps no state to carry: its users are re-pointed (flag, quiesce,
 * switch), with no frame sent; one that can snapshot is never re-pointed onto a worker that cannot
 * install (its state would be lost). */
static void test_move_repoint(void **state) {
        SurfaceUser *u, *v;
        uint64_t ticket;

        workers[1].capabilities = 0;
        u = user_on("kim", 1);
        assert_int_equal(move_start(&moves, u, 2, "test", now), -EOPNOTSUPP);
        ticket = surface_request_started(&surface, "kim", now);
        assert_int_equal(move_start_or_repoint(&moves, u, 2, "test", now), 0);
        assert_true(u->move->repoint);
        held = 1;
        now += 3 * USEC_PER_MSEC;
        (void) surface_request_ended(&surface, "kim", ticket, 1);
        move_user_quiesced(&moves, u, now);
        assert_null(u->move);
        assert_int_equal(u->worker, 2);
        assert_int_equal(n_sent, 0);
        assert_int_equal(n_releases, 1);
        assert_int_equal(releases[0].lives_on, 2);
        assert_true(ended.switched && ended.repointed);
        assert_int_equal(ended.pause, 3 * USEC_PER_MSEC);

        /* a quiet user is re-pointed at once */
        v = user_on("lee", 1);
        assert_int_equal(move_start_or_repoint(&moves, v, 3, "test", now), 0);
        assert_int_equal(v->worker, 3);
        assert_int_equal(n_ended, 2);

        /* state to carry, nobody to install it: refused */
        workers[1].capabilities = SNAPSHOT;
        workers[4] = (FakeWorker) { true, true, true, 0 };
        assert_int_equal(move_start_or_repoint(&moves, user_on("max", 1), 4, "test", now), -EOPNOTSUPP);
        /* and a move to where the user already is, is no move */
        assert_int_equal(move_start_or_repoint(&moves, user_on("ned", 2), 2, "test", now), -ENOENT);
}

/* Across package formats (a deploy changed what the application packs) a user is re-pointed, never
 * handed a package its new worker could misread: B gets an Install without a package (start it fresh),
 * and A drops its copy once B said yes. A plain move is refused. */
static void test_move_repoint_across_formats(void **state) {
        SurfaceUser *u;

        workers[1].format = "shop-v1";
        workers[2].format = "shop-v2";
        u = user_on("ola", 1);
        assert_int_equal(move_start(&moves, u, 2, "test", now), -EOPNOTSUPP);
        assert_int_equal(move_start_or_repoint(&moves, u, 2, "test", now), 0);
        assert_true(u->move->fresh);
        /* quiet: no snapshot asked of A, an empty install to B at once */
        assert_int_equal(n_sent, 1);
        assert_sent(0, 2, ELASTIC_POOL__FRAME__BODY_INSTALL, u->move->id, "ola");
        assert_string_equal(sent[0].blob, "");
        assert_int_equal(u->worker, 1);
        install_result(2, u->move->id, true, NULL);
        assert_int_equal(u->worker, 2);
        assert_true(ended.switched && ended.repointed);
        assert_true(drop_sent(1, "ola"));
        /* one format: live */
        workers[2].format = "shop-v1";
        assert_int_equal(move_start(&moves, user_on("pia", 1), 2, "test", now), 0);
        assert_int_equal(sent[n_sent - 1].body, ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST);
}

/* The ends kept for the status surfaces: newest first, the last MOVES_RECENT of them, and counted by
 * outcome. */
static void test_moves_recent_ring_and_counters(void **state) {
        SurfaceUser *u;
        char name[16];

        assert_null(moves_recent(&moves, 0));
        /* a re-point, an abort, then done moves past the ring's size */
        workers[1].capabilities = 0;
        assert_int_equal(move_start_or_repoint(&moves, user_on("rp", 1), 2, "test", now), 0);
        workers[1].capabilities = SNAPSHOT | INSTALL;
        u = user_on("ab", 1);
        assert_int_equal(move_start(&moves, u, 2, "test", now), 0);
        now += TIMEOUT;
        moves_expire(&moves, now);
        assert_int_equal(moves.repointed, 1);
        assert_int_equal(moves.aborted, 1);
        assert_string_equal(moves_recent(&moves, 0)->user, "ab");
        assert_false(moves_recent(&moves, 0)->switched);
        assert_int_equal(moves_recent(&moves, 0)->pause, TIMEOUT);
        assert_int_equal(moves_recent(&moves, 0)->ended, now);
        assert_true(moves_recent(&moves, 1)->repointed);
        for (unsigned i = 0; i < MOVES_RECENT; i++) {
                n_releases = n_sent = 0; /* the fakes keep a few */
                snprintf(name, sizeof name, "d%u", i);
                u = user_on(name, 1);
                assert_int_equal(move_start(&moves, u, 2, "test", now), 0);
                package(1, u->move->id, "blob", NULL);
                install_result(2, u->move->id, true, NULL);
                assert_int_equal(u->worker, 2);
        }
        assert_int_equal(moves.done, MOVES_RECENT);
        assert_int_equal(moves.n_recent, MOVES_RECENT);
        snprintf(name, sizeof name, "d%u", MOVES_RECENT - 1);
        assert_string_equal(moves_recent(&moves, 0)->user, name);
        assert_true(moves_recent(&moves, 0)->switched);
        assert_int_equal(moves_recent(&moves, 0)->bytes, 4);
        assert_string_equal(moves_recent(&moves, 0)->outcome, "done");
        assert_string_equal(moves_recent(&moves, MOVES_RECENT - 1)->user, "d0");
        assert_null(moves_recent(&moves, MOVES_RECENT));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_move_state_to_string),
                cmocka_unit_test_setup_teardown(test_move_flag_quiesce_snapshot_install_switch, setup, teardown),
                cmocka_unit_test_setup_teardown(test_move_quiet_user_snapshots_at_once, setup, teardown),
                cmocka_unit_test_setup_teardown(test_move_start_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_move_abort_on_timeout, setup, teardown),
                cmocka_unit_test_setup_teardown(test_move_worker_death, setup, teardown),
                cmocka_unit_test_setup_teardown(test_move_abort_on_refusal, setup, teardown),
                cmocka_unit_test_setup_teardown(test_move_unknown_user_repointed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_move_stray_answers_ignored, setup, teardown),
                cmocka_unit_test_setup_teardown(test_move_cancel, setup, teardown),
                cmocka_unit_test_setup_teardown(test_move_concurrent_and_done, setup, teardown),
                cmocka_unit_test_setup_teardown(test_move_repoint, setup, teardown),
                cmocka_unit_test_setup_teardown(test_move_repoint_across_formats, setup, teardown),
                cmocka_unit_test_setup_teardown(test_moves_recent_ring_and_counters, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
