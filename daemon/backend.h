/* SPDX-License-Identifier: MIT */
#pragma once

/* Placement backends: where a worker process lives. One small interface (scope, cgroup, none, and a
 * fake for unit tests); the spawner calls it at fixed points of a worker's birth and death:
 *
 *   prepare(w)  before the child exists: make its leaf; hand back a cgroup dir fd for CLONE_INTO_CGROUP
 *   attach(w)   the child exists, parked before exec: place it, then call backend_attach_done(w, r),
 *               synchronously or later (the scope backend waits for systemd's job)
 *   release(w)  after death: remove what prepare/attach made
 */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "cgroup.h"
#include "config.h"

typedef struct Backend Backend;
typedef struct Worker Worker;

/* What the backend keeps of one worker (Worker.place): made by prepare/attach, undone by release and
 * freed with the worker (backend_place_done()). */
typedef struct BackendPlace {
        char *cgroup_path;  /* relative to the unified mount; NULL when none */
        int cgroup_fd;
        char *unit;         /* scope unit name */
        bool unit_owned;    /* scope: systemd queued our start job, so the unit is ours to stop */
        char *job;          /* scope job object path while waiting for it */
        sd_bus_slot *job_slot;
        uint64_t oom_kills_at_start;
} BackendPlace;

/* Frees what a place still holds (not what it made outside the process: that is release()'s). */
void backend_place_done(BackendPlace *p);

/* A place an earlier commander of this group made and left populated (its worker outlived it): what
 * re-adoption starts from. */
typedef struct BackendFound {
        unsigned id;        /* the N of wN */
        char *unit;         /* scope: its unit name; NULL for a leaf */
        char *cgroup_path;  /* relative to the unified mount */
} BackendFound;

void backend_found_free(BackendFound *f, size_t n);

typedef struct BackendVTable {
        BackendKind kind;
        /* Probes and sets up; -EOPNOTSUPP (with a logged reason) when unusable on this host. */
        int (*init)(Backend *b);
        void (*done)(Backend *b);
        /* 0 with *ret_cgroup_fd set to a dir fd (owned by the caller) or -EBADF when the child is born
         * in the commander's own cgroup; -errno on failure. */
        int (*prepare)(Backend *b, Worker *w, int *ret_cgroup_fd);
        /* 0 when backend_attach_done() has been or will be called; -errno otherwise (not called). */
        int (*attach)(Backend *b, Worker *w);
        void (*release)(Backend *b, Worker *w);
        /* The OOM-kill count of the worker's cgroup (memory.events oom_kill); -ENODATA when unknown. */
        int (*oom_kills)(Backend *b, Worker *w, uint64_t *ret);
        /* The group's places left populated by an earlier commander, ordered by id: 0 with a malloc()ed
         * array (free with backend_found_free()), -errno. NULL for a backend without places. */
        int (*discover)(Backend *b, BackendFound **ret, size_t *ret_n);
} BackendVTable;

struct Backend {
        const BackendVTable *vtable;
        sd_event *event;
        sd_bus *bus;          /* scope: the manager's bus (system or user) */
        const Config *config;
        const char *group;
        CgroupLayout layout;
        char *cgroup_mount;   /* the unified mount point */
        char *root;           /* cgroup backend: our delegated root, relative to the mount */
        int root_fd;
        bool root_owned;      /* cgroup backend: we made the root (bare host), so we remove it */
        char *slice;          /* scope backend: elastic-pool-<group>.slice */
        void *data;           /* the backend's private state (scope: placements under way); done() frees it */
        void (*attach_done)(Worker *w, int error); /* set by the pool */
};

extern const BackendVTable backend_cgroup_vtable;
extern const BackendVTable backend_scope_vtable;
extern const BackendVTable backend_none_vtable;

/* Picks and initialises the backend for kind (auto: scope under systemd, else cgroup where a writable
 * cgroup v2 exists, else none) and logs the choice with its reason. 0 or -errno. */
int backend_new(BackendKind kind, sd_event *event, const Config *config, const char *group,
                void (*attach_done)(Worker *w, int error), Backend **ret);
Backend *backend_free(Backend *b);

/* Makes f the place of w (re-adoption): its cgroup opened, its scope unit ours to stop. 0 or -errno. */
int backend_adopt_place(Backend *b, Worker *w, const BackendFound *f);

/* Whether we run under a systemd manager we can ask for scopes: the system manager when PID 1 is
 * systemd and we are root, else a user manager reachable on the session bus. */
bool backend_scope_available(void);
