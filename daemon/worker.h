/* SPDX-License-Identifier: MIT */
#pragma once

/* One worker of the group: its process (identity = pidfd), its listening socket, its channel, its place
 * (cgroup leaf or scope) and where it is in its life. The fields are grouped by the module that owns
 * them: the lifecycle (pool.c) owns most groups, the placement backend `place`, and the capacity shell
 * (capacity.c) the archive of its reports and what it makes of them. The groups a report reads come
 * first, together; the rest follow. */

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "backend.h"
#include "channel.h"
#include "drift.h"
#include "evaluator.h"
#include "latency.h"
#include "policy.h"
#include "window.h"

typedef struct Pool Pool;

typedef enum WorkerState {
        WORKER_STARTING, /* child exists; placed/exec'd, awaiting Hello */
        WORKER_PROBING,  /* Hello received; waiting for its socket to accept */
        WORKER_ROUTABLE,
        WORKER_DRAINING, /* retiring: no new requests, in-flight ones finish (drain_timeout) */
        WORKER_STOPPING, /* SIGTERM sent; SIGKILL after stop_timeout */
        WORKER_DEAD,
        _WORKER_STATE_MAX,
        _WORKER_STATE_INVALID = -EINVAL,
} WorkerState;

const char *worker_state_to_string(WorkerState s);

/* How a worker ended, for the counters of the status surfaces (the journal line says it in words). */
typedef enum WorkerDeathCause {
        WORKER_DEATH_STOPPED,     /* we asked it to leave (retired, stopped): an end we wanted */
        WORKER_DEATH_EXITED,      /* it exited on its own */
        WORKER_DEATH_SIGNALED,    /* a signal we did not send: a crash, an operator's kill */
        WORKER_DEATH_OOM,         /* killed by the OOM killer, as memory.events tells */
        WORKER_DEATH_EXEC_FAILED, /* its command could not be executed */
        WORKER_DEATH_UNKNOWN,     /* no exit status: a worker taken back after a restart is not our child */
        _WORKER_DEATH_MAX,
        _WORKER_DEATH_INVALID = -EINVAL,
} WorkerDeathCause;

const char *worker_death_cause_to_string(WorkerDeathCause c);
/* The cause of a death from its exit status (si NULL: unknown) and what the pool knew of it. */
WorkerDeathCause worker_death_cause(const siginfo_t *si, bool oom, bool expected, bool exec_failed);

/* Health's (daemon/health.c) view of a worker: why it takes no new work, and what the front end's counters
 * said at health's last look. */
typedef enum HealthCause {
        HEALTH_CAUSE_NONE,       /* healthy */
        HEALTH_CAUSE_SILENT,     /* its reports stopped */
        HEALTH_CAUSE_UNANSWERED, /* it reports, but requests went unanswered (timeouts, failed connects) */
} HealthCause;

typedef struct WorkerHealth {
        HealthCause cause;
        usec_t out_since;  /* taken out of new work for cause at */
        uint64_t answers;  /* the front end's count of its answers at the last look */
        unsigned forgiven; /* unanswered requests since that answer which a probe's answer wiped out */
} WorkerHealth;

