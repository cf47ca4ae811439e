/* SPDX-License-Identifier: MIT */
#include "channel-client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "sensor-util.h"
#include "user-list.h"

/* Room for one Package of the largest frame plus the reports queued behind it; past that the commander is
 * not reading and reports are dropped rather than held without bound. */
#define OUTBOX_LIMIT (FRAME_MAX_SIZE_DEFAULT + 1024U * 1024U)
/* Reads per dispatch: a chatty commander must not starve the report tick. */
#define READS_PER_DISPATCH 16U
#define READ_BUFFER_SIZE (64U * 1024U)

struct ChannelClient {
        int fd;
        bool greeted;     /* the Hello of this connection is queued */
        bool said_goodbye; /* closed on purpose: never reconnect */
        bool drain_asked;  /* the commander is retiring us: never reconnect either */
        bool users_skip_logged; /* bad user names were logged at warning level once */
        char *path;
        usec_t connected_at;
        usec_t backoff;      /* the last reconnect delay; 0 before the first */
        usec_t next_attempt; /* when disconnected with a path */
        bool connect_failing; /* log the first failed attempt of a series only */
        uint64_t rng;
        FrameDecoder decoder;
        FrameOutbox outbox;

        ChannelHelloFunc hello;
        void *hello_userdata;

        pthread_mutex_t callbacks_lock;
        ep_sensor_user_callbacks user_cb;
        void *user_userdata;
        ep_sensor_drain_callback drain_cb;
        void *drain_userdata;

        uint8_t rbuf[READ_BUFFER_SIZE];
};

int channel_client_new(ChannelClient **ret) {
        ChannelClient *c;

        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->fd = -EBADF;
        frame_decoder_init(&c->decoder, FRAME_MAX_SIZE_DEFAULT);
        frame_outbox_init(&c->outbox, OUTBOX_LIMIT);
        pthread_mutex_init(&c->callbacks_lock, NULL);
        /* jitter only has to differ between workers that lost the same commander at the same instant */
        if (getrandom(&c->rng, sizeof c->rng, GRND_NONBLOCK) != (ssize_t) sizeof c->rng)
                c->rng = now_usec(CLOCK_MONOTONIC) ^ ((uint64_t) getpid() << 32);
        c->rng |= 1;
        *ret = c;
        return 0;
}

ChannelClient *channel_client_free(ChannelClient *c) {
        if (!c)
                return NULL;
        safe_close(c->fd);
        frame_decoder_done(&c->decoder);
        frame_outbox_done(&c->outbox);
        pthread_mutex_destroy(&c->callbacks_lock);
        free(c->path);
        free(c);
        return NULL;
}

int channel_client_adopt_fd(ChannelClient *c, int fd) {
        socklen_t len = sizeof(int);
        struct stat st;
        int type, r;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISSOCK(st.st_mode))
                return -ENOTSOCK;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
                return -errno;
        if (type != SOCK_STREAM)
                return -EPROTOTYPE;
        /* the application's children (CGI, helpers) must not hold our end open or write into it */
        if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
                return -errno;
        r = fd_set_nonblock(fd, true);
        if (r < 0)
                return r;
        safe_close(c->fd);
        c->fd = fd;
        c->greeted = false;
        c->connected_at = now_usec(CLOCK_MONOTONIC);
        return 0;
}

int channel_client_set_path(ChannelClient *c, const char *path) {
        char *p;

        if (strlen(path) >= sizeof(((struct sockaddr_un *) NULL)->sun_path))
                return -ENAMETOOLONG;
        p = strdup(path);
        if (!p)
                return -ENOMEM;
        free(c->path);
        c->path = p;
        return 0;
}

void channel_client_set_hello(ChannelClient *c, ChannelHelloFunc hello, void *userdata) {
        c->hello = hello;
        c->hello_userdata = userdata;
}

