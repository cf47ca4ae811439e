/* SPDX-License-Identifier: MIT */
/* The admin listener: accepts, reads one request with http-parser, routes it to the surface that answers
 * (admin.h lists them) and writes the answer as the socket takes it. */

#include "admin.h"

#include <errno.h>
#include <fcntl.h>
#include <http_parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "accept-pause.h"
#include "cleanup.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "metrics.h"
#include "monitor-page.h"
#include "monitor.h"
#include "population.h"

#define ADMIN_REQUEST_MAX 8192
#define ADMIN_READ_TIMEOUT (5 * USEC_PER_SEC)   /* for the request to arrive */
#define ADMIN_WRITE_TIMEOUT (10 * USEC_PER_SEC) /* for the client to take the answer */
#define ADMIN_CONNECTIONS_MAX 64

#define JSON_TYPE "application/json"
#define PAGE_PATH "/_commander/monitor"

typedef struct AdminConnection AdminConnection;

struct Admin {
        sd_event *event;
        const StatusView *view;
        int fd;
        sd_event_source *io;
        char *address;
        char *unix_path; /* removed again on exit */
        MonitorPage page;
        AdminConnection *connections;
        unsigned n_connections;
        AcceptPause pause; /* out of descriptors: a level-triggered listener must not spin the loop */
        Population *population; /* the fan-out under way: shared by every request that waits for one */
};

struct AdminConnection {
        Admin *admin;
        AdminConnection *prev, *next;
        int fd;
        sd_event_source *io, *timer;
        http_parser parser;
        char buf[ADMIN_REQUEST_MAX];
        size_t len;
        char path[256];
        bool get, head, complete;
        bool awaits_population;
        char *out; /* the answer: head and body */
        size_t out_len, out_sent;
};

static AdminConnection *connection_free(AdminConnection *c) {
        if (!c)
                return NULL;
        c->io = sd_event_source_disable_unref(c->io);
        c->timer = sd_event_source_disable_unref(c->timer);
        safe_close(c->fd);
        LIST_REMOVE(c->admin->connections, c, prev, next);
        c->admin->n_connections--;
        free(c->out);
        free(c);
        return NULL;
}

/* ---- answers ---- */

/* Queues the answer (head, and body unless the request was HEAD); the loop writes it as the socket takes
 * it, then the connection closes. extra: more header lines, each ending in CRLF, or NULL. */
static void respond(AdminConnection *c, unsigned status, const char *reason, const char *type, const char *extra,
                    const char *body, size_t len) {
        _cleanup_free_ char *out = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&out, &size);

        if (!f) {
                connection_free(c);
                return;
        }
        fprintf(f,
                "HTTP/1.1 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-store\r\n"
                "X-Content-Type-Options: nosniff\r\nConnection: close\r\n%s\r\n",
                status, reason, type, len, strempty(extra));
        if (!c->head && len > 0)
                fwrite(body, 1, len, f);
        if (fclose(f) != 0 || !out) {
                connection_free(c);
                return;
        }
        c->out = TAKE_PTR(out);
        c->out_len = size;
        if (sd_event_source_set_io_events(c->io, EPOLLOUT) < 0 ||
            sd_event_source_set_time_relative(c->timer, ADMIN_WRITE_TIMEOUT) < 0)
                connection_free(c);
}

static void respond_text(AdminConnection *c, unsigned status, const char *reason, const char *text) {
        respond(c, status, reason, "text/plain; charset=utf-8", NULL, text, strlen(text));
}

/* An answer written by a status surface into memory. */
static void respond_written(AdminConnection *c, const char *type, int (*write)(const StatusView *v, FILE *f)) {
        _cleanup_free_ char *body = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&body, &len);
        int r;

        if (!f) {
                respond_text(c, 503, "Service Unavailable", "out of memory\n");
                return;
        }
        r = write(c->admin->view, f);
        if (fclose(f) != 0 || r < 0 || !body) {
                respond_text(c, 500, "Internal Server Error", "the document could not be written\n");
                return;
        }
        respond(c, 200, "OK", type, NULL, body, len);
}

static void respond_page(AdminConnection *c) {
        _cleanup_free_ char *headers = NULL;
        const MonitorPage *p = &c->admin->page;

        if (asprintf(&headers,
                     "Content-Security-Policy: %s\r\nReferrer-Policy: no-referrer\r\nX-Frame-Options: DENY\r\n",
                     p->csp) < 0) {
                respond_text(c, 503, "Service Unavailable", "out of memory\n");
                return;
        }
        respond(c, 200, "OK", "text/html; charset=utf-8", headers, p->html, p->html_len);
}

/* ---- the population fan-out, shared ---- */

