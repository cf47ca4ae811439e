/* SPDX-License-Identifier: MIT */
/* The pure halves of the forward side: what a request looks like on the wire to a worker, and which of
 * a worker's response fields the client may see. No I/O, no allocation: forward.c serialises into a
 * per-connection buffer that it reuses for every exchange. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "forward-serialize.h"
#include "macro.h"

typedef struct Name {
        const char *s; /* lowercase */
        size_t len;
} Name;

#define NAME(s) { s, sizeof(s) - 1 }

/* Never forwarded to a worker: hop-by-hop fields (RFC 9110 7.6.1 and the usual proxy ones), Expect
 * (the front end answers 100-continue itself), everything we write ourselves, and Elastic-Pool-User,
 * which only a worker says. Compared with '_' read as '-' (name_is_folded()): CGI, WSGI, Rack and PHP
 * map both to the same HTTP_X_ELASTIC_POOL_USER, so X_Elastic_Pool_User would pass for ours. */
static const Name request_dropped[] = {
        NAME("connection"),      NAME("keep-alive"),          NAME("proxy-connection"),
        NAME("te"),              NAME("trailer"),             NAME("transfer-encoding"),
        NAME("upgrade"),         NAME("proxy-authorization"), NAME("proxy-authenticate"),
        NAME("http2-settings"),  NAME("expect"),              NAME("host"),
        NAME("content-length"),  NAME("x-elastic-pool-user"), NAME("x-forwarded-proto"),
        NAME("x-request-id"),    NAME("elastic-pool-user"),
};

/* Never passed back to the client: hop-by-hop fields and framing (which travels in ResponseHead). */
static const Name response_dropped[] = {
        NAME("connection"),         NAME("keep-alive"),         NAME("proxy-connection"),
        NAME("te"),                 NAME("trailer"),            NAME("transfer-encoding"),
        NAME("upgrade"),            NAME("proxy-authorization"), NAME("proxy-authenticate"),
        NAME("http2-settings"),     NAME("content-length"),
};

static const Name name_connection = NAME("connection");
static const Name name_cookie = NAME("cookie");
static const Name name_xff = NAME("x-forwarded-for");
static const Name name_user = NAME("elastic-pool-user");
static const Name name_forwarded = NAME("forwarded");

typedef struct Writer {
        char *buf;
        size_t size;
        size_t len; /* may exceed size: then only a prefix was stored */
} Writer;

static void put(Writer *w, const char *s, size_t n) {
        if (n > 0 && w->len < w->size)
                memcpy(w->buf + w->len, s, MIN(n, w->size - w->len));
        w->len += n;
}

/* "" s "" only compiles for a string literal: sizeof of a pointer can never sneak in */
#define put_lit(w, s) put(w, "" s "", sizeof(s) - 1)

static void put_u64(Writer *w, uint64_t v) {
        char d[20];
        size_t i = sizeof(d);

        do {
                d[--i] = (char) ('0' + v % 10);
                v /= 10;
        } while (v > 0);
        put(w, d + i, sizeof(d) - i);
}

static char lower(char c) {
        return c >= 'A' && c <= 'Z' ? (char) (c + ('a' - 'A')) : c;
}

static bool name_is(const char *n, size_t len, const Name *want) {
        if (len != want->len)
                return false;
        for (size_t i = 0; i < len; i++)
                if (lower(n[i]) != want->s[i])
                        return false;
        return true;
}

static bool name_in(const char *n, size_t len, const Name *set, size_t n_set) {
        for (size_t i = 0; i < n_set; i++)
                if (name_is(n, len, set + i))
                        return true;
        return false;
}

/* name_is() with '_' read as '-': the names gateways turn into the same variable. */
static bool name_is_folded(const char *n, size_t len, const Name *want) {
        if (len != want->len)
                return false;
        for (size_t i = 0; i < len; i++)
                if ((n[i] == '_' ? '-' : lower(n[i])) != want->s[i])
                        return false;
        return true;
}

static bool name_in_folded(const char *n, size_t len, const Name *set, size_t n_set) {
        for (size_t i = 0; i < n_set; i++)
                if (name_is_folded(n, len, set + i))
                        return true;
        return false;
}

static bool name_eq_ci(const char *a, size_t a_len, const char *b, size_t b_len) {
        if (a_len != b_len)
                return false;
        for (size_t i = 0; i < a_len; i++)
                if (lower(a[i]) != lower(b[i]))
                        return false;
        return true;
}

/* RFC 9110 5.6.2 tchar. A switch, not strchr(): every response field name and request method is walked
 * through it, and a strchr() call per '-' showed in the profile. */
