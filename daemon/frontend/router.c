/* SPDX-License-Identifier: MIT */
/* The router between client streams and workers: who the user is (sticky signed cookie), which worker
 * takes the request (the user's, or the reception for guests), holding requests while their user
 * moves, placing users on login, and the bookkeeping of the surface. */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cleanup.h"
#include "forward.h"
#include "journal-ids.h"
#include "log.h"
#include "macro.h"
#include "move.h"

/* A held request's body is buffered up to this much while it waits (the client side pauses). */
#define HELD_BODY_MAX (256U * 1024U)
/* At most one warning per this span about logouts forgotten past max_revoked_users. */
#define REVOCATION_WARNING_INTERVAL (60 * USEC_PER_SEC)

typedef struct HeldBody {
        size_t size;
        bool ended;
        uint8_t data[];
} HeldBody;

/* What the router keeps of an exchange besides what both sides see: allocated around the Exchange by
 * exchange_new(), so every pointer has its own type (the held list links through Exchange.held_next,
 * the held body is here; neither borrows the forward side's upstream slot). */
typedef struct RouterExchange {
        Exchange x;             /* first: exchange_new() hands out &rx->x */
        HeldBody *held_body;    /* body bytes that arrived while it was held */
        uint64_t cookie_issued; /* issue stamp of the sticky cookie that named x.user */
} RouterExchange;

/* Every Exchange the router is given came from exchange_new(). */
static RouterExchange *router_exchange(Exchange *x) {
        return (RouterExchange *) ((uint8_t *) x - offsetof(RouterExchange, x));
}

bool header_name_is(const HeaderField *f, const char *name) {
        return strlen(name) == f->name_len && strncasecmp(f->name, name, f->name_len) == 0;
}

const HeaderField *header_find(const HeaderField *fields, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (header_name_is(&fields[i], name))
                        return &fields[i];
        return NULL;
}

static uint64_t next_random(Frontend *fe) {
        /* xorshift128+: request ids must be unique-looking, not unguessable */
        uint64_t s1 = fe->prng[0];
        const uint64_t s0 = fe->prng[1];
        fe->prng[0] = s0;
        s1 ^= s1 << 23;
        fe->prng[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
        return fe->prng[1] + s0;
}

static bool request_id_valid(const char *v, size_t n) {
        if (n == 0 || n > 32)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z') || (v[i] >= '0' && v[i] <= '9') ||
                      v[i] == '-' || v[i] == '_' || v[i] == '.' || v[i] == ':'))
                        return false;
        return true;
}

/* 16 lowercase hex digits of v, as "%016llx" would write them (which costs a vfprintf per request). */
static void put_hex64(char out[static 16], uint64_t v) {
        static const char digits[] = "0123456789abcdef";

        for (int i = 15; i >= 0; i--, v >>= 4)
                out[i] = digits[v & 15];
}

_Static_assert(sizeof(((Exchange *) NULL)->id) == 33, "a generated request id is 32 hex digits");

static void assign_request_id(Frontend *fe, Exchange *x) {
        const HeaderField *f = header_find(x->req.fields, x->req.n_fields, "x-request-id");

        if (f && request_id_valid(f->value, f->value_len)) {
                memcpy(x->id, f->value, f->value_len);
                x->id[f->value_len] = 0;
                return;
        }
        put_hex64(x->id, next_random(fe));
        put_hex64(x->id + 16, next_random(fe));
        x->id[32] = 0;
}

/* The loop's time of this iteration: what the client side stamps its exchanges with, without a clock read
 * per call. */
static usec_t router_now(Frontend *fe) {
        usec_t t;

        if (!fe->event || sd_event_now(fe->event, CLOCK_MONOTONIC, &t) < 0)
                return now_usec(CLOCK_MONOTONIC);
        return t;
}