void channel_client_set_user_callbacks(ChannelClient *c, const ep_sensor_user_callbacks *cb,
                                       void *userdata) {
        pthread_mutex_lock(&c->callbacks_lock);
        c->user_cb = cb ? *cb : (ep_sensor_user_callbacks) {};
        c->user_userdata = userdata;
        pthread_mutex_unlock(&c->callbacks_lock);
}

void channel_client_set_drain_callback(ChannelClient *c, ep_sensor_drain_callback cb, void *userdata) {
        pthread_mutex_lock(&c->callbacks_lock);
        c->drain_cb = cb;
        c->drain_userdata = userdata;
        pthread_mutex_unlock(&c->callbacks_lock);
}

int channel_client_fd(const ChannelClient *c) {
        return c->fd;
}

bool channel_client_is_connected(const ChannelClient *c) {
        return c->fd >= 0;
}

short channel_client_events(const ChannelClient *c) {
        if (c->fd < 0)
                return 0;
        return POLLIN | (frame_outbox_queued(&c->outbox) > 0 || !c->greeted ? POLLOUT : 0);
}

/* A worker on its way out (it said goodbye, or the commander asked it to drain) must not come back to a
 * restarted commander as a fresh worker that takes users. */
static bool may_reconnect(const ChannelClient *c) {
        return c->path && !c->said_goodbye && !c->drain_asked;
}

usec_t channel_client_next_wakeup(const ChannelClient *c) {
        if (c->fd >= 0 || !may_reconnect(c))
                return USEC_INFINITY;
        return c->next_attempt;
}

static uint64_t next_random(ChannelClient *c) {
        /* xorshift64* */
        c->rng ^= c->rng >> 12;
        c->rng ^= c->rng << 25;
        c->rng ^= c->rng >> 27;
        return c->rng * 0x2545f4914f6cdd1dULL;
}

/* Doubles the delay from 100 ms to 5 s and waits a random time in [delay/2, delay], so that the workers of
 * a restarted commander do not all knock at the same instant. The first attempt comes after 50-100 ms: a
 * commander restart takes a few hundred, and the users cannot be routed until we are back. */
static void schedule_reconnect(ChannelClient *c, usec_t now) {
        usec_t delay;

        c->backoff = CLAMP(c->backoff * 2, CHANNEL_BACKOFF_MIN_USEC, CHANNEL_BACKOFF_MAX_USEC);
        delay = c->backoff / 2 + next_random(c) % (c->backoff / 2 + 1);
        c->next_attempt = now + delay;
}

static void close_channel(ChannelClient *c, int error, const char *reason) {
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (error < 0)
                log_warning_errno(error, "Channel to the commander closed: %s: %m", reason);
        else
                log_info("Channel to the commander closed: %s", reason);
        c->fd = safe_close(c->fd);
        c->greeted = false;
        frame_decoder_done(&c->decoder);
        frame_outbox_done(&c->outbox);
        if (!may_reconnect(c)) {
                if (c->path && c->drain_asked && !c->said_goodbye)
                        log_info("Not reconnecting to channel %s: the commander asked this worker to drain",
                                 c->path);
                return;
        }
        /* A connection that lived long enough was a healthy one: start over from the shortest delay. One
         * that a commander accepted and closed at once (it refused us) keeps the delay growing. */
        if (now - c->connected_at >= CHANNEL_HEALTHY_USEC)
                c->backoff = 0;
        schedule_reconnect(c, now);
        c->connect_failing = false;
}

static int flush(ChannelClient *c) {
        int r;

        r = frame_outbox_flush(&c->outbox, c->fd);
        if (r < 0) {
                close_channel(c, r, "write failed");
                return -ENOTCONN;
        }
        return 0;
}

static int push(ChannelClient *c, const Frame *f) {
        int r;

        r = frame_outbox_push(&c->outbox, f, FRAME_MAX_SIZE_DEFAULT);
        if (r < 0)
                return r;
        return flush(c);
}

static void copy_user_callbacks(ChannelClient *c, ep_sensor_user_callbacks *ret, void **ret_userdata) {
        pthread_mutex_lock(&c->callbacks_lock);
        *ret = c->user_cb;
        *ret_userdata = c->user_userdata;
        pthread_mutex_unlock(&c->callbacks_lock);
}

