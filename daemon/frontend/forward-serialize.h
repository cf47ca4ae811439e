/* SPDX-License-Identifier: MIT */
#pragma once

/* The pure halves of the forward side: request serialisation and response head filtering, which
 * forward.c calls on every exchange and test-forward.c checks byte for byte. No I/O. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exchange.h"

/* Serialises x's request head for a worker (request line, Host, end-to-end fields, one Cookie field
 * without our cookie, X-Forwarded-For/-Proto, X-Request-Id, X-Elastic-Pool-User, body framing, the
 * blank line) into buf. Like snprintf, *ret_len is the full length even when it exceeds size (then
 * buf holds a prefix only; call again with a larger buffer). cookie_name may be NULL.
 * 0; -EBADMSG when a byte that must not reach a worker (CR, LF, NUL, other controls; a non-token
 * method or field name) is in what would be copied; -EINVAL for an inconsistent head (empty
 * target, a body length without a body). */
int forward_request_serialize(const Exchange *x, const char *cookie_name, char *buf, size_t size,
                              size_t *ret_len);

/* Filters a worker's response fields for the client: hop-by-hop fields (and those named by Connection),
 * framing fields (Content-Length, Transfer-Encoding: the framing travels in ResponseHead) and
 * Elastic-Pool-User are dropped; the latter's (first) value is returned in ret_user/ret_user_len
 * (NULL/0 when absent). out has room for n fields. Values are trimmed of surrounding whitespace.
 * 0 and *ret_n, or -EBADMSG for a name that is not a token or a value with CR, LF, NUL or another
 * control byte (obs-fold included). */
int forward_response_filter(const HeaderField *in, size_t n, HeaderField *out, size_t *ret_n,
                            const char **ret_user, size_t *ret_user_len);
