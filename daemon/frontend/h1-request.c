/* SPDX-License-Identifier: MIT */
/* The request side of an HTTP/1.1 connection: http-parser's callbacks copy the target and fields into a
 * per-connection arena (so the read buffer can move under a live exchange), and a complete head is checked
 * for meaning (Host, framing, target form, Expect, upgrade) before anything of it reaches the router. */
#include "h1-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "macro.h"

#define H1_ARENA_INITIAL  1024U
#define H1_FIELDS_INITIAL 16U

/* ---- the request: parser callbacks -------------------------------------------------------------- */

static int arena_append(H1Connection *c, const char *p, size_t n) {
        if (c->arena_len + n > c->arena_cap) {
                size_t cap = MAX(c->arena_cap, (size_t) H1_ARENA_INITIAL);
                char *a;

                while (cap < c->arena_len + n)
                        cap *= 2;
                a = realloc(c->arena, cap);
                if (!a) {
                        c->arena_failed = true;
                        return -ENOMEM;
                }
                c->arena = a;
                c->arena_cap = cap;
        }
        memcpy(c->arena + c->arena_len, p, n);
        c->arena_len += n;
        return 0;
}

static int on_url(http_parser *p, const char *at, size_t n) {
        H1Connection *c = p->data;

        if (arena_append(c, at, n) < 0)
                return -1;
        c->url_len += (uint32_t) n;
        return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n) {
        H1Connection *c = p->data;

        if (c->head_done)
                return 0; /* a trailer field: we re-serialise and send none, so it is dropped */
        if (!c->in_name) {
                if (c->n_raw == c->raw_cap) {
                        size_t cap = MAX(c->raw_cap * 2, (size_t) H1_FIELDS_INITIAL);
                        H1Field *f = reallocarray(c->raw, cap, sizeof *f);
                        if (!f) {
                                c->arena_failed = true;
                                return -1;
                        }
                        c->raw = f;
                        c->raw_cap = cap;
                }
                c->raw[c->n_raw++] =
                        (H1Field) { .name = (uint32_t) c->arena_len, .value = (uint32_t) c->arena_len };
                c->in_name = true;
        }
        if (arena_append(c, at, n) < 0)
                return -1;
        c->raw[c->n_raw - 1].name_len += (uint32_t) n;
        return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n) {
        H1Connection *c = p->data;
        H1Field *f;

        if (c->head_done || c->n_raw == 0)
                return 0;
        f = &c->raw[c->n_raw - 1];
        if (c->in_name) {
                c->in_name = false;
                f->value = (uint32_t) c->arena_len;
        }
        if (arena_append(c, at, n) < 0)
                return -1;
        f->value_len += (uint32_t) n;
        return 0;
}

static int on_headers_complete(http_parser *p) {
        H1Connection *c = p->data;

        /* Dispatch happens outside the parser: stop here, with the head's last LF left unconsumed. */
        c->head_done = true;
        http_parser_pause(p, 1);
        return 0;
}

static int on_chunk_header(http_parser *p) {
        H1Connection *c = p->data;
        uint64_t max = c->config->max_body_size;

        if (p->content_length > UINT64_MAX - c->body_announced)
                c->body_announced = UINT64_MAX;
        else
                c->body_announced += p->content_length;
        if (max > 0 && c->body_announced > max) {
                c->body_error = 413;
                return -1;
        }
        return 0;
}

static int on_body(http_parser *p, const char *at, size_t n) {
        H1Connection *c = p->data;
        int r;

        c->body_seen += n;
        if (!c->x || c->body_refused || c->resp == H1_RESPONSE_DONE)
                return 0; /* the exchange gave up on it: read and drop */
        c->nesting++;
        r = exchange_request_body(c->x, at, n);
        c->nesting--;
        if (c->closing)
                return -1;
        if (r < 0)
                c->body_refused = true;
        else if (r > 0) {
                c->body_paused = true; /* forward side over high-water: request_body_resume follows */
                http_parser_pause(p, 1);
        }
        return 0;
}

static int on_message_complete(http_parser *p) {
        H1Connection *c = p->data;

        /* Pipelined bytes wait in the read buffer until this request is answered. */
        c->msg_complete = true;
        http_parser_pause(p, 1);
        return 0;
}

