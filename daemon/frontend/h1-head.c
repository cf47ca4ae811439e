/* SPDX-License-Identifier: MIT */
/* Pure checks of HTTP/1.1 request heads: the byte-level pre-scan that stands in for the strict mode
 * Debian's http-parser lacks, and small helpers for field values. No I/O, no allocation. */
#include "h1-internal.h"

#include <errno.h>
#include <http_parser.h>
#include <string.h>
#include <strings.h>

#include "macro.h"

/* Character classes of RFC 9110 5.6.2 / 5.5 as the scanner needs them. */
enum {
        K_CTL = 0, /* C0 controls other than the ones below */
        K_NUL,
        K_HTAB,
        K_LF,
        K_CR,
        K_SP,
        K_TCHAR, /* token characters */
        K_VCHAR, /* visible, not a token character, not ':' */
        K_COLON,
        K_DEL,
        K_OBS, /* obs-text, 0x80..0xff: allowed in field values only */
};

static const uint8_t char_class[256] = {
        [0] = K_NUL,           [1 ... 8] = K_CTL, ['\t'] = K_HTAB,         ['\n'] = K_LF,
        [11 ... 12] = K_CTL,   ['\r'] = K_CR,     [14 ... 31] = K_CTL,     [' '] = K_SP,
        ['!'] = K_TCHAR,       ['"'] = K_VCHAR,   ['#'] = K_TCHAR,         ['$'] = K_TCHAR,
        ['%'] = K_TCHAR,       ['&'] = K_TCHAR,   ['\''] = K_TCHAR,        ['('] = K_VCHAR,
        [')'] = K_VCHAR,       ['*'] = K_TCHAR,   ['+'] = K_TCHAR,         [','] = K_VCHAR,
        ['-'] = K_TCHAR,       ['.'] = K_TCHAR,   ['/'] = K_VCHAR,         ['0' ... '9'] = K_TCHAR,
        [':'] = K_COLON,       [';'] = K_VCHAR,   ['<'] = K_VCHAR,         ['='] = K_VCHAR,
        ['>'] = K_VCHAR,       ['?'] = K_VCHAR,   ['@'] = K_VCHAR,         ['A' ... 'Z'] = K_TCHAR,
        ['['] = K_VCHAR,       ['\\'] = K_VCHAR,  [']'] = K_VCHAR,         ['^'] = K_TCHAR,
        ['_'] = K_TCHAR,       ['`'] = K_TCHAR,   ['a' ... 'z'] = K_TCHAR, ['{'] = K_VCHAR,
        ['|'] = K_TCHAR,       ['}'] = K_VCHAR,   ['~'] = K_TCHAR,         [127] = K_DEL,
        [128 ... 255] = K_OBS,
};

void h1_scan_init(H1Scan *s, size_t max_head, size_t max_line, unsigned max_fields) {
        *s = (H1Scan) {
                .state = H1_SCAN_START,
                .max_head = max_head,
                .max_line = MIN(max_line, max_head),
                .max_fields = max_fields,
        };
}

/* The request line ends in SP "HTTP/" DIGIT "." DIGIT (RFC 9112 2.3, case-sensitive). */
static bool version_valid(const H1Scan *s) {
        uint8_t b[8];

        for (unsigned i = 0; i < 8; i++)
                b[i] = (uint8_t) (s->line_tail >> (56 - 8 * i));
        return s->line_bytes >= 9 && s->line_before == ' ' && memcmp(b, "HTTP/", 5) == 0 && b[5] >= '0' &&
               b[5] <= '9' && b[6] == '.' && b[7] >= '0' && b[7] <= '9';
}

#define SCAN_FAIL(status, reason)       \
        do {                            \
                *ret_used = i;          \
                *ret_status = (status); \
                *ret_reason = (reason); \
                return -EBADMSG;        \
        } while (0)

