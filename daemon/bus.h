/* SPDX-License-Identifier: MIT */
#pragma once

/* The group on D-Bus (DESIGN.md, "Surfaces"): one well-known name per group,
 * org.elasticpool.Group1.<label> (the label: bus_api_group_label() in shared/bus-api.h), one object
 * /org/elasticpool/Group1 with interface org.elasticpool.Group1:
 *
 *  - read-only properties for everyone: Group, Backend, Workers, Users, Holds, Drain, Counters,
 *    ScaleTarget (signatures in shared/bus-api.h). PropertiesChanged is coalesced: the pool is looked at
 *    every BUS_TICK (250 ms) and a property is announced when what it shows changed, so at most four
 *    signals a second whatever the report rate. Workers and Users are announced as invalidated (their
 *    values can be large: a client that cares reads them), the small ones with their values;
 *  - signals: WorkerSpawned(u worker) once a new worker is routable (a spawn that fails earlier is told
 *    only by its WorkerDied), WorkerDied(u worker, s cause), UserMoved(s user, u from, u to, s outcome)
 *    when a move ends either way (outcome "done", "re-pointed" or the abort's reason);
 *  - methods for privileged callers only (the sender's effective uid is 0 or the commander's own,
 *    asked of the bus with sd_bus_query_sender_creds()): ScaleTo(u n), Compact(), MoveUser(s user,
 *    u worker), RetireWorker(u worker), Reload(). Anyone else gets org.freedesktop.DBus.Error.AccessDenied.
 *
 * ScaleTo is a one-shot resize, not a new floor: growing spawns the missing workers at once; shrinking
 * retires the least occupied non-reception worker (its users moved off first), waits until it is gone,
 * and goes on until n remain (the target is ScaleTarget until then). The policies keep deciding all
 * along and afterwards: a pool scaled over what its load needs is compacted again in due course.
 *
 * Which bus: $EP_BUS=user|system|none, else the system bus for root and the user's bus otherwise. No
 * bus reachable, or the name taken: one log line, and the commander runs on without a bus. */

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "bus-api.h"
#include "capacity.h"
#include "compaction.h"
#include "config.h"
#include "move.h"
#include "pool.h"
#include "status.h"
#include "surface.h"
#include "worker.h"

typedef struct Bus Bus;

typedef struct BusOptions {
        sd_event *event;
        const char *group;
        const Config *config;
        Pool *pool;
        Capacity *capacity;
        Compaction *compaction; /* the operator's entry points */
        const Rollout *rollout; /* NULL: no rolling reloads to show */
        Surface *surface;
        const StatusView *status; /* what the front end measured (inflight) */
        /* Re-reads the configuration. 0, or -errno with a malloc()ed message in *ret_error. NULL: Reload()
         * answers org.freedesktop.DBus.Error.NotSupported. */
        int (*reload)(void *userdata, char **ret_error);
        void *userdata;
        const char *bus_env; /* $EP_BUS as read by the caller (NULL: unset) */
} BusOptions;

/* Connects to the bus, publishes the object and takes the group's name. 0 with *ret NULL when there is
 * no bus to be on (EP_BUS=none, no bus reachable, the name taken: logged once); 0 with *ret set once on
 * the bus; -ENOMEM. */
int bus_new(const BusOptions *o, Bus **ret);
Bus *bus_free(Bus *b);

/* The bus a commander of uid uses with $EP_BUS = env (NULL: unset); an unknown value is logged and
 * ignored. */
BusApiKind bus_choose(const char *env, uid_t uid);

/* What the manager tells it (each a no-op with b NULL). */
void bus_worker_spawned(Bus *b, const Worker *w);
void bus_worker_died(Bus *b, const Worker *w);
void bus_user_moved(Bus *b, const MoveEnd *e);

/* The well-known name it holds (NULL off the bus). */
const char *bus_name(const Bus *b);