static bool is_tchar(unsigned char c) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
                return true;
        switch (c) {
        case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
        case '-': case '.': case '^': case '_': case '`': case '|': case '~':
                return true;
        default:
                return false;
        }
}

static bool is_token(const char *s, size_t len) {
        if (len == 0)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!is_tchar((unsigned char) s[i]))
                        return false;
        return true;
}

/* field-content: VCHAR, SP, HTAB, obs-text. No CR, LF, NUL nor any other control byte. */
static bool is_field_value(const char *s, size_t len) {
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char) s[i];
                if ((c < 0x20 && c != '\t') || c == 0x7f)
                        return false;
        }
        return true;
}

/* Request target and authority: visible bytes only (no SP, no controls). */
static bool is_visible(const char *s, size_t len) {
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c <= 0x20 || c == 0x7f)
                        return false;
        }
        return true;
}

static bool is_ows(char c) {
        return c == ' ' || c == '\t';
}

static void trim(const char **s, size_t *len) {
        while (*len > 0 && is_ows((*s)[0])) {
                (*s)++;
                (*len)--;
        }
        while (*len > 0 && is_ows((*s)[*len - 1]))
                (*len)--;
}

/* Is name one of the comma-separated tokens of a Connection field among fields? */
static bool listed_in_connection(const HeaderField *fields, size_t n, const char *name, size_t name_len) {
        for (size_t i = 0; i < n; i++) {
                const char *v = fields[i].value, *end = v + fields[i].value_len;

                if (!name_is(fields[i].name, fields[i].name_len, &name_connection))
                        continue;
                while (v < end) {
                        const char *comma = memchr(v, ',', (size_t) (end - v));
                        const char *tok = v;
                        size_t tok_len = (size_t) ((comma ? comma : end) - v);

                        trim(&tok, &tok_len);
                        if (name_eq_ci(tok, tok_len, name, name_len))
                                return true;
                        v = comma ? comma + 1 : end;
                }
        }
        return false;
}

/* One Cookie field from every Cookie field of the request (HTTP/2 sends one per pair), our own cookie
 * taken out; nothing at all when no pair is left. */
static int put_cookies(Writer *w, const HeaderField *fields, size_t n, const char *cookie_name) {
        size_t cookie_name_len = cookie_name ? strlen(cookie_name) : 0, mark = w->len;
        bool any = false;

        put_lit(w, "Cookie: ");
        for (size_t i = 0; i < n; i++) {
                const char *v = fields[i].value, *end = v + fields[i].value_len;

                if (!name_is(fields[i].name, fields[i].name_len, &name_cookie))
                        continue;
                if (!is_field_value(fields[i].value, fields[i].value_len))
                        return -EBADMSG;
                while (v < end) {
                        const char *semi = memchr(v, ';', (size_t) (end - v));
                        const char *pair = v, *eq;
                        size_t pair_len = (size_t) ((semi ? semi : end) - v), key_len;

                        v = semi ? semi + 1 : end;
                        trim(&pair, &pair_len);
                        if (pair_len == 0)
                                continue;
                        eq = memchr(pair, '=', pair_len);
                        key_len = eq ? (size_t) (eq - pair) : pair_len;
                        while (key_len > 0 && is_ows(pair[key_len - 1]))
                                key_len--;
                        /* cookie names are case-sensitive (RFC 6265 5.4) */
                        if (cookie_name_len > 0 && key_len == cookie_name_len &&
                            memcmp(pair, cookie_name, key_len) == 0)
                                continue;
                        if (any)
                                put_lit(w, "; ");
                        put(w, pair, pair_len);
                        any = true;
                }
        }
        if (!any)
                w->len = mark;
        else
                put_lit(w, "\r\n");
        return 0;
}

static void put_xff_separator(Writer *w, bool any) {
        if (any)
                put_lit(w, ", ");
        else
                put_lit(w, "X-Forwarded-For: ");
}

/* Dotted quad, as inet_ntop() writes it: glibc's formats IPv4 with sprintf(), a vfprintf per request. */
static void format_ipv4(const uint8_t a[static 4], char out[static INET_ADDRSTRLEN]) {
        size_t n = 0;

        for (size_t i = 0; i < 4; i++) {
                if (i > 0)
                        out[n++] = '.';
                if (a[i] >= 100)
                        out[n++] = (char) ('0' + a[i] / 100);
                if (a[i] >= 10)
                        out[n++] = (char) ('0' + a[i] / 10 % 10);
                out[n++] = (char) ('0' + a[i] % 10);
        }
        out[n] = 0;
}