static bool peer_trusted(const Frontend *fe, const struct sockaddr_storage *peer) {
        const uint8_t *addr;
        int family = peer->ss_family;

        if (family == AF_INET)
                addr = (const uint8_t *) &((const struct sockaddr_in *) peer)->sin_addr;
        else if (family == AF_INET6)
                addr = (const uint8_t *) &((const struct sockaddr_in6 *) peer)->sin6_addr;
        else
                /* a Unix socket says nothing of who is behind it (systemd may hand one over that any
                 * local user can reach): trusted only when trusted_proxies says "unix" */
                return family == AF_UNIX && fe->trust_unix;
        for (size_t i = 0; i < fe->n_trusted; i++) {
                const ConfigPrefix *t = &fe->trusted[i];
                const uint8_t *want = (const uint8_t *) &t->address;
                unsigned bits = t->prefixlen, k = 0;

                if (t->family != family)
                        continue;
                while (bits >= 8 && addr[k] == want[k]) {
                        bits -= 8;
                        k++;
                }
                if (bits == 0 || (bits < 8 && ((addr[k] ^ want[k]) & (uint8_t) (0xff << (8 - bits))) == 0))
                        return true;
        }
        return false;
}

static void resolve_proto(Frontend *fe, Exchange *x) {
        const HeaderField *f = header_find(x->req.fields, x->req.n_fields, "x-forwarded-proto");

        x->via_tls_proxy = f && f->value_len == 5 && strncasecmp(f->value, "https", 5) == 0 &&
                           peer_trusted(fe, &x->peer);
}

/* ---- placement ---- */

static ssize_t policy_index(const PolicyInput *in, unsigned worker) {
        for (size_t i = 0; i < in->n_workers; i++)
                if (in->workers[i].id == worker)
                        return (ssize_t) i;
        return -1;
}

/* Where a user who logs in on `current` (or, re-placed, on the reception) goes: reception-first. */
static unsigned place(Frontend *fe, unsigned current, bool *ret_over) {
        PolicyInput in;
        ssize_t i;
        int r;

        capacity_policy_input(&fe->manager->capacity, &in);
        i = policy_index(&in, current);
        if (i < 0 && fe->manager->pool.reception)
                i = policy_index(&in, fe->manager->pool.reception->id);
        if (i < 0)
                return 0;
        r = policy_place(&in, &fe->manager->capacity.policy, (size_t) i, ret_over);
        if (r < 0)
                return 0;
        return in.workers[r].id;
}

static void sync_worker_open(Frontend *fe, unsigned worker) {
        Worker *w = pool_get_worker(&fe->manager->pool, worker);

        if (!w)
                return;
        w->inflight = surface_worker_open(&fe->surface, worker);
        if (w->inflight == 0 && w->state == WORKER_DRAINING)
                pool_worker_drained(&fe->manager->pool, w);
}

/* A valid cookie whose user the surface does not know (its worker died, or we restarted): place it
 * again; whatever state it had on a dead worker is gone. */
static SurfaceUser *replace_user(Frontend *fe, Exchange *x, const char *name, const char *why) {
        SurfaceUser *u = NULL;
        bool over = false;
        unsigned to;

        to = place(fe, 0, &over);
        if (to == 0 || surface_user_place(&fe->surface, name, to, now_usec(CLOCK_MONOTONIC), &u) < 0)
                return NULL;
        log_struct(LOG_NOTICE, LOG_FIELDS(.message_id = MESSAGE_ID_PLACE, .event = "place", .worker = (int) to,
                                          .user = name),
                   "User %s re-placed on w%u: %s (its state there is lost)%s", name, to, why,
                   over ? "; every worker is over the admission threshold" : "");
        return u;
}

/* Why the surface does not know the user of a valid cookie. It forgets a user when its worker goes away
 * or when it logs out, and a logout revokes the cookies issued before it; so what is left is a worker
 * gone, a cookie from before this commander started (the surface lives in memory), or a logout whose
 * record was forgotten past max_revoked_users. */
static const char *unknown_user_reason(Frontend *fe, Exchange *x) {
        uint64_t issued = router_exchange(x)->cookie_issued;

        if (issued <= fe->cookie_epoch)
                return "the surface does not know it (its cookie is older than this commander)";
        if (issued <= fe->revocations.forgotten_through)
                return "the surface does not know it (its worker is gone, or it logged out and that logout "
                       "was forgotten past max_revoked_users)";
        return "the surface does not know it (its worker is gone)";
}

