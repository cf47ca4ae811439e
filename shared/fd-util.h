/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Writes all of buf, retrying on EINTR and waiting with poll() on EAGAIN; 0 or -errno. */
int loop_write(int fd, const void *buf, size_t size);

/* Reads a small file from offset 0 into buf and NUL-terminates it; returns the length or -errno.
 * -EFBIG when the file does not fit in size-1 bytes. For regular files and kernel pseudo-files (cgroupfs,
 * procfs), whose reads return less than asked only at the end; not for pipes or sockets. */
ssize_t pread_string(int fd, char *buf, size_t size);

/* Opens path relative to dir_fd (AT_FDCWD allowed) and reads it like pread_string(). */
ssize_t read_string_at(int dir_fd, const char *path, char *buf, size_t size);

int fd_set_nonblock(int fd, bool nonblock);

/* Raises RLIMIT_NOFILE's soft limit to its hard limit (a daemon of many sockets; nothing here uses
 * select()). Stores the limits as they were in *ret_old_soft (may be NULL) and the soft limit now in
 * *ret_now. 0 or -errno (the limit then unchanged, *ret_now what it is). */
int fd_raise_nofile(unsigned long long *ret_old_soft, unsigned long long *ret_now);
/* The soft RLIMIT_NOFILE before the first fd_raise_nofile(), for children to get back; 0 before it. */
unsigned long long fd_nofile_original_soft(void);

/* Sets FD_CLOEXEC and O_NONBLOCK (sockets handed over by systemd carry neither). 0 or -errno. */
int fd_set_cloexec_nonblock(int fd);

/* systemd's file-descriptor store (sd_notify FDSTORE=1, FileDescriptorStoreMax= on the unit): a socket
 * kept there survives a crash and restart of the service, and comes back in LISTEN_FDS under its name.
 * Names are printable ASCII without ':'. Both are no-ops outside a service (no $NOTIFY_SOCKET); 0 or
 * -errno. Storing the same socket twice stores it once. */
int fd_store_add(int fd, const char *name);
int fd_store_remove(const char *name);
