/* SPDX-License-Identifier: MIT */
/* The admin listener ([frontend] admin_listen: loopback or a Unix socket, never the public listener):
 *
 *   GET /_commander/population   the pool as JSON (the same document as <runtime dir>/status.json)
 *   GET /metrics                 Prometheus text format
 *
 * One request per connection, answered with Connection: close: this is for operators and scrapers,
 * not for traffic, and it must stay out of the request path's way. */

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

#include "cleanup.h"
#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "status.h"

#define ADMIN_REQUEST_MAX 8192
#define ADMIN_TIMEOUT (5 * USEC_PER_SEC)
#define ADMIN_CONNECTIONS_MAX 64

typedef struct AdminConnection AdminConnection;

struct Admin {
        sd_event *event;
        const StatusView *view;
        int fd;
        sd_event_source *io;
        char *address;
        char *unix_path; /* removed again on exit */
        AdminConnection *connections;
        unsigned n_connections;
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
        bool get, complete;
};

static AdminConnection *connection_free(AdminConnection *c) {
        if (!c)
                return NULL;
        c->io = sd_event_source_disable_unref(c->io);
        c->timer = sd_event_source_disable_unref(c->timer);
        safe_close(c->fd);
        if (c->prev)
                c->prev->next = c->next;
        else
                c->admin->connections = c->next;
        if (c->next)
                c->next->prev = c->prev;
        c->admin->n_connections--;
        free(c);
        return NULL;
}

static void respond(AdminConnection *c, unsigned status, const char *reason, const char *type, const char *body,
                    size_t len) {
        char head[256];
        int n;

        n = snprintf(head, sizeof head,
                     "HTTP/1.1 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-store\r\n"
                     "Connection: close\r\n\r\n",
                     status, reason, type, len);
        /* the socket is blocking for this one answer, bounded by SO_SNDTIMEO: admin answers are small
         * and a scraper that stops reading only loses its own answer */
        (void) fd_set_nonblock(c->fd, false);
        if (loop_write(c->fd, head, (size_t) n) >= 0 && len > 0)
                (void) loop_write(c->fd, body, len);
}

static void metric(FILE *f, const char *name, const char *help, const char *type) {
        fprintf(f, "# HELP elastic_pool_%s %s\n# TYPE elastic_pool_%s %s\n", name, help, name, type);
}