int h1_scan(H1Scan *s, const char *p, size_t n, size_t *ret_used, unsigned *ret_status,
            const char **ret_reason) {
        size_t i;

        for (i = 0; i < n && s->state != H1_SCAN_DONE; i++) {
                unsigned k = char_class[(uint8_t) p[i]];

                if (s->state == H1_SCAN_LINE && k != K_CR && s->line_bytes >= s->max_line)
                        SCAN_FAIL(414, "request line too long");
                if (++s->head_bytes > s->max_head)
                        SCAN_FAIL(431, "request head over max_header_size");

                switch (s->state) {
                case H1_SCAN_START:
                        if (k == K_CR) {
                                s->state = H1_SCAN_START_CR;
                                break;
                        }
                        if (k == K_LF)
                                SCAN_FAIL(400, "bare LF before the request line");
                        s->state = H1_SCAN_LINE;
                        __attribute__((fallthrough));
                case H1_SCAN_LINE:
                        if (k == K_CR)
                                s->state = H1_SCAN_LINE_CR;
                        else if (k == K_LF)
                                SCAN_FAIL(400, "bare LF in the request line");
                        else if (k == K_NUL)
                                SCAN_FAIL(400, "NUL in the request line");
                        else if (k != K_SP && k != K_TCHAR && k != K_VCHAR && k != K_COLON)
                                SCAN_FAIL(400, "invalid character in the request line");
                        else {
                                s->line_bytes++;
                                s->line_before = (uint8_t) (s->line_tail >> 56);
                                s->line_tail = (s->line_tail << 8) | (uint8_t) p[i];
                        }
                        break;
                case H1_SCAN_LINE_CR:
                        if (k == K_LF && !version_valid(s))
                                SCAN_FAIL(400, "invalid HTTP version in the request line");
                        __attribute__((fallthrough));
                case H1_SCAN_START_CR:
                case H1_SCAN_VALUE_CR:
                        if (k != K_LF)
                                SCAN_FAIL(400, s->state == H1_SCAN_VALUE_CR ? "bare CR in a field line"
                                                                            : "bare CR in the request line");
                        s->state = s->state == H1_SCAN_START_CR ? H1_SCAN_START : H1_SCAN_FIELD_START;
                        break;
                case H1_SCAN_FIELD_START:
                        if (k == K_CR)
                                s->state = H1_SCAN_END_CR;
                        else if (k == K_LF)
                                SCAN_FAIL(400, "bare LF in the head");
                        else if (k == K_SP || k == K_HTAB)
                                SCAN_FAIL(400, s->fields == 0 ? "whitespace before the first field line"
                                                              : "obs-fold (folded field line)");
                        else if (k == K_COLON)
                                SCAN_FAIL(400, "empty field name");
                        else if (k != K_TCHAR)
                                SCAN_FAIL(400, k == K_NUL ? "NUL in a field name"
                                                          : "invalid character in a field name");
                        else if (++s->fields > s->max_fields)
                                SCAN_FAIL(431, "more fields than max_header_fields");
                        else
                                s->state = H1_SCAN_NAME;
                        break;
                case H1_SCAN_NAME:
                        if (k == K_COLON)
                                s->state = H1_SCAN_VALUE;
                        else if (k == K_SP || k == K_HTAB)
                                SCAN_FAIL(400, "whitespace between a field name and its colon");
                        else if (k == K_CR || k == K_LF)
                                SCAN_FAIL(400, "field line without a colon");
                        else if (k != K_TCHAR)
                                SCAN_FAIL(400, k == K_NUL ? "NUL in a field name"
                                                          : "invalid character in a field name");
                        break;
                case H1_SCAN_VALUE:
                        if (k == K_CR)
                                s->state = H1_SCAN_VALUE_CR;
                        else if (k == K_LF)
                                SCAN_FAIL(400, "bare LF in a field line");
                        else if (k == K_NUL)
                                SCAN_FAIL(400, "NUL in a field value");
                        else if (k == K_CTL || k == K_DEL)
                                SCAN_FAIL(400, "control character in a field value");
                        break;
                case H1_SCAN_END_CR:
                        if (k != K_LF)
                                SCAN_FAIL(400, "bare CR in the head");
                        s->state = H1_SCAN_DONE;
                        break;
                default:
                        SCAN_FAIL(400, "internal scanner state");
                }
        }

        *ret_used = i;
        return s->state == H1_SCAN_DONE ? 1 : 0;
}

#undef SCAN_FAIL

void h1_chunk_scan_init(H1ChunkScan *s, size_t max_trailer) {
        *s = (H1ChunkScan) { .state = H1_CHUNK_SIZE_START, .max_trailer = max_trailer };
}

static int hex_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

