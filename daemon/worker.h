/* SPDX-License-Identifier: MIT */
#pragma once

/* One worker of the group: its process (identity = pidfd), its channel, its window of reports, its
 * place (cgroup leaf or scope) and where it is in its life. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "channel.h"
#include "evaluator.h"
#include "policy.h"
#include "window.h"

typedef struct Manager Manager;

/* A worker's share of the manager's PoolSummary, kept so it can be taken out exactly as it went in. */
typedef struct SummaryShare {
        bool counted;
        bool in_flight, retiring, active, room, not_fresh, routable;
        double occupancy;
} SummaryShare;

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

typedef struct Worker {
        Manager *manager;
        unsigned id;        /* wN, never reused within a commander's life */
        WorkerState state;
        bool reception;

        pid_t pid;          /* for logs only: the identity is the pidfd */
        int pidfd;
        sd_event_source *child_source;
        int release_fd;     /* write end of the pipe the parked child waits on before exec */
        int exec_error_fd;  /* read end of the close-on-exec pipe carrying exec's errno */
        sd_event_source *exec_error_source;
        sd_event_source *timer; /* spawn timeout, drain deadline or kill grace, by state */
        sd_event_source *stable_timer; /* routable until the stable period passed: then the spawn counts */

        int listen_fd;      /* the worker's listening Unix socket (we keep our copy for sock_diag) */
        char *socket_path;
        uint64_t socket_ino;
        int probe_fd;       /* connection that proves the socket accepts */
        sd_event_source *probe_timer;

        Channel *channel;
        uint64_t channel_closed_at; /* usec; 0 while open */
        char *channel_close_reason;

        Window window;
        Occupancy occupancy;
        Freshness freshness;
        usec_t not_fresh_since;
        unsigned missing_mask; /* evaluator_missing_components() of the latest evaluation */
        char missing_names[48]; /* the same as "cpu,memory" */

        usec_t spawned_at;  /* decision time */
        usec_t hello_at;
        usec_t routable_at;
        usec_t last_report_at;
        usec_t stop_started_at;
        char *stop_reason;
        bool exec_failed;   /* exec's errno came back: its exit is that failure, not another one */

        uint32_t inflight;  /* requests forwarded and not yet answered */
        uint32_t accept_backlog; /* kernel's count of connections waiting in accept (sock_diag) */
        bool has_accept_backlog;

        /* placement backend */
        char *cgroup_path;  /* relative to the unified mount; NULL when none */
        int cgroup_fd;
        char *unit;         /* scope unit name */
        bool unit_owned;    /* scope: systemd queued our start job, so the unit is ours to stop */
        char *job;          /* scope job object path while waiting for it */
        sd_bus_slot *job_slot;
        uint64_t oom_kills_at_start;

        SummaryShare summary_share; /* its part in the manager's PoolSummary */
        struct ForwardPool *forward; /* the front end's connections to it (NULL without a front end) */

        /* Hello facts */
        uint32_t sensor_protocol;
        char *sensor_version;
        unsigned capabilities; /* bitmask of 1 << ElasticPool__Capability */
        usec_t sensor_interval;
} Worker;

int worker_new(Manager *m, unsigned id, Worker **ret);
Worker *worker_free(Worker *w);

/* "w3" into buf (>= 16 bytes). */
const char *worker_name(const Worker *w, char *buf, size_t size);
#define WORKER_NAME(w) worker_name((w), (char[16]) {}, 16)

bool worker_is_alive(const Worker *w);
/* Takes new users (routable, not retiring). */
bool worker_is_routable(const Worker *w);
/* Sends sig through the pidfd; 0, -ESRCH once gone, -errno. */
int worker_signal(Worker *w, int sig);