static const http_parser_settings h1_parser_settings = {
        .on_url = on_url,
        .on_header_field = on_header_field,
        .on_header_value = on_header_value,
        .on_headers_complete = on_headers_complete,
        .on_body = on_body,
        .on_message_complete = on_message_complete,
        .on_chunk_header = on_chunk_header,
};

/* The look-ahead over a chunked body already buffered with its head: chunk framing and size are checked
 * on a copy of the parser before exchange_begin(), so a request that arrives whole and bad never
 * reaches a worker. */
typedef struct H1Probe {
        uint64_t announced, max;
        bool over;
} H1Probe;

static int probe_on_chunk_header(http_parser *p) {
        H1Probe *pr = p->data;

        pr->announced = p->content_length > UINT64_MAX - pr->announced ? UINT64_MAX
                                                                       : pr->announced + p->content_length;
        if (pr->max > 0 && pr->announced > pr->max) {
                pr->over = true;
                return -1;
        }
        return 0;
}

static int probe_on_message_complete(http_parser *p) {
        http_parser_pause(p, 1);
        return 0;
}

static const http_parser_settings h1_probe_settings = {
        .on_chunk_header = probe_on_chunk_header,
        .on_message_complete = probe_on_message_complete,
};

/* ---- the request: checks of a complete head ----------------------------------------------------- */

typedef enum H1Name {
        H1_NAME_OTHER,
        H1_NAME_HOST,
        H1_NAME_CONTENT_LENGTH,
        H1_NAME_TRANSFER_ENCODING,
        H1_NAME_CONNECTION,
        H1_NAME_UPGRADE,
        H1_NAME_HTTP2_SETTINGS,
        H1_NAME_EXPECT,
        H1_NAME_HOP, /* hop-by-hop by definition: Keep-Alive, Proxy-Connection, TE */
        _H1_NAME_MAX,
        _H1_NAME_INVALID = -EINVAL,
} H1Name;

static H1Name name_kind(const char *n, size_t len) {
        /* by length first: most fields of a head are none of these and cost one switch */
        switch (len) {
        case 2:
                return strncasecmp(n, "te", 2) == 0 ? H1_NAME_HOP : H1_NAME_OTHER;
        case 4:
                return strncasecmp(n, "host", 4) == 0 ? H1_NAME_HOST : H1_NAME_OTHER;
        case 6:
                return strncasecmp(n, "expect", 6) == 0 ? H1_NAME_EXPECT : H1_NAME_OTHER;
        case 7:
                return strncasecmp(n, "upgrade", 7) == 0 ? H1_NAME_UPGRADE : H1_NAME_OTHER;
        case 10:
                if (strncasecmp(n, "connection", 10) == 0)
                        return H1_NAME_CONNECTION;
                return strncasecmp(n, "keep-alive", 10) == 0 ? H1_NAME_HOP : H1_NAME_OTHER;
        case 14:
                if (strncasecmp(n, "content-length", 14) == 0)
                        return H1_NAME_CONTENT_LENGTH;
                return strncasecmp(n, "http2-settings", 14) == 0 ? H1_NAME_HTTP2_SETTINGS : H1_NAME_OTHER;
        case 16:
                return strncasecmp(n, "proxy-connection", 16) == 0 ? H1_NAME_HOP : H1_NAME_OTHER;
        case 17:
                return strncasecmp(n, "transfer-encoding", 17) == 0 ? H1_NAME_TRANSFER_ENCODING
                                                                    : H1_NAME_OTHER;
        default:
                return H1_NAME_OTHER;
        }
}

static const char *raw_name(const H1Connection *c, const H1Field *f) {
        return c->arena + f->name;
}

static const char *raw_value(const H1Connection *c, const H1Field *f) {
        return c->arena + f->value;
}

/* What a head says, gathered in one pass over its fields. */
typedef struct H1HeadInfo {
        const H1Field *host, *content_length, *upgrade, *settings, *expect;
        unsigned n_host, n_content_length, n_transfer_encoding, n_settings, n_expect;
        bool conn_close, conn_keep_alive, conn_upgrade, conn_settings;
        const H1Field *conn[4]; /* Connection fields that may nominate others (RFC 9110 7.6.1) */
        unsigned n_conn;
        bool te_chunked;
        unsigned te_status;
        const char *te_reason;
} H1HeadInfo;

