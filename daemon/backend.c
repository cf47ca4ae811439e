/* SPDX-License-Identifier: MIT */
#include "backend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "macro.h"
#include "worker.h"

bool backend_scope_available(void) {
        /* A unit of a systemd manager (INVOCATION_ID) asks that manager; a process started by hand
         * on a systemd-booted host asks the system manager (root) or the user's. */
        if (getenv("INVOCATION_ID"))
                return true;
        return sd_booted() > 0;
}

static const BackendVTable *vtable_for(BackendKind kind) {
        switch (kind) {
        case BACKEND_SCOPE:
                return &backend_scope_vtable;
        case BACKEND_CGROUP:
                return &backend_cgroup_vtable;
        case BACKEND_NONE:
                return &backend_none_vtable;
        default:
                return NULL;
        }
}

/* A failed init() cleaned up after itself; the vtable is only kept once init() succeeded. */
static int try_init(Backend *b, BackendKind kind) {
        const BackendVTable *v = vtable_for(kind);
        int r;

        r = v->init(b);
        if (r < 0)
                return r;
        b->vtable = v;
        return 0;
}

static void backend_freep(Backend **b) {
        backend_free(*b);
}

int backend_new(BackendKind kind, sd_event *event, const Config *config, const char *group,
                void (*attach_done)(Worker *w, int error), Backend **ret) {
        _cleanup_(backend_freep) Backend *b = NULL;
        int r;

        b = calloc(1, sizeof *b);
        if (!b)
                return -ENOMEM;
        b->event = event;
        b->config = config;
        b->group = group;
        b->root_fd = -EBADF;
        b->attach_done = attach_done;
        r = cgroup_detect("/sys/fs/cgroup", &b->layout, &b->cgroup_mount);
        if (r < 0)
                return log_error_errno(r, "Failed to detect the cgroup layout: %m");

        if (kind != BACKEND_AUTO) {
                r = try_init(b, kind);
                if (r < 0)
                        return log_error_errno(r, "backend=%s is not usable on this host: %m",
                                               backend_kind_to_string(kind));
                log_info("Placement backend: %s (configured; cgroup layout %s)", backend_kind_to_string(kind),
                         cgroup_layout_to_string(b->layout));
                *ret = TAKE_PTR(b);
                return 0;
        }

        if (backend_scope_available()) {
                r = try_init(b, BACKEND_SCOPE);
                if (r >= 0) {
                        log_info("Placement backend: scope (auto: running under systemd)");
                        *ret = TAKE_PTR(b);
                        return 0;
                }
                log_notice_errno(r, "backend=auto: systemd scopes unavailable (%m), trying cgroup");
        }
        r = try_init(b, BACKEND_CGROUP);
        if (r >= 0) {
                log_info("Placement backend: cgroup (auto: no systemd manager, writable cgroup v2 at %s, %s layout)",
                         b->cgroup_mount, cgroup_layout_to_string(b->layout));
                *ret = TAKE_PTR(b);
                return 0;
        }
        log_notice_errno(r, "backend=auto: no writable cgroup v2 hierarchy (%m), using none");
        r = try_init(b, BACKEND_NONE);
        if (r < 0)
                return r;
        log_info("Placement backend: none (auto)");
        *ret = TAKE_PTR(b);
        return 0;
}

Backend *backend_free(Backend *b) {
        if (!b)
                return NULL;
        if (b->vtable && b->vtable->done)
                b->vtable->done(b);
        b->bus = sd_bus_flush_close_unref(b->bus);
        safe_close(b->root_fd);
        free(b->cgroup_mount);
        free(b->root);
        free(b->slice);
        free(b);
        return NULL;
}

void backend_place_done(BackendPlace *p) {
        p->job_slot = sd_bus_slot_unref(p->job_slot);
        p->cgroup_fd = safe_close(p->cgroup_fd);
        p->cgroup_path = mfree(p->cgroup_path);
        p->unit = mfree(p->unit);
        p->job = mfree(p->job);
}

void backend_found_free(BackendFound *f, size_t n) {
        for (size_t i = 0; f && i < n; i++) {
                free(f[i].unit);
                free(f[i].cgroup_path);
        }
        free(f);
}

int backend_adopt_place(Backend *b, Worker *w, const BackendFound *f) {
        _cleanup_free_ char *full = NULL;
        uint64_t oom = 0;
        int fd;

        if (!b->cgroup_mount || !f->cgroup_path)
                return -ENODATA;
        if (asprintf(&full, "%s%s", b->cgroup_mount, f->cgroup_path) < 0)
                return -ENOMEM;
        fd = open(full, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        w->place.cgroup_fd = fd;
        w->place.cgroup_path = strdup(f->cgroup_path);
        if (f->unit)
                w->place.unit = strdup(f->unit);
        if (!w->place.cgroup_path || (f->unit && !w->place.unit))
                return -ENOMEM;
        /* a scope we took back is ours to stop, as one we made */
        w->place.unit_owned = f->unit != NULL;
        /* kills before the restart were the earlier commander's to count */
        if (cgroup_read_keyed(fd, "memory.events", "oom_kill", &oom) >= 0)
                w->place.oom_kills_at_start = oom;
        return 0;
}
