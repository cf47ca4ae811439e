/* SPDX-License-Identifier: MIT */
#include "query.h"

#include <errno.h>
#include <string.h>

#include "parse-util.h"

int target_split(const char *url, size_t len, Target *ret) {
        const char *q, *hash, *end = url + len;

        /* A proxy may send absolute-form; only the path matters to us. */
        size_t scheme = len >= 7 && strncmp(url, "http://", 7) == 0    ? 7
                        : len >= 8 && strncmp(url, "https://", 8) == 0 ? 8
                                                                        : 0;
        if (scheme > 0) {
                const char *p = memchr(url + scheme, '/', len - scheme);
                if (!p)
                        return -EINVAL;
                len = (size_t) (end - p);
                url = p;
        }
        if (len == 0 || url[0] != '/')
                return -EINVAL;

        hash = memchr(url, '#', len);
        if (hash)
                end = hash;
        q = memchr(url, '?', (size_t) (end - url));
        *ret = (Target) {
                .path = url,
                .path_len = (size_t) ((q ?: end) - url),
                .query = q ? q + 1 : NULL,
                .query_len = q ? (size_t) (end - q - 1) : 0,
        };
        return 0;
}

bool target_path_is(const Target *t, const char *s) {
        size_t l = strlen(s);

        return t->path_len == l && memcmp(t->path, s, l) == 0;
}

static int unhex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

static int decode(const char *s, size_t len, char *buf, size_t size) {
        size_t n = 0;

        for (size_t i = 0; i < len; i++) {
                char c = s[i];

                if (c == '+')
                        c = ' ';
                else if (c == '%') {
                        int hi, lo;

                        if (i + 2 >= len)
                                return -EINVAL;
                        hi = unhex(s[i + 1]);
                        lo = unhex(s[i + 2]);
                        if (hi < 0 || lo < 0)
                                return -EINVAL;
                        c = (char) (hi << 4 | lo);
                        i += 2;
                }
                if (c == 0)
                        return -EINVAL; /* would silently truncate the value */
                if (n + 1 >= size)
                        return -ENOBUFS;
                buf[n++] = c;
        }
        buf[n] = 0;
        return (int) n;
}

int query_get(const char *query, size_t query_len, const char *name, char *buf, size_t size) {
        size_t name_len = strlen(name);
        const char *p = query, *end = query + query_len;

        if (!query)
                return -ENOENT;

        while (p < end) {
                const char *amp = memchr(p, '&', (size_t) (end - p)) ?: end;
                const char *eq = memchr(p, '=', (size_t) (amp - p));
                const char *key_end = eq ?: amp;

                if ((size_t) (key_end - p) == name_len && memcmp(p, name, name_len) == 0) {
                        const char *v = eq ? eq + 1 : amp;
                        return decode(v, (size_t) (amp - v), buf, size);
                }
                p = amp + 1;
        }
        return -ENOENT;
}

int query_get_uint64(const char *query, size_t query_len, const char *name, uint64_t max, uint64_t def,
                     uint64_t *ret) {
        char buf[32];
        uint64_t v;
        int r;

        r = query_get(query, query_len, name, buf, sizeof buf);
        if (r == -ENOENT) {
                *ret = def;
                return 0;
        }
        if (r == -ENOBUFS)
                return -ERANGE; /* over 31 characters: far beyond any bound we take */
        if (r < 0)
                return r;
        if (r == 0 || strspn(buf, "0123456789") != (size_t) r)
                return -EINVAL; /* parse_uint64 would allow blanks; a query value may not */
        r = parse_uint64(buf, &v);
        if (r < 0)
                return r;
        if (v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}
