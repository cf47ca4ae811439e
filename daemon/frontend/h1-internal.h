/* SPDX-License-Identifier: MIT */
#pragma once

/* Internals of the HTTP/1.1 client side, shared by its files and their unit test:
 *   h1-connection.c           the connection: lifetime, I/O, timers, the order of requests, hand-over to h2
 *   h1-request.c   http-parser callbacks and the checks of a complete request head
 *   h1-response.c  the write queue, response serialisation, ClientOps
 *   h1-head.c      the byte pre-scan of heads and small pure helpers
 * Everything else reaches HTTP/1.1 through frontend_h1_accept() (frontend.h) and an Exchange's ClientOps. */

#include <errno.h>
#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "exchange.h"
#include "connection.h"
#include "error-log.h"
#include "request-check.h"
#include "time-util.h"

/* ---- The head pre-scan --------------------------------------------------------------------------
 * Debian builds libhttp-parser with HTTP_PARSER_STRICT=0: it accepts obs-fold, whitespace between a field
 * name and its colon, a bare LF as line end, tabs and bytes >= 0x80 in the target. Every byte of a request
 * head therefore passes this scanner before the parser sees it; what it rejects never reaches a worker.
 * It checks syntax only (bytes and line structure, sizes, counts); meaning (Host, framing) is checked
 * once the parser has the fields. */

typedef enum H1ScanState {
        H1_SCAN_START,    /* before the request line: empty lines are skipped (RFC 9112 2.2) */
        H1_SCAN_START_CR, /* CR of such an empty line */
        H1_SCAN_LINE,     /* the request line */
        H1_SCAN_LINE_CR,
        H1_SCAN_FIELD_START, /* start of a field line, or of the empty line ending the head */
        H1_SCAN_NAME,
        H1_SCAN_VALUE,
        H1_SCAN_VALUE_CR,
        H1_SCAN_END_CR, /* CR of the empty line ending the head */
        H1_SCAN_DONE,
        _H1_SCAN_STATE_MAX,
        _H1_SCAN_STATE_INVALID = -EINVAL,
} H1ScanState;

typedef struct H1Scan {
        H1ScanState state;
        size_t head_bytes;   /* of this head so far, empty lines before the request line included */
        size_t line_bytes;   /* of the request line so far, without its CRLF */
        uint64_t line_tail;  /* its last 8 bytes, and the one before them: the version is checked here, */
        uint8_t line_before; /* the parser would take "HTTX/1.1" for HTTP/1.1 */
        unsigned fields;     /* field lines started so far */
        size_t max_head;     /* max_header_size: 431 past it */
        size_t max_line;     /* request line: 414 past it */
        unsigned max_fields; /* max_header_fields: 431 past it */
} H1Scan;

/* The request line may be at most this long (without CRLF), and never longer than max_header_size; the
 * figure of Apache's LimitRequestLine and nginx's large_client_header_buffers. */
#define H1_REQUEST_LINE_MAX 8192U

void h1_scan_init(H1Scan *s, size_t max_head, size_t max_line, unsigned max_fields);

/* Scans the next n bytes of a head. Returns 0 when all n bytes are fine and the head goes on, 1 when the
 * head is complete (*ret_used: bytes up to and including the LF of the empty line that ends it; the rest
 * is body or a pipelined request), or -EBADMSG with *ret_status (400, 414 or 431) and *ret_reason
 * (static text naming what is wrong). *ret_used is set in every case (on error: the clean bytes before
 * the offending one). */
int h1_scan(H1Scan *s, const char *p, size_t n, size_t *ret_used, unsigned *ret_status,
            const char **ret_reason);

/* ---- The chunked body pre-scan ------------------------------------------------------------------
 * The same parser, non-strict, takes "5\r\nhelloXY" for a chunk (any two bytes for the CRLF after the
 * data), a bare CR for the CRLF of a chunk line, and any byte at all in a chunk extension: a request a
 * stricter peer in front of us would frame differently. So every byte of a chunked body passes this
 * scanner before the parser sees it (RFC 9112 7.1): chunk-size [ BWS ";" ext ] CRLF, data, CRLF; then
 * the trailer section. It checks framing only; the data bytes are skipped, never looked at. */