static void resolve_user(Frontend *fe, Exchange *x) {
        char user[COOKIE_USER_MAX + 1];
        const char *value;
        uint64_t issued;
        size_t len;
        int r;

        if (cookie_find(x->req.fields, x->req.n_fields, COOKIE_NAME, &value, &len) <= 0)
                return;
        r = cookie_verify(&fe->cookie_key, value, len, (uint64_t) time(NULL), user, sizeof user, &issued);
        if (r < 0) {
                frontend_log_request(fe, x, 0, "Request %s: %s sticky cookie, treated as a guest", x->id,
                                     r == -ETIME ? "expired" : "unsigned or forged");
                return;
        }
        if (cookie_revoked(&fe->revocations, user, issued)) {
                frontend_log_request(fe, x, 0,
                                     "Request %s: sticky cookie of user %s revoked by logout, treated as a guest",
                                     x->id, user);
                return;
        }
        x->user = strdup(user);
        router_exchange(x)->cookie_issued = issued;
}

/* ---- forwarding ---- */

static void held_body_free(Exchange *x);

static void fail_early(Frontend *fe, Exchange *x, unsigned status, unsigned retry_after, const char *reason) {
        x->state = EXCHANGE_DONE;
        x->status = status;
        fe->errors++;
        /* rate-limited: an overloaded pool answers 503 to everyone; what is left out is counted by status */
        frontend_log_request(fe, x, status, "Request %s %.*s %.*s: %u %s", x->id, (int) x->req.method_len,
                             x->req.method, (int) MIN(x->req.target_len, 200U), x->req.target, status,
                             reason);
        x->client->response_error(x, status, retry_after, reason);
}

static void dispatch(Frontend *fe, Exchange *x);

static void start_on(Frontend *fe, Exchange *x, Worker *w) {
        int r;

        x->worker = w->id;
        r = surface_request_open(&fe->surface, x);
        if (r < 0) {
                fail_early(fe, x, 503, 1, "out of memory");
                return;
        }
        sync_worker_open(fe, w->id);
        x->state = EXCHANGE_FORWARDING;
        r = forward_start(w->forward, x);
        if (r < 0) {
                surface_request_close(&fe->surface, x, router_now(fe));
                sync_worker_open(fe, w->id);
                x->state = EXCHANGE_NEW;
                if (r == -EBADMSG || r == -EINVAL)
                        fail_early(fe, x, 400, 0, "the request carries bytes that cannot be forwarded");
                else
                        fail_early(fe, x, 503, 1,
                                   r == -EBUSY ? "the worker's connections are all busy and its queue is full"
                                   : r == -ESHUTDOWN ? "the worker is draining"
                                                     : "cannot reach the worker");
                return;
        }
        if (x->req.expect_continue && x->client->request_continue)
                x->client->request_continue(x);
}

/* Replays body bytes that arrived while the exchange was held. */
static void flush_held_body(Exchange *x) {
        HeldBody *b = TAKE_PTR(router_exchange(x)->held_body);
        bool ended;

        if (!b)
                return;
        ended = b->ended;
        if (b->size > 0)
                (void) forward_request_body(x, b->data, b->size);
        if (ended)
                (void) forward_request_end(x);
        free(b);
        if (x->request_body_paused) {
                x->request_body_paused = false;
                x->client->request_body_resume(x);
        }
}

static void hold(Frontend *fe, Exchange *x, SurfaceUser *u) {
        x->state = EXCHANGE_HELD;
        x->held_since = now_usec(CLOCK_MONOTONIC);
        fe->held++;
        x->held_next = NULL;
        if (u->held_last)
                u->held_last->held_next = x;
        else
                u->held_first = x;
        u->held_last = x;
        x->upstream = NULL;
        u->n_held++;
}

