/* SPDX-License-Identifier: MIT */
/* The Exchange between a client stream and a worker: what the client side calls (new, begin, body,
 * free), and the replies the forward side calls back through x->replies. A request is decorated here (its
 * id, whether a trusted proxy terminated TLS, its user), sent on by the router, and its response head is
 * where a worker logs a user in or out. */

#include "exchange.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sanitizer/asan_interface.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cleanup.h"
#include "frontend-internal.h"
#include "log.h"
#include "macro.h"
#include "router.h"
#include "session.h"
#include "tunnel.h"

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

        /* without trusted_proxies nobody is: no walk of the list per request */
        x->peer_trusted = (fe->n_trusted > 0 || fe->trust_unix) && peer_trusted(fe, &x->peer);
        x->via_tls_proxy = f && f->value_len == 5 && strncasecmp(f->value, "https", 5) == 0 && x->peer_trusted;
}

/* ---- the client side's calls ---- */

static const ExchangeReplies replies;

/* A per-loop free list of exchanges (thread-local: one front-end loop per thread later): with many
 * requests in flight the blocks outnumber glibc's per-thread cache, and each went through malloc's bins.
 * Emptied with the other per-loop pools when a burst is over (frontend-trim.c). One on the list is poisoned
 * for AddressSanitizer, which still catches a use after free (the macros are no-ops in other builds). */
#define POOL_EXCHANGES_MAX 256U

static _Thread_local Exchange *pool_exchanges; /* linked through open_next */
static _Thread_local unsigned n_pool_exchanges;

/* All of it but the link: the leak checker follows the list. */
static void pool_poison(Exchange *x, bool poison) {
        char *link = (char *) &x->open_next, *end = (char *) (x + 1);

        if (poison) {
                ASAN_POISON_MEMORY_REGION(x, (size_t) (link - (char *) x));
                ASAN_POISON_MEMORY_REGION(link + sizeof x->open_next, (size_t) (end - link - sizeof x->open_next));
        } else
                ASAN_UNPOISON_MEMORY_REGION(x, sizeof *x);
}

void exchange_pool_release(void) {
        while (pool_exchanges) {
                Exchange *x = pool_exchanges;

                pool_poison(x, false);
                pool_exchanges = x->open_next;
                free(x);
        }
        n_pool_exchanges = 0;
}

Exchange *exchange_new(Frontend *fe, const ClientOps *ops, void *client_data) {
        Exchange *x = pool_exchanges;

        if (x) {
                pool_poison(x, false);
                pool_exchanges = x->open_next;
                n_pool_exchanges--;
                memset(x, 0, sizeof *x);
        } else {
                x = calloc(1, sizeof *x);
                if (!x)
                        return NULL;
        }
        x->frontend = fe;
        x->client = ops;
        x->client_data = client_data;
        x->replies = &replies;
        x->started = frontend_now(fe);
        fe->exchanges_open++;
        return x;
}

Exchange *exchange_free(Exchange *x) {
        Frontend *fe;

        if (!x)
                return NULL;
        fe = x->frontend;
        tunnel_close(x);
        if (x->state == EXCHANGE_HELD)
                router_unhold(fe, x);
        else if (x->upstream)
                forward_detach(x);
        x->held_body = mfree(x->held_body);
        router_request_closed(fe, x);
        fe->exchanges_open--;
        free(x->user);
        if (n_pool_exchanges >= POOL_EXCHANGES_MAX) {
                free(x);
                return NULL;
        }
        x->open_next = pool_exchanges;
        pool_exchanges = x;
        n_pool_exchanges++;
        pool_poison(x, true);
        return NULL;
}

void exchange_begin(Exchange *x) {
        Frontend *fe = x->frontend;

        fe->requests++;
        assign_request_id(fe, x);
        resolve_proto(fe, x);
        session_resolve_user(fe, x);
        router_dispatch(fe, x);
}

