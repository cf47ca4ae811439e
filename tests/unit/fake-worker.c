/* SPDX-License-Identifier: MIT */
/* The worker a forward test talks to. */
#include "fake-worker.h"

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "macro.h"

#define OK_RESPONSE "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

static void grow_append(char **buf, size_t *len, size_t *cap, const void *data, size_t size) {
        if (*len + size > *cap) {
                size_t n = MAX(*cap * 2, *len + size + 1024);
                *buf = realloc(*buf, n);
                assert_non_null(*buf);
                *cap = n;
        }
        memcpy(*buf + *len, data, size);
        *len += size;
}

FakeConn *fake_conn(FakeWorker *w, unsigned index) {
        for (FakeConn *c = w->conns; c; c = c->next)
                if (c->index == index)
                        return c;
        return NULL;
}

void fake_conn_close(FakeConn *c) {
        if (c->closed)
                return;
        c->closed = true;
        c->io = sd_event_source_disable_unref(c->io);
        c->delay = sd_event_source_disable_unref(c->delay);
        c->fd = safe_close(c->fd);
        c->w->open--;
}

static void fake_update_io(FakeConn *c) {
        uint32_t events = (c->read_paused ? 0 : EPOLLIN) | (c->out_len > c->out_off ? EPOLLOUT : 0);

        if (c->closed)
                return;
        if (events) {
                assert_true(sd_event_source_set_io_events(c->io, events) >= 0);
                assert_true(sd_event_source_set_enabled(c->io, SD_EVENT_ON) >= 0);
        } else
                assert_true(sd_event_source_set_enabled(c->io, SD_EVENT_OFF) >= 0);
}

static void fake_flush(FakeConn *c) {
        while (!c->closed && c->out_off < c->out_len) {
                ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EAGAIN)
                                break;
                        fake_conn_close(c);
                        return;
                }
                c->out_off += (size_t) n;
        }
        if (c->out_off == c->out_len) {
                c->out_off = c->out_len = 0;
                if (c->close_after_flush)
                        fake_conn_close(c);
        }
        if (c->closed)
                return;
        if (c->read_paused && c->out_len - c->out_off < 64 * 1024)
                c->read_paused = false;
        fake_update_io(c);
}

static void fake_answer(FakeConn *c) {
        grow_append(&c->out, &c->out_len, &c->out_cap, c->w->response, strlen(c->w->response));
        c->close_after_flush = c->answer_close;
        fake_flush(c);
}

static int fake_on_delay(sd_event_source *s, uint64_t usec, void *userdata) {
        FakeConn *c = userdata;

        c->delay = sd_event_source_unref(c->delay);
        fake_answer(c);
        return 0;
}

static int fake_on_headers_complete(http_parser *p) {
        FakeConn *c = p->data;
        char head[128];

        if (c->w->echo) {
                int n = snprintf(head, sizeof(head),
                                 "HTTP/1.1 200 OK\r\nContent-Length: %" PRIu64 "\r\n\r\n",
                                 (uint64_t) p->content_length);
                grow_append(&c->out, &c->out_len, &c->out_cap, head, (size_t) n);
        }
        return 0;
}

static int fake_on_body(http_parser *p, const char *at, size_t len) {
        FakeConn *c = p->data;

        grow_append(&c->body, &c->body_len, &c->body_cap, at, len);
        if (c->w->echo)
                grow_append(&c->out, &c->out_len, &c->out_cap, at, len);
        return 0;
}

static int fake_on_message_complete(http_parser *p) {
        FakeConn *c = p->data;
        FakeWorker *w = c->w;
        FakeAction a;

        c->requests++;
        w->requests++;
        if (w->echo)
                return 0;
        a = w->decide ? w->decide(c) : FAKE_ANSWER;
        switch (a) {
        case FAKE_ANSWER:
        case FAKE_ANSWER_CLOSE:
                c->answer_close = a == FAKE_ANSWER_CLOSE;
                if (w->delay > 0)
                        assert_true(sd_event_add_time_relative(w->event, &c->delay, CLOCK_MONOTONIC,
                                                               w->delay, 0, fake_on_delay, c) >= 0);
                else
                        fake_answer(c);
                break;
        case FAKE_CLOSE:
                fake_conn_close(c);
                break;
        case FAKE_SILENT:
                break;
        }
        return 0;
}

