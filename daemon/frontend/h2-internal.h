/* SPDX-License-Identifier: MIT */
#pragma once

/* Shared by the files of the HTTP/2 client side, one role each:
 *   h2-connection.c           the connection: socket IO, write buffer, timers, shutdown, accept
 *   h2-session.c   nghttp2's callbacks and options
 *   h2-stream.c    one stream's request: arena, head, body, its exchange's life
 *   h2-response.c  one stream's response: ClientOps, HEADERS, the body queue and DATA
 *   h2-guard.c     flood accounting (pure)
 * Nothing here is used outside them. */

#include <nghttp2/nghttp2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "exchange.h"
#include "connection.h"
#include "error-log.h"
#include "h2-guard.h"
#include "macro.h"

/* Request bodies: the window each stream grants (SETTINGS_INITIAL_WINDOW_SIZE) bounds what one slow
 * worker can leave buffered; the connection window is consumed as bytes arrive, so a stalled stream never
 * holds back the others. */
#define H2_STREAM_WINDOW     (256U * 1024U)
#define H2_CONNECTION_WINDOW (16U * 1024U * 1024U)
/* Response bodies: above the high-water mark response_body() says 1; below the low-water mark the forward
 * side is resumed. */
#define H2_BODY_HIGH_WATER (64U * 1024U)
#define H2_BODY_LOW_WATER  (16U * 1024U)
/* ... and for all streams of a connection together. */
#define H2_CONN_BODY_HIGH_WATER (1024U * 1024U)
#define H2_CONN_BODY_LOW_WATER  (512U * 1024U)
#define H2_BLOCK_SIZE           (16U * 1024U)
#define H2_ARENA_INLINE         1536U
#define H2_FIELDS_INLINE        16U

typedef struct H2Connection H2Connection;
typedef struct Stream Stream;

typedef struct Block {
        struct Block *next;
        uint32_t start, end;
        uint8_t data[H2_BLOCK_SIZE];
} Block;

typedef struct ByteQueue {
        Block *head, *tail;
        size_t size;
} ByteQueue;

typedef struct ArenaChunk {
        struct ArenaChunk *next;
        size_t size, used;
        char data[];
} ArenaChunk;

struct Stream {
        H2Connection *conn;
        int32_t id;
        Exchange *x;          /* from h2_stream_begin() until exchange_free() */
        Stream *prev, *next;  /* conn->streams, or conn->orphans once orphaned */
        Stream *pending_next; /* conn->pending: headers complete, not begun yet */
        Stream *resume_next;  /* conn->resumes (exchange_response_resume() due), or for an orphan
                               * conn->releases (its worker request ended) */

        /* request */
        RequestHead req;
        HeaderField *fields;
        size_t fields_allocated;
        uint64_t header_bytes; /* decoded name + value bytes of this header block */
        uint32_t header_fields;
        unsigned reject_status; /* answered by us (431, 405, 413) instead of being forwarded */
        const char *reject_reason;
        bool in_trailers;
        bool headers_done;
        bool protocol_websocket; /* :protocol websocket: an extended CONNECT (RFC 8441) */
        bool protocol_other;     /* :protocol with anything else */
        bool scheme_other;       /* :scheme neither http nor https */
        bool authority_given;    /* :authority came (host then is not the authority) */
        bool pending;
        bool request_ended; /* END_STREAM received */
        bool body_dropped;  /* the exchange no longer wants body bytes */
        bool body_paused;   /* exchange_request_body() said 1: window not given back */
        size_t unconsumed;  /* request bytes taken but not yet given back to the window */
        uint64_t body_received;

        /* response */
        ByteQueue out;
        bool head_submitted;
        bool has_response_body;
        bool eof;         /* the last response byte is in out */
        bool deferred;    /* the data provider returned NGHTTP2_ERR_DEFERRED */
        bool want_resume; /* response_body() said 1 */
        usec_t stalled_since; /* while want_resume: when the last DATA of it went out (or the stall began) */
        /* min_body_rate: the window of header_timeout the request body is judged over, and body_received
         * at its start */
        usec_t body_window;
        uint64_t body_window_received;
        bool resume_queued;
        bool response_done; /* response_end/error/abort called (or we answered) */
        bool orphan;        /* the client's stream is gone, the worker request is not */
        bool release_queued;

        size_t arena_used;
        ArenaChunk *chunks;
        HeaderField fields_inline[H2_FIELDS_INLINE];
        char arena_inline[H2_ARENA_INLINE];
};

