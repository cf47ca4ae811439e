/* SPDX-License-Identifier: MIT */
#include "channel-listener.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "accept-pause.h"
#include "cgroup.h"
#include "cleanup.h"
#include "fd-util.h"
#include "journal-ids.h"
#include "log.h"
#include "macro.h"
#include "time-util.h"

/* Every sensor of a pool reconnects within a second or two of a restart: the queue holds them all. */
#define CHANNEL_LISTEN_BACKLOG 4096
/* Accepts per wake-up, so a flood of connections cannot starve the loop. */
#define ACCEPTS_PER_DISPATCH 64
/* Refusals journaled per second at most: whoever may connect (the socket is world-writable when workers
 * run as another user) must not be able to flood the journal; the rest are counted and said once. */
#define REFUSALS_LOGGED_PER_SECOND 5

struct ChannelListener {
        sd_event_source *io;
        int fd;
        char *path;
        bool open_to_all;
        uint64_t refused;
        AcceptPause pause;      /* out of descriptors: the queue keeps the sensors, the loop does not spin */
        usec_t log_window;      /* the second the logged refusals below belong to */
        unsigned logged, suppressed;
        ChannelPeerHandler handler;
        void *userdata;
};

static int bind_path(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;

        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        /* a socket file left by a commander that crashed: nobody listens on it any more */
        (void) unlink(path);
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return -errno;
        /* while workers run as our user (channel_listener_open_to_all() when they do not); the peer
         * check, not the mode, is the gate */
        (void) chmod(path, 0600);
        if (listen(fd, CHANNEL_LISTEN_BACKLOG) < 0)
                return -errno;
        return TAKE_FD(fd);
}

static void refuse(ChannelListener *l, int fd, const ChannelPeer *peer, const char *why) {
        usec_t now = now_usec(CLOCK_MONOTONIC);

        l->refused++;
        safe_close(fd);
        if (now - l->log_window >= USEC_PER_SEC) {
                if (l->suppressed > 0)
                        log_warning("%u more connections on the channel socket %s were refused in the last second",
                                    l->suppressed, l->path);
                l->log_window = now;
                l->logged = l->suppressed = 0;
        }
        if (l->logged >= REFUSALS_LOGGED_PER_SECOND) {
                l->suppressed++;
                return;
        }
        l->logged++;
        log_struct(LOG_WARNING, LOG_FIELDS(.message_id = MESSAGE_ID_CHANNEL_REFUSED, .event = "channel-refused"),
                   "Refused a connection on the channel socket %s from pid %d (uid %u, cgroup %s): %s", l->path,
                   (int) peer->pid, (unsigned) peer->uid, peer->cgroup ?: "none", why);
}

static void take_connection(ChannelListener *l, int fd) {
        _cleanup_free_ char *cgroup = NULL;
        struct ucred cred = {};
        socklen_t len = sizeof cred;
        const char *why = NULL;
        ChannelPeer peer;
        int r;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0) {
                peer = (ChannelPeer) { .pid = cred.pid, .uid = cred.uid };
                refuse(l, fd, &peer, "its credentials cannot be read");
                return;
        }
        /* pid → cgroup is read now, while the peer waits for us: a process that exited before this has
         * no cgroup file and is refused; SO_PEERPIDFD (Linux 6.5) would close the pid-reuse window */
        r = cgroup_pid_path(cred.pid, &cgroup);
        if (r < 0 && r != -ENODATA && r != -ENOENT)
                log_debug_errno(r, "Cannot read the cgroup of pid %d: %m", (int) cred.pid);
        peer = (ChannelPeer) { .pid = cred.pid, .uid = cred.uid, .cgroup = cgroup };
        r = l->handler(fd, &peer, &why, l->userdata);
        if (r < 0)
                refuse(l, fd, &peer, why ?: "not one of this group's workers");
}

static void set_accepting(void *userdata, bool on) {
        ChannelListener *l = userdata;

        (void) sd_event_source_set_enabled(l->io, on ? SD_EVENT_ON : SD_EVENT_OFF);
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ChannelListener *l = userdata;

        for (unsigned i = 0; i < ACCEPTS_PER_DISPATCH; i++) {
                int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (c < 0) {
                        if (accept_error_is_shortage(errno))
                                accept_pause_begin(&l->pause, accept_shortage_why(errno), NULL);
                        else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                                log_warning_errno(errno, "Failed to accept on %s: %m", l->path);
                        return 0;
                }
                accept_pause_end_episode(&l->pause);
                take_connection(l, c);
        }
        return 0;
}

int channel_listener_new(sd_event *event, const char *path, int inherited_fd, ChannelPeerHandler handler,
                         void *userdata, ChannelListener **ret) {
        _cleanup_close_ int fd = inherited_fd;
        ChannelListener *l;
        int r;

        if (fd < 0) {
                fd = bind_path(path);
                if (fd < 0)
                        return log_error_errno(fd, "Failed to listen on the channel socket %s: %m", path);
        } else {
                r = fd_set_cloexec_nonblock(fd);
                if (r < 0)
                        return log_error_errno(r, "The channel socket kept by systemd is unusable: %m");
        }
        l = calloc(1, sizeof *l);
        if (!l)
                return log_oom();
        *l = (ChannelListener) { .fd = -EBADF, .handler = handler, .userdata = userdata };
        l->path = strdup(path);
        if (!l->path) {
                free(l);
                return log_oom();
        }
        r = accept_pause_init(&l->pause, event, l->path, set_accepting, l);
        if (r >= 0)
                r = sd_event_add_io(event, &l->io, fd, EPOLLIN, on_accept, l);
        if (r < 0) {
                channel_listener_free(l, false);
                return log_error_errno(r, "Failed to watch the channel socket %s: %m", path);
        }
        l->fd = TAKE_FD(fd);
        *ret = l;
        return 0;
}

ChannelListener *channel_listener_free(ChannelListener *l, bool unlink_path) {
        if (!l)
                return NULL;
        accept_pause_done(&l->pause);
        l->io = sd_event_source_disable_unref(l->io);
        l->fd = safe_close(l->fd);
        if (unlink_path && l->path)
                (void) unlink(l->path);
        free(l->path);
        free(l);
        return NULL;
}

int channel_listener_open_to_all(ChannelListener *l) {
        if (l->open_to_all)
                return 0;
        /* connect() needs write permission on the socket file; the path is ours (we bound it, or the
         * commander before us did, in a runtime directory only we write to) */
        if (chmod(l->path, 0666) < 0)
                return -errno;
        l->open_to_all = true;
        return 0;
}

int channel_listener_fd(const ChannelListener *l) {
        return l ? l->fd : -EBADF;
}

const char *channel_listener_path(const ChannelListener *l) {
        return l ? l->path : NULL;
}

uint64_t channel_listener_refused(const ChannelListener *l) {
        return l ? l->refused : 0;
}