static void on_population_done(Population *p, void *userdata) {
        Admin *a = userdata;
        _cleanup_free_ char *body = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&body, &len);
        bool ok = f && population_write(p, a->view, f) >= 0;

        if (f && fclose(f) != 0)
                ok = false;
        for (AdminConnection *c = a->connections, *next; c; c = next) {
                next = c->next;
                if (!c->awaits_population)
                        continue;
                c->awaits_population = false;
                if (ok && body)
                        respond(c, 200, "OK", JSON_TYPE, NULL, body, len);
                else
                        respond_text(c, 500, "Internal Server Error", "the population could not be written\n");
        }
        a->population = population_free(a->population); /* last use of p */
}

static void respond_population(AdminConnection *c) {
        Admin *a = c->admin;
        /* read where it is used: a reload changes the Config in place */
        usec_t timeout = a->view->pool->config->admin_population_timeout;
        int r;

        if (!a->population) {
                r = population_start(a->event, a->view, timeout, on_population_done, a, &a->population);
                if (r < 0) {
                        log_warning_errno(r, "Failed to ask the workers for their population: %m");
                        respond_text(c, 503, "Service Unavailable", "the workers could not be asked\n");
                        return;
                }
        }
        c->awaits_population = true;
        /* the fan-out ends by its own deadline: the client gets that long plus the usual */
        (void) sd_event_source_set_io_events(c->io, 0);
        (void) sd_event_source_set_time_relative(c->timer, timeout + ADMIN_WRITE_TIMEOUT);
}

/* ---- routing ---- */

static void answer(AdminConnection *c) {
        static const char not_found[] =
                "not found: try " PAGE_PATH ", /_commander/monitor.json, /_commander/population, "
                "/_commander/status or /metrics\n";

        if (!c->get) {
                respond(c, 405, "Method Not Allowed", "text/plain; charset=utf-8", "Allow: GET, HEAD\r\n",
                        "only GET and HEAD\n", 18);
                return;
        }
        if (streq(c->path, "/"))
                respond(c, 303, "See Other", "text/plain; charset=utf-8", "Location: " PAGE_PATH "\r\n",
                        PAGE_PATH "\n", strlen(PAGE_PATH "\n"));
        else if (streq(c->path, PAGE_PATH))
                respond_page(c);
        else if (streq(c->path, "/_commander/monitor.json"))
                respond_written(c, JSON_TYPE, monitor_write_json);
        else if (streq(c->path, "/_commander/population"))
                respond_population(c);
        else if (streq(c->path, "/_commander/status"))
                respond_written(c, JSON_TYPE, status_write);
        else if (streq(c->path, "/metrics"))
                respond_written(c, METRICS_CONTENT_TYPE, metrics_write);
        else
                respond_text(c, 404, "Not Found", not_found);
}

static int on_url(http_parser *p, const char *at, size_t len) {
        AdminConnection *c = p->data;
        size_t have = strlen(c->path), n = MIN(strcspn(at, "?#"), len);

        if (have + n >= sizeof c->path)
                return 1;
        memcpy(c->path + have, at, n);
        c->path[have + n] = 0;
        return 0;
}

static int on_headers_complete(http_parser *p) {
        AdminConnection *c = p->data;

        c->head = p->method == HTTP_HEAD;
        c->get = p->method == HTTP_GET || c->head;
        c->complete = true;
        return 1; /* no body wanted */
}

static const http_parser_settings parser_settings = {
        .on_url = on_url,
        .on_headers_complete = on_headers_complete,
};

static void on_readable(AdminConnection *c) {
        ssize_t n;

        n = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0) {
                connection_free(c);
                return;
        }
        (void) http_parser_execute(&c->parser, &parser_settings, c->buf + c->len, (size_t) n);
        c->len += (size_t) n;
        if (c->complete)
                answer(c);
        else if (HTTP_PARSER_ERRNO(&c->parser) != HPE_OK || c->len == sizeof c->buf)
                respond_text(c, 400, "Bad Request", "bad request\n");
}

static void on_writable(AdminConnection *c) {
        while (c->out_sent < c->out_len) {
                ssize_t n = send(c->fd, c->out + c->out_sent, c->out_len - c->out_sent, MSG_NOSIGNAL);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n < 0)
                        break; /* the client left: only its own answer is lost */
                c->out_sent += (size_t) n;
        }
        connection_free(c);
}

static int on_connection_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        AdminConnection *c = userdata;

        if (c->out)
                on_writable(c);
        else
                on_readable(c);
        return 0;
}

static int on_connection_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        connection_free(userdata);
        return 0;
}

