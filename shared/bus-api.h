/* SPDX-License-Identifier: MIT */
#pragma once

/* The commander's D-Bus API, the one contract between the commander (daemon/bus.c) and its clients
 * (ctl/, elastic-poolctl): names, the object, the signatures of the properties, and how a group name
 * becomes a bus name. The interface itself is described in dbus/org.elasticpool.Group1.xml and in
 * elastic-pool(8), "D-Bus". Pure: no I/O. */

#include <errno.h>
#include <stdbool.h>
#include <sys/types.h>

#define BUS_API_NAME_PREFIX "org.elasticpool.Group1."
#define BUS_API_PATH        "/org/elasticpool/Group1"
#define BUS_API_INTERFACE   "org.elasticpool.Group1"
/* Errors of our own (the rest are org.freedesktop.DBus.Error.*). */
#define BUS_API_ERROR_NOT_NOW "org.elasticpool.Group1.Error.NotNow"
/* Reload: the configuration file does not parse (the message names file:line); the running one stays. */
#define BUS_API_ERROR_RELOAD_FAILED "org.elasticpool.Group1.Error.ReloadFailed"

/* Workers: a(uussbbsdsuddduudtdss), one struct per worker, by id:
 *   id, pid (for humans: the identity is the commander's pidfd), place (scope unit, else cgroup path,
 *   else ""), state, reception, evacuating, freshness, occupancy, bottleneck ("" when none),
 *   has (BUS_API_HAS_* bits: which of the following values are present), memory, cpu, executor
 *   (the averaged components in [0, 1]), users, inflight, rps, memory_bytes, cpu_cores (the last report's
 *   fraction of a core), held (why decisions on it are held, "" when nothing is), unhealthy (why it is
 *   taken out of new work: its reports stopped, or requests went unanswered; "" when it takes work).
 * A value whose bit is clear is absent and reads 0 on the wire: it must never be shown as 0. */
#define BUS_API_WORKER_SIG       "(uussbbsdsuddduudtdss)"
#define BUS_API_HAS_MEMORY       (1u << 0)
#define BUS_API_HAS_CPU          (1u << 1)
#define BUS_API_HAS_EXECUTOR     (1u << 2)
#define BUS_API_HAS_RPS          (1u << 3)
#define BUS_API_HAS_MEMORY_BYTES (1u << 4)
#define BUS_API_HAS_CPU_CORES    (1u << 5)

/* Users: a(sutdub): name, worker, requests and busy seconds since it logged in, open requests, moving. */
#define BUS_API_USER_SIG "(sutdub)"
/* Holds: a(ssist), the active ones only: decision ("scale_up", "compaction"), kind ("held", "wait",
 * "wait-moves", "refused"), worker (-1 for none), reason, held for (µs). */
#define BUS_API_HOLD_SIG "(ssist)"
/* Drain: (ubtuuuuusstt): worker being drained (0: none), asked by an operator, running for (µs), users
 * at start, moved, re-pointed, deferred, users left, why; how the last drain ended ("" before the
 * first), drains done, drains stopped. */
#define BUS_API_DRAIN_SIG "(ubtuuuuusstt)"
/* Counters: (tttt): reports received, spawns, deaths, moves that switched a user (since start). */
#define BUS_API_COUNTERS_SIG "(tttt)"
/* RollingReload: (bsstt): a rolling reload under way, its progress ("2/3: moving 17 users off w3"), how
 * the last one ended ("" before the first), rolling reloads done, stopped. */
#define BUS_API_ROLLING_RELOAD_SIG "(bsstt)"
/* RequestRate: (sddds): the sustained rate that grows the pool (rps_up_window): status ("off", "ok",
 * "waiting", "held"), requests/s per serving worker and for the group (NaN unless "ok": not available is
 * never 0), rps_target, and why it is not available ("" when it is). */
#define BUS_API_REQUEST_RATE_SIG "(sddds)"

typedef enum BusApiKind {
        BUS_API_NONE,
        BUS_API_USER,
        BUS_API_SYSTEM,
        _BUS_API_KIND_MAX,
        _BUS_API_KIND_INVALID = -EINVAL,
} BusApiKind;

const char *bus_api_kind_to_string(BusApiKind k);
/* "none", "user", "system"; _BUS_API_KIND_INVALID for anything else. */
BusApiKind bus_api_kind_from_string(const char *s);
/* The bus a process of uid uses when nothing says otherwise: the system bus for root, else the user's. */
BusApiKind bus_api_kind_default(uid_t uid);

/* The label of a group in its bus name: every byte outside [A-Za-z0-9] becomes "_xx" (two lowercase
 * hex digits), "_" included, and so does a leading digit (a bus name element may not begin with one);
 * the empty name is "_". The rule is systemd's bus_label_escape(): injective, so two groups never share
 * a name ("a-b" is "a_2db", "a_b" is "a_5fb"). Writes into buf; 0, or -ENAMETOOLONG when buf (or the
 * 255-byte limit of a bus name, with the prefix) is too small. */
int bus_api_group_label(const char *group, char *buf, size_t size);
/* BUS_API_NAME_PREFIX + the label. 0 or -ENAMETOOLONG. */
int bus_api_group_name(const char *group, char *buf, size_t size);
/* The size a bus name may take, NUL included. */
#define BUS_API_NAME_MAX 256
