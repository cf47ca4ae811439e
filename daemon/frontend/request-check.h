/* SPDX-License-Identifier: MIT */
#pragma once

/* What a request may name, the same for HTTP/1.1 and HTTP/2: the rules the HTTP/1.1 side applies to
 * its request line and Host, applied to h2's :path, :authority (or host) and :scheme too, so that a
 * request refused over one protocol is not forwarded over the other. Pure. */

#include <stdbool.h>
#include <stddef.h>

/* A Host value or authority: host [":" port] with host a reg-name, IPv4 or an IP-literal in brackets; no
 * userinfo, no path, no whitespace. Empty is valid (RFC 9112 3.2). */
bool request_authority_valid(const char *p, size_t n);

/* An origin-form target ("/" and visible ASCII, no fragment), or "*" when options (an OPTIONS request). */
bool request_target_valid(const char *p, size_t n, bool options);

/* "http" or "https", in any case: the schemes the HTTP/1.1 side accepts in an absolute-form target. */
bool request_scheme_valid(const char *p, size_t n);
