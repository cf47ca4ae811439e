/* SPDX-License-Identifier: MIT */
#pragma once

/* The commander's view of cgroup v2: where the unified hierarchy is mounted (pure v2 or hybrid), where
 * the commander itself sits, and the few file operations the cgroup backend and death classification
 * need. Everything takes paths relative to the unified mount or directory fds. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum CgroupLayout {
        CGROUP_LAYOUT_NONE,    /* no cgroup v2 mounted */
        CGROUP_LAYOUT_UNIFIED, /* pure v2 at /sys/fs/cgroup */
        CGROUP_LAYOUT_HYBRID,  /* v1 controllers plus cgroup2 at /sys/fs/cgroup/unified */
        _CGROUP_LAYOUT_MAX,
        _CGROUP_LAYOUT_INVALID = -EINVAL,
} CgroupLayout;

const char *cgroup_layout_to_string(CgroupLayout l);

/* Finds the v2 mount under sys_fs_cgroup (normally "/sys/fs/cgroup"). *ret_mount is malloc()ed
 * (NULL with CGROUP_LAYOUT_NONE). Returns 0 or -errno. */
int cgroup_detect(const char *sys_fs_cgroup, CgroupLayout *ret_layout, char **ret_mount);

/* The cgroup v2 path ("/a/b") of pid (0 = self) from /proc/PID/cgroup. -ENODATA without a 0:: line. */
int cgroup_pid_path(pid_t pid, char **ret_path);

/* Writes a string to dir_fd/attr (e.g. "memory.max", "cgroup.kill"). 0 or -errno. */
int cgroup_write_attr(int dir_fd, const char *attr, const char *value);

/* Reads "key value" lines of a flat-keyed file (cpu.stat, memory.events) and returns key's value.
 * -ENOENT when the file is missing, -ENODATA when the key is. */
int cgroup_read_keyed(int dir_fd, const char *file, const char *key, uint64_t *ret);

/* True when the controller is listed in dir_fd's cgroup.controllers. */
bool cgroup_has_controller(int dir_fd, const char *controller);

/* Enables every controller in `wanted` (space-separated) that dir_fd offers in its subtree_control;
 * the ones it lacks are silently skipped. Returns how many were enabled. */
int cgroup_enable_controllers(int dir_fd, const char *wanted);

/* Moves pid into dir_fd/cgroup.procs. */
int cgroup_attach_pid(int dir_fd, pid_t pid);

/* Kills everything in the cgroup (cgroup.kill; Linux >= 5.14) and removes the directory if it is empty
 * now; never waits. 0 once removed (or absent), -EBUSY while the kill is still under way (call again
 * later), -errno otherwise. For the event loop. */
int cgroup_kill_and_try_remove(int parent_fd, const char *name);

/* The same, blocking: waits up to timeout_usec for the kernel to report the cgroup unpopulated, then
 * removes it. -EBUSY if it stayed populated. For exit paths only, never on the event loop. */
int cgroup_kill_and_remove(int parent_fd, const char *name, uint64_t timeout_usec);

/* True when cgroup.events says populated 0. */
bool cgroup_is_empty(int dir_fd);
