/* SPDX-License-Identifier: MIT */
/* Runs a command where the kernel refuses io_uring as a systemd unit's SystemCallFilter= without the
 * io_uring calls would: io_uring_setup() fails with EPERM (a seccomp filter, inherited across exec). The
 * front end's test of what an operator sees when its batched reads and writes have no ring.
 *   ep-no-io-uring COMMAND [ARGS...] */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
        struct sock_filter filter[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), /* not x86-64: the numbers below mean nothing */
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = sizeof filter / sizeof filter[0], .filter = filter };

        if (argc < 2) {
                fprintf(stderr, "usage: %s COMMAND [ARGS...]\n", argv[0]);
                return 2;
        }
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
                fprintf(stderr, "%s: cannot install the seccomp filter: %s\n", argv[0], strerror(errno));
                return 1;
        }
        execvp(argv[1], argv + 1);
        fprintf(stderr, "%s: cannot execute %s: %s\n", argv[0], argv[1], strerror(errno));
        return 127;
}