typedef struct Worker {
        Pool *pool;
        unsigned id;        /* wN, never reused within a commander's life */
        WorkerState state;
        bool evacuating;    /* routable, its users being moved off (a drain): serves them, takes no new */
        bool adopted;       /* started by an earlier commander, taken back after a restart: not our child */
        bool awaiting_sensor; /* adopted, its sensor has not yet reconnected and announced its users */
        char *unhealthy;    /* why it is taken out of new work (its reports stopped, or requests went
                             * unanswered: hung?); NULL: healthy */
        WorkerHealth health; /* health's, behind unhealthy */

        /* What every report reads or writes comes next, in as few cache lines as it fits: in a pool of
         * thousands each line a report touches is a cache miss (bench-commander-report-cost). */
        /* when it was spawned (the decision), said Hello and became routable */
        usec_t spawned_at;
        usec_t hello_at;
        usec_t routable_at;

        /* its channel, and what its sensor said in Hello */
        Channel *channel;
        usec_t channel_closed_at; /* 0 while open */
        char *channel_close_reason;
        uint32_t sensor_protocol;
        char *sensor_version;
        char *package_format; /* of the user packages it snapshots and installs; NULL: unnamed */
        unsigned capabilities; /* bitmask of 1 << ElasticPool__Capability */
        usec_t sensor_interval;
        usec_t last_report_at;

        /* the capacity shell's: the archive of its reports, what they say, its share of the ledger */
        Window window;
        Reading reading;
        PolicyShare share;
        /* ... the burst path's samples of it (capacity-burst.c), and the latest executor queue depth its
         * sensor told (a report, or an early one when the queue crossed burst_queue) */
        BurstTrack burst;
        bool executor_queue_offered; /* a report ever carried it */
        uint32_t executor_queue;
        usec_t executor_queue_at;    /* 0: never */
        usec_t accept_queue_at;      /* the last sock_diag sample that found its socket; 0: never */
        /* ... and, for the status surfaces, its drift sentinels */
        DriftSentinel drift;

        /* the process */
        pid_t pid;          /* for logs only: the identity is the pidfd */
        int pidfd;
        sd_event_source *child_source;
        int release_fd;     /* write end of the pipe the parked child waits on before exec */
        int exec_error_fd;  /* read end of the close-on-exec pipe: a step that failed before exec, errno */
        sd_event_source *exec_error_source;
        bool exec_failed;   /* a failed step came back: its exit is that failure, not another one */
        sd_event_source *timer; /* spawn timeout, drain deadline or kill grace, by state */
        sd_event_source *stable_timer; /* routable until the stable period passed: then the spawn counts */
        unsigned exec_generation; /* the pool's exec_generation it was spawned under: older runs an old
                                   * command (reloaded since) */
        usec_t stop_started_at;
        char *stop_reason;
        char *death_cause;  /* how it died, as the journal said it: set at its death, for the hooks */

        /* its listening socket (we keep our copy for sock_diag) and the probe that proves it accepts */
        int listen_fd;
        char *socket_path;
        uint64_t socket_ino;
        int probe_fd;
        sd_event_source *probe_timer;

        /* the placement backend's */
        BackendPlace place;

        /* the capacity shell's: its response times of the last minute, for the status surfaces. Last: over
         * a kilobyte, which a report reads only when the front end forwarded to the worker */
        LatencyRing latency;
} Worker;

int worker_new(Pool *p, unsigned id, Worker **ret);
Worker *worker_free(Worker *w);

/* "w3" into buf (>= 16 bytes). */
const char *worker_name(const Worker *w, char *buf, size_t size);
#define WORKER_NAME(w) worker_name((w), (char[16]) {}, 16)

bool worker_is_alive(const Worker *w);
/* Spawned and not routable yet: waiting for its Hello or for its socket to accept. */
bool worker_is_starting(const Worker *w);
/* Serves requests: routable (an evacuating worker still serves the users it has). */
bool worker_is_routable(const Worker *w);
/* Runs an older worker definition while a rolling reload replaces it with a routable newer one: it
 * serves its users and takes no new ones. */
bool worker_outdated(const Worker *w);
/* Takes new users: routable, not retiring, not evacuating, not outdated, not unhealthy. */
bool worker_takes_users(const Worker *w);
/* Why `w` takes no new users, for an operator's refusal; NULL when it takes them. */
const char *worker_why_no_users(const Worker *w);
/* In the policies' world: alive and not yet stopping (starting, probing, routable, draining). */
bool worker_in_policy(const Worker *w);
/* Asks the CPU to fetch the front of Worker, the groups a report reads. Called when its channel has
 * bytes waiting, before they are read and decoded: in a pool of thousands each of these cache lines is a
 * miss, and the decoding hides them. */
void worker_prefetch_report(const Worker *w);
/* Sends sig through the pidfd; 0, -ESRCH once gone, -errno. */
int worker_signal(Worker *w, int sig);
