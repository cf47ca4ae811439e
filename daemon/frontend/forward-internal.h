/* SPDX-License-Identifier: MIT */
#pragma once

/* The forward side's insides, shared by its three files: forward.c (the pool: queue, timer, deferred
 * callouts, the API), forward-conn.c (one connection: connect, retry, request bytes, deadlines, failure)
 * and forward-response.c (reading and parsing a worker's response), and their unit test
 * (test-forward.c). Nothing here is for other modules.
 *
 * Re-entrancy rules all three follow. The router may do anything from inside a callout
 * (exchange_response_*, exchange_fail, request_body_resume): detach this or another exchange, start new
 * ones, drain or even free the pool. So: (1) callouts happen only from our own event handlers, never from
 * inside a forward_*() call the router made (failures found there are queued on p->pending and delivered
 * from the defer source); (2) a connection a handler works on is not freed under it (dispatching count,
 * freed on unhold); (3) the pool is not freed while a handler runs (depth count; forward_pool_free() then
 * fails the exchanges at once and leaves the memory to the outermost handler). */

#include <errno.h>
#include <http_parser.h>
#include <stddef.h>
#include <string.h>
#include <sys/un.h>
#include <systemd/sd-event.h>

#include "forward-serialize.h"
#include "forward.h"
#include "list.h"
#include "macro.h"
#include "slot-share.h"

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

/* For tests: the largest request-body buffer and response read buffer any connection of p had. */
typedef struct ForwardBufferStats {
        size_t request_buffer_peak;  /* bytes queued for the worker, head included */
        size_t response_buffer_peak; /* bytes held from the worker */
        unsigned connects;           /* connect() calls made (EAGAIN retries included) */
        unsigned retries;            /* requests replayed on a fresh connection */
} ForwardBufferStats;

void forward_pool_buffer_stats(const ForwardPool *p, ForwardBufferStats *ret);

#define DEFAULT_MAX_CONNECTIONS 64U
#define DEFAULT_MAX_QUEUED 1024U
#define DEFAULT_RESPONSE_TIMEOUT (60 * USEC_PER_SEC)
#define DEFAULT_IDLE_TIMEOUT (30 * USEC_PER_SEC)
#define DEFAULT_CLIENT_SHARE 0.5
#define OUT_INITIAL (16U * 1024U)
/* A Unix socket whose accept backlog is full refuses a non-blocking connect with EAGAIN (there is no
 * EINPROGRESS for AF_UNIX): try again, backing off, until the response timeout. */
#define CONNECT_RETRY_MIN (1 * USEC_PER_MSEC)
#define CONNECT_RETRY_MAX (100 * USEC_PER_MSEC)
#define READS_PER_WAKEUP 16
#define REASON_MAX 256

#define container_of(ptr, type, member) ((type *) ((char *) (ptr) - offsetof(type, member)))

typedef struct Link {
        struct Link *prev, *next;
} Link;

typedef struct List {
        Link *head, *tail;
        unsigned n;
} List;

static inline void list_insert_after(List *l, Link *after, Link *k) {
        k->prev = after;
        k->next = after ? after->next : l->head;
        if (k->next)
                k->next->prev = k;
        else
                l->tail = k;
        if (after)
                after->next = k;
        else
                l->head = k;
        l->n++;
}

static inline void list_remove(List *l, Link *k) {
        QUEUE_REMOVE(l->head, l->tail, k, prev, next);
        l->n--;
}

typedef enum UpstreamKind {
        UPSTREAM_CONNECTION,
        UPSTREAM_WAITER,
} UpstreamKind;

/* What x->upstream points at: a connection carrying the exchange, or its place in the queue. */
struct Upstream {
        UpstreamKind kind;
        ForwardPool *pool;
        Exchange *x;
        usec_t started;
};

typedef struct Body {
        bool expected;      /* a body follows the head */
        bool chunked;       /* length unknown: we re-chunk */
        bool ended;         /* all of it was handed to us */
        uint64_t remaining; /* of a Content-Length body */
        bool tunnel;        /* a WebSocket handshake: no framing; after the 101 the bytes of the tunnel */
} Body;