static const http_parser_settings fake_settings = {
        .on_headers_complete = fake_on_headers_complete,
        .on_body = fake_on_body,
        .on_message_complete = fake_on_message_complete,
};

static int fake_on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        FakeConn *c = userdata;
        char buf[64 * 1024];
        ssize_t n;

        if (revents & EPOLLOUT)
                fake_flush(c);
        if (c->closed || c->read_paused || !(revents & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                return 0;
        n = read(c->fd, buf, sizeof(buf));
        if (n < 0) {
                if (errno != EAGAIN)
                        fake_conn_close(c);
                return 0;
        }
        if (n == 0) {
                c->eof = true;
                fake_conn_close(c);
                return 0;
        }
        grow_append(&c->raw, &c->raw_len, &c->raw_cap, buf, (size_t) n);
        if (http_parser_execute(&c->parser, &fake_settings, buf, (size_t) n) != (size_t) n &&
            HTTP_PARSER_ERRNO(&c->parser) != HPE_OK)
                c->w->parse_errors++;
        if (c->closed)
                return 0;
        if (c->w->echo && c->out_len - c->out_off > 256 * 1024)
                c->read_paused = true;
        fake_flush(c);
        return 0;
}

static int fake_on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        FakeWorker *w = userdata;
        FakeConn *c;
        int cfd = accept4(w->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (cfd < 0)
                return 0;
        c = calloc(1, sizeof(*c));
        assert_non_null(c);
        c->w = w;
        c->fd = cfd;
        c->index = w->accepts++;
        if (w->sndbuf > 0 && setsockopt(cfd, SOL_SOCKET, SO_SNDBUFFORCE, &w->sndbuf, sizeof(w->sndbuf)) < 0)
                (void) setsockopt(cfd, SOL_SOCKET, SO_SNDBUF, &w->sndbuf, sizeof(w->sndbuf));
        http_parser_init(&c->parser, HTTP_REQUEST);
        c->parser.data = c;
        assert_true(sd_event_add_io(w->event, &c->io, cfd, EPOLLIN, fake_on_io, c) >= 0);
        c->next = w->conns;
        w->conns = c;
        w->open++;
        w->max_open = MAX(w->max_open, w->open);
        return 0;
}

void fake_worker_init(FakeWorker *w, sd_event *event, bool listening) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        memset(w, 0, sizeof(*w));
        w->event = event;
        strcpy(w->dir, "/tmp/test-forward-XXXXXX");
        assert_non_null(mkdtemp(w->dir));
        (void) snprintf(w->path, sizeof(w->path), "%s/w.sock", w->dir);
        strcpy(sa.sun_path, w->path);
        w->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        assert_true(w->listen_fd >= 0);
        assert_int_equal(bind(w->listen_fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        if (listening) {
                assert_int_equal(listen(w->listen_fd, 64), 0);
                assert_true(sd_event_add_io(w->event, &w->accept_io, w->listen_fd, EPOLLIN, fake_on_accept,
                                            w) >= 0);
        }
        w->response = OK_RESPONSE;
}

void fake_worker_init_backlogged(FakeWorker *w, sd_event *event) {
        fake_worker_init(w, event, false);
        assert_int_equal(listen(w->listen_fd, 0), 0);
}

void fake_worker_start_accepting(FakeWorker *w) {
        assert_true(sd_event_add_io(w->event, &w->accept_io, w->listen_fd, EPOLLIN, fake_on_accept, w) >= 0);
}

void fake_worker_done(FakeWorker *w) {
        while (w->conns) {
                FakeConn *c = w->conns;
                w->conns = c->next;
                fake_conn_close(c);
                free(c->raw);
                free(c->body);
                free(c->out);
                free(c);
        }
        w->accept_io = sd_event_source_disable_unref(w->accept_io);
        w->listen_fd = safe_close(w->listen_fd);
        (void) unlink(w->path);
        (void) rmdir(w->dir);
}
