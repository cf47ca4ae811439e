/* SPDX-License-Identifier: MIT */
#include "loadgen-json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void skip_ws(JsonCursor *c) {
        while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
                c->p++;
}

char json_peek(JsonCursor *c) {
        skip_ws(c);
        return c->p < c->end ? *c->p : 0;
}

static int expect(JsonCursor *c, char ch) {
        if (json_peek(c) != ch)
                return -EBADMSG;
        c->p++;
        return 0;
}

static int hex4(const char *p, unsigned *ret) {
        unsigned v = 0;

        for (int i = 0; i < 4; i++) {
                char h = p[i];
                v <<= 4;
                if (h >= '0' && h <= '9')
                        v |= (unsigned) (h - '0');
                else if (h >= 'a' && h <= 'f')
                        v |= (unsigned) (h - 'a' + 10);
                else if (h >= 'A' && h <= 'F')
                        v |= (unsigned) (h - 'A' + 10);
                else
                        return -EBADMSG;
        }
        *ret = v;
        return 0;
}

/* Decodes the escape after a backslash at c->p; returns the byte to store. */
static int unescape(JsonCursor *c) {
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *k;
        unsigned u;

        if (c->p >= c->end)
                return -EBADMSG;
        k = memchr(from, *c->p, sizeof from - 1);
        if (k) {
                c->p++;
                return (unsigned char) to[k - from];
        }
        if (*c->p != 'u' || c->end - c->p < 5 || hex4(c->p + 1, &u) < 0)
                return -EBADMSG;
        c->p += 5;
        return u < 0x80 ? (int) u : '?';
}

int json_read_string(JsonCursor *c, char *buf, size_t size) {
        size_t n = 0;
        bool overflow = false;

        if (expect(c, '"') < 0)
                return -EBADMSG;
        while (c->p < c->end && *c->p != '"') {
                int ch = (unsigned char) *c->p++;

                if (ch < 0x20)
                        return -EBADMSG;
                if (ch == '\\') {
                        ch = unescape(c);
                        if (ch < 0)
                                return ch;
                }
                if (buf && n + 1 < size)
                        buf[n++] = (char) ch;
                else
                        overflow = true;
        }
        if (c->p >= c->end)
                return -EBADMSG;
        c->p++;
        if (buf && size > 0)
                buf[n] = 0;
        return overflow && buf ? -ENOBUFS : 0;
}

int json_read_number(JsonCursor *c, double *ret) {
        char tmp[64];
        size_t n = 0;
        char *e;
        double v;

        /* strtod() wants a NUL-terminated string and would happily read past `end`: copy the token */
        skip_ws(c);
        while (c->p + n < c->end && n < sizeof tmp - 1 && c->p[n] && strchr("+-.0123456789eE", c->p[n]))
                n++;
        if (n == 0 || n == sizeof tmp - 1)
                return -EBADMSG;
        memcpy(tmp, c->p, n);
        tmp[n] = 0;
        v = strtod(tmp, &e);
        if (e != tmp + n || !isfinite(v))
                return -EBADMSG;
        c->p += n;
        *ret = v;
        return 0;
}

static bool literal(JsonCursor *c, const char *word) {
        size_t l = strlen(word);

        skip_ws(c);
        if ((size_t) (c->end - c->p) < l || memcmp(c->p, word, l) != 0)
                return false;
        c->p += l;
        return true;
}

int json_read_bool(JsonCursor *c, bool *ret) {
        if (literal(c, "true"))
                *ret = true;
        else if (literal(c, "false"))
                *ret = false;
        else
                return -EBADMSG;
        return 0;
}

int json_read_null(JsonCursor *c) {
        return literal(c, "null") ? 1 : 0;
}

int json_enter(JsonCursor *c, char open) {
        return expect(c, open);
}

int json_next_key(JsonCursor *c, bool *first, char *key, size_t size) {
        int r;

        if (json_peek(c) == '}') {
                c->p++;
                return 0;
        }
        if (!*first && expect(c, ',') < 0)
                return -EBADMSG;
        *first = false;
        r = json_read_string(c, key, size);
        if (r < 0 && r != -ENOBUFS)
                return r;
        if (expect(c, ':') < 0)
                return -EBADMSG;
        return 1;
}

int json_next_element(JsonCursor *c, bool *first) {
        if (json_peek(c) == ']') {
                c->p++;
                return 0;
        }
        if (!*first && expect(c, ',') < 0)
                return -EBADMSG;
        *first = false;
        return json_peek(c) ? 1 : -EBADMSG;
}

static int skip_at_depth(JsonCursor *c, unsigned depth) {
        bool first = true, b;
        double d;
        int r;

        if (depth > JSON_DEPTH_MAX)
                return -EBADMSG;
        switch (json_peek(c)) {
        case '{':
                c->p++;
                while ((r = json_next_key(c, &first, NULL, 0)) > 0) {
                        r = skip_at_depth(c, depth + 1);
                        if (r < 0)
                                return r;
                }
                return r;
        case '[':
                c->p++;
                while ((r = json_next_element(c, &first)) > 0) {
                        r = skip_at_depth(c, depth + 1);
                        if (r < 0)
                                return r;
                }
                return r;
        case '"':
                return json_read_string(c, NULL, 0);
        case 't':
        case 'f':
                return json_read_bool(c, &b);
        case 'n':
                return json_read_null(c) > 0 ? 0 : -EBADMSG;
        default:
                return json_read_number(c, &d);
        }
}

int json_skip_value(JsonCursor *c) {
        return skip_at_depth(c, 0);
}