static void dispatch(Frontend *fe, Exchange *x) {
        Manager *m = fe->manager;
        SurfaceUser *u = NULL;
        Worker *w;

        if (x->user) {
                u = surface_user_get(&fe->surface, x->user);
                if (!u)
                        u = replace_user(fe, x, x->user, unknown_user_reason(fe, x));
                if (u && u->move) {
                        hold(fe, x, u);
                        return;
                }
                if (u) {
                        w = pool_get_worker(&m->pool, u->worker);
                        if (!w || !worker_is_routable(w) || !w->forward) {
                                surface_user_forget(&fe->surface, u);
                                u = replace_user(fe, x, x->user, "its worker is not routable any more");
                        }
                }
        }
        w = u ? pool_get_worker(&m->pool, u->worker) : m->pool.reception;
        if (!w || !worker_is_routable(w) || !w->forward) {
                fail_early(fe, x, 503, 1, "no routable worker");
                return;
        }
        start_on(fe, x, w);
        if (x->state == EXCHANGE_FORWARDING)
                flush_held_body(x);
}

Exchange *exchange_new(Frontend *fe, const ClientOps *ops, void *client_data) {
        RouterExchange *rx = calloc(1, sizeof *rx);
        Exchange *x;

        if (!rx)
                return NULL;
        x = &rx->x;
        x->frontend = fe;
        x->client = ops;
        x->client_data = client_data;
        x->started = router_now(fe);
        return x;
}

static void unlink_held(Frontend *fe, Exchange *x) {
        SurfaceUser *u = x->user ? surface_user_get(&fe->surface, x->user) : NULL;
        Exchange *prev = NULL;

        if (!u)
                return;
        for (Exchange *e = u->held_first; e; prev = e, e = e->held_next) {
                if (e != x)
                        continue;
                if (prev)
                        prev->held_next = x->held_next;
                else
                        u->held_first = x->held_next;
                if (u->held_last == x)
                        u->held_last = prev;
                u->n_held--;
                break;
        }
        x->held_next = NULL;
}

static void held_body_free(Exchange *x) {
        RouterExchange *rx = router_exchange(x);

        free(rx->held_body);
        rx->held_body = NULL;
}

static void request_closed(Frontend *fe, Exchange *x) {
        SurfaceUser *u;

        if (!x->key[0])
                return; /* closed already (the response ended, then the client side freed it) */
        u = x->user ? surface_user_get(&fe->surface, x->user) : NULL;
        surface_request_close(&fe->surface, x, router_now(fe));
        sync_worker_open(fe, x->worker);
        if (u && u->open == 0)
                move_user_quiesced(fe, u);
}

Exchange *exchange_free(Exchange *x) {
        Frontend *fe;

        if (!x)
                return NULL;
        fe = x->frontend;
        if (x->state == EXCHANGE_HELD)
                unlink_held(fe, x);
        else if (x->upstream)
                forward_detach(x);
        held_body_free(x);
        request_closed(fe, x);
        free(x->user);
        free(router_exchange(x));
        return NULL;
}

void exchange_begin(Exchange *x) {
        Frontend *fe = x->frontend;

        fe->requests++;
        assign_request_id(fe, x);
        resolve_proto(fe, x);
        resolve_user(fe, x);
        dispatch(fe, x);
}

static int hold_body(Exchange *x, const void *data, size_t size, bool end) {
        RouterExchange *rx = router_exchange(x);
        HeldBody *b = rx->held_body;
        size_t have = b ? b->size : 0;

        if (have + size > HELD_BODY_MAX + 65536)
                return -ENOBUFS;
        b = realloc(b, sizeof *b + have + size);
        if (!b)
                return -ENOMEM;
        if (!rx->held_body)
                b->ended = false;
        if (size > 0)
                memcpy(b->data + have, data, size);
        b->size = have + size;
        b->ended = b->ended || end;
        rx->held_body = b;
        if (b->size >= HELD_BODY_MAX) {
                x->request_body_paused = true;
                return 1;
        }
        return 0;
}

