/* SPDX-License-Identifier: MIT */
#include "population-fetch.h"

#include <errno.h>
#include <http_parser.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "macro.h"

struct PopulationFetch {
        sd_event *event;
        int fd;
        sd_event_source *io;
        sd_event_source *defer; /* calls done from the loop once the fetch ended */
        char request[512];
        size_t request_len, sent;
        bool connected;
        http_parser parser;
        bool complete, ended;
        bool too_large;         /* the answer announced or sent more than POPULATION_FETCH_BODY_MAX */
        char *body;
        size_t body_len, body_cap;
        usec_t started;
        PopulationFetchResult result;
        PopulationFetchDone done;
        void *userdata;
};

static usec_t loop_now(sd_event *e) {
        usec_t t;

        return sd_event_now(e, CLOCK_MONOTONIC, &t) >= 0 ? t : now_usec(CLOCK_MONOTONIC);
}

/* The fetch ends: the socket closes now, done follows from the loop (the defer source). */
_printf_(3, 4) static void finish(PopulationFetch *f, int error, const char *format, ...) {
        va_list ap;

        if (f->ended)
                return;
        f->ended = true;
        f->result.error = error;
        if (format) {
                va_start(ap, format);
                (void) vsnprintf(f->result.reason, sizeof f->result.reason, format, ap);
                va_end(ap);
        }
        f->result.body = f->body ? f->body : "";
        f->result.body_len = f->body_len;
        f->result.elapsed = loop_now(f->event) - f->started;
        f->io = sd_event_source_disable_unref(f->io);
        f->fd = safe_close(f->fd);
        if (sd_event_source_set_enabled(f->defer, SD_EVENT_ONESHOT) < 0)
                f->done(f, f->userdata); /* cannot happen for a defer source we own; never lose the end */
}

static int on_body(http_parser *p, const char *at, size_t len) {
        PopulationFetch *f = p->data;
        size_t want = f->body_len + len + 1;
        char *b;

        if (want > POPULATION_FETCH_BODY_MAX + 1) {
                f->too_large = true;
                return 1;
        }
        if (want > f->body_cap) {
                size_t cap = MAX(want, MIN(f->body_cap * 2, (size_t) POPULATION_FETCH_BODY_MAX + 1));
                b = realloc(f->body, cap);
                if (!b)
                        return 1;
                f->body = b;
                f->body_cap = cap;
        }
        memcpy(f->body + f->body_len, at, len);
        f->body_len += len;
        f->body[f->body_len] = 0;
        return 0;
}

/* An announced length over the cap fails at once, before a byte of it is read. */
static int on_headers_complete(http_parser *p) {
        PopulationFetch *f = p->data;

        if (p->content_length != ULLONG_MAX && p->content_length > POPULATION_FETCH_BODY_MAX) {
                f->too_large = true;
                return -1;
        }
        return 0;
}

static int on_message_complete(http_parser *p) {
        PopulationFetch *f = p->data;

        f->complete = true;
        f->result.status = p->status_code;
        return 0;
}

static const http_parser_settings parser_settings = {
        .on_headers_complete = on_headers_complete,
        .on_body = on_body,
        .on_message_complete = on_message_complete,
};

/* Feeds bytes (len 0: the worker closed) to the parser; true when the fetch ended. */
static bool parse(PopulationFetch *f, const char *buf, size_t len) {
        size_t n = http_parser_execute(&f->parser, &parser_settings, buf, len);
        enum http_errno e = HTTP_PARSER_ERRNO(&f->parser);

        if (f->complete) {
                finish(f, 0, NULL);
                return true;
        }
        if (f->too_large) {
                finish(f, -EFBIG, "answer larger than %u bytes", POPULATION_FETCH_BODY_MAX);
                return true;
        }
        if (e == HPE_CB_body) {
                finish(f, -ENOMEM, "out of memory reading the answer");
                return true;
        }
        if (e != HPE_OK || n != len) {
                finish(f, -EBADMSG, "malformed answer: %s", http_errno_description(e));
                return true;
        }
        if (len == 0) {
                finish(f, -ECONNRESET, "the worker closed the connection before a complete answer");
                return true;
        }
        return false;
}

static void on_readable(PopulationFetch *f) {
        char buf[16384];

        for (;;) {
                ssize_t n = read(f->fd, buf, sizeof buf);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n < 0) {
                        finish(f, -errno, "cannot read the answer: %m");
                        return;
                }
                if (parse(f, buf, (size_t) n))
                        return;
        }
}