/* Asks the application for its users. True when l holds the complete list; false without a list callback
 * or when the callback failed (said here): the Hello then promises no list, and none is sent. */
static bool collect_users(ChannelClient *c, const ep_sensor_user_callbacks *cb, void *userdata,
                          UserList *l) {
        int r;

        if (!cb->list)
                return false;
        r = cb->list(userdata, user_list_add, l);
        if (r < 0) {
                log_warning_errno(r, "Cannot list the worker's users, none announced on this channel: %m");
                return false;
        }
        if (l->skipped > 0) {
                /* once at warning level: the application hands out the same bad names on every reconnect */
                log_full_errno(c->users_skip_logged ? LOG_DEBUG : LOG_WARNING, 0,
                               "Left %zu user name(s) out of the list, empty or over %u bytes (the first: "
                               "%zu bytes)",
                               l->skipped, USER_LIST_NAME_MAX, l->skipped_first_length);
                c->users_skip_logged = true;
        }
        return true;
}

static size_t callback_capabilities(const ep_sensor_user_callbacks *cb, bool listed,
                                    ElasticPool__Capability *caps) {
        size_t n = 0;

        if (cb->snapshot)
                caps[n++] = ELASTIC_POOL__CAPABILITY__CAPABILITY_SNAPSHOT_USERS;
        if (cb->install)
                caps[n++] = ELASTIC_POOL__CAPABILITY__CAPABILITY_INSTALL_USERS;
        if (cb->drop)
                caps[n++] = ELASTIC_POOL__CAPABILITY__CAPABILITY_DROP_USERS;
        if (listed)
                caps[n++] = ELASTIC_POOL__CAPABILITY__CAPABILITY_LIST_USERS;
        return n;
}

static int push_frame(void *userdata, const Frame *f) {
        return push(userdata, f);
}

/* Queues the Users frames behind the Hello. The list goes out whole, whatever its size: the outbox limit
 * is there for a commander that stopped reading reports, and this one has only just accepted us. Reports
 * queue behind the list again once the commander has read it down under the limit. */
static int announce_users(ChannelClient *c, const UserList *l) {
        int r;

        c->outbox.limit = 0;
        r = user_list_foreach_frame(l, USER_LIST_FRAME_BUDGET, push_frame, c);
        c->outbox.limit = OUTBOX_LIMIT;
        if (r == -ENOTCONN)
                return r; /* the write closed the channel and said why */
        if (r < 0) {
                /* part of the list is out with more = true: only a new connection can start it over */
                close_channel(c, r, "cannot queue the list of users");
                return r;
        }
        log_debug("Announced %zu user(s) to the commander", l->n);
        return 0;
}

/* Queues the Hello, first on every connection, then the worker's users when the application lists them.
 * Built only now, not when the fd was adopted, so that the capabilities reflect the callbacks and fields
 * the application set up before it started the sensor, and the list is the one of this moment. */
static int greet(ChannelClient *c) {
        ElasticPool__Hello h = ELASTIC_POOL__HELLO__INIT;
        ElasticPool__Capability caps[5];
        Frame f = ELASTIC_POOL__FRAME__INIT;
        _cleanup_(user_list_done) UserList users = {};
        ep_sensor_user_callbacks cb;
        bool app_fields = false, listed;
        void *userdata;
        size_t n;
        int r;

        if (c->fd < 0 || c->greeted)
                return 0;
        copy_user_callbacks(c, &cb, &userdata);
        listed = collect_users(c, &cb, userdata, &users);
        if (c->hello)
                c->hello(c->hello_userdata, &h, &app_fields);
        h.has_pid = true;
        h.pid = getpid();
        h.has_protocol_version = true;
        h.protocol_version = EP_PROTOCOL_VERSION;
        h.sensor_version = (char *) EP_VERSION;
        n = callback_capabilities(&cb, listed, caps);
        if (app_fields)
                caps[n++] = ELASTIC_POOL__CAPABILITY__CAPABILITY_APPLICATION_FIELDS;
        h.n_capabilities = n;
        h.capabilities = caps;
        f.body_case = ELASTIC_POOL__FRAME__BODY_HELLO;
        f.hello = &h;
        c->greeted = true;
        r = push(c, &f);
        if (r < 0 || !listed)
                return r;
        return announce_users(c, &users);
}

