/* SPDX-License-Identifier: MIT */
#pragma once

/* The worker's end of the channel: one stream socket to the commander, frames in both directions through
 * the shared codec, written through a non-blocking outbox. Hello goes first on every connection, followed
 * by the worker's users when the application lists them. Move commands are answered through the
 * application's callbacks. When the channel breaks it is reconnected to ELASTIC_POOL_CHANNEL with
 * exponential backoff, unless the worker said goodbye or was asked to drain; without a path the sensor
 * stays disconnected. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elastic-pool/sensor.h"
#include "frame.h"
#include "time-util.h"

/* Reconnect delays: the first attempt after 50-100 ms (the delay is jittered down to half), doubling up to
 * 5 s. */
#define CHANNEL_BACKOFF_MIN_USEC (100U * USEC_PER_MSEC)
#define CHANNEL_BACKOFF_MAX_USEC (5U * USEC_PER_SEC)
/* A connection that lasted this long was a success: the next break starts over from the shortest delay.
 * As long as the longest delay, so that a commander which accepts and then closes (it refused us) makes
 * us knock no more often than the backoff would. */
#define CHANNEL_HEALTHY_USEC CHANNEL_BACKOFF_MAX_USEC

typedef struct ChannelClient ChannelClient;

/* Fills what the sensor knows of a new connection's Hello (group, worker id, interval, cgroup) and says
 * whether the application has set fields of its own. Strings must stay valid until it returns to the
 * caller's dispatch. Pid, versions and the callback capabilities the channel adds itself. */
typedef void (*ChannelHelloFunc)(void *userdata, ElasticPool__Hello *hello, bool *ret_application_fields);

/* A disconnected client. 0 or -ENOMEM. */
int channel_client_new(ChannelClient **ret);
/* Closes the channel without a Goodbye (see channel_client_goodbye()); accepts NULL, returns NULL. */
ChannelClient *channel_client_free(ChannelClient *c);

/* Takes over an inherited connected SOCK_STREAM socket: made close-on-exec and non-blocking. Returns 0,
 * -ENOTSOCK or -EPROTOTYPE for the wrong kind of fd (which is then left alone), -errno. */
int channel_client_adopt_fd(ChannelClient *c, int fd);
/* The Unix socket path to (re)connect to. 0, -ENAMETOOLONG, -ENOMEM. */
int channel_client_set_path(ChannelClient *c, const char *path);
void channel_client_set_hello(ChannelClient *c, ChannelHelloFunc hello, void *userdata);

/* Callbacks may be replaced at any time from any thread; they run in the dispatching thread. */
void channel_client_set_user_callbacks(ChannelClient *c, const ep_sensor_user_callbacks *cb, void *userdata);
void channel_client_set_drain_callback(ChannelClient *c, ep_sensor_drain_callback cb, void *userdata);

int channel_client_fd(const ChannelClient *c);
bool channel_client_is_connected(const ChannelClient *c);
/* POLLIN while connected, plus POLLOUT while bytes wait; 0 while disconnected. */
short channel_client_events(const ChannelClient *c);
/* When the next reconnect attempt is due (CLOCK_MONOTONIC); USEC_INFINITY when none is pending. */
usec_t channel_client_next_wakeup(const ChannelClient *c);

/* Connects when due, sends the Hello (and the users), writes what is queued and handles what the commander
 * sent. Broken channels are closed and scheduled for reconnection here, not returned. 0 or -ENOMEM. */
int channel_client_dispatch(ChannelClient *c);

/* Queues f (after the Hello) and writes what the socket takes. 0; -ENOTCONN while disconnected;
 * -ENOBUFS when the commander does not read and the outbox is full; -EMSGSIZE; -ENOMEM. */
int channel_client_send(ChannelClient *c, const Frame *f);

/* Sends a Goodbye, flushes for at most timeout and closes for good (no reconnection afterwards). */
void channel_client_goodbye(ChannelClient *c, const char *reason, usec_t timeout);
