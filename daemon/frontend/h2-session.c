/* SPDX-License-Identifier: MIT */
/* The nghttp2 side of an HTTP/2 client connection: the session's callbacks and options. Callbacks only:
 * each one turns what nghttp2 decoded into a call on the stream (h2-stream.c) or on the
 * connection (h2-connection.c); routing stays with the router. A callback returns 0 or, to reset just the
 * stream it concerns, NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE after submitting an RST_STREAM of our own
 * choosing; NGHTTP2_ERR_CALLBACK_FAILURE (fatal) only for out-of-memory. */

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "h2-internal.h"
#include "list.h"
#include "log.h"
#include "macro.h"

#define H2_MAX_CONTINUATIONS 8U
#define H2_RESET_BURST       1000U /* nghttp2's defaults for incoming RST_STREAM */
#define H2_RESET_RATE        33U
#define H2_MAX_SETTINGS      32U
#define H2_REFUSED_MAX       100U /* streams refused at the cap in a row before GOAWAY */

static ssize_t on_send(nghttp2_session *session, const uint8_t *data, size_t length, int flags,
                       void *userdata) {
        H2Connection *c = userdata;
        uint8_t *p;
        size_t n;
        int r;

        r = h2_wbuf_reserve(c, 1, &p);
        if (r == -EAGAIN)
                return NGHTTP2_ERR_WOULDBLOCK;
        if (r < 0)
                return NGHTTP2_ERR_CALLBACK_FAILURE;
        n = MIN(length, (size_t) (H2_WBUF_SIZE - c->wend));
        memcpy(p, data, n);
        h2_wbuf_commit(c, n);
        return (ssize_t) n;
}

static int on_send_data(nghttp2_session *session, nghttp2_frame *frame, const uint8_t *framehd,
                        size_t length, nghttp2_data_source *source, void *userdata) {
        return h2_stream_send_data(userdata, source->ptr, framehd, length);
}

static int refuse_stream(H2Connection *c, int32_t id, uint32_t error_code) {
        /* Our RST_STREAM goes first; TEMPORAL_CALLBACK_FAILURE makes nghttp2 skip the header block (it
         * still decodes it, HPACK state is shared) and not queue a second RST for a closing stream. */
        (void) nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, id, error_code);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *userdata) {
        H2Connection *c = userdata;
        int32_t id = frame->hd.stream_id;
        Stream *s;

        if (frame->hd.type != NGHTTP2_HEADERS)
                return 0;
        if (frame->headers.cat == NGHTTP2_HCAT_HEADERS) {
                /* Trailers: counted against the same limits, not forwarded (no trailers upstream). */
                s = nghttp2_session_get_stream_user_data(session, id);
                if (s && !s->in_trailers) {
                        s->in_trailers = true;
                        s->header_bytes = 0;
                        s->header_fields = 0;
                        h2_header_timer_start(c, s);
                }
                return 0;
        }
        if (frame->headers.cat != NGHTTP2_HCAT_REQUEST)
                return 0;

        if (c->terminating || c->final_goaway_sent)
                return refuse_stream(c, id, NGHTTP2_REFUSED_STREAM);

        if (c->n_streams + c->n_orphans >= c->live_cap) {
                c->refused_in_a_row++;
                log_debug("HTTP/2 client %s: refusing stream %" PRIi32 ": %u requests of reset streams "
                          "still run on workers (cap %" PRIu32 ").",
                          c->peer, id, c->n_orphans, c->live_cap);
                if (h2_guard_charge(&c->guard, H2_OVERHEAD_REFUSED, h2_now(c)) < 0)
                        h2_flooded(c);
                else if (c->refused_in_a_row > H2_REFUSED_MAX)
                        h2_terminate(c, true, NGHTTP2_ENHANCE_YOUR_CALM, "too many streams refused",
                                     "%u in a row while %u requests of reset streams still run on workers "
                                     "(cap %" PRIu32 ")",
                                     c->refused_in_a_row, c->n_orphans, c->live_cap);
                return refuse_stream(c, id, NGHTTP2_REFUSED_STREAM);
        }

        if (h2_stream_new(c, id, &s) < 0) {
                log_oom();
                return refuse_stream(c, id, NGHTTP2_INTERNAL_ERROR);
        }
        (void) nghttp2_session_set_stream_user_data(session, id, s);
        LIST_PREPEND(c->streams, s, prev, next);
        c->n_streams++;
        c->refused_in_a_row = 0;
        h2_idle_update(c);
        h2_header_timer_start(c, s);
        return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags, void *userdata) {
        H2Connection *c = userdata;
        int32_t id = frame->hd.stream_id;
        Stream *s;
        bool over;

        if (frame->hd.type != NGHTTP2_HEADERS)
                return 0;
        s = nghttp2_session_get_stream_user_data(session, id);
        if (!s)
                return 0;

        /* Our own count of the decoded header block: nghttp2 1.52 has none (HPACK can turn a few bytes on
         * the wire into many decoded ones, so the wire size says nothing). */
        s->header_bytes += namelen + valuelen;
        if (namelen == 0 || name[0] != ':')
                s->header_fields++;
        over = s->header_bytes > c->max_header_size || s->header_fields > c->max_header_fields;

        if (s->in_trailers) {
                if (!over)
                        return 0;
                /* The head went out already: a status is no longer possible. */
                frontend_log_client_error(c->frontend,
                                          "HTTP/2 client %s stream %" PRIi32
                                          ": request trailers over the limits (%" PRIu64 " bytes, %" PRIu32
                                          " fields), resetting.",
                                          c->peer, id, s->header_bytes, s->header_fields);
                return refuse_stream(c, id, NGHTTP2_ENHANCE_YOUR_CALM);
        }
        if (s->reject_status)
                return 0; /* keep counting for the log line, store nothing */
        if (over) {
                /* Answered with 431 once the block is complete; nothing of it is forwarded. */
                s->reject_status = 431;
                s->reject_reason = s->header_fields > c->max_header_fields ? "too many request header fields"
                                                                           : "request header too large";
                return 0;
        }
        if (h2_stream_add_header(s, name, namelen, value, valuelen) < 0) {
                log_oom();
                return refuse_stream(c, id, NGHTTP2_INTERNAL_ERROR);
        }
        return 0;
}