int channel_client_send(ChannelClient *c, const Frame *f) {
        int r;

        if (c->fd < 0)
                return -ENOTCONN;
        r = greet(c);
        if (r < 0)
                return r;
        if (c->fd < 0)
                return -ENOTCONN;
        return push(c, f);
}

static void try_connect(ChannelClient *c, usec_t now) {
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        strncpy(sa.sun_path, c->path, sizeof sa.sun_path - 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        /* A non-blocking AF_UNIX connect either completes at once or fails (EAGAIN: backlog full); there
         * is no EINPROGRESS to wait for, so every failure is simply retried later. */
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                int r = -errno;
                if (!c->connect_failing)
                        log_notice_errno(r, "Cannot reconnect to channel %s, retrying with backoff: %m",
                                         c->path);
                else
                        log_debug_errno(r, "Reconnecting to channel %s failed: %m", c->path);
                c->connect_failing = true;
                schedule_reconnect(c, now);
                return;
        }
        log_info("Reconnected to channel %s", c->path);
        c->fd = TAKE_FD(fd);
        c->greeted = false;
        c->connected_at = now;
        c->connect_failing = false;
}

static void describe_failure(char *buf, size_t size, const char *what, const char *user, int r) {
        if (r == -ENOENT)
                snprintf(buf, size, "user '%s' is not known to this worker", user);
        else
                snprintf(buf, size, "%s of user '%s' failed: %s", what, user, strerror(ERRNO_VALUE(r)));
}

static int send_package(ChannelClient *c, ElasticPool__Package *p) {
        Frame f = ELASTIC_POOL__FRAME__INIT;

        f.body_case = ELASTIC_POOL__FRAME__BODY_PACKAGE;
        f.package = p;
        return push(c, &f);
}

static int on_snapshot_request(ChannelClient *c, const ElasticPool__SnapshotRequest *m) {
        ElasticPool__Package p = ELASTIC_POOL__PACKAGE__INIT;
        ep_sensor_user_callbacks cb;
        _cleanup_free_ void *blob = NULL;
        char error[512] = "";
        void *userdata;
        size_t size = 0;
        int r;

        copy_user_callbacks(c, &cb, &userdata);
        p.has_move_id = m->has_move_id;
        p.move_id = m->move_id;
        p.user = m->user;
        if (!m->user)
                snprintf(error, sizeof error, "snapshot request names no user");
        else if (!cb.snapshot)
                snprintf(error, sizeof error, "this worker cannot snapshot users (no snapshot callback)");
        else {
                r = cb.snapshot(userdata, m->user, &blob, &size);
                if (r < 0)
                        describe_failure(error, sizeof error, "snapshot", m->user, r);
                /* not an error of the move: the commander re-points a user this worker holds nothing for */
                if (r == -ENOENT)
                        p.has_unknown_user = p.unknown_user = true;
        }
        if (error[0])
                p.error = error;
        else {
                p.has_blob = true;
                p.blob = (ProtobufCBinaryData) { .len = size, .data = blob };
        }
        r = send_package(c, &p);
        if (r != -EMSGSIZE)
                return r;
        /* the user's state does not fit in a frame: the move must fail visibly, not time out */
        snprintf(error, sizeof error, "package of user '%s' is %zu bytes, over the %u byte frame maximum",
                 m->user, size, FRAME_MAX_SIZE_DEFAULT);
        p.has_blob = false;
        p.error = error;
        return send_package(c, &p);
}