/* A request waiting for a free connection: in the pool's queue (arrival order: deadlines, the bound),
 * and once ready in its client's list of the slot share (slot-share.h), which decides who goes next.
 * Ready: nothing more to wait for before it is worth a worker connection. A request with a body is not,
 * until the first body bytes came (or the body ended): a client that sends a head and then stalls costs
 * us this waiter, never a worker connection. */
typedef struct Waiter {
        Upstream up;
        Link link;
        ShareClient *client;
        ShareLink share_link;
        bool ready;
        usec_t deadline;
        Body body;
        char *data; /* body bytes that arrived while queued (unframed) */
        size_t len, cap;
        bool paused;
} Waiter;

typedef enum ConnState {
        CONN_CONNECTING,
        CONN_IDLE,
        CONN_ACTIVE,
        CONN_FAILED, /* socket closed; the exchange hears why from the pending list */
        CONN_CLOSED, /* socket closed; freed once no handler works on it */
} ConnState;

typedef enum ParseEvent {
        EV_NONE,
        EV_HEAD,
        EV_BODY,
        EV_COMPLETE,
        EV_INTERIM,
} ParseEvent;

enum {
        PENDING_FAIL = 1 << 0,
        PENDING_RESPONSE_RESUME = 1 << 1,
        PENDING_REQUEST_RESUME = 1 << 2,
};

/* Response fields as offsets into the read buffer: the head may arrive over several reads and the
 * buffer may be compacted under it. */
typedef struct RawField {
        uint32_t name_off, name_len, value_off, value_len;
} RawField;

typedef struct Connection {
        Upstream up;
        ConnState state;
        ShareClient *client; /* whose share the exchange on it counts against (none for a tunnel) */
        int fd;
        /* io is edge-triggered, added once connect() succeeded (an unconnected stream socket reports
         * EPOLLHUP) and never disabled; an edge only says the socket changed, so its state is kept here.
         * readable: input, EOF or an error may be waiting (set by an event, cleared once a read comes back
         * short or with EAGAIN); rdhup: the worker's close was seen, so read on until EOF; write_blocked:
         * the socket refused request bytes, EPOLLOUT is watched until it takes them. In the front end's
         * batch (io-batch.h), dispatched before the client sockets. */
        IoSource *io;
        uint32_t io_events;
        bool readable, rdhup, write_blocked;
        bool connected;
        Link all_link, idle_link, timed_link, pending_link;
        bool in_timed;
        usec_t check_at; /* when the pool timer looks at it; never later than its real deadline */
        unsigned pending;
        unsigned dispatching;
        unsigned served; /* responses completed on this socket */
        usec_t idle_since, last_activity, sent_at, connect_deadline, retry_at, backoff;

        /* the exchange on it */
        Body body;
        bool reused, retried;
        bool retain;        /* out[0, out_len) is the whole request so far: it can be replayed */
        bool hold;          /* small body: head goes out with it once complete */
        bool body_paused;   /* forward_request_body() returned 1 */
        bool write_broken;  /* the worker stopped taking the request */
        bool request_done;  /* all of the request is on the socket */
        bool response_started, head_done, response_paused, skip_body, interim;
        bool tunnel;        /* the worker answered 101: what it sends is the tunnel's, unparsed */
        bool shut_wr;       /* the client's side of the tunnel ended: our write side is shut */
        unsigned status;
        uint64_t body_bytes;

        char *out;
        size_t out_cap, out_len, out_off;
        size_t offered;  /* the write of the batch's flush under way: how much of out it offered */
        int read_error; /* the batch's read met this error (-errno): the next read reports it */

        http_parser parser;
        char *in;
        size_t in_len, in_parsed, head_start;
        RawField hf[EXCHANGE_FIELDS_MAX];
        size_t n_hf;
        bool hf_value;
        ParseEvent ev;
        const char *ev_data;
        size_t ev_len;
        const char *parse_error;

        unsigned fail_status;
        char reason[REASON_MAX];
} Connection;

struct ForwardPool {
        IoBatch *batch;
        sd_event *event; /* the batch's: the timer, the loop's time */
        struct sockaddr_un addr;
        socklen_t addr_len;
        ForwardOptions o;
        char *cookie_name;
        ForwardCounters counters;
        ForwardBufferStats stats;
        List conns, idle, timed, pending, queue;
        SlotShare share;
        sd_event_source *timer;
        IoSource *defer;
        usec_t timer_at;
        bool timer_armed;
        unsigned depth;
        bool draining, dead, queue_busy, queue_again;
        usec_t last_answer_at; /* the last response head: health's counters (forward_conn_unanswered()) */
};