static int on_data_chunk_recv(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                              const uint8_t *data, size_t len, void *userdata) {
        H2Connection *c = userdata;
        Stream *s;

        /* The connection window is given back at once: only the stream's own window waits for the worker,
         * so a slow worker never holds back the other streams of this connection. */
        (void) nghttp2_session_consume_connection(session, len);
        h2_guard_credit(&c->guard, len);

        s = nghttp2_session_get_stream_user_data(session, stream_id);
        if (!s) {
                (void) nghttp2_session_consume_stream(session, stream_id, len);
                return 0;
        }
        h2_stream_request_body(s, data, len);
        return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *userdata) {
        H2Connection *c = userdata;
        Stream *s;

        switch (frame->hd.type) {
        case NGHTTP2_DATA:
                /* Padding-only frames: the wire walker saw a non-empty frame. */
                if (frame->hd.length > 0 && frame->hd.length == frame->data.padlen &&
                    !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
                    h2_guard_charge(&c->guard, H2_OVERHEAD_EMPTY_DATA, h2_now(c)) < 0)
                        h2_flooded(c);
                s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
                if (s && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
                        h2_stream_request_end(s);
                break;

        case NGHTTP2_HEADERS:
                s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
                if (!s)
                        break;
                if (c->header_stream == s)
                        h2_header_timer_stop(c);
                if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
                        if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
                                s->request_ended = true;
                        h2_stream_headers_complete(s);
                } else if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
                        h2_stream_request_end(s);
                break;

        case NGHTTP2_PING:
                if ((frame->hd.flags & NGHTTP2_FLAG_ACK) &&
                    memcmp(frame->ping.opaque_data, h2_shutdown_ping, sizeof(h2_shutdown_ping)) == 0)
                        h2_shutdown_final(c);
                break;

        case NGHTTP2_SETTINGS:
                h2_settings_seen(c, frame->hd.flags & NGHTTP2_FLAG_ACK);
                break;

        case NGHTTP2_GOAWAY:
                log_debug("HTTP/2 client %s sent GOAWAY %s (last stream %" PRIi32 ").", c->peer,
                          nghttp2_http2_strerror(frame->goaway.error_code), frame->goaway.last_stream_id);
                break;
        }
        return 0;
}

