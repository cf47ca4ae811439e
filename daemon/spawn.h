/* SPDX-License-Identifier: MIT */
#pragma once

/* Starting a worker process: clone3(CLONE_PIDFD [| CLONE_INTO_CGROUP]) with the socket-activation
 * handover. The child gets the listening socket as fd 3 (LISTEN_FDS=1, LISTEN_PID), the channel as
 * fd 4 (ELASTIC_POOL_CHANNEL_FD=4), optionally waits on a release pipe before exec (so the scope
 * backend can place it first), takes the worker's groups, gid and uid and changes into its working
 * directory, and reports the step that failed with its errno over a close-on-exec pipe. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
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
        const char *working_directory; /* chdir() into it, as the worker's user, before exec; NULL: stay */
        bool set_identity;  /* take groups, gid and uid before exec (needs CAP_SETGID, CAP_SETUID) */
        uid_t uid;
        gid_t gid;
        const gid_t *groups; /* the supplementary groups; none at all when n_groups is 0 */
        size_t n_groups;
        unsigned long long nofile_soft; /* the soft RLIMIT_NOFILE the worker gets back; 0: ours */
} SpawnRequest;

/* Where a child failed on its way to exec. The order is the child's. */
typedef enum SpawnStep {
        SPAWN_STEP_CGROUP,    /* moving itself into its cgroup (the kernel refused CLONE_INTO_CGROUP) */
        SPAWN_STEP_FDS,       /* putting the listening socket and the channel on fds 3 and 4 */
        SPAWN_STEP_SETGROUPS,
        SPAWN_STEP_SETGID,
        SPAWN_STEP_SETUID,
        SPAWN_STEP_CHDIR,     /* the working directory */
        SPAWN_STEP_EXEC,
        _SPAWN_STEP_MAX,
        _SPAWN_STEP_INVALID = -EINVAL, /* a report that could not be read */
} SpawnStep;

/* "cgroup", "fds", "setgroups", "setgid", "setuid", "chdir", "exec"; NULL for an out-of-range step. */
const char *spawn_step_to_string(SpawnStep s);

typedef struct SpawnError {
        SpawnStep step;
        int error; /* its errno */
} SpawnError;

typedef struct SpawnResult {
        pid_t pid;
        int pidfd;
        int release_fd;     /* -EBADF unless park */
        int exec_error_fd;  /* readable: EOF = exec succeeded, else one report: the step and its errno */
        bool into_cgroup;   /* CLONE_INTO_CGROUP worked (else the child was moved after birth) */
        bool used_fork;     /* clone3 is missing here: fork + pidfd_open stood in */
} SpawnResult;

/* 0 with *ret filled (fds owned by the caller), or -errno when no child was created. */
int spawn_worker(const SpawnRequest *req, SpawnResult *ret);

/* Lets a parked child go on to exec. Closes *release_fd. */
int spawn_release(int *release_fd);

/* After exec_error_fd became readable: 0 when exec succeeded, 1 with *ret when the child failed on its
 * way (a torn or unknown report: step _SPAWN_STEP_INVALID, error EIO), -EAGAIN when nothing is there
 * yet, -errno when the pipe cannot be read. */
int spawn_read_exec_error(int fd, SpawnError *ret);

/* Builds "KEY=value" into a malloc()ed string; NULL on -ENOMEM. */
char *spawn_env(const char *key, const char *format, ...) __attribute__((format(printf, 2, 3)));