static inline const char *forward_errstr(int e) {
        const char *s = strerrordesc_np(ERRNO_VALUE(e));
        return s ? s : "unknown error";
}

static inline usec_t forward_pool_now(ForwardPool *p) {
        return io_batch_now(p->batch);
}

/* Health's counters, nothing else reads them: the worker answered (a response head), or left c's
 * exchange unanswered (a response timeout, a connect that failed or timed out). An exchange that waited
 * while the worker answered another is slow, not unanswered: a burst of slow requests timing out
 * together says nothing of a worker that answered the rest meanwhile. */
static inline void forward_pool_answered(ForwardPool *p) {
        p->counters.answers++;
        p->counters.unanswered = 0;
        p->last_answer_at = forward_pool_now(p);
}

static inline void forward_conn_unanswered(const Connection *c) {
        ForwardPool *p = c->up.pool;

        if (c->up.started >= p->last_answer_at)
                p->counters.unanswered++;
}

/* A connect that failed for the worker's sake counts (nothing listens, its accept queue stays full); one
 * that failed for ours (out of descriptors or memory) says nothing of the worker. */
static inline void forward_conn_connect_failed(const Connection *c, int error) {
        if (error == -ECONNREFUSED || error == -ENOENT || error == -EAGAIN)
                forward_conn_unanswered(c);
}

static inline size_t forward_conn_pending_out(const Connection *c) {
        return c->out_len - c->out_off;
}

/* forward.c: the pool */
void forward_pool_arm(ForwardPool *p, usec_t when);
void forward_pool_pending_add(ForwardPool *p, Connection *c, unsigned what);
void forward_pool_pending_remove(ForwardPool *p, Connection *c);
void forward_pool_dispatch_queue(ForwardPool *p);
void forward_conn_share_release(Connection *c);
void forward_conn_recycle(Connection *c);
void forward_pool_enter(ForwardPool *p);
void forward_pool_leave(ForwardPool *p);

/* forward-conn.c: one connection */
void forward_conn_update_io(Connection *c);
usec_t forward_conn_deadline(const Connection *c);
void forward_conn_timed_remove(Connection *c);
void forward_conn_timed_insert(Connection *c, usec_t when);
void forward_conn_timed_update(Connection *c);
void forward_conn_close_fd(Connection *c);
void forward_conn_unlink(Connection *c);
void forward_conn_destroy(Connection *c);
void forward_conn_discard(Connection *c);
void forward_conn_hold(Connection *c);
void forward_conn_unhold(Connection *c);
int forward_conn_new(ForwardPool *p, Connection **ret);
Exchange *forward_conn_release(Connection *c);
void forward_conn_fail(Connection *c, unsigned status, const char *format, ...) _printf_(3, 4);
void forward_conn_abandon(Connection *c);
void forward_conn_stop_retain(Connection *c);
void forward_conn_flush(Connection *c);
int forward_conn_body_feed(Connection *c, const void *data, size_t size, bool last_chunk);
Body forward_body_of(const RequestHead *h);
int forward_conn_attach(Connection *c, Exchange *x, usec_t started);
void forward_conn_connected(Connection *c);
void forward_conn_read_later(Connection *c);
void forward_conn_start(Connection *c);
void forward_conn_lost(Connection *c, int error, const char *what);
void forward_conn_go_idle(Connection *c);
void forward_conn_timeout(Connection *c, usec_t now);

/* forward-response.c: the response side */
bool forward_conn_still(const Connection *c, const Exchange *x);
bool forward_conn_parse(Connection *c);
void forward_conn_read(Connection *c);
void forward_conn_on_io(IoSource *s, int fd, uint32_t revents, void *userdata);
bool forward_conn_read_prepare(IoSource *s, uint32_t revents, struct iovec *ret, void *userdata);
bool forward_conn_read_done(IoSource *s, ssize_t result, void *userdata);
extern const IoSourceOps forward_conn_io_ops;