/* Sends what is left of the request; once sent, waits for the answer. */
static void send_request(PopulationFetch *f) {
        while (f->sent < f->request_len) {
                ssize_t n = send(f->fd, f->request + f->sent, f->request_len - f->sent, MSG_NOSIGNAL);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN) {
                        (void) sd_event_source_set_io_events(f->io, EPOLLOUT);
                        return;
                }
                if (n < 0) {
                        finish(f, -errno, "cannot send the request: %m");
                        return;
                }
                f->sent += (size_t) n;
        }
        if (sd_event_source_set_io_events(f->io, EPOLLIN | EPOLLRDHUP) < 0)
                finish(f, -ENOMEM, "cannot wait for the answer");
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        PopulationFetch *f = userdata;
        int error = 0;

        if (!f->connected) {
                socklen_t len = sizeof error;

                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) < 0)
                        error = errno;
                if (error != 0) {
                        finish(f, -error, "cannot connect: %s", strerror(error));
                        return 0;
                }
                f->connected = true;
        }
        if (f->sent < f->request_len) {
                send_request(f);
                return 0;
        }
        on_readable(f);
        return 0;
}

static int on_defer(sd_event_source *s, void *userdata) {
        PopulationFetch *f = userdata;

        f->done(f, f->userdata); /* last: the callee may free f */
        return 0;
}

/* Connects without blocking: a worker whose accept queue is full answers EAGAIN at once (a Unix socket
 * does not wait), one that is stopped still has its queue accept us and then never answers. */
static void begin(PopulationFetch *f, const char *socket_path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t l = strlen(socket_path);
        int r;

        if (l >= sizeof sa.sun_path) {
                finish(f, -ENAMETOOLONG, "socket path too long: %s", socket_path);
                return;
        }
        memcpy(sa.sun_path, socket_path, l + 1);
        f->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (f->fd < 0) {
                finish(f, -errno, "cannot make a socket: %m");
                return;
        }
        r = sd_event_add_io(f->event, &f->io, f->fd, EPOLLOUT, on_io, f);
        if (r < 0) {
                finish(f, r, "cannot watch the socket: %s", strerror(-r));
                return;
        }
        if (connect(f->fd, (struct sockaddr *) &sa, sizeof sa) < 0 && errno != EINPROGRESS) {
                if (errno == EAGAIN)
                        finish(f, -EAGAIN, "cannot connect: its accept queue is full");
                else
                        finish(f, -errno, "cannot connect to %s: %m", socket_path);
                return;
        }
        /* connected (or on its way: the first EPOLLOUT tells): the request goes out from the loop */
}

int population_fetch_start(sd_event *event, const char *socket_path, const char *target, PopulationFetchDone done,
                           void *userdata, PopulationFetch **ret) {
        PopulationFetch *f;
        int n, r;

        f = calloc(1, sizeof *f);
        if (!f)
                return -ENOMEM;
        *f = (PopulationFetch) {
                .event = event,
                .fd = -EBADF,
                .done = done,
                .userdata = userdata,
                .started = loop_now(event),
        };
        n = snprintf(f->request, sizeof f->request,
                     "GET %s HTTP/1.1\r\nHost: elastic-pool\r\nAccept: application/json\r\n"
                     "User-Agent: elastic-pool/" EP_VERSION " (population)\r\nConnection: close\r\n\r\n",
                     target);
        if (n < 0 || (size_t) n >= sizeof f->request) {
                free(f);
                return -EINVAL;
        }
        f->request_len = (size_t) n;
        http_parser_init(&f->parser, HTTP_RESPONSE);
        f->parser.data = f;
        r = sd_event_add_defer(event, &f->defer, on_defer, f);
        if (r >= 0)
                r = sd_event_source_set_enabled(f->defer, SD_EVENT_OFF);
        if (r < 0) {
                f->defer = sd_event_source_unref(f->defer);
                free(f);
                return r;
        }
        begin(f, socket_path);
        *ret = f;
        return 0;
}

void population_fetch_abort(PopulationFetch *f, int error, const char *reason) {
        finish(f, error, "%s", reason);
}

bool population_fetch_done(const PopulationFetch *f) {
        return f->ended;
}

const PopulationFetchResult *population_fetch_result(const PopulationFetch *f) {
        return &f->result;
}

PopulationFetch *population_fetch_free(PopulationFetch *f) {
        if (!f)
                return NULL;
        f->io = sd_event_source_disable_unref(f->io);
        f->defer = sd_event_source_disable_unref(f->defer);
        safe_close(f->fd);
        free(f->body);
        free(f);
        return NULL;
}
