/* SPDX-License-Identifier: MIT */
#pragma once

/* Starting a worker process: clone3(CLONE_PIDFD [| CLONE_INTO_CGROUP]) with the socket-activation
 * handover. The child gets the listening socket as fd 3 (LISTEN_FDS=1, LISTEN_PID), the channel as
 * fd 4 (ELASTIC_POOL_CHANNEL_FD=4), optionally waits on a release pipe before exec (so the scope
 * backend can place it first), and reports an exec failure's errno over a close-on-exec pipe. */

#include <stdbool.h>
#include <sys/types.h>

#define SPAWN_LISTEN_FD 3
#define SPAWN_CHANNEL_FD 4

typedef struct SpawnRequest {
        char *const *argv;
        char *const *env;   /* added to (and overriding) the commander's environment */
        int listen_fd;
        int channel_fd;
        int cgroup_fd;      /* born in this cgroup when >= 0 */
        bool park;          /* wait for spawn_release() before exec */
        int death_signal;   /* PR_SET_PDEATHSIG, 0 for none */
} SpawnRequest;

typedef struct SpawnResult {
        pid_t pid;
        int pidfd;
        int release_fd;     /* -EBADF unless park */
        int exec_error_fd;  /* readable: EOF = exec succeeded, 4 bytes = its errno */
        bool into_cgroup;   /* CLONE_INTO_CGROUP worked (else the child was moved after birth) */
        bool used_fork;     /* clone3 is missing here: fork + pidfd_open stood in */
} SpawnResult;

/* 0 with *ret filled (fds owned by the caller), or -errno when no child was created. */
int spawn_worker(const SpawnRequest *req, SpawnResult *ret);

/* Lets a parked child go on to exec. Closes *release_fd. */
int spawn_release(int *release_fd);

/* After exec_error_fd became readable: 0 when exec succeeded, 1 with *ret_errno when it failed,
 * -EAGAIN when nothing is there yet. */
int spawn_read_exec_error(int fd, int *ret_errno);

/* Builds "KEY=value" into a malloc()ed string; NULL on -ENOMEM. */
char *spawn_env(const char *key, const char *format, ...) __attribute__((format(printf, 2, 3)));
