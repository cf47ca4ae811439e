/* SPDX-License-Identifier: MIT */
#pragma once

/* Pure parsers for the kernel files the sensor reads. No I/O and no locale: the readers pread into a
 * buffer and hand it here, the tests feed them strings. An application linking the sensor may have
 * called setlocale(LC_NUMERIC, ...), so decimals are parsed by hand rather than with strtod(). */

#include <stdint.h>
#include <sys/types.h>

/* The fields of /proc/PID/stat the sensor uses; times in clock ticks (sysconf(_SC_CLK_TCK)). */
typedef struct ProcStat {
        pid_t ppid;
        uint64_t utime, stime;   /* the process itself, all its threads */
        uint64_t cutime, cstime; /* its children that it has waited for */
} ProcStat;

/* Parses /proc/PID/cgroup: the "0::PATH" line (cgroup v2) into *ret_v2_path and the v1 line whose
 * controller list holds "memory" into *ret_v1_memory_path. Either is NULL when there is no such line.
 * Returns 0 or -ENOMEM. */
int parse_cgroup_membership(const char *content, char **ret_v2_path, char **ret_v1_memory_path);

/* "usage_usec N" of cgroup v2 cpu.stat. 0, -EINVAL (line missing or malformed), -ERANGE. */
int parse_cpu_stat_usage(const char *content, uint64_t *ret_usec);

/* "some avg10=X" of a PSI file (cpu.pressure, memory.pressure), in percent. 0 or -EINVAL. */
int parse_psi_some_avg10(const char *content, double *ret);

/* The three load averages of /proc/loadavg. 0 or -EINVAL. */
int parse_loadavg(const char *content, double ret[3]);

/* /proc/PID/stat. The command name may hold spaces and parentheses, so fields are counted from the
 * last ')'. 0 or -EINVAL. */
int parse_proc_stat(const char *content, ProcStat *ret);

/* The resident field (second) of /proc/PID/statm, in pages. 0 or -EINVAL. */
int parse_statm_resident(const char *content, uint64_t *ret_pages);

/* Steps through a list of pids, one per line (cgroup.procs). Returns 1 with *ret_pid and *p advanced,
 * 0 at the end, -EINVAL on anything that is not a positive pid. */
int parse_pid_list_next(const char **p, pid_t *ret_pid);

/* A non-negative decimal "12" or "12.34" at s; *ret_end points after it. 0 or -EINVAL. */
int parse_decimal_fixed(const char *s, const char **ret_end, double *ret);