typedef enum H1ChunkState {
        H1_CHUNK_SIZE_START, /* the first hex digit of a chunk size */
        H1_CHUNK_SIZE,
        H1_CHUNK_SIZE_BWS, /* whitespace after the size: ";" or the line end may follow */
        H1_CHUNK_EXT,      /* after ";": visible bytes, SP, HTAB and obs-text up to CR */
        H1_CHUNK_LINE_CR,
        H1_CHUNK_DATA,
        H1_CHUNK_DATA_CR, /* the CRLF after a chunk's data */
        H1_CHUNK_DATA_LF,
        H1_CHUNK_TRAILER_START, /* a trailer field line, or the empty line that ends the body */
        H1_CHUNK_TRAILER_NAME,
        H1_CHUNK_TRAILER_VALUE,
        H1_CHUNK_TRAILER_CR,
        H1_CHUNK_END_CR,
        H1_CHUNK_DONE,
        _H1_CHUNK_STATE_MAX,
        _H1_CHUNK_STATE_INVALID = -EINVAL,
} H1ChunkState;

typedef struct H1ChunkScan {
        H1ChunkState state;
        uint64_t remaining; /* data bytes of the current chunk not yet seen */
        size_t line_bytes;  /* of the current chunk line */
        size_t trailer_bytes;
        size_t max_trailer; /* the trailer section may be as long as a head: max_header_size */
} H1ChunkScan;

/* A chunk line (size and extensions, without CRLF) may be at most this long. */
#define H1_CHUNK_LINE_MAX 4096U

void h1_chunk_scan_init(H1ChunkScan *s, size_t max_trailer);

/* Scans the next n bytes of a chunked body. 0 when they are fine and the body goes on, 1 when it ended
 * (*ret_used: up to and including the LF of the empty line after the trailers; the rest is the next
 * request), or -EBADMSG with *ret_reason (static text; the answer is 400). *ret_used is set in every
 * case (on error: the clean bytes before the offending one). */
int h1_chunk_scan(H1ChunkScan *s, const char *p, size_t n, size_t *ret_used, const char **ret_reason);

/* ---- Field value helpers (pure) ------------------------------------------------------------------ */

/* Iterates a comma-separated list (#token, RFC 9110 5.6.1): on each call stores the next non-empty
 * element with surrounding whitespace trimmed and returns true; false at the end. *cursor starts at 0. */
bool h1_list_next(const char *v, size_t n, size_t *cursor, const char **ret_elem, size_t *ret_len);
/* The list v contains token (case-insensitive, the whole element up to any ';' parameter). */
bool h1_list_has(const char *v, size_t n, const char *token);
/* Case-insensitive equality of a counted string and a C string. */
bool h1_str_eq(const char *s, size_t n, const char *lit);

/* A Host value or absolute-form authority (request-check.h, shared with the h2 side). */
static inline bool h1_authority_valid(const char *p, size_t n) {
        return request_authority_valid(p, n);
}

/* Decodes HTTP2-Settings (token68, base64url, padding optional; RFC 9113 3.2.1, RFC 7540 3.2.1) into
 * out. Returns the decoded length, -EINVAL for a character outside base64url, a bad length or a
 * payload that is not a whole number of 6-byte settings, -ENOBUFS when out is too small. */
ssize_t h1_http2_settings_decode(const char *in, size_t n, uint8_t *out, size_t out_size);

/* The reason phrase of a status ("Not Found"); "" for an unknown status. */
const char *h1_status_phrase(unsigned status);

/* ---- Test seams ---------------------------------------------------------------------------------- */

/* Fixed figures of the HTTP/1.1 side. Production never changes them; the unit test shortens the times
 * and shrinks the write marks so that it runs in milliseconds. */
typedef struct H1Tunables {
        usec_t shutdown_grace; /* an idle keep-alive connection's last chance after shutdown: 1 s */
        usec_t linger;         /* after our last response: how long unread input is drained: 2 s */
        size_t write_high;     /* queued response bytes over which response_body returns 1 */
        size_t write_low;      /* ... and under which exchange_response_resume() is called */
} H1Tunables;

extern H1Tunables h1_tunables;

/* ---- The connection ------------------------------------------------------------------------------ */