struct H2Connection {
        FrontendConnection base; /* first: the router sees FrontendConnection */
        Frontend *frontend;
        sd_event *event;
        int fd;
        char peer[64];

        IoSource *io, *defer; /* in the front end's batch (io-batch.h) */
        sd_event_source *timer;
        nghttp2_session *session;
        unsigned busy; /* inside mem_recv/session_send or a router call: close() waits */
        bool registered;

        uint8_t *wbuf; /* from a per-loop pool while bytes are waiting */
        size_t wstart, wend;
        bool write_blocked; /* the socket said EAGAIN: wait for EPOLLOUT */
        bool sending;       /* [wstart, wend) waits for the batch's flush (io-batch.h) */
        bool write_failed;  /* that flush's write failed: the connection closes */
        bool readable;      /* EPOLLIN seen, not yet read down to EAGAIN (edge-triggered) */
        bool rdhup;         /* the client shut its side: read until recv() says 0 */
        bool read_eof;

        Stream *streams; /* open nghttp2 streams that have a Stream */
        Stream *orphans;
        Stream *pending, **pending_tail;
        Stream *resumes;
        Stream *releases; /* orphans whose worker request ended: free on the next flush */
        unsigned n_streams, n_orphans;
        size_t resp_buffered;  /* response bytes queued in all streams */
        bool resp_paused;      /* some stream waits for resp_buffered to fall */
        Stream *header_stream; /* the stream whose header block is being received, if any */

        /* limits, from the configuration at accept time */
        uint32_t max_concurrent_streams;
        uint32_t live_cap; /* streams + orphans: requests still running on workers */
        uint64_t max_header_size;
        uint32_t max_header_fields;
        uint64_t max_body_size;
        usec_t header_timeout, idle_timeout;
        bool websocket;    /* extended CONNECT announced (SETTINGS_ENABLE_CONNECT_PROTOCOL) */

        usec_t idle_deadline, header_deadline, shutdown_deadline, close_deadline;
        /* the SETTINGS exchange (the client's, and its ACK of ours) must end within header_timeout */
        usec_t settings_deadline;
        bool settings_received, settings_acked;
        /* the earliest a stalled stream (want_resume, no DATA out) can reach idle_timeout; lazily early */
        usec_t stall_deadline;
        /* the earliest a request body's window of header_timeout ends (min_body_rate); lazily early */
        usec_t body_deadline;
        uint64_t min_body_rate;
        usec_t timer_at; /* what the timer is set to (USEC_INFINITY: off) */
        unsigned refused_in_a_row;
        H2Guard guard;

        bool shutdown_notice_sent; /* first GOAWAY (2^31-1) of a graceful shutdown */
        bool final_goaway_sent;
        bool terminating;     /* an error GOAWAY is queued: close once it is out */
        bool goaway_flushed;  /* that GOAWAY left nghttp2: close once wbuf is empty */
        bool lingering;       /* SHUT_WR done; reading and discarding until EOF */
        bool close_requested; /* close() came while busy */
};

/* nghttp2 may queue this many SETTINGS/PING acknowledgements for a client that does not read. */
#define H2_MAX_OUTBOUND_ACK 1000U

/* h2-connection.c */
extern const uint8_t h2_shutdown_ping[8];
usec_t h2_now(H2Connection *c);
/* A flush on the next loop iteration (a defer source): batches what the router submits. */
void h2_schedule_flush(H2Connection *c);
/* Moves the timer to the earliest deadline; called when an event is settled. */
void h2_arm_timer(H2Connection *c);
/* Queues GOAWAY with error_code and reason (a short phrase, also the GOAWAY debug data), logs it with the
 * peer and the formatted details (client errors through the front end's rate limit, the rest at debug),
 * stops taking new streams and closes once the GOAWAY is out. */
void h2_terminate(H2Connection *c, bool client_error, uint32_t error_code, const char *reason,
                  const char *format, ...) _printf_(5, 6);
