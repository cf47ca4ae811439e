/* SPDX-License-Identifier: MIT */
#pragma once

/* libelastic-pool-sensor — the worker side of elastic-pool.
 *
 * A worker links this library (or runs under the elastic-pool-sensor wrapper). The sensor reads the
 * worker's own cgroup every interval, adds what the application tells it through the setters below,
 * and pushes one OccupancyReport per interval to the commander over the channel inherited as
 * ELASTIC_POOL_CHANNEL_FD. It measures; it never judges: values the application never set are sent as
 * absent, not as 0.
 *
 * Threads: the setters (ep_sensor_set_*, ep_sensor_request_*, ep_sensor_user_active) may be called from
 * any thread at any time. Everything else, and every callback, runs in the thread that drives the
 * sensor: the application's event loop (ep_sensor_get_fd/get_timeout/dispatch) or the sensor's own
 * background thread (ep_sensor_start_thread).
 * (ep_sensor_set_interval, ep_sensor_set_user_callbacks and ep_sensor_set_drain_callback are also safe
 * from any thread; the setters accept a NULL sensor and do nothing, so an application that runs without
 * one needs no checks.)
 *
 * Hello: sent first on every connection, built when the sensor is first driven (first dispatch, tick or
 * thread start), not in ep_sensor_new(). Its capabilities are SNAPSHOT/INSTALL/DROP/LIST_USERS for each
 * user callback registered by then, and APPLICATION_FIELDS when the application has set any application
 * field (or called ep_sensor_user_active) by then. So register callbacks and set at least the executor
 * total before driving the sensor; later changes show in the Hello of the next connection.
 *
 * Reconnection: when the channel breaks (the commander died or closed it) and ELASTIC_POOL_CHANNEL names a
 * socket, the sensor reconnects there, so that a restarted commander re-adopts the worker: first after
 * 50-100 ms, then doubling up to 5 s, with jitter; back to the shortest delay once a connection has lasted
 * 5 s (a commander that accepts and closes at once only slows the attempts down). Each new connection gets
 * a Hello and, with a list callback, the worker's users. Never after ep_sensor_goodbye(), nor once the
 * commander has asked the worker to drain: a worker on its way out does not come back as a fresh one.
 *
 * Return convention: functions returning int give 0 (or a documented positive value) on success and a
 * negative errno-style value on failure. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ep_sensor ep_sensor;

/* Handed to the list callback: takes one user name (copied; it need only live until the call returns).
 * Returns 0, or a negative errno (-ENOMEM) at which the list callback must stop and return it. */
typedef int (*ep_sensor_user_sink)(void *sink_ctx, const char *user);

/* User callbacks, run in the sensor's thread. Each returns 0 or a negative errno. A move the worker cannot
 * do (no callback) is answered with an error naming it.
 * snapshot: serialise `user` into a malloc()ed blob (*ret_blob, *ret_size), which the sensor frees.
 *           -ENOENT when the worker does not know the user.
 * install:  create `user` from the blob; the blob is only valid during the call. A NULL blob (size 0)
 *           means the user arrives without state (re-pointed from a worker of another package format,
 *           see ep_sensor_set_package_format()): start it fresh, as a login would.
 * drop:     forget `user`; -ENOENT when it is not known.
 * list:     call sink(sink_ctx, user) once for every user whose state the worker holds, all of them; stop
 *           at the first negative value sink returns and return it. sink and sink_ctx are valid during
 *           the call only. Called as every connection begins (the first one and each reconnect); the
 *           users follow the Hello in Users frames, so that a restarted commander learns which users live
 *           here and keeps them on this worker. Registering it adds LIST_USERS to the Hello. 0 promises
 *           the list is complete; after a negative errno the sensor sends no list on that connection and
 *           leaves LIST_USERS out of its Hello: a partial list would read as "the others are gone". In
 *           background-thread mode it runs while the application's threads change the users: walk them
 *           under the application's own lock. Empty names and names over 1024 bytes are left out (and
 *           logged). */
typedef struct ep_sensor_user_callbacks {
        int (*snapshot)(void *userdata, const char *user, void **ret_blob, size_t *ret_size);
        int (*install)(void *userdata, const char *user, const void *blob, size_t size);
        int (*drop)(void *userdata, const char *user);
        int (*list)(void *userdata, ep_sensor_user_sink sink, void *sink_ctx);
} ep_sensor_user_callbacks;

/* Called when the commander asks the worker to drain (it is being retired): stop taking new work,
 * finish what runs by deadline_usec (CLOCK_MONOTONIC; UINT64_MAX when the commander set none). */
typedef void (*ep_sensor_drain_callback)(void *userdata, uint64_t deadline_usec);