static void transfer_encoding_check(H1HeadInfo *info, const char *v, size_t n, unsigned *n_codings) {
        const char *e;
        size_t cursor = 0, len;

        while (h1_list_next(v, n, &cursor, &e, &len)) {
                bool chunked = h1_str_eq(e, len, "chunked");

                if (info->te_chunked && info->te_status == 0) {
                        /* a coding after chunked: the body's end cannot be known (RFC 9112 6.3) */
                        info->te_status = 400;
                        info->te_reason = chunked ? "chunked applied more than once"
                                                  : "Transfer-Encoding does not end in chunked";
                }
                info->te_chunked = chunked;
                (*n_codings)++;
        }
}

static void head_gather(H1Connection *c, H1HeadInfo *info) {
        unsigned n_codings = 0;

        *info = (H1HeadInfo) {};
        for (size_t i = 0; i < c->n_raw; i++) {
                H1Field *f = &c->raw[i];
                const char *v;

                /* The parser skips leading whitespace of a value, not trailing (RFC 9110 5.5: OWS around
                 * it). */
                while (f->value_len > 0 && (c->arena[f->value + f->value_len - 1] == ' ' ||
                                            c->arena[f->value + f->value_len - 1] == '\t'))
                        f->value_len--;
                v = raw_value(c, f);
                f->kind = (uint8_t) name_kind(raw_name(c, f), f->name_len);
                switch ((H1Name) f->kind) {
                case H1_NAME_HOST:
                        info->host = f;
                        info->n_host++;
                        break;
                case H1_NAME_CONTENT_LENGTH:
                        info->content_length = f;
                        info->n_content_length++;
                        break;
                case H1_NAME_TRANSFER_ENCODING:
                        info->n_transfer_encoding++;
                        transfer_encoding_check(info, v, f->value_len, &n_codings);
                        break;
                case H1_NAME_CONNECTION:
                        info->conn_close = info->conn_close || h1_list_has(v, f->value_len, "close");
                        info->conn_keep_alive =
                                info->conn_keep_alive || h1_list_has(v, f->value_len, "keep-alive");
                        info->conn_upgrade = info->conn_upgrade || h1_list_has(v, f->value_len, "upgrade");
                        info->conn_settings =
                                info->conn_settings || h1_list_has(v, f->value_len, "http2-settings");
                        if (info->n_conn < ELEMENTSOF(info->conn))
                                info->conn[info->n_conn++] = f;
                        break;
                case H1_NAME_UPGRADE:
                        info->upgrade = f;
                        break;
                case H1_NAME_HTTP2_SETTINGS:
                        info->settings = f;
                        info->n_settings++;
                        break;
                case H1_NAME_EXPECT:
                        info->expect = f;
                        info->n_expect++;
                        break;
                default:
                        break;
                }
        }
        if (info->n_transfer_encoding > 0 && info->te_status == 0) {
                if (!info->te_chunked) {
                        info->te_status = 400;
                        info->te_reason = "Transfer-Encoding does not end in chunked";
                } else if (n_codings > 1) {
                        info->te_status = 501;
                        info->te_reason = "transfer coding other than chunked";
                }
        }
}

/* A field the worker must not see from us: hop-by-hop (RFC 9110 7.6.1), Host (it is the authority) and
 * Expect (the 100-continue handshake is ours). */
static bool field_is_hop(const H1Connection *c, const H1HeadInfo *info, const H1Field *f) {
        char name[64];

        if (f->kind != H1_NAME_OTHER && f->kind != H1_NAME_CONTENT_LENGTH)
                return true;
        if (info->n_conn == 0 || f->name_len >= sizeof name)
                return false;
        memcpy(name, raw_name(c, f), f->name_len);
        name[f->name_len] = 0;
        for (unsigned i = 0; i < info->n_conn; i++)
                if (h1_list_has(raw_value(c, info->conn[i]), info->conn[i]->value_len, name))
                        return true; /* nominated by Connection */
        return false;
}

/* The target: origin-form kept, asterisk-form for OPTIONS, absolute-form split into authority and
 * origin-form (RFC 9112 3.2.2: its authority wins over Host). Offsets into the arena; the arena may grow
 * here, so pointers are made later. */