#define CHUNK_FAIL(reason)              \
        do {                            \
                *ret_used = i;          \
                *ret_reason = (reason); \
                return -EBADMSG;        \
        } while (0)

/* One byte of a chunk line; i is only for CHUNK_FAIL. */
static int chunk_line_byte(H1ChunkScan *s, char c, unsigned k, size_t i, size_t *ret_used,
                           const char **ret_reason) {
        int v = hex_value(c);

        if (k != K_CR && ++s->line_bytes > H1_CHUNK_LINE_MAX)
                CHUNK_FAIL("chunk line too long");
        switch (s->state) {
        case H1_CHUNK_SIZE_START:
                if (v < 0)
                        CHUNK_FAIL("invalid chunk size");
                s->remaining = (uint64_t) v;
                s->state = H1_CHUNK_SIZE;
                return 0;
        case H1_CHUNK_SIZE:
                if (v >= 0) {
                        if (s->remaining > UINT64_MAX >> 4)
                                CHUNK_FAIL("invalid chunk size");
                        s->remaining = s->remaining << 4 | (uint64_t) v;
                } else if (c == ';')
                        s->state = H1_CHUNK_EXT;
                else if (k == K_SP || k == K_HTAB)
                        s->state = H1_CHUNK_SIZE_BWS;
                else if (k == K_CR)
                        s->state = H1_CHUNK_LINE_CR;
                else
                        CHUNK_FAIL("invalid chunk size");
                return 0;
        case H1_CHUNK_SIZE_BWS:
                if (c == ';')
                        s->state = H1_CHUNK_EXT;
                else if (k == K_CR)
                        s->state = H1_CHUNK_LINE_CR;
                else if (k != K_SP && k != K_HTAB)
                        CHUNK_FAIL("invalid chunk line");
                return 0;
        default: /* H1_CHUNK_EXT */
                if (k == K_CR)
                        s->state = H1_CHUNK_LINE_CR;
                else if (k == K_LF)
                        CHUNK_FAIL("bare LF in a chunk line");
                else if (k == K_CTL || k == K_NUL || k == K_DEL)
                        CHUNK_FAIL("control character in a chunk extension");
                return 0;
        }
}

/* One byte of the trailer section (field lines as in a head, then an empty line). */
static int chunk_trailer_byte(H1ChunkScan *s, unsigned k, size_t i, size_t *ret_used,
                              const char **ret_reason) {
        if (++s->trailer_bytes > s->max_trailer)
                CHUNK_FAIL("trailer section too long");
        switch (s->state) {
        case H1_CHUNK_TRAILER_START:
                if (k == K_CR)
                        s->state = H1_CHUNK_END_CR;
                else if (k == K_TCHAR)
                        s->state = H1_CHUNK_TRAILER_NAME;
                else
                        CHUNK_FAIL(k == K_SP || k == K_HTAB ? "obs-fold in the trailer section"
                                                            : "invalid character in a trailer field name");
                return 0;
        case H1_CHUNK_TRAILER_NAME:
                if (k == K_COLON)
                        s->state = H1_CHUNK_TRAILER_VALUE;
                else if (k != K_TCHAR)
                        CHUNK_FAIL("invalid trailer field line");
                return 0;
        case H1_CHUNK_TRAILER_VALUE:
                if (k == K_CR)
                        s->state = H1_CHUNK_TRAILER_CR;
                else if (k == K_LF || k == K_NUL || k == K_CTL || k == K_DEL)
                        CHUNK_FAIL("control character in a trailer field");
                return 0;
        case H1_CHUNK_TRAILER_CR:
                if (k != K_LF)
                        CHUNK_FAIL("bare CR in the trailer section");
                s->state = H1_CHUNK_TRAILER_START;
                return 0;
        default: /* H1_CHUNK_END_CR */
                if (k != K_LF)
                        CHUNK_FAIL("bare CR in the trailer section");
                s->state = H1_CHUNK_DONE;
                return 0;
        }
}