int exchange_request_body(Exchange *x, const void *data, size_t size) {
        int r;

        switch (x->state) {
        case EXCHANGE_HELD:
                return router_hold_body(x, data, size, false);
        case EXCHANGE_FORWARDING:
        case EXCHANGE_RESPONDING:
                if (x->tunnel)
                        return tunnel_from_client(x, data, size);
                if (x->req.websocket) /* before the worker's 101: kept for the tunnel */
                        return router_hold_body(x, data, size, false);
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
                return router_hold_body(x, NULL, 0, true);
        case EXCHANGE_FORWARDING:
        case EXCHANGE_RESPONDING:
                x->request_body_done = true;
                if (x->tunnel)
                        return tunnel_client_end(x);
                if (x->req.websocket)
                        return router_hold_body(x, NULL, 0, true);
                return forward_request_end(x);
        default:
                return -ECANCELED;
        }
}

void exchange_response_resume(Exchange *x) {
        if (x->upstream && (x->state == EXCHANGE_FORWARDING || x->state == EXCHANGE_RESPONDING))
                forward_response_resume(x);
}

/* ---- the forward side's replies ---- */

static bool user_name_valid(const char *s, size_t n) {
        if (n == 0 || n > COOKIE_USER_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] <= 0x20 || s[i] == 0x7f || s[i] == ';' || s[i] == ',' || s[i] == '"')
                        return false;
        return true;
}

/* Logged out, the held requests the user still has (if its move was cancelled they were released
 * already) get 503: the user they were for is gone. */
static void logout(Frontend *fe, Exchange *x) {
        if (!x->user)
                return;
        session_logout(fe, x);
        router_fail_held(fe, x->user, "the user logged out");
}

/* The client side refusing bytes means its client is gone: the forward side then drops the worker
 * connection and calls no more, so the exchange ends here. */
static int client_result(Exchange *x, int r) {
        if (r < 0 && x->state != EXCHANGE_DONE) {
                tunnel_close(x);
                x->state = EXCHANGE_DONE;
                x->upstream = NULL;
                router_request_closed(x->frontend, x);
        }
        return r;
}

static int on_response_head(Exchange *x, ResponseHead *h, const char *user, size_t user_len) {
        Frontend *fe = x->frontend;
        char name[COOKIE_USER_MAX + 1], buf[COOKIE_VALUE_MAX + 128];
        HeaderField extra[1];
        size_t n_extra = 0;
        int r;

        x->state = EXCHANGE_RESPONDING;
        x->status = h->status;
        if (h->status == 101 && tunnel_open(x) < 0) {
                log_oom();
                return client_result(x, -ENOMEM);
        }
        if (user && user_len == 1 && user[0] == '-') {
                logout(fe, x);
                extra[n_extra++] = session_cookie_field(fe, x, NULL, buf, sizeof buf);
        } else if (user && user_name_valid(user, user_len)) {
                memcpy(name, user, user_len);
                name[user_len] = 0;
                if (session_login(fe, x, name) >= 0) {
                        extra[n_extra] = session_cookie_field(fe, x, name, buf, sizeof buf);
                        if (extra[n_extra].name)
                                n_extra++;
                }
        } else if (user)
                log_warning("w%u answered request %s with an invalid Elastic-Pool-User value; ignoring it", x->worker,
                            x->id);
        h->extra = extra;
        h->n_extra = n_extra;
        r = client_result(x, x->client->response_head(x, h));
        if (r >= 0 && x->tunnel)
                router_replay_held_body(x, tunnel_from_client, tunnel_client_end);
        return r;
}

static int on_response_body(Exchange *x, const void *data, size_t size) {
        x->response_bytes += size;
        if (x->tunnel)
                return client_result(x, tunnel_from_worker(x, data, size));
        return client_result(x, x->client->response_body(x, data, size));
}

static int on_response_end(Exchange *x) {
        Frontend *fe = x->frontend;

        tunnel_close(x);
        x->state = EXCHANGE_DONE;
        x->upstream = NULL;
        fe->responses++;
        router_request_closed(fe, x);
        return x->client->response_end(x);
}

static void on_fail(Exchange *x, unsigned status, const char *reason) {
        Frontend *fe = x->frontend;
        bool head_sent = x->state == EXCHANGE_RESPONDING;
        unsigned shown = head_sent ? x->status : status;
        char extra[REQUEST_LOG_FIELDS_MAX];

        tunnel_close(x);
        x->upstream = NULL;
        x->state = EXCHANGE_DONE;
        fe->errors++;
        router_request_closed(fe, x);
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

static const ExchangeReplies replies = {
        .response_head = on_response_head,
        .response_body = on_response_body,
        .response_end = on_response_end,
        .response_fail = on_fail,
};
