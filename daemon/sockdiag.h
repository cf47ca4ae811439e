/* SPDX-License-Identifier: MIT */
#pragma once

/* NETLINK_SOCK_DIAG queries of a worker's listening Unix socket: the kernel's own count of connections
 * waiting in its accept queue. It tells "the worker accepts" without touching the worker, and it is a
 * pressure signal no peer reads for Unix sockets. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct SockDiag SockDiag;

/* 0 or -errno (netlink unavailable). */
int sock_diag_new(SockDiag **ret);
SockDiag *sock_diag_free(SockDiag *d);

/* For the listening Unix socket with inode ino: connections queued for accept() and the backlog
 * limit. 0, -ENOENT when no such socket exists, -errno. */
int sock_diag_unix_backlog(SockDiag *d, uint64_t ino, uint32_t *ret_queued, uint32_t *ret_limit);

/* One dump for many sockets (the burst path samples every worker a few times a second): for each of the
 * n listening Unix sockets with inode inos[i], its accept queue in ret_queued[i]. found[i] tells whether
 * the dump had it (a socket gone, or not listening, is not found). 0 or -errno; inos need no order. */
int sock_diag_unix_backlogs(SockDiag *d, const uint64_t *inos, size_t n, uint32_t *ret_queued, bool *ret_found);