/* The client's own X-Forwarded-For (all of them, in order) and then the address it connected from. */
static int put_forwarded_for(Writer *w, const Exchange *x) {
        const HeaderField *fields = x->req.fields;
        char ip[INET6_ADDRSTRLEN] = "";
        bool any = false;

        if (x->peer.ss_family == AF_INET) {
                const struct sockaddr_in *sin = (const struct sockaddr_in *) &x->peer;
                format_ipv4((const uint8_t *) &sin->sin_addr, ip);
        } else if (x->peer.ss_family == AF_INET6) {
                const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *) &x->peer;
                if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr))
                        format_ipv4(sin6->sin6_addr.s6_addr + 12, ip);
                else
                        (void) inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip));
        }

        for (size_t i = 0; i < x->req.n_fields; i++) {
                const char *v = fields[i].value;
                size_t len = fields[i].value_len;

                if (!name_is(fields[i].name, fields[i].name_len, &name_xff))
                        continue;
                if (!is_field_value(v, len))
                        return -EBADMSG;
                trim(&v, &len);
                if (len == 0)
                        continue;
                put_xff_separator(w, any);
                put(w, v, len);
                any = true;
        }
        if (ip[0]) {
                put_xff_separator(w, any);
                put(w, ip, strlen(ip));
                any = true;
        }
        if (any)
                put_lit(w, "\r\n");
        return 0;
}

static int put_fields(Writer *w, const Exchange *x, const char *cookie_name) {
        const HeaderField *fields = x->req.fields;
        size_t n = x->req.n_fields;
        bool has_connection = false, cookies_done = false;
        int r;

        for (size_t i = 0; i < n; i++) {
                if (!is_token(fields[i].name, fields[i].name_len))
                        return -EBADMSG;
                if (name_is(fields[i].name, fields[i].name_len, &name_connection))
                        has_connection = true;
        }

        for (size_t i = 0; i < n; i++) {
                const char *name = fields[i].name, *v = fields[i].value;
                size_t name_len = fields[i].name_len, len = fields[i].value_len;

                if (name_is(name, name_len, &name_cookie)) {
                        /* joined where the first one stood */
                        if (!cookies_done) {
                                r = put_cookies(w, fields + i, n - i, cookie_name);
                                if (r < 0)
                                        return r;
                                cookies_done = true;
                        }
                        continue;
                }
                /* X-Forwarded-For is written after the fields, the client's own first */
                if (name_is_folded(name, name_len, &name_xff) ||
                    name_in_folded(name, name_len, request_dropped, ELEMENTSOF(request_dropped)))
                        continue;
                /* RFC 7239, like X-Forwarded-Proto: believed only from trusted_proxies */
                if (name_is(name, name_len, &name_forwarded) && !x->peer_trusted)
                        continue;
                if (has_connection && listed_in_connection(fields, n, name, name_len))
                        continue;
                if (!is_field_value(v, len))
                        return -EBADMSG;
                trim(&v, &len);
                put(w, name, name_len);
                put_lit(w, ": ");
                put(w, v, len);
                put_lit(w, "\r\n");
        }
        return 0;
}

/* Sec-WebSocket-Key for a handshake that came without one (an HTTP/2 extended CONNECT has none): 16 bytes
 * in base64 (RFC 6455 4.1). A nonce the worker only echoes hashed, not a secret: folded from the request
 * id, unique per request (a generated one is 32 random hex digits). */
static void put_websocket_key(Writer *w, const char *id) {
        static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        uint8_t bytes[18] = {}; /* 16, padded to a multiple of 3 */
        char out[24];

        for (size_t i = 0; i < 16 && id[2 * i] && id[2 * i + 1]; i++)
                bytes[i] = (uint8_t) (id[2 * i] << 4 ^ id[2 * i + 1]);
        for (size_t i = 0, o = 0; i < sizeof bytes; i += 3, o += 4) {
                uint32_t v = (uint32_t) bytes[i] << 16 | (uint32_t) bytes[i + 1] << 8 | bytes[i + 2];
                out[o] = b64[v >> 18 & 63];
                out[o + 1] = b64[v >> 12 & 63];
                out[o + 2] = b64[v >> 6 & 63];
                out[o + 3] = b64[v & 63];
        }
        out[22] = out[23] = '='; /* 16 bytes: the last group holds one byte and two of padding */
        put_lit(w, "Sec-WebSocket-Key: ");
        put(w, out, sizeof out);
        put_lit(w, "\r\n");
}

/* A WebSocket opening handshake, as RFC 6455 4.1 has a client send it, whichever protocol the client
 * spoke: GET (an HTTP/2 extended CONNECT's method is CONNECT), Upgrade and Connection of our own (the
 * client's were hop-by-hop), and the key and version when an HTTP/2 client sent none. */