int exchange_request_body(Exchange *x, const void *data, size_t size) {
        int r;

        switch (x->state) {
        case EXCHANGE_HELD:
                return hold_body(x, data, size, false);
        case EXCHANGE_FORWARDING:
        case EXCHANGE_RESPONDING:
                r = forward_request_body(x, data, size);
                if (r == 1)
                        x->request_body_paused = true;
                if (r >= 0)
                        x->request_body_sent += size;
                return r;
        default:
                return -ECANCELED;
        }
}

int exchange_request_end(Exchange *x) {
        switch (x->state) {
        case EXCHANGE_HELD:
                return hold_body(x, NULL, 0, true);
        case EXCHANGE_FORWARDING:
        case EXCHANGE_RESPONDING:
                x->request_body_done = true;
                return forward_request_end(x);
        default:
                return -ECANCELED;
        }
}

void exchange_response_resume(Exchange *x) {
        if (x->upstream && (x->state == EXCHANGE_FORWARDING || x->state == EXCHANGE_RESPONDING))
                forward_response_resume(x);
}

/* ---- responses ---- */

static bool user_name_valid(const char *s, size_t n) {
        if (n == 0 || n > COOKIE_USER_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] <= 0x20 || s[i] == 0x7f || s[i] == ';' || s[i] == ',' || s[i] == '"')
                        return false;
        return true;
}

/* Logged out, the user must not come back with a cookie it kept (or someone copied): that would place it
 * again and send X-Elastic-Pool-User to a worker for up to cookie_max_age. So every cookie issued to it
 * until now is revoked; the next login gets a later stamp and a valid cookie at once. */
static void revoke_cookies(Frontend *fe, const char *user) {
        _cleanup_free_ char *evicted = NULL;
        uint64_t now = now_usec(CLOCK_REALTIME), stamp;
        usec_t mono;
        int r;

        fe->revocations.max = fe->config->max_revoked_users;
        stamp = cookie_stamp(&fe->revocations, now);
        /* every cookie issued up to stamp has expired once the longest lifetime given to any has passed */
        r = cookie_revoke(&fe->revocations, user, stamp, stamp + fe->cookie_age_max, now, &evicted);
        if (r < 0) {
                log_error_errno(r,
                                "Cannot record the logout of user %s: the cookies it was given stay valid "
                                "until they expire: %m",
                                user);
                return;
        }
        if (r == 0)
                return;
        /* a logout storm at the cap would warn on every logout: once a minute, with the count */
        fe->revocations_evicted += (unsigned) r;
        mono = now_usec(CLOCK_MONOTONIC);
        if (fe->revocations_warned && mono - fe->revocations_warned_at < REVOCATION_WARNING_INTERVAL)
                return;
        log_warning("max_revoked_users=%u logouts on record: forgot the %u oldest since the last warning "
                    "(the latest, of user %s); the cookies those users held before logging out are valid "
                    "again until they expire (raise max_revoked_users)",
                    fe->config->max_revoked_users, fe->revocations_evicted, strna(evicted));
        fe->revocations_evicted = 0;
        fe->revocations_warned = true;
        fe->revocations_warned_at = mono;
}

static void logout(Frontend *fe, Exchange *x) {
        SurfaceUser *u;
        unsigned worker;

        if (!x->user)
                return;
        revoke_cookies(fe, x->user);
        u = surface_user_get(&fe->surface, x->user);
        if (!u)
                return;
        worker = u->worker;
        move_cancel(fe, u, "the user logged out");
        /* the held requests that released may have found its worker unroutable and forgotten u */
        u = surface_user_get(&fe->surface, x->user);
        if (!u)
                return;
        log_struct(LOG_INFO, LOG_FIELDS(.message_id = MESSAGE_ID_PLACE, .event = "logout", .worker = (int) worker,
                                        .user = u->name),
                   "User %s logged out of w%u after %llu requests", u->name, worker, (unsigned long long) u->requests);
        /* its open requests (this one) keep their entries; the dict no longer attributes them */
        router_fail_held(fe, u, "the user logged out");
        surface_user_forget(&fe->surface, u);
}