typedef enum H1State {
        H1_PREFACE, /* nothing read yet rules out the HTTP/2 preface */
        H1_IDLE,    /* between requests */
        H1_HEAD,    /* a request head is arriving */
        H1_BODY,    /* exchange begun; the rest of the request (body, or just its end) is being parsed */
        H1_WAIT,    /* request complete, response not */
        H1_UPGRADE, /* 101 queued: hand over to HTTP/2 once it is written */
        H1_TUNNEL,  /* the worker's 101 to a WebSocket handshake is out: the bytes of both ways are the
                     * tunnel's (its exchange's request and response body) until either side ends */
        H1_DRAIN,   /* no further request: write what is queued, then linger */
        H1_LINGER,  /* write side shut down; unread input drained until EOF or timeout */
        _H1_STATE_MAX,
        _H1_STATE_INVALID = -EINVAL,
} H1State;

typedef enum H1Response {
        H1_RESPONSE_NONE, /* nothing of it queued */
        H1_RESPONSE_BODY, /* head queued, body streaming */
        H1_RESPONSE_DONE, /* complete, or an error response queued */
        _H1_RESPONSE_MAX,
        _H1_RESPONSE_INVALID = -EINVAL,
} H1Response;

typedef enum H1Framing {
        H1_FRAMING_NONE, /* no body (HEAD, 204, 304, or none announced) */
        H1_FRAMING_LENGTH,
        H1_FRAMING_CHUNKED,
        H1_FRAMING_CLOSE, /* HTTP/1.0 and unknown length: the body ends with the connection */
        H1_FRAMING_TUNNEL, /* after a 101: the tunnel's bytes as they come; the connection ends with it */
        _H1_FRAMING_MAX,
        _H1_FRAMING_INVALID = -EINVAL,
} H1Framing;

/* A ring of response bytes not yet taken by the socket; capacity a power of two, head/tail monotonic. */
typedef struct H1WriteQueue {
        char *buf;
        size_t cap, head, tail;
} H1WriteQueue;

/* A field as parsed: offsets into the arena (which may move while it grows). */
typedef struct H1Field {
        uint32_t name, name_len, value, value_len;
        uint8_t kind; /* H1Name (h1-request.c), set once the head is complete */
} H1Field;

typedef struct H1Connection {
        FrontendConnection fc; /* first: the front end links and reaches every connection through it */
        Frontend *fe;
        const Config *config;
        unsigned n_ref;
        unsigned nesting; /* inside a ClientOps call or a call out to the router: teardown waits */
        int fd;
        /* io is edge-triggered and registered once for everything: an edge only says the socket changed,
         * so what it can do now is tracked here. readable: input (or EOF, an error) may be waiting; set by
         * an event, cleared once a read comes back short or with EAGAIN. write_blocked: the socket refused
         * bytes; cleared by the next EPOLLOUT. Whoever makes want_read() true again (a resume, the end of an
         * exchange) is inside advance(), which reads on while both hold: no edge comes for old bytes. */
        IoSource *io, *defer; /* in the front end's batch (io-batch.h) */
        sd_event_source *timer;
        usec_t timer_armed; /* USEC_INFINITY = off */

        H1State state;
        bool registered, closing, released, broken, aborted;
        bool readable, rdhup; /* rdhup: the client's FIN was seen, so a short read no longer means empty */
        bool shutting_down, read_eof, write_blocked, flush_pending;
        int read_error;    /* the batch's read met this error (-errno): the next read_input() reports it */
        size_t offered;    /* the write of the batch's flush under way: its length */
        bool close_after; /* no further request on this connection */
        unsigned n_requests;

        usec_t head_start, idle_start, read_progress, write_progress, shutdown_at, linger_until;
        /* min_body_rate: bytes read in H1_BODY since body_window, a window of header_timeout */
        usec_t body_window;
        uint64_t body_window_bytes;

        /* input: [rpos, rend) not yet parsed; in H1_HEAD [rpos, spos) is scanned, not yet parsed */
        char *rbuf;
        size_t rcap, rpos, spos, rend;

        /* the request being parsed */
        http_parser parser;
        H1Scan scan;
        char *arena; /* target and fields, copied from the read buffer as the parser meets them */
        size_t arena_len, arena_cap;
        bool arena_failed;
        H1Field *raw;
        size_t n_raw, raw_cap;
        bool in_name;
        uint32_t url_len;
        HeaderField *fields; /* published, end-to-end only */
        size_t fields_cap;
        RequestHead head;
        bool head_done, msg_complete, chunked, keep_alive;
        H1ChunkScan chunk; /* a chunked body: [rpos, spos) is scanned, not yet parsed */
        uint64_t body_seen, body_announced;
        unsigned body_error; /* status set by a parser callback that failed on purpose */

        /* the exchange */
        Exchange *x;
        bool body_paused, body_resume, body_refused, continue_sent;
        bool tunnel_end_sent; /* the client's EOF in a tunnel was passed on */
        H1Response resp;
        bool resp_quiet; /* complete and written; the exchange is finished on the next event */
        H1Framing framing;
        uint64_t resp_remaining;
        bool resp_paused, resp_short;

        H1WriteQueue wq;

        /* h2c upgrade */
        uint8_t *settings;
        size_t settings_len;
} H1Connection;

