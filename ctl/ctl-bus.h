/* SPDX-License-Identifier: MIT */
#pragma once

/* elastic-poolctl's side of the bus: the connection, which group it talks to, the group's properties
 * read into a CtlStatus, and the operator's methods. Each function prints what went wrong (naming the
 * group) and returns an exit code (CTL_EXIT_*). */

#include <systemd/sd-bus.h>

#include "bus-api.h"
#include "ctl-args.h"
#include "ctl-format.h"

typedef struct CtlBus {
        sd_bus *bus;
        BusApiKind kind;
        char name[BUS_API_NAME_MAX];  /* the group's well-known name */
        char group[BUS_API_NAME_MAX]; /* as asked, or as the only group on the bus says */
        sd_bus_message *reply;        /* the last GetAll: CtlStatus strings point into it */
} CtlBus;

/* The exit code for an error a call to the group ended with, the message printed: not running (no
 * owner), access denied, an argument rejected (usage), or anything else. */
int ctl_bus_error_exit(const CtlBus *c, const char *what, const sd_bus_error *error, int r);

/* Connects to the bus of a and picks the group: a->group, or the only one on the bus. */
int ctl_bus_open(CtlBus *c, const CtlArgs *a);
void ctl_bus_close(CtlBus *c);

/* Every property of the group, into s (valid until the next read or ctl_bus_close()). */
int ctl_bus_read_status(CtlBus *c, CtlStatus *s);

/* The operator's methods. move waits for the move's end (its UserMoved) and reports it. */
int ctl_bus_move(CtlBus *c, const char *user, unsigned worker);
int ctl_bus_scale(CtlBus *c, unsigned n);
int ctl_bus_compact(CtlBus *c);
int ctl_bus_retire(CtlBus *c, unsigned worker);
/* Reload(); with wait, follows the RollingReload property until the rolling reload it started ended
 * (printing its steps), failing when it was stopped. */
int ctl_bus_reload(CtlBus *c, bool wait);
