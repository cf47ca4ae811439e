/* SPDX-License-Identifier: MIT */
#pragma once

/* The kernel side of the sensor: finds the worker's own cgroup, opens its files once and preads them each
 * tick, and falls back (cgroup v1 memory, procfs) where the cgroup cannot answer. Which source answers is
 * decided when the files are opened and re-checked every CGROUP_RECHECK_TICKS; a source that fails on one
 * tick makes that reading absent for that tick, it does not switch sources (see cgroup-reading.c). */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "elastic_pool.pb-c.h"
#include "procfs-reading.h"

#define CGROUP_RECHECK_TICKS 12U

/* One tick's raw quantities. A has_ flag that is false means the quantity is unknown this tick. */
typedef struct Readings {
        uint64_t generation; /* bumps whenever the reader re-resolved its cgroup: counters of different
                              * generations are not comparable */
        bool has_cpu_usage;
        uint64_t cpu_usage_usec; /* cumulative CPU time */
        ElasticPool__CpuSource cpu_source;
        bool has_memory;
        uint64_t memory_bytes;
        ElasticPool__MemorySource memory_source;
        bool has_cpu_pressure, has_memory_pressure;
        double cpu_some_avg10, memory_some_avg10;
        bool has_load;
        double load[3];
} Readings;

typedef struct CgroupReader {
        char *proc_root, *cgroup_root;
        bool cgroup_root_given; /* a test tree: accept it without a cgroupfs underneath */
        int proc_fd;
        pid_t self_pid;
        pid_t watch_pid; /* 0: this process */

        char *v2_path, *v1_memory_path; /* as /proc/self/cgroup names them */
        char *v1_dir;                   /* the v1 memory cgroup directory, when it could be opened */
        int v2_fd;                      /* the own v2 cgroup; -EBADF when none or the root "/" */
        int cpu_stat_fd, memory_current_fd, cpu_pressure_fd, memory_pressure_fd, procs_fd;
        int v1_usage_fd, v1_procs_fd;
        int self_stat_fd, self_statm_fd, loadavg_fd;

        ElasticPool__CpuSource cpu_source;
        ElasticPool__MemorySource memory_source;
        uint64_t generation;
        unsigned ticks_to_recheck;
        bool reopen; /* a cgroup file vanished: resolve again on the next tick */

        char *buf; /* cgroup.procs contents, grown on demand and kept */
        size_t buf_size;
        ProcTable table;
} CgroupReader;

/* Resolves the cgroup of this process under proc_root ("/proc") and cgroup_root ("/sys/fs/cgroup"; pass
 * cgroup_root_given when it is a test tree) and opens what can be opened. Readings that cannot be
 * opened are absent, not an error. Returns 0 or -ENOMEM. */
int cgroup_reader_init(CgroupReader *r, const char *proc_root, const char *cgroup_root,
                       bool cgroup_root_given);
void cgroup_reader_done(CgroupReader *r);

/* Procfs fallbacks then follow pid and its descendants instead of this process alone. */
void cgroup_reader_watch_pid(CgroupReader *r, pid_t pid);

/* Fills *ret with this tick's readings (never fails: what cannot be read is absent). */
void cgroup_reader_read(CgroupReader *r, Readings *ret);

/* The cgroup v2 path of this process, NULL when there is none. */
const char *cgroup_reader_v2_path(const CgroupReader *r);
