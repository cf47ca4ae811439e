/* SPDX-License-Identifier: MIT */
#pragma once

/* The group's channel listener, <runtime_dir>/channel.sock: where sensors reconnect when their channel
 * broke, and where the workers a commander re-adopted after a restart find the new one. Who may connect
 * is decided by the owner from the peer's credentials (SO_PEERCRED) and the cgroup that pid lives in;
 * everyone else is refused, and the refusal is journaled here. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

typedef struct ChannelListener ChannelListener;

typedef struct ChannelPeer {
        pid_t pid;
        uid_t uid;
        const char *cgroup; /* its cgroup v2 path from /proc/PID/cgroup; NULL when it has none */
} ChannelPeer;

/* Called for each connection: >= 0 when the owner took fd (also on its own failure, when it closes it),
 * or -EPERM with *why (a static or owner-held string) set to refuse it: the listener closes fd then. */
typedef int (*ChannelPeerHandler)(int fd, const ChannelPeer *peer, const char **why, void *userdata);

/* Listens on path, or on inherited_fd (a listening socket kept across restarts in systemd's file
 * descriptor store) when >= 0, which it takes over, also on failure. 0 or -errno (logged). */
int channel_listener_new(sd_event *event, const char *path, int inherited_fd, ChannelPeerHandler handler,
                         void *userdata, ChannelListener **ret);
/* Closes the socket; unlinks the path when asked (an orderly stop: nobody will reconnect). */
ChannelListener *channel_listener_free(ChannelListener *l, bool unlink_path);

/* Lets processes of every user connect (mode 0666), for workers that run as another user than the
 * commander; the peer check still decides whom to take. Once: later calls do nothing. 0 or -errno. */
int channel_listener_open_to_all(ChannelListener *l);

int channel_listener_fd(const ChannelListener *l);
const char *channel_listener_path(const ChannelListener *l);
uint64_t channel_listener_refused(const ChannelListener *l);