/* Creates a sensor configured from the environment:
 *   ELASTIC_POOL_CHANNEL_FD   inherited channel fd (taken over and made close-on-exec)
 *   ELASTIC_POOL_CHANNEL      socket path to reconnect to when the channel breaks (optional)
 * (both channel variables are removed from the environment, so that the worker's children, which share
 * its cgroup, never connect to the commander as if they were the worker)
 *   ELASTIC_POOL_GROUP, ELASTIC_POOL_WORKER   identity sent in Hello
 *   ELASTIC_POOL_INTERVAL     report interval ("5s", "200ms"; default 5s)
 *   ELASTIC_POOL_PROC_ROOT, ELASTIC_POOL_CGROUP_ROOT   test seams: alternate /proc and /sys/fs/cgroup
 * Without any channel the sensor still reads and builds reports (ep_sensor_tick) but sends nothing.
 * Readings that cannot be opened are absent, never an error here. Returns 0, -ENOMEM, or -EINVAL /
 * -ERANGE / -ENAMETOOLONG / -EBADF / -ENOTSOCK / -EPROTOTYPE for a malformed or unusable variable above
 * (logged, naming it). */
int ep_sensor_new(ep_sensor **ret);
/* Stops the background thread, closes the channel (without a Goodbye: see ep_sensor_goodbye()), frees.
 * Accepts NULL; returns NULL. */
ep_sensor *ep_sensor_free(ep_sensor *s);

/* Report interval in microseconds (> 0); takes effect from the next tick. 0 or -EINVAL. */
int ep_sensor_set_interval(ep_sensor *s, uint64_t usec);

/* Application fields. Until first set, each is absent from the reports. */
void ep_sensor_set_users(ep_sensor *s, uint32_t users);
void ep_sensor_set_pages(ep_sensor *s, uint32_t pages);
void ep_sensor_set_connections(ep_sensor *s, uint32_t connections);
/* Marks `user` active in the current interval. System requests (health checks, monitoring) pass
 * system=true and do not count as activity. */
void ep_sensor_user_active(ep_sensor *s, const char *user, bool system);
/* Executor: set the whole triple at once, or keep it current with the helpers below. */
void ep_sensor_set_executor(ep_sensor *s, uint32_t busy, uint32_t total, uint32_t queue_depth);
void ep_sensor_set_executor_total(ep_sensor *s, uint32_t total);
void ep_sensor_request_queued(ep_sensor *s);  /* a request waits for an executor: queue_depth++ */
void ep_sensor_request_begin(ep_sensor *s);   /* an executor picked it up: queue_depth--, busy++ */
void ep_sensor_request_end(ep_sensor *s);     /* done: busy-- */
void ep_sensor_set_backlog(ep_sensor *s, uint64_t pending, uint64_t outbox);

/* Names the format of the packages the snapshot callback makes and the install callback reads ("shop-v3",
 * up to 128 printable characters), sent in the Hello. The commander moves a user live only between
 * workers that name the same format: after a deploy that changed it, users are re-pointed (their state is
 * not carried) instead of handed a package the new version cannot read. Set it before driving the
 * sensor; NULL clears it. 0, -EINVAL (no sensor, or a name too long or with control characters),
 * -ENOMEM. */
int ep_sensor_set_package_format(ep_sensor *s, const char *format);

/* cb NULL removes them. 0, or -EINVAL without a sensor. */
int ep_sensor_set_user_callbacks(ep_sensor *s, const ep_sensor_user_callbacks *cb, void *userdata);
void ep_sensor_set_drain_callback(ep_sensor *s, ep_sensor_drain_callback cb, void *userdata);

/* The wrapper reports the cgroup of a whole scope and, without a cgroup, this process tree: the procfs
 * fallbacks then follow pid and its descendants. 0, -EINVAL, -EBUSY once the thread runs. */
int ep_sensor_watch_pid(ep_sensor *s, int pid);

/* Event-loop integration: poll get_fd() for reading (it is -1 while no channel is connected), wake up
 * after get_timeout() at the latest (CLOCK_MONOTONIC microseconds, absolute), then call dispatch(),
 * which reads commands, sends due reports, and reconnects. Returns 0 or -errno on a failure that the
 * sensor could not handle itself. In background-thread mode get_fd() is -1, get_events() 0, and
 * get_timeout()/dispatch() return -EBUSY. */
int ep_sensor_get_fd(ep_sensor *s);
/* Events to poll for on get_fd(): POLLIN, plus POLLOUT while frames wait to be written. */
int ep_sensor_get_events(ep_sensor *s);
int ep_sensor_get_timeout(ep_sensor *s, uint64_t *ret_usec);
int ep_sensor_dispatch(ep_sensor *s);

/* Reads and builds one report now (sending it when connected), outside the cadence, which it does not
 * move. The active-user interval restarts. 0, -ENOMEM, -EBUSY in background-thread mode. */
int ep_sensor_tick(ep_sensor *s);

/* Background-thread mode: the sensor runs its own poll loop until ep_sensor_free() (or
 * ep_sensor_goodbye()), which stop and join it. 0, -EBUSY when already running, -errno. */
int ep_sensor_start_thread(ep_sensor *s);

/* Sends a Goodbye and flushes what is queued (best effort, bounded to 1 s). Stops the background thread
 * first; the channel is not reconnected afterwards. */
void ep_sensor_goodbye(ep_sensor *s, const char *reason);

#ifdef __cplusplus
}
#endif