typedef struct H1Target {
        size_t target, target_len;
        bool target_static; /* target is "/" (absolute-form without path or query) */
        bool absolute;
        size_t authority, authority_len;
} H1Target;

static int target_split(H1Connection *c, H1Target *t, const char **ret_reason) {
        const char *url = c->arena;
        size_t len = c->url_len;
        struct http_parser_url u;
        size_t a_start, a_end;

        *t = (H1Target) { .target = 0, .target_len = len };
        if (len == 0) {
                *ret_reason = "empty request target";
                return -EINVAL;
        }
        if (url[0] == '/') {
                if (memchr(url, '#', len)) {
                        *ret_reason = "fragment in the request target";
                        return -EINVAL;
                }
                return 0;
        }
        if (len == 1 && url[0] == '*') {
                if (c->parser.method != HTTP_OPTIONS) {
                        *ret_reason = "asterisk-form target with a method other than OPTIONS";
                        return -EINVAL;
                }
                return 0;
        }

        http_parser_url_init(&u);
        if (http_parser_parse_url(url, len, 0, &u) != 0 || !(u.field_set & (1 << UF_SCHEMA)) ||
            !(u.field_set & (1 << UF_HOST))) {
                *ret_reason = "invalid request target";
                return -EINVAL;
        }
        if (!h1_str_eq(url + u.field_data[UF_SCHEMA].off, u.field_data[UF_SCHEMA].len, "http") &&
            !h1_str_eq(url + u.field_data[UF_SCHEMA].off, u.field_data[UF_SCHEMA].len, "https")) {
                *ret_reason = "absolute-form target with a scheme other than http or https";
                return -EINVAL;
        }
        if (u.field_set & (1 << UF_USERINFO)) {
                *ret_reason = "userinfo in the request target";
                return -EINVAL;
        }
        if (u.field_set & (1 << UF_FRAGMENT)) {
                *ret_reason = "fragment in the request target";
                return -EINVAL;
        }
        a_start = u.field_data[UF_SCHEMA].off + u.field_data[UF_SCHEMA].len + 3; /* "://" */
        if (u.field_set & (1 << UF_PATH))
                a_end = u.field_data[UF_PATH].off;
        else if (u.field_set & (1 << UF_QUERY))
                a_end = u.field_data[UF_QUERY].off - 1;
        else
                a_end = len;
        if (a_start > a_end || !h1_authority_valid(url + a_start, a_end - a_start)) {
                *ret_reason = "invalid authority in the request target";
                return -EINVAL;
        }
        t->absolute = true;
        t->authority = a_start;
        t->authority_len = a_end - a_start;
        if (u.field_set & (1 << UF_PATH)) {
                t->target = u.field_data[UF_PATH].off;
                t->target_len = len - t->target;
        } else if (u.field_set & (1 << UF_QUERY)) {
                /* "http://h?q" is "/?q" in origin-form */
                size_t q = u.field_data[UF_QUERY].off - 1;
                t->target = c->arena_len;
                if (arena_append(c, "/", 1) < 0 || arena_append(c, c->arena + q, len - q) < 0) {
                        *ret_reason = "out of memory";
                        return -ENOMEM;
                }
                t->target_len = 1 + len - q;
        } else
                t->target_static = true;
        return 0;
}

static int http2_settings_decode(H1Connection *c, const H1Field *f) {
        size_t size = f->value_len / 4 * 3 + 3;
        ssize_t n;

        free(c->settings);
        c->settings = malloc(MAX(size, (size_t) 1));
        if (!c->settings)
                return -ENOMEM;
        n = h1_http2_settings_decode(raw_value(c, f), f->value_len, c->settings, size);
        if (n < 0)
                return (int) n;
        c->settings_len = (size_t) n;
        return 0;
}

/* Checks a complete head and fills c->head. 0, 1 when it is an h2c upgrade to carry out, or -EBADMSG
 * with the status and reason to answer. */
