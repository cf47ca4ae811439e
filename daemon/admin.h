/* SPDX-License-Identifier: MIT */
#pragma once

/* The admin listener: /_commander/population (JSON) and /metrics (Prometheus) on a loopback address or
 * a Unix socket ([frontend] admin_listen). */

#include <systemd/sd-event.h>

#include "status.h"

typedef struct Admin Admin;

/* Listens on address ("127.0.0.1:9090", "[::1]:9090" or an absolute Unix path) and answers from view,
 * which must outlive it. 0 or -errno (logged). */
int admin_new(sd_event *event, const char *address, const StatusView *view, Admin **ret);
Admin *admin_free(Admin *a);
