/* SPDX-License-Identifier: MIT */
#pragma once

/* Inside the forward side: the pure halves (request serialisation, response head filtering) that
 * forward.c calls on every exchange and test-forward.c checks byte for byte, the buffer limits, and a
 * window onto a pool's buffers for tests. Nothing here is for the router. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exchange.h"
#include "forward.h"

/* Request body buffered per connection (bytes accepted from the client, not yet taken by the worker's
 * socket): forward_request_body() returns 1 above the high-water mark and the client is resumed once
 * the buffer drained below the low-water mark. 256 KiB keeps a gigabit link busy across one loop
 * iteration without letting a slow worker make the commander hold a large upload. */
#define FORWARD_BODY_HIGH_WATER (256U * 1024U)
#define FORWARD_BODY_LOW_WATER (64U * 1024U)
/* A client that keeps pushing past the high-water mark ignored the back-pressure contract: past this
 * the bytes are refused (-ENOBUFS) rather than buffered without bound. */
#define FORWARD_BODY_HARD_LIMIT (FORWARD_BODY_HIGH_WATER + 1024U * 1024U)
/* A worker's response head (status line, fields, interim 1xx heads before it) must fit here; the read
 * buffer is this size and is reused for body bytes. */
#define FORWARD_RESPONSE_HEAD_MAX (64U * 1024U)
/* A request whose head and body together stay under this is kept whole in the connection buffer until
 * the first response byte, so that it can be replayed on a fresh connection when a reused one turns out
 * to have been closed by the worker (only when that cannot repeat an effect: an idempotent method, or none
 * of it was written). */
#define FORWARD_REPLAY_MAX (64U * 1024U)
/* A request with a known body length up to this is sent with its head in one write once the body is
 * complete, instead of the head first and the body in separate writes. */
#define FORWARD_COALESCE_MAX (16U * 1024U)

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

/* For tests: the largest request-body buffer and response read buffer any connection of p had. */
typedef struct ForwardBufferStats {
        size_t request_buffer_peak;  /* bytes queued for the worker, head included */
        size_t response_buffer_peak; /* bytes held from the worker */
        unsigned connects;           /* connect() calls made (EAGAIN retries included) */
        unsigned retries;            /* requests replayed on a fresh connection */
} ForwardBufferStats;

void forward_pool_buffer_stats(const ForwardPool *p, ForwardBufferStats *ret);