int h1_head_build(H1Connection *c, unsigned *ret_status, const char **ret_reason) {
        const Config *cfg = c->config;
        RequestHead *h = &c->head;
        H1HeadInfo info;
        H1Target t;
        bool upgrade = false;
        int r;

#define HEAD_FAIL(status, reason)       \
        do {                            \
                *ret_status = (status); \
                *ret_reason = (reason); \
                return -EBADMSG;        \
        } while (0)

        *h = (RequestHead) { .http_major = 1, .http_minor = c->parser.http_minor >= 1 ? 1 : 0 };
        if (c->parser.http_major == 0)
                HEAD_FAIL(400, "request line without an HTTP version (HTTP/0.9)");
        if (c->parser.http_major > 1)
                HEAD_FAIL(505, "HTTP version other than 1.x in the request line");
        if (c->parser.method == HTTP_CONNECT)
                HEAD_FAIL(405, "CONNECT is not served (not a forward proxy)");

        head_gather(c, &info);
        if (info.n_host > 1)
                HEAD_FAIL(400, "more than one Host field");
        if (info.n_host == 0 && h->http_minor >= 1)
                HEAD_FAIL(400, "HTTP/1.1 request without a Host field");
        if (info.host && !h1_authority_valid(raw_value(c, info.host), info.host->value_len))
                HEAD_FAIL(400, "invalid Host field");

        r = target_split(c, &t, ret_reason);
        if (r == -ENOMEM)
                HEAD_FAIL(500, *ret_reason);
        if (r < 0)
                HEAD_FAIL(400, *ret_reason);

        if (info.n_transfer_encoding > 0) {
                if (h->http_minor == 0)
                        HEAD_FAIL(400, "Transfer-Encoding in an HTTP/1.0 request");
                if (info.n_content_length > 0)
                        HEAD_FAIL(400, "both Content-Length and Transfer-Encoding");
                if (info.te_status != 0)
                        HEAD_FAIL(info.te_status, info.te_reason);
                c->chunked = true;
                h1_chunk_scan_init(&c->chunk, cfg->max_header_size);
                h->has_body = true;
        } else if (info.n_content_length > 1)
                HEAD_FAIL(400, "more than one Content-Length field");
        else if (info.n_content_length == 1) {
                const char *v = raw_value(c, info.content_length);
                uint64_t cl = 0;

                if (info.content_length->value_len == 0)
                        HEAD_FAIL(400, "invalid Content-Length");
                for (size_t i = 0; i < info.content_length->value_len; i++) {
                        if (v[i] < '0' || v[i] > '9' || cl > (UINT64_MAX - 9) / 10)
                                HEAD_FAIL(400, "invalid Content-Length");
                        cl = cl * 10 + (uint64_t) (v[i] - '0');
                }
                h->has_content_length = true;
                h->content_length = cl;
                h->has_body = cl > 0;
                if (cfg->max_body_size > 0 && cl > cfg->max_body_size)
                        HEAD_FAIL(413, "Content-Length over max_body_size");
        }

        if (info.n_expect > 0 && h->http_minor >= 1) {
                if (info.n_expect > 1 ||
                    !h1_str_eq(raw_value(c, info.expect), info.expect->value_len, "100-continue"))
                        HEAD_FAIL(417, "expectation other than 100-continue");
                h->expect_continue = h->has_body;
        }

        c->keep_alive = h->http_minor >= 1 ? !info.conn_close : info.conn_keep_alive && !info.conn_close;

        /* h2c (RFC 7540 3.2) only for a request without a body; anything else is served as HTTP/1.1,
         * which RFC 9110 7.8 allows: the Upgrade field is dropped with the other hop-by-hop ones. */
        if (info.upgrade && info.conn_upgrade && info.conn_settings && info.n_settings == 1 &&
            !h->has_body && h->http_minor >= 1 && !c->shutting_down &&
            h1_list_has(raw_value(c, info.upgrade), info.upgrade->value_len, "h2c")) {
                r = http2_settings_decode(c, info.settings);
                if (r == -ENOMEM)
                        HEAD_FAIL(500, "out of memory");
                if (r < 0)
                        log_debug("HTTP/1.1: malformed HTTP2-Settings, serving the request as HTTP/1.1");
                else
                        upgrade = true;
        }

        /* A WebSocket opening handshake (RFC 6455 4.1: GET, HTTP/1.1, Upgrade: websocket, Connection:
         * Upgrade) goes to the worker as one; anything the worker must check (the key, the version) it
         * checks. Otherwise the Upgrade field is dropped and the request served as HTTP/1.1. */
        if (!upgrade && cfg->websocket && info.upgrade && info.conn_upgrade && !h->has_body &&
            h->http_minor >= 1 && c->parser.method == HTTP_GET && !c->shutting_down &&
            h1_list_has(raw_value(c, info.upgrade), info.upgrade->value_len, "websocket"))
                h->websocket = true;

        /* Publish: pointers into the arena, which no longer moves. */
        if (c->fields_cap < c->n_raw) {
                HeaderField *f = reallocarray(c->fields, c->n_raw, sizeof *f);
                if (!f)
                        HEAD_FAIL(500, "out of memory");
                c->fields = f;
                c->fields_cap = c->n_raw;
        }
        h->n_fields = 0;
        for (size_t i = 0; i < c->n_raw; i++) {
                const H1Field *f = &c->raw[i];
                if (field_is_hop(c, &info, f))
                        continue;
                c->fields[h->n_fields++] = (HeaderField) {
                        .name = raw_name(c, f),
                        .name_len = f->name_len,
                        .value = raw_value(c, f),
                        .value_len = f->value_len,
                };
        }
        h->fields = c->fields;
        h->method = http_method_str((enum http_method) c->parser.method);
        h->method_len = strlen(h->method);
        h->target = t.target_static ? "/" : c->arena + t.target;
        h->target_len = t.target_static ? 1 : t.target_len;
        if (t.absolute) {
                h->authority = t.authority_len > 0 ? c->arena + t.authority : NULL;
                h->authority_len = t.authority_len;
        } else if (info.host && info.host->value_len > 0) {
                h->authority = raw_value(c, info.host);
                h->authority_len = info.host->value_len;
        }
        h->head_method = c->parser.method == HTTP_HEAD;
        return upgrade ? 1 : 0;
#undef HEAD_FAIL
}