static void write_metrics(const StatusView *v, FILE *f) {
        static const char *const labels[] = { "memory", "cpu", "executor" };
        const Pool *p = v->pool;
        const char *g = v->group;
        FrontendTotals totals;
        WorkerTraffic t;

        metric(f, "workers", "Workers of the group by state.", "gauge");
        for (WorkerState s = 0; s < _WORKER_STATE_MAX; s++) {
                unsigned n = 0;
                for (size_t i = 0; i < p->n_workers; i++)
                        n += p->workers[i]->state == s;
                fprintf(f, "elastic_pool_workers{group=\"%s\",state=\"%s\"} %u\n", g, worker_state_to_string(s), n);
        }
        metric(f, "worker_occupancy", "Occupancy in [0, 1] as the evaluator sees it.", "gauge");
        for (size_t i = 0; i < p->n_workers; i++)
                fprintf(f, "elastic_pool_worker_occupancy{group=\"%s\",worker=\"w%u\"} %.4f\n", g, p->workers[i]->id,
                        p->workers[i]->reading.occupancy.value);
        /* an absent component is left out, never exported as 0 */
        metric(f, "worker_component", "Averaged occupancy components; absent ones are not exported.", "gauge");
        for (size_t i = 0; i < p->n_workers; i++)
                for (Component c = 0; c < _COMPONENT_MAX; c++)
                        if (p->workers[i]->reading.occupancy.has[c])
                                fprintf(f, "elastic_pool_worker_component{group=\"%s\",worker=\"w%u\",component=\"%s\"} %.4f\n",
                                        g, p->workers[i]->id, labels[c], p->workers[i]->reading.occupancy.component[c]);
        metric(f, "worker_users", "Logged-in users placed on the worker.", "gauge");
        for (size_t i = 0; i < p->n_workers; i++)
                fprintf(f, "elastic_pool_worker_users{group=\"%s\",worker=\"w%u\"} %u\n", g, p->workers[i]->id,
                        capacity_worker_users(v->capacity, p->workers[i]));
        metric(f, "worker_inflight", "Requests forwarded to the worker and not answered yet.", "gauge");
        for (size_t i = 0; i < p->n_workers; i++) {
                (void) status_worker_traffic(v, p->workers[i]->id, &t);
                fprintf(f, "elastic_pool_worker_inflight{group=\"%s\",worker=\"w%u\"} %u\n", g, p->workers[i]->id,
                        t.inflight);
        }
        metric(f, "worker_forwarded_total", "Responses the front end completed from the worker.", "counter");
        for (size_t i = 0; i < p->n_workers; i++)
                if (status_worker_traffic(v, p->workers[i]->id, &t) && t.has_forward)
                        fprintf(f, "elastic_pool_worker_forwarded_total{group=\"%s\",worker=\"w%u\"} %llu\n", g,
                                p->workers[i]->id, (unsigned long long) t.requests);
        metric(f, "hold", "1 while a decision is held, waits or is refused; the reason is in /_commander/population.",
               "gauge");
        fprintf(f, "elastic_pool_hold{group=\"%s\",decision=\"scale-up\"} %d\n", g, v->capacity->scale_up_hold.active);
        fprintf(f, "elastic_pool_hold{group=\"%s\",decision=\"compaction\"} %d\n", g, v->capacity->compaction_hold.active);
        metric(f, "reports_total", "Occupancy reports received.", "counter");
        fprintf(f, "elastic_pool_reports_total{group=\"%s\"} %llu\n", g, (unsigned long long) p->reports_received);
        metric(f, "spawns_total", "Workers started.", "counter");
        fprintf(f, "elastic_pool_spawns_total{group=\"%s\"} %llu\n", g, (unsigned long long) p->spawns);
        metric(f, "deaths_total", "Workers that ended.", "counter");
        fprintf(f, "elastic_pool_deaths_total{group=\"%s\"} %llu\n", g, (unsigned long long) p->deaths);
        if (v->frontend) {
                v->frontend->totals(v->frontend_data, &totals);
                metric(f, "requests_total", "Requests the front end began.", "counter");
                fprintf(f, "elastic_pool_requests_total{group=\"%s\"} %llu\n", g, (unsigned long long) totals.requests);
                metric(f, "errors_total", "Error responses made by the front end (4xx for bad input, 5xx).", "counter");
                fprintf(f, "elastic_pool_errors_total{group=\"%s\"} %llu\n", g, (unsigned long long) totals.errors);
                metric(f, "connections", "Open client connections.", "gauge");
                fprintf(f, "elastic_pool_connections{group=\"%s\"} %u\n", g, totals.connections);
        }
}

static void answer(AdminConnection *c) {
        _cleanup_free_ char *body = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        const StatusView *v = c->admin->view;
        size_t len = 0;
        bool population = streq(c->path, "/_commander/population"), metrics = streq(c->path, "/metrics");

        if (!c->get) {
                respond(c, 405, "Method Not Allowed", "text/plain", "only GET\n", 9);
                return;
        }
        if (!population && !metrics) {
                static const char msg[] = "not found: try /_commander/population or /metrics\n";
                respond(c, 404, "Not Found", "text/plain", msg, sizeof msg - 1);
                return;
        }
        f = open_memstream(&body, &len);
        if (!f)
                return;
        if (population)
                (void) status_write(v, f);
        else
                write_metrics(v, f);
        if (fflush(f) != 0)
                return;
        respond(c, 200, "OK", population ? "application/json" : "text/plain; version=0.0.4", body, len);
}

static int on_url(http_parser *p, const char *at, size_t len) {
        AdminConnection *c = p->data;
        size_t have = strlen(c->path), n = strcspn(at, "?");

        n = MIN(n, len);
        if (have + n >= sizeof c->path)
                return 1;
        memcpy(c->path + have, at, n);
        c->path[have + n] = 0;
        return 0;
}

