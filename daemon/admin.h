/* SPDX-License-Identifier: MIT */
#pragma once

/* The admin listener: /_commander/population (JSON) and /metrics (Prometheus) on a loopback address or
 * a Unix socket ([frontend] admin_listen). */

#include "manager.h"

typedef struct Admin Admin;

/* Listens on address ("127.0.0.1:9090", "[::1]:9090" or an absolute Unix path). 0 or -errno (logged). */
int admin_new(Manager *m, const char *address, Admin **ret);
Admin *admin_free(Admin *a);