/* ---- the request: driving the scanner and the parser -------------------------------------------- */

void h1_request_reset(H1Connection *c) {
        http_parser_init(&c->parser, HTTP_REQUEST);
        c->parser.data = c;
        h1_scan_init(&c->scan, c->config->max_header_size, H1_REQUEST_LINE_MAX,
                     c->config->max_header_fields);
        c->spos = c->rpos;
        c->arena_len = 0;
        c->arena_failed = false;
        c->n_raw = 0;
        c->in_name = false;
        c->url_len = 0;
        c->head = (RequestHead) { .http_major = 1, .http_minor = 1 };
        c->head_done = c->msg_complete = c->chunked = false;
        c->keep_alive = true;
        c->body_seen = c->body_announced = 0;
        c->body_error = 0;
        c->body_paused = c->body_resume = c->body_refused = c->continue_sent = false;
        c->tunnel_end_sent = false;
}

static void fail_parser(H1Connection *c, enum http_errno e) {
        bool has_te = false;

        if (c->arena_failed) {
                h1_fail_request(c, 500, "out of memory");
                return;
        }
        if (c->body_error != 0) {
                h1_fail_request(c, c->body_error, "request body over max_body_size");
                return;
        }
        for (size_t i = 0; i < c->n_raw && !has_te; i++)
                has_te = name_kind(raw_name(c, &c->raw[i]), c->raw[i].name_len) == H1_NAME_TRANSFER_ENCODING;
        switch (e) {
        case HPE_HEADER_OVERFLOW:
                if (c->head_done)
                        h1_fail_request(c, 400, "chunk line or trailer section too long");
                else
                        h1_fail_request(c, 431, "request head over http-parser's limit");
                break;
        case HPE_UNEXPECTED_CONTENT_LENGTH:
                h1_fail_request(c, 400,
                                has_te ? "both Content-Length and Transfer-Encoding"
                                       : "more than one Content-Length field");
                break;
        case HPE_INVALID_CONTENT_LENGTH:
                h1_fail_request(c, 400, "invalid Content-Length");
                break;
        case HPE_INVALID_TRANSFER_ENCODING:
                h1_fail_request(c, 400, "Transfer-Encoding does not end in chunked");
                break;
        case HPE_INVALID_METHOD:
                h1_fail_request(c, 400, "unknown or invalid method");
                break;
        case HPE_INVALID_URL:
                h1_fail_request(c, 400, "invalid request target");
                break;
        case HPE_INVALID_VERSION:
        case HPE_INVALID_CONSTANT:
                h1_fail_request(c, 400, "invalid HTTP version in the request line");
                break;
        case HPE_INVALID_CHUNK_SIZE:
                h1_fail_request(c, 400, "invalid chunk size");
                break;
        default:
                h1_fail_request(c, 400, http_errno_description(e));
        }
}