static int login(Frontend *fe, Exchange *x, const char *name) {
        SurfaceUser *u = surface_user_get(&fe->surface, name);
        bool over = false;
        unsigned to;
        int r;

        if (u && u->worker == x->worker)
                return 0;
        if (u) {
                /* logged in again elsewhere: the new session is where the worker says */
                move_cancel(fe, u, "the user logged in again");
                r = surface_user_place(&fe->surface, name, x->worker, now_usec(CLOCK_MONOTONIC), &u);
        } else
                r = surface_user_place(&fe->surface, name, x->worker, now_usec(CLOCK_MONOTONIC), &u);
        if (r < 0)
                return r;
        /* Its login request is open on x->worker: from now on it counts as the new user's, so a move
         * waits for it to finish. A request that came in as someone else (another cookie) stops
         * counting as theirs, or they would never quiesce. */
        if (!x->user || !streq(x->user, name)) {
                SurfaceUser *before = x->user ? surface_user_get(&fe->surface, x->user) : NULL;

                if (before && before->open > 0 && --before->open == 0)
                        move_user_quiesced(fe, before);
                free(x->user);
                x->user = strdup(name);
                u->open++;
        }

        to = place(fe, x->worker, &over);
        Worker *w = pool_get_worker(&fe->manager->pool, x->worker);
        log_struct(LOG_INFO, LOG_FIELDS(.message_id = MESSAGE_ID_PLACE, .event = "place", .worker = (int) x->worker,
                                        .user = name, .has_occupancy = w != NULL, .occupancy = w ? w->reading.occupancy.value : 0),
                   "User %s logged in on w%u%s%s", name, x->worker,
                   to != 0 && to != x->worker ? "; placement passes it to " : " and stays there",
                   to != 0 && to != x->worker ? WORKER_NAME(pool_get_worker(&fe->manager->pool, to)) : "");
        if (over)
                log_warning("Every worker is over admission_threshold=%.2f: user %s goes to the last one until "
                            "scale-up adds room", fe->manager->capacity.policy.admission_threshold, name);
        if (to != 0 && to != x->worker) {
                r = move_start(fe, u, to, "the reception is over its keep threshold");
                if (r == -EOPNOTSUPP)
                        log_notice("User %s stays on w%u: w%u cannot snapshot users or w%u cannot install them",
                                   name, x->worker, x->worker, to);
                else if (r < 0)
                        log_warning_errno(r, "Cannot move user %s to w%u, it stays on w%u: %m", name, to, x->worker);
        }
        return 0;
}

static HeaderField cookie_field(Frontend *fe, Exchange *x, const char *user, char *buf, size_t size) {
        char value[COOKIE_VALUE_MAX];
        const char *secure = x->via_tls_proxy ? "; Secure" : "";
        int n;

        if (!user)
                n = snprintf(buf, size, "%s=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax%s", COOKIE_NAME, secure);
        else {
                uint64_t max_age = fe->config->cookie_max_age / USEC_PER_SEC;
                uint64_t now = now_usec(CLOCK_REALTIME), issued = cookie_stamp(&fe->revocations, now);

                /* a logout must outlast every cookie it revokes, cookie_max_age reloaded or not */
                fe->cookie_age_max = MAX(fe->cookie_age_max, fe->config->cookie_max_age);
                if (cookie_sign(&fe->cookie_key, user, issued, now / USEC_PER_SEC + max_age, value,
                                sizeof value) < 0)
                        return (HeaderField) {};
                n = snprintf(buf, size, "%s=%s; Path=/; Max-Age=%llu; HttpOnly; SameSite=Lax%s", COOKIE_NAME, value,
                             (unsigned long long) max_age, secure);
        }
        return (HeaderField) { "Set-Cookie", strlen("Set-Cookie"), buf, (size_t) MAX(n, 0) };
}

/* The client side refusing bytes means its client is gone: the forward side then drops the worker
 * connection and calls no more, so the exchange ends here. */