static int on_install(ChannelClient *c, const ElasticPool__Install *m) {
        ElasticPool__InstallResult res = ELASTIC_POOL__INSTALL_RESULT__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        ep_sensor_user_callbacks cb;
        char error[512] = "";
        void *userdata;
        int r;

        copy_user_callbacks(c, &cb, &userdata);
        res.has_move_id = m->has_move_id;
        res.move_id = m->move_id;
        res.user = m->user;
        if (!m->user)
                snprintf(error, sizeof error, "install names no user");
        else if (!cb.install)
                snprintf(error, sizeof error, "this worker cannot install users (no install callback)");
        else {
                /* no package: the user arrives without state, to be started fresh */
                r = cb.install(userdata, m->user, m->has_blob ? m->blob.data : NULL, m->has_blob ? m->blob.len : 0);
                if (r < 0)
                        describe_failure(error, sizeof error, "install", m->user, r);
        }
        res.has_ok = true;
        res.ok = error[0] == 0;
        if (!res.ok)
                res.error = error;
        f.body_case = ELASTIC_POOL__FRAME__BODY_INSTALL_RESULT;
        f.install_result = &res;
        return push(c, &f);
}

/* Drop has no reply in the protocol: what happened is logged here. */
static void on_drop(ChannelClient *c, const ElasticPool__Drop *m) {
        ep_sensor_user_callbacks cb;
        void *userdata;
        int r;

        copy_user_callbacks(c, &cb, &userdata);
        if (!m->user) {
                log_notice("Drop from the commander names no user, ignoring");
                return;
        }
        if (!cb.drop) {
                log_notice("Drop of user '%s' ignored: this worker has no drop callback", m->user);
                return;
        }
        r = cb.drop(userdata, m->user);
        if (r < 0)
                log_debug_errno(r, "Drop of user '%s' failed: %m", m->user);
}

static void on_drain(ChannelClient *c, const ElasticPool__Drain *m) {
        ep_sensor_drain_callback cb;
        void *userdata;

        pthread_mutex_lock(&c->callbacks_lock);
        cb = c->drain_cb;
        userdata = c->drain_userdata;
        pthread_mutex_unlock(&c->callbacks_lock);
        c->drain_asked = true;
        if (!cb) {
                log_notice("Drain requested (%s) but this worker has no drain callback", strna(m->reason));
                return;
        }
        /* without a deadline the commander means "when you can": no deadline at all */
        cb(userdata, m->has_deadline_usec ? m->deadline_usec : USEC_INFINITY);
}

/* An answer that could not be queued is logged here; only -ENOMEM goes further up. -ENOTCONN means the
 * write already closed the channel and said why. */
static int answer_result(int r, const char *what) {
        if (r == -ENOMEM)
                return r;
        if (r < 0 && r != -ENOTCONN)
                log_warning_errno(r, "Cannot send the %s to the commander, dropping it: %m", what);
        return 0;
}

/* One dispatch function for the commander's frames. Returns 0, -ENOMEM, or -EPROTO/-ECONNRESET with the
 * reason in `reason` when the channel must be closed. */
static int handle_frame(ChannelClient *c, const Frame *f, char *reason, size_t size) {
        int r;

        switch (f->body_case) {
        case ELASTIC_POOL__FRAME__BODY_SNAPSHOT_REQUEST:
                r = on_snapshot_request(c, f->snapshot_request);
                return answer_result(r, "package");
        case ELASTIC_POOL__FRAME__BODY_INSTALL:
                r = on_install(c, f->install);
                return answer_result(r, "install result");
        case ELASTIC_POOL__FRAME__BODY_DROP:
                on_drop(c, f->drop);
                return 0;
        case ELASTIC_POOL__FRAME__BODY_DRAIN:
                on_drain(c, f->drain);
                return 0;
        case ELASTIC_POOL__FRAME__BODY_GOODBYE:
                snprintf(reason, size, "the commander said goodbye (%s)", strna(f->goodbye->reason));
                return -ECONNRESET;
        default:
                snprintf(reason, size, "unexpected %s frame from the commander", frame_body_name(f));
                return -EPROTO;
        }
}

