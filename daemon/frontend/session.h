/* SPDX-License-Identifier: MIT */
#pragma once

/* Who a request's user is, by the sticky cookie: the signed cookie read on the way in (a guest when it
 * is absent, forged, expired or revoked by a logout), and on the way out the Set-Cookie of a login or
 * the deletion and revocation of a logout, each told to the commander. */

#include "exchange.h"

/* Sets x->user (and x->cookie_issued) from a valid, unrevoked sticky cookie; logs why one is refused. */
void session_resolve_user(Frontend *fe, Exchange *x);

/* Why the commander does not know the user of a valid cookie (for the line that places it again). */
const char *session_unknown_user_reason(const Frontend *fe, const Exchange *x);

/* The worker answering x logged user in: the commander is told (and may move the user on); x's request
 * now counts for user. 0, -errno (then no cookie is set). */
int session_login(Frontend *fe, Exchange *x, const char *user);
/* x's user logged out: every cookie issued to it until now is revoked and the commander forgets it. */
void session_logout(Frontend *fe, Exchange *x);

/* The Set-Cookie field that logs user in (or, NULL, deletes the cookie), written into buf. A field with
 * a NULL name when the cookie cannot be signed. */
HeaderField session_cookie_field(Frontend *fe, const Exchange *x, const char *user, char *buf, size_t size);
