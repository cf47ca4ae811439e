/* SPDX-License-Identifier: MIT */
#include "request-check.h"

#include <string.h>
#include <strings.h>

static bool is_unreserved_or_sub_delim(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c != 0 && strchr("-._~%!$&'()*+,;=", c) != NULL);
}

static bool port_valid(const char *p, size_t n) {
        if (n > 5)
                return false;
        for (size_t i = 0; i < n; i++)
                if (p[i] < '0' || p[i] > '9')
                        return false;
        return true;
}

bool request_authority_valid(const char *p, size_t n) {
        size_t i = 0;

        if (n == 0)
                return true;
        if (p[0] == '[') {
                for (i = 1; i < n && p[i] != ']'; i++)
                        if (!(is_unreserved_or_sub_delim(p[i]) || p[i] == ':'))
                                return false;
                if (i >= n || i == 1)
                        return false;
                i++; /* ']' */
        } else
                for (; i < n && p[i] != ':'; i++)
                        if (!is_unreserved_or_sub_delim(p[i]))
                                return false;
        if (i == n)
                return true;
        if (p[i] != ':')
                return false;
        return port_valid(p + i + 1, n - i - 1);
}

/* The request line the worker gets is split at spaces: only visible ASCII may be in it. A fragment is
 * never sent (RFC 9110 7.1); the HTTP/1.1 side refuses one. */
bool request_target_valid(const char *p, size_t n, bool options) {
        if (n == 1 && p[0] == '*')
                return options;
        if (n == 0 || p[0] != '/')
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) p[i];
                if (c <= 0x20 || c >= 0x7f || c == '#')
                        return false;
        }
        return true;
}

bool request_scheme_valid(const char *p, size_t n) {
        return (n == 4 && strncasecmp(p, "http", 4) == 0) || (n == 5 && strncasecmp(p, "https", 5) == 0);
}
