/* SPDX-License-Identifier: MIT */
#include "health-probe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "macro.h"

/* Connection: close, so that an answer with a body of any length ends with the connection and nothing
 * stays open on the worker. */
static const char request[] = "OPTIONS * HTTP/1.1\r\n"
                              "Host: localhost\r\n"
                              "User-Agent: elastic-pool health probe\r\n"
                              "Connection: close\r\n"
                              "\r\n";

/* "HTTP/1.1 200": all of the answer the probe reads. */
#define STATUS_LINE_PREFIX 12

struct HealthProbe {
        unsigned worker;
        int fd;
        sd_event_source *io;
        usec_t started;
        bool failed;
        char in[STATUS_LINE_PREFIX];
        size_t in_len;
        HealthProbeAnswered answered;
        void *userdata;
};

/* The status code of "HTTP/1.x NNN", 0 when it is not one. */
static unsigned parse_status(const char *s) {
        if (memcmp(s, "HTTP/1.", 7) != 0 || s[8] != ' ')
                return 0;
        for (size_t i = 9; i < STATUS_LINE_PREFIX; i++)
                if (s[i] < '0' || s[i] > '9')
                        return 0;
        return (unsigned) ((s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0'));
}

static void fail(HealthProbe *p) {
        p->failed = true;
        p->io = sd_event_source_disable_unref(p->io);
        p->fd = safe_close(p->fd);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        HealthProbe *p = userdata;
        unsigned status;
        ssize_t n;

        n = recv(fd, p->in + p->in_len, sizeof p->in - p->in_len, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n <= 0) {
                fail(p);
                return 0;
        }
        p->in_len += (size_t) n;
        if (p->in_len < sizeof p->in)
                return 0;
        status = parse_status(p->in);
        /* whatever came, the probe has done its part: no second answer from this one */
        fail(p);
        if (status > 0)
                p->answered(p, p->worker, status, p->userdata); /* last: it may free p */
        return 0;
}

static int probe_connect(const char *socket_path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;
        ssize_t n;

        if (strlen(socket_path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, socket_path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        /* AF_UNIX connects at once or not at all (EAGAIN: its accept queue is full) */
        if (connect(fd, (const struct sockaddr *) &sa, sizeof sa) < 0)
                return -errno;
        /* a fresh socket's buffer takes the request whole */
        n = send(fd, request, sizeof request - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0)
                return -errno;
        if ((size_t) n != sizeof request - 1)
                return -EAGAIN;
        return TAKE_FD(fd);
}

int health_probe_new(sd_event *event, unsigned worker, const char *socket_path, HealthProbeAnswered answered,
                     void *userdata, HealthProbe **ret) {
        HealthProbe *p;
        int fd, r;

        fd = probe_connect(socket_path);
        if (fd < 0)
                return fd;
        p = calloc(1, sizeof *p);
        if (!p) {
                safe_close(fd);
                return -ENOMEM;
        }
        *p = (HealthProbe) { .worker = worker, .fd = fd, .answered = answered, .userdata = userdata,
                             .started = now_usec(CLOCK_MONOTONIC) };
        r = sd_event_add_io(event, &p->io, fd, EPOLLIN | EPOLLRDHUP, on_io, p);
        if (r < 0) {
                health_probe_free(p);
                return r;
        }
        *ret = p;
        return 0;
}

HealthProbe *health_probe_free(HealthProbe *p) {
        if (!p)
                return NULL;
        sd_event_source_disable_unref(p->io);
        safe_close(p->fd);
        free(p);
        return NULL;
}

unsigned health_probe_worker(const HealthProbe *p) {
        return p->worker;
}

usec_t health_probe_started(const HealthProbe *p) {
        return p->started;
}

bool health_probe_failed(const HealthProbe *p) {
        return p->failed;
}