static int client_result(Exchange *x, int r) {
        if (r < 0 && x->state != EXCHANGE_DONE) {
                x->state = EXCHANGE_DONE;
                x->upstream = NULL;
                request_closed(x->frontend, x);
        }
        return r;
}

int exchange_response_head(Exchange *x, ResponseHead *h, const char *user, size_t user_len) {
        Frontend *fe = x->frontend;
        char name[COOKIE_USER_MAX + 1], buf[COOKIE_VALUE_MAX + 128];
        HeaderField extra[1];
        size_t n_extra = 0;

        x->state = EXCHANGE_RESPONDING;
        x->status = h->status;
        if (user && user_len == 1 && user[0] == '-') {
                logout(fe, x);
                extra[n_extra++] = cookie_field(fe, x, NULL, buf, sizeof buf);
        } else if (user && user_name_valid(user, user_len)) {
                memcpy(name, user, user_len);
                name[user_len] = 0;
                if (login(fe, x, name) >= 0) {
                        extra[n_extra] = cookie_field(fe, x, name, buf, sizeof buf);
                        if (extra[n_extra].name)
                                n_extra++;
                }
        } else if (user)
                log_warning("w%u answered request %s with an invalid Elastic-Pool-User value; ignoring it", x->worker,
                            x->id);
        h->extra = extra;
        h->n_extra = n_extra;
        return client_result(x, x->client->response_head(x, h));
}

int exchange_response_body(Exchange *x, const void *data, size_t size) {
        x->response_bytes += size;
        return client_result(x, x->client->response_body(x, data, size));
}

int exchange_response_end(Exchange *x) {
        Frontend *fe = x->frontend;

        x->state = EXCHANGE_DONE;
        x->upstream = NULL;
        fe->responses++;
        request_closed(fe, x);
        return x->client->response_end(x);
}

void exchange_fail(Exchange *x, unsigned status, const char *reason) {
        Frontend *fe = x->frontend;
        bool head_sent = x->state == EXCHANGE_RESPONDING;
        unsigned shown = head_sent ? x->status : status;
        char extra[REQUEST_LOG_FIELDS_MAX];

        x->upstream = NULL;
        x->state = EXCHANGE_DONE;
        fe->errors++;
        request_closed(fe, x);
        /* one line per request, not rate-limited: each is a worker failing a request it took */
        log_struct(LOG_WARNING,
                   LOG_FIELDS(.event = "forward-error", .worker = (int) x->worker, .user = x->user,
                              .extra = request_log_fields(extra, sizeof extra, x, shown)),
                   "Request %s %.*s %.*s on w%u: %s%u: %s", x->id, (int) x->req.method_len, x->req.method,
                   (int) MIN(x->req.target_len, 200U), x->req.target, x->worker,
                   head_sent ? "response aborted after " : "", shown, reason);
        if (head_sent) {
                x->client->response_abort(x, reason);
                return;
        }
        x->status = status;
        x->client->response_error(x, status, status == 503 ? 1 : 0, reason);
}

/* ---- held requests ---- */

void router_release_held(Frontend *fe, SurfaceUser *u) {
        Exchange *x = u->held_first;

        u->held_first = u->held_last = NULL;
        u->n_held = 0;
        while (x) {
                Exchange *next = x->held_next;
                x->held_next = NULL;
                x->state = EXCHANGE_NEW;
                if (now_usec(CLOCK_MONOTONIC) - x->held_since > fe->config->hold_timeout)
                        fail_early(fe, x, 503, 1, "held past hold_timeout while its user moved");
                else
                        dispatch(fe, x);
                x = next;
        }
}

void router_fail_held(Frontend *fe, SurfaceUser *u, const char *reason) {
        Exchange *x = u->held_first;

        u->held_first = u->held_last = NULL;
        u->n_held = 0;
        while (x) {
                Exchange *next = x->held_next;
                x->held_next = NULL;
                x->state = EXCHANGE_NEW;
                fail_early(fe, x, 503, 1, reason);
                x = next;
        }
}