/* Scans the buffered head bytes, then lets the parser have the clean ones. 1 once the head is complete
 * (the parser paused on it), 0 for more input, -1 once answered with an error. */
int h1_feed_head(H1Connection *c) {
        const char *reason = NULL;
        unsigned status = 0;
        size_t used = 0;
        int r;

        r = h1_scan(&c->scan, c->rbuf + c->spos, c->rend - c->spos, &used, &status, &reason);
        c->spos += used;
        if (c->spos > c->rpos && !c->head_done) {
                size_t n = http_parser_execute(&c->parser, &h1_parser_settings, c->rbuf + c->rpos,
                                               c->spos - c->rpos);
                enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);

                c->rpos += n;
                if (e != HPE_OK && e != HPE_PAUSED) {
                        fail_parser(c, e);
                        return -1;
                }
        }
        if (r < 0) {
                h1_fail_request(c, status, reason);
                return -1;
        }
        if (c->head_done)
                return 1;
        if (r > 0) {
                h1_fail_request(c, 400, "request head not understood");
                return -1;
        }
        return 0;
}

static void request_complete(H1Connection *c) {
        c->state = H1_WAIT;
        if (c->x && c->head.has_body && !c->body_refused && c->resp != H1_RESPONSE_DONE) {
                c->nesting++;
                (void) exchange_request_end(c->x);
                c->nesting--;
        }
}

/* Parses body bytes (or just the end of a bodyless request). 1 once the request is complete, 0 for more
 * input (or paused by flow control), -1 once failed. */
int h1_feed_body(H1Connection *c) {
        size_t end = c->rend, n;
        enum http_errno e;

        if (c->body_paused)
                return 0;
        if (c->chunked) {
                /* the parser sees only what the chunk scanner passed */
                const char *reason = NULL;
                size_t used = 0;

                if (c->spos < c->rend &&
                    h1_chunk_scan(&c->chunk, c->rbuf + c->spos, c->rend - c->spos, &used, &reason) < 0) {
                        h1_fail_request(c, 400, reason);
                        return -1;
                }
                c->spos += used;
                end = c->spos;
        }
        if (HTTP_PARSER_ERRNO(&c->parser) == HPE_PAUSED)
                http_parser_pause(&c->parser, 0);
        if (c->rpos == end)
                return 0;
        c->nesting++;
        n = http_parser_execute(&c->parser, &h1_parser_settings, c->rbuf + c->rpos, end - c->rpos);
        c->nesting--;
        if (c->closing)
                return -1;
        c->rpos += n;
        e = HTTP_PARSER_ERRNO(&c->parser);
        if (e != HPE_OK && e != HPE_PAUSED) {
                fail_parser(c, e);
                return -1;
        }
        if (c->msg_complete) {
                request_complete(c);
                return 1;
        }
        return 0;
}

int h1_probe_chunked(H1Connection *c, unsigned *ret_status, const char **ret_reason) {
        http_parser probe = c->parser;
        H1Probe pr = {.max = c->config->max_body_size};
        H1ChunkScan scan = c->chunk;
        enum http_errno e;
        size_t used;

        if (h1_chunk_scan(&scan, c->rbuf + c->spos, c->rend - c->spos, &used, ret_reason) < 0) {
                *ret_status = 400;
                return -EBADMSG;
        }

        http_parser_pause(&probe, 0);
        probe.data = &pr;
        (void) http_parser_execute(&probe, &h1_probe_settings, c->rbuf + c->rpos, c->rend - c->rpos);
        e = HTTP_PARSER_ERRNO(&probe);
        if (pr.over) {
                *ret_status = 413;
                *ret_reason = "request body over max_body_size";
                return -EBADMSG;
        }
        if (e != HPE_OK && e != HPE_PAUSED) {
                *ret_status = 400;
                *ret_reason = e == HPE_INVALID_CHUNK_SIZE ? "invalid chunk size" : http_errno_description(e);
                return -EBADMSG;
        }
        return 0;
}