static void set_accepting(void *userdata, bool on) {
        Admin *a = userdata;

        (void) sd_event_source_set_enabled(a->io, on ? SD_EVENT_ON : SD_EVENT_OFF);
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Admin *a = userdata;
        AdminConnection *c;
        int cfd;

        cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
                if (accept_error_is_shortage(errno))
                        accept_pause_begin(&a->pause, accept_shortage_why(errno), NULL);
                return 0;
        }
        accept_pause_end_episode(&a->pause);
        if (a->n_connections >= ADMIN_CONNECTIONS_MAX || !(c = calloc(1, sizeof *c))) {
                safe_close(cfd);
                return 0;
        }
        *c = (AdminConnection) { .admin = a, .fd = cfd };
        LIST_PREPEND(a->connections, c, prev, next);
        a->n_connections++;
        http_parser_init(&c->parser, HTTP_REQUEST);
        c->parser.data = c;
        if (sd_event_add_io(a->event, &c->io, cfd, EPOLLIN, on_connection_io, c) < 0 ||
            sd_event_add_time_relative(a->event, &c->timer, CLOCK_MONOTONIC, ADMIN_READ_TIMEOUT, USEC_PER_MSEC,
                                       on_connection_timeout, c) < 0)
                connection_free(c);
        return 0;
}

/* ---- the listener ---- */

/* Loopback or a Unix socket, or anything with admin_allow_public (said loudly). */
static int check_reach(const struct sockaddr_storage *sa, const char *address, const Config *config) {
        if (config_address_is_local(sa))
                return 0;
        if (!config->admin_allow_public)
                return log_error_errno(EPERM,
                                       "[frontend] admin_listen: refusing %s: it is not a loopback address or a "
                                       "Unix socket path, and the admin listener shows every user and the pool's "
                                       "state without authentication (set admin_allow_public = yes to listen "
                                       "there all the same)",
                                       address);
        log_warning("Admin listener on %s, which is not loopback (admin_allow_public = yes): anyone who reaches "
                    "it sees every user and the pool's state, without authentication",
                    address);
        return 0;
}

static int open_listener(const char *address, const Config *config, int *ret_fd, char **ret_unix_path) {
        struct sockaddr_storage sa;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *unix_path = NULL;
        socklen_t len;
        int r;

        r = config_parse_socket_address(address, true, &sa, &len);
        if (r < 0)
                return log_error_errno(r, "[frontend] admin_listen: '%s' is not an address or a Unix path",
                                       address);
        r = check_reach(&sa, address, config);
        if (r < 0)
                return r;
        fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return log_error_errno(errno, "Failed to make the admin socket: %m");
        if (sa.ss_family == AF_UNIX) {
                unix_path = strdup(((struct sockaddr_un *) &sa)->sun_path);
                if (!unix_path)
                        return log_oom();
                (void) unlink(unix_path);
        } else
                (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int) { 1 }, sizeof(int));
        if (bind(fd, (struct sockaddr *) &sa, len) < 0 || listen(fd, 64) < 0)
                return log_error_errno(errno, "Failed to listen on the admin address %s: %m", address);
        /* the monitor shows every user: root's only, like the runtime directory */
        if (unix_path)
                (void) chmod(unix_path, 0600);
        *ret_fd = TAKE_FD(fd);
        *ret_unix_path = TAKE_PTR(unix_path);
        return 0;
}

int admin_new(sd_event *event, const char *address, const StatusView *view, Admin **ret) {
        const Config *config = view->pool->config;
        Admin *a;
        int r;

        a = calloc(1, sizeof *a);
        if (!a)
                return log_oom();
        *a = (Admin) {
                .event = event,
                .view = view,
                .fd = -EBADF,
        };
        a->address = strdup(address);
        r = a->address ? monitor_page_init(&a->page) : -ENOMEM;
        if (r < 0) {
                admin_free(a);
                return log_error_errno(r, "Failed to build the monitor page: %m");
        }
        r = accept_pause_init(&a->pause, event, a->address, set_accepting, a);
        if (r < 0) {
                admin_free(a);
                return log_error_errno(r, "Failed to make the admin listener's accept pause timer: %m");
        }
        r = open_listener(address, config, &a->fd, &a->unix_path);
        if (r >= 0)
                r = sd_event_add_io(event, &a->io, a->fd, EPOLLIN, on_accept, a);
        if (r < 0) {
                admin_free(a);
                return r;
        }
        log_info("Admin listener on %s: " PAGE_PATH ", /_commander/monitor.json, /_commander/population, "
                 "/_commander/status, /metrics",
                 address);
        *ret = a;
        return 0;
}

Admin *admin_free(Admin *a) {
        if (!a)
                return NULL;
        while (a->connections)
                connection_free(a->connections);
        a->population = population_free(a->population);
        accept_pause_done(&a->pause);
        a->io = sd_event_source_disable_unref(a->io);
        safe_close(a->fd);
        if (a->unix_path)
                (void) unlink(a->unix_path);
        monitor_page_done(&a->page);
        free(a->unix_path);
        free(a->address);
        free(a);
        return NULL;
}