static int on_invalid_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, int lib_error_code,
                                 void *userdata) {
        H2Connection *c = userdata;

        log_debug("HTTP/2 client %s: invalid frame (type %u) on stream %" PRIi32 ": %s", c->peer,
                  (unsigned) frame->hd.type, frame->hd.stream_id, nghttp2_strerror(lib_error_code));
        if (h2_guard_charge(&c->guard, H2_OVERHEAD_INVALID, h2_now(c)) < 0)
                h2_flooded(c);
        return 0;
}

static int on_frame_send(nghttp2_session *session, const nghttp2_frame *frame, void *userdata) {
        H2Connection *c = userdata;
        Stream *s;

        if (frame->hd.type == NGHTTP2_GOAWAY) {
                if (c->terminating && frame->goaway.last_stream_id != INT32_MAX)
                        c->goaway_flushed = true;
                else if (!c->terminating && frame->goaway.error_code != NGHTTP2_NO_ERROR)
                        /* nghttp2's own verdict (a protocol error, or in 1.52 without debug data: its
                         * RST_STREAM rate limit). */
                        frontend_log_client_error(
                                c->frontend,
                                "HTTP/2 client %s: nghttp2 sent GOAWAY %s (%.*s) after %" PRIu32
                                " RST_STREAM frames.",
                                c->peer, nghttp2_http2_strerror(frame->goaway.error_code),
                                frame->goaway.opaque_data_len > 0 ? (int) frame->goaway.opaque_data_len : 15,
                                frame->goaway.opaque_data_len > 0 ? (const char *) frame->goaway.opaque_data
                                                                  : "no reason given",
                                c->guard.count[H2_OVERHEAD_RST_STREAM]);
                return 0;
        }
        if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) ||
            !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
                return 0;
        /* The response is complete while the request is not (an early answer: 431, 413, an error, a
         * worker that did not wait for the body): tell the client to stop sending (RFC 9113 8.1). */
        s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (s && !s->request_ended)
                (void) nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                                 NGHTTP2_NO_ERROR);
        return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *userdata) {
        H2Connection *c = userdata;
        Stream *s = nghttp2_session_get_stream_user_data(session, stream_id);

        if (!s)
                return 0;
        if (c->header_stream == s)
                h2_header_timer_stop(c);
        h2_stream_closed(s, error_code);
        return 0;
}

static int on_error(nghttp2_session *session, int lib_error_code, const char *msg, size_t len,
                    void *userdata) {
        H2Connection *c = userdata;

        /* nghttp2's own description of what the client did wrong; the GOAWAY or RST it sends says so. */
        log_debug("HTTP/2 client %s: %.*s", c->peer, (int) len, msg);
        return 0;
}

nghttp2_session_callbacks *h2_session_callbacks(void) {
        static _Thread_local nghttp2_session_callbacks *cbs;

        if (cbs)
                return cbs;
        if (nghttp2_session_callbacks_new(&cbs) != 0)
                return NULL;
        nghttp2_session_callbacks_set_send_callback(cbs, on_send);
        nghttp2_session_callbacks_set_send_data_callback(cbs, on_send_data);
        nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
        nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk_recv);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
        nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cbs, on_invalid_frame_recv);
        nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
        nghttp2_session_callbacks_set_error_callback2(cbs, on_error);
        return cbs;
}

nghttp2_option *h2_session_options(void) {
        static _Thread_local nghttp2_option *opt;

        if (opt)
                return opt;
        if (nghttp2_option_new(&opt) != 0)
                return NULL;
        /* Request bodies: the stream window is given back when the worker side took the bytes. */
        nghttp2_option_set_no_auto_window_update(opt, 1);
        nghttp2_option_set_max_continuations(opt, H2_MAX_CONTINUATIONS);
        nghttp2_option_set_stream_reset_rate_limit(opt, H2_RESET_BURST, H2_RESET_RATE);
        nghttp2_option_set_max_settings(opt, H2_MAX_SETTINGS);
        nghttp2_option_set_max_outbound_ack(opt, H2_MAX_OUTBOUND_ACK);
        /* No RFC 7540 priority tree (we send SETTINGS_NO_RFC7540_PRIORITIES = 1): closed streams need not
         * be kept for it, and PRIORITY frames cost nothing but their parse. */
        nghttp2_option_set_no_closed_streams(opt, 1);
        return opt;
}