static inline size_t h1_wq_size(const H1WriteQueue *q) {
        return q->tail - q->head;
}

/* h1-connection.c */
usec_t h1_now(H1Connection *c);
/* Runs advance() from the loop soon (the defer source; cheap when already pending). */
void h1_schedule(H1Connection *c);
/* Called by response_end once the response is queued: either the exchange is finished on the connection's
 * next event (the keep-alive case: the next request's arrival; no loop turn of its own), or, when something
 * must happen without one (pipelined bytes, a close, a shutdown), advance() is scheduled. */
void h1_response_done(H1Connection *c);
/* Ends the connection: no more I/O at once; the exchange and the registration go as soon as no caller
 * is inside us. Idempotent until released. */
void h1_connection_close(H1Connection *c);
/* The socket failed: the connection closes from the loop. Returns error. */
int h1_mark_broken(H1Connection *c, int error);
/* One rate-limited line: peer, request id when there is an exchange, status (0: none) and reason. */
void h1_log_client_error(H1Connection *c, unsigned status, const char *reason);
/* Answers the current request ourselves with Connection: close, then the connection drains and ends.
 * Only from an event handler: it frees the exchange when there is one. */
void h1_fail_request(H1Connection *c, unsigned status, const char *reason);

/* h1-request.c */
void h1_request_reset(H1Connection *c);
/* Scans the buffered head bytes and gives the clean ones to the parser. 1 once the head is complete (the
 * parser paused on it), 0 for more input, -1 once answered with an error. */
int h1_feed_head(H1Connection *c);
/* Checks a complete head and fills c->head. 0, 1 for an h2c upgrade to carry out, or -EBADMSG with the
 * status and reason to answer. */
int h1_head_build(H1Connection *c, unsigned *ret_status, const char **ret_reason);
/* Checks the chunked body bytes already buffered, on a copy of the parser. 0 or -EBADMSG (400, 413). */
int h1_probe_chunked(H1Connection *c, unsigned *ret_status, const char **ret_reason);
/* Parses body bytes (or just the end of a bodyless request). 1 once the request is complete, 0 for more
 * input or paused by flow control, -1 once failed. */
int h1_feed_body(H1Connection *c);

/* h1-response.c */
extern const ClientOps h1_client_ops;
/* 0, -ENOBUFS past H1_WRITE_LIMIT, -ENOMEM. */
int h1_wq_reserve(H1WriteQueue *q, size_t n);
/* Appends into space reserved before. */
void h1_wq_put(H1WriteQueue *q, const void *p, size_t n);
void h1_wq_put_str(H1WriteQueue *q, const char *s);
void h1_wq_done(H1WriteQueue *q);
/* What is queued goes out with the batch's flush (io-batch.h). 0, or -errno once broken. */
int h1_flush(H1Connection *c);
/* Writes what is queued now, as far as the socket takes it (before a connection ends). 0 or -errno. */
int h1_flush_now(H1Connection *c);
/* The write queue goes out with the batch's flush (io-batch.h): what to write, and what was written
 * (h1_sent(): true when the queue went out whole). */
bool h1_send_prepare(IoSource *s, struct iovec *ret, void *userdata);
bool h1_sent(H1Connection *c, ssize_t result);
/* Nothing queued, or all of it leaves with the batch's flush. */
static inline bool h1_wq_leaving(const H1Connection *c) {
        return h1_wq_size(&c->wq) == 0 || (!c->write_blocked && io_source_send_wanted(c->io));
}
/* A complete small text/plain response of ours (errors, 408 ...). 0 or -errno. */
int h1_queue_error_response(H1Connection *c, unsigned status, unsigned retry_after, const char *reason,
                            const char *id, bool close);