/* h2_terminate() with ENHANCE_YOUR_CALM and the guard's counts. */
void h2_flooded(H2Connection *c);
/* The idle deadline follows the number of open streams. */
void h2_idle_update(H2Connection *c);
void h2_header_timer_start(H2Connection *c, Stream *s);
void h2_header_timer_stop(H2Connection *c);
/* A request body's rate window starts now (its head is complete, or our pause of it ended). */
void h2_body_window_start(Stream *s);
void h2_stream_body_window_restart(Stream *s, usec_t now);
/* The body missed min_body_rate: exchange freed, 408 or a reset. */
void h2_stream_body_too_slow(Stream *s);
/* A stream's response stalled at since (its client does not take its DATA): its deadline is armed. */
void h2_stall_arm(H2Connection *c, usec_t since);
/* Resets a stalled stream (CANCEL) and frees its exchange, which closes its worker connection. */
void h2_stream_abandon_response(Stream *s);
/* A SETTINGS frame came (ack: the client acknowledged ours); both end the handshake's deadline. */
void h2_settings_seen(H2Connection *c, bool ack);
/* The second GOAWAY of a graceful shutdown, with the last stream id processed. */
void h2_shutdown_final(H2Connection *c);

/* h2-session.c: built once per loop. NULL on ENOMEM. */
nghttp2_session_callbacks *h2_session_callbacks(void);
nghttp2_option *h2_session_options(void);

/* h2-mem.c: nghttp2's allocator, with per-loop free lists of small blocks (bounded in bytes per size
 * class), emptied by h2_mem_pool_release() (frontend_h2_release_pools()). */
nghttp2_mem *h2_mem(void);
void h2_mem_pool_release(void);
/* Bytes the free lists hold. */
size_t h2_mem_pool_bytes(void);

/* h2-stream.c */
int h2_stream_new(H2Connection *c, int32_t id, Stream **ret);
/* Returns the Stream to the per-loop pool; frees its arena chunks and response blocks. */
void h2_stream_release(Stream *s);
/* The per-loop free list of streams, emptied (frontend_h2_release_pools()). */
void h2_stream_pool_release(void);
/* Copies bytes into the stream's arena; NULL on ENOMEM. */
char *h2_stream_strndup(Stream *s, const void *p, size_t n);
/* One decoded field of the request's header block. 0 or -ENOMEM. */
int h2_stream_add_header(Stream *s, const uint8_t *name, size_t namelen, const uint8_t *value,
                         size_t valuelen);
/* The head of an h2c upgrade request, copied into the arena. 0 or -ENOMEM. */
int h2_stream_copy_head(Stream *s, const RequestHead *h);
/* The request's header block is complete (END_HEADERS): answer it ourselves (431, 405, 413) or queue it
 * for h2_stream_begin() once the bytes of this read are processed (h2_run_pending()). */
void h2_stream_headers_complete(Stream *s);
void h2_run_pending(H2Connection *c);
/* Creates the Exchange from the request head and hands it to the router. */
void h2_stream_begin(Stream *s);
/* Body bytes of the request, after the connection window was given back. */
void h2_stream_request_body(Stream *s, const uint8_t *data, size_t size);
/* The forward side takes body again: the bytes it took meanwhile go back to the stream window. */
void h2_stream_request_resume(Stream *s);
void h2_stream_request_end(Stream *s);
/* The stream is gone from nghttp2: frees or orphans its exchange. */
void h2_stream_closed(Stream *s, uint32_t error_code);
/* Detaches and frees the exchange (the forward side closes its worker connection). */
void h2_stream_drop_exchange(Stream *s);

/* h2-response.c */
extern const ClientOps h2_client_ops;
void h2_queue_clear(ByteQueue *q);
/* The per-loop free list of response blocks, emptied (frontend_h2_release_pools()). */
void h2_response_pool_release(void);
/* The stream is closing: its unsent response bytes go, it leaves the resume list. */
void h2_stream_forget_response(Stream *s);
/* Answers with a short text/plain response of our own (no exchange involved). 0 or -errno. */
int h2_stream_respond_error(Stream *s, unsigned status, unsigned retry_after);
/* nghttp2's send_data_callback for our data provider: copies one DATA frame into the write buffer.
 * 0, or NGHTTP2_ERR_WOULDBLOCK while the write buffer has no room for it. */
int h2_stream_send_data(H2Connection *c, Stream *s, const uint8_t *framehd, size_t length);
/* After nghttp2_session_send(): exchange_response_resume() for streams that drained. */
void h2_run_resumes(H2Connection *c);
/* Orphans whose worker request ended: their exchanges freed. */
void h2_run_releases(H2Connection *c);

/* h2-connection.c: the write buffer (per-loop pooled, held only while bytes wait). 0, -EAGAIN when need
 * bytes do not fit now, -ENOMEM. */
#define H2_WBUF_SIZE (64U * 1024U)
int h2_wbuf_reserve(H2Connection *c, size_t need, uint8_t **ret);
void h2_wbuf_commit(H2Connection *c, size_t n);
