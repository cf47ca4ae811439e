/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "backend.h"
#include "log.h"

/* none: plain processes in the commander's own cgroup. */

static int none_init(Backend *b) {
        log_warning("backend=none: workers run as plain processes without a cgroup of their own; their "
                    "sensors fall back to procfs readings and no memory limit is applied");
        return 0;
}

static int none_prepare(Backend *b, Worker *w, int *ret_cgroup_fd) {
        *ret_cgroup_fd = -EBADF;
        return 0;
}

static int none_attach(Backend *b, Worker *w) {
        b->attach_done(w, 0);
        return 0;
}

static void none_release(Backend *b, Worker *w) {
}

static int none_oom_kills(Backend *b, Worker *w, uint64_t *ret) {
        return -ENODATA;
}

const BackendVTable backend_none_vtable = {
        .kind = BACKEND_NONE,
        .init = none_init,
        .prepare = none_prepare,
        .attach = none_attach,
        .release = none_release,
        .oom_kills = none_oom_kills,
};
