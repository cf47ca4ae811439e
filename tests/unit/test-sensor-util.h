/* SPDX-License-Identifier: MIT */
#pragma once

/* Helpers shared by the sensor's unit tests: fixture trees that look like /proc and /sys/fs/cgroup, and
 * the commander's end of a channel. Failures abort the test through cmocka's assertions. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "elastic-pool/sensor.h"
#include "cleanup.h"
#include "frame.h"
#include "time-util.h"

/* A temp dir with proc/ (proc/self links to proc/<our pid>) and cgroup/. */
typedef struct Fixture {
        char *root, *proc, *cgroup;
} Fixture;

void fixture_setup(Fixture *f);
void fixture_teardown(Fixture *f);
/* Writes (replaces) root/rel, creating the directories on the way; printf-style content. */
void fixture_write(const Fixture *f, const char *rel, const char *format, ...)
        __attribute__((format(printf, 3, 4)));
void fixture_mkdir(const Fixture *f, const char *rel);
void fixture_remove(const Fixture *f, const char *rel);
/* proc/<pid>/stat with the given parent and times (clock ticks), proc/<pid>/statm with resident pages. */
void fixture_process(const Fixture *f, pid_t pid, pid_t ppid, uint64_t utime, uint64_t stime,
                     uint64_t cutime, uint64_t cstime, uint64_t resident_pages);
/* Points ELASTIC_POOL_PROC_ROOT / ELASTIC_POOL_CGROUP_ROOT at the fixture. */
void fixture_export(const Fixture *f);

/* Removes every ELASTIC_POOL_* variable a previous test may have left. */
void sensor_env_reset(void);

/* The commander's end of a channel socketpair whose other end the sensor inherited. */
typedef struct Commander {
        int fd;
        FrameDecoder decoder;
} Commander;

/* Creates the socketpair, exports ELASTIC_POOL_CHANNEL_FD (and ELASTIC_POOL_INTERVAL when interval is
 * set) and returns a new sensor on it. */
ep_sensor *commander_start(Commander *c, const char *interval);
void commander_done(Commander *c);

/* A listening Unix socket at path (non-blocking): the commander's channel.sock, where the sensor
 * reconnects. */
int commander_listen(const char *path);
/* Accepts the sensor's next connection on listen_fd as c, driving s with ep_sensor_dispatch meanwhile when
 * s is not NULL; false after timeout. */
bool commander_accept(Commander *c, int listen_fd, ep_sensor *s, usec_t timeout);

/* Waits (driving s with ep_sensor_dispatch when s is not NULL, otherwise just polling) for the next frame,
 * for at most timeout. NULL when none came or the sensor closed the channel (*ret_eof then set). */
Frame *commander_next(Commander *c, ep_sensor *s, usec_t timeout, bool *ret_eof);
/* The next frame of the given kind, skipping others (reports, say); fails the test after timeout. */
Frame *commander_expect(Commander *c, ep_sensor *s, ElasticPool__Frame__BodyCase kind, usec_t timeout);
/* Waits until the sensor closed the channel (EOF on our end); false after timeout. */
bool commander_wait_eof(Commander *c, ep_sensor *s, usec_t timeout);
void commander_send(Commander *c, const Frame *f);
void commander_send_raw(Commander *c, const void *data, size_t size);

/* Drives s until cond(userdata) holds or timeout passes; returns cond's last value. */
bool sensor_drive_until(ep_sensor *s, bool (*cond)(void *userdata), void *userdata, usec_t timeout);
