/* SPDX-License-Identifier: MIT */
#include "session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "frontend-internal.h"
#include "log.h"
#include "macro.h"

/* At most one warning per this span about logouts forgotten past max_revoked_users. */
#define REVOCATION_WARNING_INTERVAL (60 * USEC_PER_SEC)

/* The commander's surface forgets a user when its worker goes away or when it logs out, and a logout
 * revokes the cookies issued before it; so what is left is a worker gone, a cookie from before this
 * commander started (the surface lives in memory), or a logout whose record was forgotten past
 * max_revoked_users. */
const char *session_unknown_user_reason(const Frontend *fe, const Exchange *x) {
        uint64_t issued = x->cookie_issued;

        if (issued <= fe->cookie_epoch)
                return "the surface does not know it (its cookie is older than this commander)";
        if (issued <= fe->revocations.forgotten_through)
                return "the surface does not know it (its worker is gone, or it logged out and that logout "
                       "was forgotten past max_revoked_users)";
        return "the surface does not know it (its worker is gone)";
}

void session_resolve_user(Frontend *fe, Exchange *x) {
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
        x->cookie_issued = issued;
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

void session_logout(Frontend *fe, Exchange *x) {
        if (!x->user)
                return;
        revoke_cookies(fe, x->user);
        fe->commander->logout(fe->commander_userdata, x->user);
}

int session_login(Frontend *fe, Exchange *x, const char *user) {
        _cleanup_free_ char *copy = NULL;
        int r;

        /* before the commander counts x's request for user: x->user must then name user, OOM or not */
        if (!x->user || !streq(x->user, user)) {
                copy = strdup(user);
                if (!copy)
                        return -ENOMEM;
        }
        r = fe->commander->login(fe->commander_userdata, user, x->worker, x->user, &x->ticket);
        if (r <= 0 || !copy)
                return r;
        free(x->user);
        x->user = TAKE_PTR(copy);
        return 0;
}

HeaderField session_cookie_field(Frontend *fe, const Exchange *x, const char *user, char *buf, size_t size) {
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
