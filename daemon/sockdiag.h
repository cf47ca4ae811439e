/* SPDX-License-Identifier: MIT */
#pragma once

/* NETLINK_SOCK_DIAG queries of a worker's listening Unix socket: the kernel's own count of connections
 * waiting in its accept queue. It tells "the worker accepts" without touching the worker, and it is a
 * pressure signal no peer reads for Unix sockets. */

#include <stdint.h>

typedef struct SockDiag SockDiag;

/* 0 or -errno (netlink unavailable). */
int sock_diag_new(SockDiag **ret);
SockDiag *sock_diag_free(SockDiag *d);

/* For the listening Unix socket with inode ino: connections queued for accept() and the backlog
 * limit. 0, -ENOENT when no such socket exists, -errno. */
int sock_diag_unix_backlog(SockDiag *d, uint64_t ino, uint32_t *ret_queued, uint32_t *ret_limit);
