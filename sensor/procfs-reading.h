/* SPDX-License-Identifier: MIT */
#pragma once

/* The procfs fallback: CPU time and resident memory of processes, when the worker has no cgroup of its own
 * to read (or its cgroup lacks the file). All functions take a directory fd of the proc root (normally
 * /proc; tests point it at a temp tree). Unlike the cgroup readings these open files per call: that is the
 * price of the fallback, paid only on hosts that give the worker no cgroup. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kernel-parse.h"

typedef struct ProcEntry {
        pid_t pid, ppid;
        uint64_t cpu_ticks; /* utime + stime + cutime + cstime */
        bool in_tree;
} ProcEntry;

/* All processes of one scan; kept between scans so a steady tick does not allocate. */
typedef struct ProcTable {
        ProcEntry *entries;
        size_t n, allocated;
} ProcTable;

void proc_table_done(ProcTable *t);

/* Clock ticks (the unit of /proc/PID/stat times) to microseconds. */
uint64_t procfs_ticks_to_usec(uint64_t ticks);

/* utime + stime + cutime + cstime: the process, its threads and the children it has reaped. */
uint64_t proc_stat_cpu_ticks(const ProcStat *st);

/* Reads a /proc/PID/stat already open as fd (pread from 0), or opens PID/stat under proc_fd.
 * 0, -ESRCH when the process is gone, -EINVAL when the content does not parse, other -errno. */
int procfs_read_stat_fd(int fd, ProcStat *ret);
int procfs_read_stat(int proc_fd, pid_t pid, ProcStat *ret);

/* Resident set size in bytes from /proc/PID/statm, already open as fd or opened under proc_fd.
 * 0, -ESRCH when the process is gone, -EINVAL, other -errno. */
int procfs_read_rss_fd(int fd, uint64_t *ret_bytes);
int procfs_read_rss(int proc_fd, pid_t pid, uint64_t *ret_bytes);

/* Whether pid is ancestor or one of its descendants, following the parent chain. 1 yes, 0 no, -ESRCH when
 * pid itself is gone (it then shares nothing with anyone any more), other -errno. */
int procfs_pid_descends_from(int proc_fd, pid_t pid, pid_t ancestor);

/* Sums the RSS of every pid in a newline-separated list (the content of cgroup.procs). Processes that exit
 * meanwhile are skipped; any other failure fails the whole sum, since a partial sum would read low.
 * kept_pid's statm is read through kept_fd, already open (the worker itself: saves an open per tick);
 * pass 0 and -1 for none. 0, -ENOENT when no listed process could be read, -EINVAL, other -errno. */
int procfs_sum_rss_pid_list(int proc_fd, const char *pids, pid_t kept_pid, int kept_fd, uint64_t *ret_bytes);

/* Scans every process under proc_fd and sums CPU time (microseconds) and RSS (bytes) of root and its
 * descendants. 0, -ESRCH when root is gone, -ENOMEM, other -errno. */
int procfs_tree_usage(int proc_fd, ProcTable *t, pid_t root, uint64_t *ret_cpu_usec,
                      uint64_t *ret_rss_bytes);