static void put_websocket_handshake(Writer *w, const Exchange *x) {
        const HeaderField *f = x->req.fields;
        size_t n = x->req.n_fields;

        put_lit(w, "Connection: Upgrade\r\nUpgrade: websocket\r\n");
        if (!header_find(f, n, "sec-websocket-key"))
                put_websocket_key(w, x->id);
        if (!header_find(f, n, "sec-websocket-version"))
                put_lit(w, "Sec-WebSocket-Version: 13\r\n");
}

int forward_request_serialize(const Exchange *x, const char *cookie_name, char *buf, size_t size,
                              size_t *ret_len) {
        const RequestHead *h = &x->req;
        Writer w = { .buf = buf, .size = size };
        size_t id_len = strnlen(x->id, sizeof(x->id));
        int r;

        if (!is_token(h->method, h->method_len))
                return -EBADMSG;
        if (h->target_len == 0)
                return -EINVAL;
        if (!is_visible(h->target, h->target_len))
                return -EBADMSG;
        if (h->authority && !is_visible(h->authority, h->authority_len))
                return -EBADMSG;
        if (h->has_content_length && h->content_length > 0 && !h->has_body)
                return -EINVAL;
        if (!is_field_value(x->id, id_len))
                return -EBADMSG;
        if (x->user && (x->user[0] == 0 || !is_field_value(x->user, strlen(x->user))))
                return -EBADMSG;

        if (h->websocket)
                put_lit(&w, "GET");
        else
                put(&w, h->method, h->method_len);
        put_lit(&w, " ");
        put(&w, h->target, h->target_len);
        put_lit(&w, " HTTP/1.1\r\n");
        /* Always a Host, even for a target without an authority (HTTP/1.0 without Host, h2 without
         * :authority or host, absolute-form with an empty one): what goes out is HTTP/1.1, and RFC 9112
         * 3.2 has such a client "send a Host header field with an empty field value". */
        put_lit(&w, "Host: ");
        if (h->authority)
                put(&w, h->authority, h->authority_len);
        put_lit(&w, "\r\n");

        r = put_fields(&w, x, cookie_name);
        if (r < 0)
                return r;
        r = put_forwarded_for(&w, x);
        if (r < 0)
                return r;
        if (x->via_tls_proxy)
                put_lit(&w, "X-Forwarded-Proto: https\r\n");
        else
                put_lit(&w, "X-Forwarded-Proto: http\r\n");
        if (id_len > 0) {
                put_lit(&w, "X-Request-Id: ");
                put(&w, x->id, id_len);
                put_lit(&w, "\r\n");
        }
        if (x->user) {
                put_lit(&w, "X-Elastic-Pool-User: ");
                put(&w, x->user, strlen(x->user));
                put_lit(&w, "\r\n");
        }
        if (h->websocket)
                put_websocket_handshake(&w, x);
        else if (h->has_content_length) {
                put_lit(&w, "Content-Length: ");
                put_u64(&w, h->content_length);
                put_lit(&w, "\r\n");
        } else if (h->has_body)
                put_lit(&w, "Transfer-Encoding: chunked\r\n");
        put_lit(&w, "\r\n");

        *ret_len = w.len;
        return 0;
}

int forward_response_filter(const HeaderField *in, size_t n, HeaderField *out, size_t *ret_n,
                            const char **ret_user, size_t *ret_user_len) {
        const char *user = NULL;
        size_t user_len = 0, k = 0;
        bool has_connection = false;

        for (size_t i = 0; i < n; i++) {
                if (!is_token(in[i].name, in[i].name_len) || !is_field_value(in[i].value, in[i].value_len))
                        return -EBADMSG;
                if (name_is(in[i].name, in[i].name_len, &name_connection))
                        has_connection = true;
        }

        for (size_t i = 0; i < n; i++) {
                const char *v = in[i].value;
                size_t len = in[i].value_len;

                trim(&v, &len);
                if (name_is(in[i].name, in[i].name_len, &name_user)) {
                        if (!user) {
                                user = v;
                                user_len = len;
                        }
                        continue;
                }
                if (name_in(in[i].name, in[i].name_len, response_dropped, ELEMENTSOF(response_dropped)))
                        continue;
                if (has_connection && listed_in_connection(in, n, in[i].name, in[i].name_len))
                        continue;
                out[k++] = (HeaderField) {
                        .name = in[i].name,
                        .name_len = in[i].name_len,
                        .value = v,
                        .value_len = len,
                };
        }

        *ret_n = k;
        *ret_user = user;
        *ret_user_len = user_len;
        return 0;
}