static int on_headers_complete(http_parser *p) {
        AdminConnection *c = p->data;

        c->get = p->method == HTTP_GET || p->method == HTTP_HEAD;
        c->complete = true;
        return 1; /* no body wanted */
}

static const http_parser_settings parser_settings = {
        .on_url = on_url,
        .on_headers_complete = on_headers_complete,
};

static int on_connection_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        AdminConnection *c = userdata;
        ssize_t n;

        n = read(fd, c->buf + c->len, sizeof c->buf - c->len);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n <= 0) {
                connection_free(c);
                return 0;
        }
        (void) http_parser_execute(&c->parser, &parser_settings, c->buf + c->len, (size_t) n);
        c->len += (size_t) n;
        if (c->complete)
                answer(c);
        else if (HTTP_PARSER_ERRNO(&c->parser) != HPE_OK || c->len == sizeof c->buf)
                respond(c, 400, "Bad Request", "text/plain", "bad request\n", 12);
        else
                return 0;
        connection_free(c);
        return 0;
}

static int on_connection_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        connection_free(userdata);
        return 0;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Admin *a = userdata;
        AdminConnection *c;
        struct timeval tv = { .tv_sec = 5 };
        int cfd;

        cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0)
                return 0;
        if (a->n_connections >= ADMIN_CONNECTIONS_MAX || !(c = calloc(1, sizeof *c))) {
                safe_close(cfd);
                return 0;
        }
        *c = (AdminConnection) { .admin = a, .fd = cfd, .next = a->connections };
        if (a->connections)
                a->connections->prev = c;
        a->connections = c;
        a->n_connections++;
        (void) setsockopt(cfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        http_parser_init(&c->parser, HTTP_REQUEST);
        c->parser.data = c;
        if (sd_event_add_io(a->event, &c->io, cfd, EPOLLIN, on_connection_io, c) < 0 ||
            sd_event_add_time_relative(a->event, &c->timer, CLOCK_MONOTONIC, ADMIN_TIMEOUT, USEC_PER_SEC,
                                       on_connection_timeout, c) < 0)
                connection_free(c);
        return 0;
}

int admin_new(sd_event *event, const char *address, const StatusView *view, Admin **ret) {
        struct sockaddr_storage sa;
        _cleanup_close_ int fd = -EBADF;
        socklen_t len;
        Admin *a;
        int r;

        r = config_parse_socket_address(address, true, &sa, &len);
        if (r < 0)
                return log_error_errno(r, "[frontend] admin_listen: '%s' is not a loopback address or a Unix path",
                                       address);
        fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (sa.ss_family == AF_UNIX)
                (void) unlink(((struct sockaddr_un *) &sa)->sun_path);
        else
                (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int) { 1 }, sizeof(int));
        if (bind(fd, (struct sockaddr *) &sa, len) < 0 || listen(fd, 64) < 0)
                return log_error_errno(errno, "Failed to listen on the admin address %s: %m", address);
        a = calloc(1, sizeof *a);
        if (!a)
                return log_oom();
        a->event = event;
        a->view = view;
        a->fd = -EBADF;
        a->address = strdup(address);
        if (sa.ss_family == AF_UNIX) {
                (void) chmod(((struct sockaddr_un *) &sa)->sun_path, 0600);
                a->unix_path = strdup(((struct sockaddr_un *) &sa)->sun_path);
        }
        r = sd_event_add_io(event, &a->io, fd, EPOLLIN, on_accept, a);
        if (r < 0) {
                admin_free(a);
                return r;
        }
        a->fd = TAKE_FD(fd);
        log_info("Admin listener on %s: /_commander/population, /metrics", address);
        *ret = a;
        return 0;
}

Admin *admin_free(Admin *a) {
        if (!a)
                return NULL;
        while (a->connections)
                connection_free(a->connections);
        a->io = sd_event_source_disable_unref(a->io);
        safe_close(a->fd);
        if (a->unix_path)
                (void) unlink(a->unix_path);
        free(a->unix_path);
        free(a->address);
        free(a);
        return NULL;
}