int h1_chunk_scan(H1ChunkScan *s, const char *p, size_t n, size_t *ret_used, const char **ret_reason) {
        size_t i = 0;
        int r;

        while (i < n && s->state != H1_CHUNK_DONE) {
                unsigned k = char_class[(uint8_t) p[i]];

                switch (s->state) {
                case H1_CHUNK_DATA: {
                        /* the data itself is not looked at: skip it */
                        size_t skip = (size_t) MIN(s->remaining, (uint64_t) (n - i));
                        i += skip;
                        s->remaining -= skip;
                        if (s->remaining == 0)
                                s->state = H1_CHUNK_DATA_CR;
                        continue;
                }
                case H1_CHUNK_LINE_CR:
                        if (k != K_LF)
                                CHUNK_FAIL("bare CR in a chunk line");
                        s->line_bytes = 0;
                        s->state = s->remaining > 0 ? H1_CHUNK_DATA : H1_CHUNK_TRAILER_START;
                        break;
                case H1_CHUNK_DATA_CR:
                        if (k != K_CR)
                                CHUNK_FAIL("chunk data not followed by CRLF");
                        s->state = H1_CHUNK_DATA_LF;
                        break;
                case H1_CHUNK_DATA_LF:
                        if (k != K_LF)
                                CHUNK_FAIL("chunk data not followed by CRLF");
                        s->state = H1_CHUNK_SIZE_START;
                        break;
                case H1_CHUNK_SIZE_START:
                case H1_CHUNK_SIZE:
                case H1_CHUNK_SIZE_BWS:
                case H1_CHUNK_EXT:
                        r = chunk_line_byte(s, p[i], k, i, ret_used, ret_reason);
                        if (r < 0)
                                return r;
                        break;
                default:
                        r = chunk_trailer_byte(s, k, i, ret_used, ret_reason);
                        if (r < 0)
                                return r;
                }
                i++;
        }

        *ret_used = i;
        return s->state == H1_CHUNK_DONE ? 1 : 0;
}

#undef CHUNK_FAIL

static bool is_ows(char c) {
        return c == ' ' || c == '\t';
}

bool h1_list_next(const char *v, size_t n, size_t *cursor, const char **ret_elem, size_t *ret_len) {
        size_t i = *cursor;

        for (;;) {
                size_t start, end;

                while (i < n && (is_ows(v[i]) || v[i] == ','))
                        i++;
                if (i >= n) {
                        *cursor = n;
                        return false;
                }
                start = i;
                while (i < n && v[i] != ',')
                        i++;
                end = i;
                while (end > start && is_ows(v[end - 1]))
                        end--;
                if (end > start) {
                        *cursor = i;
                        *ret_elem = v + start;
                        *ret_len = end - start;
                        return true;
                }
        }
}

bool h1_str_eq(const char *s, size_t n, const char *lit) {
        return strlen(lit) == n && strncasecmp(s, lit, n) == 0;
}

bool h1_list_has(const char *v, size_t n, const char *token) {
        const char *e;
        size_t cursor = 0, len;

        while (h1_list_next(v, n, &cursor, &e, &len)) {
                const char *semi = memchr(e, ';', len);
                if (semi) {
                        len = (size_t) (semi - e);
                        while (len > 0 && is_ows(e[len - 1]))
                                len--;
                }
                if (h1_str_eq(e, len, token))
                        return true;
        }
        return false;
}

static int base64url_value(char c) {
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '-')
                return 62;
        if (c == '_')
                return 63;
        return -1;
}

ssize_t h1_http2_settings_decode(const char *in, size_t n, uint8_t *out, size_t out_size) {
        uint32_t acc = 0;
        unsigned bits = 0;
        size_t len = 0;

        /* Padding is not part of base64url as RFC 9113 uses it, but tolerate what a client may add. */
        for (unsigned pad = 0; pad < 2 && n > 0 && in[n - 1] == '='; pad++)
                n--;
        if (n % 4 == 1)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                int v = base64url_value(in[i]);
                if (v < 0)
                        return -EINVAL;
                acc = (acc << 6) | (uint32_t) v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        if (len >= out_size)
                                return -ENOBUFS;
                        out[len++] = (uint8_t) (acc >> bits);
                }
        }
        if (len % 6 != 0)
                return -EINVAL; /* SETTINGS payload: identifier (2 bytes) + value (4 bytes) each */
        return (ssize_t) len;
}

const char *h1_status_phrase(unsigned status) {
        const char *s;

        if (status > 999)
                return "";
        s = http_status_str((enum http_status) status);
        return streq(s, "<unknown>") ? "" : s;
}