/* Feeds n received bytes to the decoder. 0, or <0 once the channel was closed (or -ENOMEM). */
static int feed(ChannelClient *c, size_t n) {
        size_t off = 0;

        while (off < n && c->fd >= 0) {
                Frame *f = NULL;
                char reason[256];
                size_t used;
                int r;

                r = frame_decoder_feed(&c->decoder, c->rbuf + off, n - off, &used, &f);
                off += used;
                if (r < 0) {
                        close_channel(c, r,
                                      r == -EMSGSIZE ? "frame over the maximum size" : "undecodable frame");
                        return r;
                }
                if (r == 0)
                        continue;
                r = handle_frame(c, f, reason, sizeof reason);
                frame_free(f);
                if (r == -ENOMEM)
                        return r;
                if (r == -ECONNRESET) {
                        close_channel(c, 0, reason);
                        return r;
                }
                if (r < 0) {
                        close_channel(c, r, reason);
                        return r;
                }
        }
        return 0;
}

static int read_frames(ChannelClient *c) {
        for (unsigned i = 0; i < READS_PER_DISPATCH && c->fd >= 0; i++) {
                ssize_t n = recv(c->fd, c->rbuf, sizeof c->rbuf, MSG_DONTWAIT);
                int r;

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        /* ECONNRESET: the commander went away with our reports unread (it crashed, say) */
                        close_channel(c, -errno,
                                      errno == ECONNRESET ? "the commander reset it" : "read failed");
                        return 0;
                }
                if (n == 0) {
                        if (frame_decoder_pending(&c->decoder))
                                close_channel(c, -EPIPE, "the commander closed it in the middle of a frame");
                        else
                                close_channel(c, 0, "the commander closed it");
                        return 0;
                }
                r = feed(c, (size_t) n);
                if (r == -ENOMEM)
                        return r;
        }
        return 0;
}

int channel_client_dispatch(ChannelClient *c) {
        int r;

        if (c->fd < 0 && may_reconnect(c)) {
                usec_t now = now_usec(CLOCK_MONOTONIC);
                if (now >= c->next_attempt)
                        try_connect(c, now);
        }
        if (c->fd < 0)
                return 0;
        /* Hello strictly first: before anything is answered on this connection */
        r = greet(c);
        if (r == -ENOMEM)
                return r;
        if (c->fd >= 0 && frame_outbox_queued(&c->outbox) > 0)
                (void) flush(c);
        if (c->fd < 0)
                return 0;
        return read_frames(c);
}

void channel_client_goodbye(ChannelClient *c, const char *reason, usec_t timeout) {
        ElasticPool__Goodbye g = ELASTIC_POOL__GOODBYE__INIT;
        Frame f = ELASTIC_POOL__FRAME__INIT;
        usec_t deadline = now_usec(CLOCK_MONOTONIC) + timeout;

        c->said_goodbye = true;
        if (c->fd < 0)
                return;
        g.reason = (char *) reason;
        f.body_case = ELASTIC_POOL__FRAME__BODY_GOODBYE;
        f.goodbye = &g;
        if (channel_client_send(c, &f) < 0 || c->fd < 0)
                goto done;
        /* bounded: a commander that stopped reading must not hold up the worker's exit */
        while (c->fd >= 0 && frame_outbox_queued(&c->outbox) > 0) {
                usec_t now = now_usec(CLOCK_MONOTONIC);
                struct pollfd pfd = { .fd = c->fd, .events = POLLOUT };

                if (now >= deadline)
                        break;
                if (poll(&pfd, 1, (int) ((deadline - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC)) < 0 &&
                    errno != EINTR)
                        break;
                if (flush(c) < 0)
                        return; /* closed by flush */
        }
done:
        if (c->fd >= 0) {
                char why[256];

                snprintf(why, sizeof why, "said goodbye (%s)", strempty(reason));
                (void) shutdown(c->fd, SHUT_WR);
                close_channel(c, 0, why);
        }
}
