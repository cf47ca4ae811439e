/* SPDX-License-Identifier: MIT */
/* scope: under systemd, each worker becomes the transient unit elastic-pool-<group>-w<N>.scope in
 * elastic-pool-<group>.slice, on the manager the commander runs under (system or user bus).
 *
 * The child is born parked in the commander's own cgroup. StartTransientUnit(PIDFDs= or PIDs=) has
 * systemd move it into the new scope; only when that start job is removed with result "done" is the
 * child released to exec, so the worker's first instruction already runs in its scope, under its
 * limits, and its sensor finds its own cgroup.
 *
 * A scope is a unit of its own, outside the commander's service: its worker survives a commander crash
 * (re-adoption). After a worker's death the scope empties and systemd stops and collects it
 * (CollectMode=inactive-or-failed); release() only makes sure of that. */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "cleanup.h"
#include "list.h"
#include "log.h"
#include "macro.h"
#include "time-util.h"
#include "worker.h"

#define SYSTEMD_DESTINATION "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER "org.freedesktop.systemd1.Manager"
#define SYSTEMD_UNIT_PREFIX "/org/freedesktop/systemd1/unit"

/* The synchronous calls at start-up and shutdown: a manager that takes longer is not one to build on. */
#define SCOPE_SYNC_TIMEOUT (5 * USEC_PER_SEC)

typedef struct Scope Scope;

/* A worker whose scope is being made: from StartTransientUnit until backend_attach_done(). */
typedef struct Placement {
        Scope *scope;
        Worker *worker;
        usec_t started_at;
        bool by_pidfd;      /* the request named the child by PIDFDs= (else PIDs=) */
        /* JobRemoved may be processed before the StartTransientUnit reply that names the job: then its
         * job path and result wait here until the reply arrives. */
        char *early_job;
        char *early_result;
        struct Placement *prev, *next;
} Placement;

struct Scope {
        Backend *backend;
        bool user;          /* the user manager's bus (else the system manager's) */
        bool no_pidfds;     /* the manager predates PIDFDs= (systemd < 253), or the bus cannot pass fds */
        bool placed_any;    /* a scope was asked for: the slice may exist and need stopping at exit */
        size_t unit_prefix_len;
        char *unit_prefix;  /* "elastic-pool-<group>-w": cheap filter for the JobRemoved stream */
        sd_bus_slot *job_removed_slot;
        Placement *placements;
        /* The group slice's cgroup: its memory.events counts the OOM kills of every scope below it, and
         * outlives them. systemd may remove a dead worker's scope before we read the scope's own count. */
        int slice_fd;
        uint64_t slice_oom_seen; /* the slice's oom_kill count already accounted for */
};

static bool isempty(const char *s) {
        return !s || !*s;
}

static Scope *scope_from(Backend *b) {
        return b->data;
}

static const char *bus_error_text(const sd_bus_error *e, int error) {
        if (e && e->message)
                return e->message;
        return strerror(ERRNO_VALUE(error));
}

/* ---- placements ---- */

static Placement *placement_free(Placement *p) {
        if (!p)
                return NULL;
        LIST_REMOVE(p->scope->placements, p, prev, next);
        /* Unreffing a pending call's slot cancels it: its reply will never reach us. (sd-bus holds its
         * own reference while the slot's callback runs, so this is safe from inside it too.) */
        p->worker->place.job_slot = sd_bus_slot_unref(p->worker->place.job_slot);
        p->worker->place.job = mfree(p->worker->place.job);
        free(p->early_job);
        free(p->early_result);
        free(p);
        return NULL;
}

static int placement_new(Scope *s, Worker *w, Placement **ret) {
        Placement *p = calloc(1, sizeof *p);

        if (!p)
                return -ENOMEM;
        *p = (Placement) {
                .scope = s,
                .worker = w,
                .started_at = now_usec(CLOCK_MONOTONIC),
        };
        LIST_PREPEND(s->placements, p, prev, next);
        *ret = p;
        return 0;
}

static Placement *placement_by_worker(Scope *s, const Worker *w) {
        for (Placement *p = s->placements; p; p = p->next)
                if (p->worker == w)
                        return p;
        return NULL;
}

static Placement *placement_by_unit(Scope *s, const char *unit) {
        if (strncmp(unit, s->unit_prefix, s->unit_prefix_len) != 0)
                return NULL;
        for (Placement *p = s->placements; p; p = p->next)
                if (streq(p->worker->place.unit, unit))
                        return p;
        return NULL;
}

/* Ends a placement and tells the spawner: 0 releases the parked child to exec, -errno kills it. */
static void placement_finish(Placement *p, int error) {
        Backend *b = p->scope->backend;
        Worker *w = p->worker;
        char span[32];

        if (error >= 0)
                log_debug("Placed w%u in %s (cgroup %s) %s after asking systemd", w->id, w->place.unit,
                          strna(w->place.cgroup_path),
                          format_timespan(span, sizeof span, now_usec(CLOCK_MONOTONIC) - p->started_at));
        placement_free(p);
        b->attach_done(w, error);
}

/* ---- StartTransientUnit ---- */

static int append_properties(Scope *s, sd_bus_message *m, Worker *w, bool by_pidfd) {
        const Backend *b = s->backend;
        _cleanup_free_ char *description = NULL;
        int r;

        if (asprintf(&description, "elastic-pool %s worker w%u", b->group, w->id) < 0)
                return -ENOMEM;
        r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r < 0)
                return r;
        /* A pidfd names exactly our child even if it died and its PID was reused meanwhile; PIDs= is
         * safe enough as the fallback because the child is ours and unreaped while it is parked. */
        if (by_pidfd)
                r = sd_bus_message_append(m, "(sv)", "PIDFDs", "ah", 1, w->pidfd);
        else
                r = sd_bus_message_append(m, "(sv)", "PIDs", "au", 1, (uint32_t) w->pid);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)(sv)",
                                  "Description", "s", description,
                                  "Slice", "s", b->slice,
                                  /* failed scopes are collected too: they must not pile up */
                                  "CollectMode", "s", "inactive-or-failed",
                                  /* a worker is no terminal session: no SIGHUP after the SIGTERM */
                                  "SendSIGHUP", "b", 0,
                                  /* the sensor reads memory.current and cpu.stat in its scope, and the
                                   * manager's Default*Accounting= may be off */
                                  "MemoryAccounting", "b", 1,
                                  "CPUAccounting", "b", 1);
        if (r < 0)
                return r;
        if (b->config->memory_limit > 0) {
                /* swap would hide the pressure that memory.current is meant to show */
                r = sd_bus_message_append(m, "(sv)(sv)",
                                          "MemoryMax", "t", (uint64_t) b->config->memory_limit,
                                          "MemorySwapMax", "t", (uint64_t) 0);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(m);
}

static int on_start_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error);

static int start_transient_unit(Placement *p) {
        Scope *s = p->scope;
        Backend *b = s->backend;
        Worker *w = p->worker;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        p->by_pidfd = !s->no_pidfds && w->pidfd >= 0;
        r = sd_bus_message_new_method_call(b->bus, &m, SYSTEMD_DESTINATION, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                           "StartTransientUnit");
        if (r < 0)
                return r;
        /* "fail": a unit of that name already queued or running is an error, never merged with */
        r = sd_bus_message_append(m, "ss", w->place.unit, "fail");
        if (r < 0)
                return r;
        r = append_properties(s, m, w, p->by_pidfd);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "a(sa(sv))", 0);
        if (r < 0)
                return r;
        w->place.job_slot = sd_bus_slot_unref(w->place.job_slot);
        return sd_bus_call_async(b->bus, &w->place.job_slot, m, on_start_reply, p, 0);
}

static void job_finished(Placement *p, const char *result);

static int start_failed(Placement *p, const sd_bus_error *e, int error) {
        Scope *s = p->scope;
        Worker *w = p->worker;

        if (sd_bus_error_has_name(e, SD_BUS_ERROR_PROPERTY_READ_ONLY) && p->by_pidfd) {
                /* systemd < 253 answers "Cannot set property PIDFDs, or unknown property": name the
                 * child by PID from now on, and ask again for this one. */
                log_debug("The manager does not take PIDFDs= (%s); naming workers by PID",
                          bus_error_text(e, error));
                s->no_pidfds = true;
                error = start_transient_unit(p);
                if (error >= 0)
                        return 0;
                e = NULL; /* the error now is ours, not the manager's */
        }
        if (sd_bus_error_has_name(e, "org.freedesktop.systemd1.UnitExists"))
                log_error("Failed to create scope '%s': %s (a worker of an earlier commander of group %s "
                          "still runs in it, and re-adoption is not implemented yet)",
                          w->place.unit, bus_error_text(e, error), s->backend->group);
        else
                log_error_errno(error, "Failed to create scope '%s': %s", w->place.unit, bus_error_text(e, error));
        placement_finish(p, error);
        return 0;
}

static int on_start_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Placement *p = userdata;
        const sd_bus_error *e;
        const char *job;
        int r;

        e = sd_bus_message_get_error(reply);
        if (e)
                return start_failed(p, e, -sd_bus_error_get_errno(e));
        r = sd_bus_message_read(reply, "o", &job);
        if (r < 0)
                return start_failed(p, NULL, r);
        /* from here on the unit is ours: release() may stop it */
        p->worker->place.unit_owned = true;
        p->worker->place.job = strdup(job);
        if (!p->worker->place.job)
                return start_failed(p, NULL, -ENOMEM);
        log_debug("systemd queued job %s to start %s", job, p->worker->place.unit);

        /* The race: our JobRemoved match may have run before this reply (a job that finished at once).
         * Then its result waits in the placement, keyed by unit name until now, by job path from here. */
        if (p->early_job && streq(p->early_job, job)) {
                _cleanup_free_ char *result = TAKE_PTR(p->early_result);
                job_finished(p, result);
        }
        return 0;
}

/* ---- the job's end: JobRemoved, then the scope's cgroup ---- */

/* The slice is the scope's parent directory: opened once, its OOM count taken as the baseline. */
static void open_slice_cgroup(Scope *s, const char *scope_full_path) {
        _cleanup_free_ char *parent = strdup(scope_full_path);
        char *slash = parent ? strrchr(parent, '/') : NULL;

        if (s->slice_fd >= 0 || !slash || slash == parent)
                return;
        *slash = 0;
        s->slice_fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s->slice_fd >= 0)
                (void) cgroup_read_keyed(s->slice_fd, "memory.events", "oom_kill", &s->slice_oom_seen);
}

static int open_scope_cgroup(Backend *b, Worker *w, const char *path) {
        _cleanup_free_ char *full = NULL;
        uint64_t oom = 0;
        int fd;

        if (!b->cgroup_mount || isempty(path))
                return -ENODATA;
        if (asprintf(&full, "%s%s", b->cgroup_mount, path) < 0)
                return -ENOMEM;
        open_slice_cgroup(scope_from(b), full);
        fd = open(full, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        safe_close(w->place.cgroup_fd);
        w->place.cgroup_fd = fd;
        /* a fresh scope counts from 0; read it anyway so an inherited count is never blamed on us */
        if (cgroup_read_keyed(fd, "memory.events", "oom_kill", &oom) >= 0)
                w->place.oom_kills_at_start = oom;
        return 0;
}

static int on_control_group_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Placement *p = userdata;
        Backend *b = p->scope->backend;
        Worker *w = p->worker;
        const sd_bus_error *e;
        const char *path = NULL;
        int r;

        /* The scope exists and holds the child: whatever happens here, the worker may run. Without its
         * cgroup we only lose the OOM-kill count of its death. */
        e = sd_bus_message_get_error(reply);
        if (e)
                r = -sd_bus_error_get_errno(e);
        else
                r = sd_bus_message_read(reply, "v", "s", &path);
        if (r >= 0 && !isempty(path)) {
                free(w->place.cgroup_path);
                w->place.cgroup_path = strdup(path);
                if (!w->place.cgroup_path)
                        r = -ENOMEM;
        }
        if (r >= 0)
                r = open_scope_cgroup(b, w, path);
        if (r < 0)
                log_warning_errno(r, "Failed to open the cgroup%s%s of scope '%s' (%s); OOM kills of w%u "
                                  "will not be counted", path ? " " : "", strempty(path), w->place.unit,
                                  bus_error_text(e, r), w->id);
        placement_finish(p, 0);
        return 0;
}

static int read_control_group(Placement *p) {
        Backend *b = p->scope->backend;
        Worker *w = p->worker;
        _cleanup_free_ char *path = NULL;
        int r;

        /* systemd's unit object path is a pure function of the name (GetUnit would cost a round trip) */
        r = sd_bus_path_encode(SYSTEMD_UNIT_PREFIX, w->place.unit, &path);
        if (r < 0)
                return r;
        w->place.job_slot = sd_bus_slot_unref(w->place.job_slot);
        return sd_bus_call_method_async(b->bus, &w->place.job_slot, SYSTEMD_DESTINATION, path,
                                        "org.freedesktop.DBus.Properties", "Get", on_control_group_reply, p,
                                        "ss", "org.freedesktop.systemd1.Scope", "ControlGroup");
}

/* An errno per job result, so the logged error says which way the job ended ("failed" and the rest: EIO). */
static int job_result_to_errno(const char *result) {
        static const struct {
                const char *result;
                int error;
        } table[] = {
                { "canceled", ECANCELED }, { "timeout", ETIME },        { "dependency", EIO },
                { "invalid", ENOEXEC },    { "assert", EPROTO },        { "unsupported", EOPNOTSUPP },
                { "once", ESTALE },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (streq(result, table[i].result))
                        return -table[i].error;
        return -EIO;
}

static void job_finished(Placement *p, const char *result) {
        Worker *w = p->worker;
        int r;

        if (streq(result, "done")) {
                r = read_control_group(p);
                if (r < 0) {
                        log_warning_errno(r, "Failed to ask for the cgroup of scope '%s': %m", w->place.unit);
                        placement_finish(p, 0);
                }
                return;
        }
        r = job_result_to_errno(result);
        log_error_errno(r, "Failed to create scope '%s': its start job ended with result '%s' (see "
                           "'journalctl%s -u %s')",
                        w->place.unit, result, p->scope->user ? " --user" : "", w->place.unit);
        placement_finish(p, r);
}

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Scope *s = userdata;
        const char *job, *unit, *result;
        Placement *p;
        uint32_t id;
        int r;

        r = sd_bus_message_read(m, "uoss", &id, &job, &unit, &result);
        if (r < 0) {
                log_debug_errno(r, "Failed to parse a JobRemoved signal, ignoring: %m");
                return 0;
        }
        p = placement_by_unit(s, unit);
        if (!p)
                return 0;
        if (!p->worker->place.job) {
                /* our StartTransientUnit reply is still unprocessed: keep this for it */
                free(p->early_job);
                free(p->early_result);
                p->early_job = strdup(job);
                p->early_result = strdup(result);
                if (!p->early_job || !p->early_result) {
                        log_oom();
                        placement_finish(p, -ENOMEM);
                }
                return 0;
        }
        if (!streq(p->worker->place.job, job))
                return 0; /* another job on our unit (someone's stop, say): not the one we wait for */
        job_finished(p, result);
        return 0;
}

/* ---- fire and forget ---- */

static int on_best_effort_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        const char *method = userdata;

        /* the common case: systemd already collected the empty scope */
        if (e && !sd_bus_error_has_names(e, "org.freedesktop.systemd1.NoSuchUnit",
                                         "org.freedesktop.systemd1.LoadFailed"))
                log_debug("%s failed (best effort, ignoring): %s", method, e->message);
        return 0;
}

static void stop_unit_async(Backend *b, const char *unit) {
        int r = sd_bus_call_method_async(b->bus, NULL, SYSTEMD_DESTINATION, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                         "StopUnit", on_best_effort_reply, (void *) "StopUnit", "ss", unit,
                                         "replace");
        if (r < 0)
                log_debug_errno(r, "Failed to ask systemd to stop %s, ignoring: %m", unit);
}

static void reset_failed_unit_async(Backend *b, const char *unit) {
        int r = sd_bus_call_method_async(b->bus, NULL, SYSTEMD_DESTINATION, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                         "ResetFailedUnit", on_best_effort_reply, (void *) "ResetFailedUnit",
                                         "s", unit);
        if (r < 0)
                log_debug_errno(r, "Failed to ask systemd to reset %s, ignoring: %m", unit);
}

/* ---- the vtable ---- */

/* A unit of a user manager (systemd sets MANAGERPID for those, and PID 1 is the system manager) or an
 * unprivileged commander asks the user manager; everything else the system manager. */
static bool use_user_manager(void) {
        const char *e = getenv("MANAGERPID");

        if (!isempty(e) && !streq(e, "1"))
                return true;
        return geteuid() != 0;
}

static int call_sync(sd_bus *bus, const char *path, const char *interface, const char *member,
                     sd_bus_error *ret_error, sd_bus_message **ret_reply, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, SYSTEMD_DESTINATION, path, interface, member);
        if (r < 0)
                return r;
        va_start(ap, types);
        r = sd_bus_message_appendv(m, types, ap);
        va_end(ap);
        if (r < 0)
                return r;
        return sd_bus_call(bus, m, SCOPE_SYNC_TIMEOUT, ret_error, ret_reply);
}

static int check_manager(Scope *s, sd_bus *bus) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *version;
        int r;

        r = call_sync(bus, SYSTEMD_PATH, "org.freedesktop.DBus.Properties", "Get", &e, &reply, "ss",
                      SYSTEMD_MANAGER, "Version");
        if (r < 0)
                return log_warning_errno(r, "No systemd %s manager answers on the bus: %s",
                                         s->user ? "user" : "system", bus_error_text(&e, r));
        r = sd_bus_message_read(reply, "v", "s", &version);
        if (r < 0)
                return log_warning_errno(r, "Failed to parse the systemd manager's Version: %m");
        log_debug("Talking to systemd %s (%s manager) for worker scopes", version,
                  s->user ? "user" : "system");
        return 0;
}

static int subscribe_job_removed(Scope *s, sd_bus *bus) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        int r;

        /* Installed (synchronously) before the first StartTransientUnit, so no job of ours can end
         * unseen. A direct connection to the manager carries no sender names: match on the rest. */
        r = sd_bus_match_signal(bus, &s->job_removed_slot,
                                sd_bus_is_bus_client(bus) ? SYSTEMD_DESTINATION : NULL, SYSTEMD_PATH,
                                SYSTEMD_MANAGER, "JobRemoved", on_job_removed, s);
        if (r < 0)
                return log_warning_errno(r, "Failed to watch systemd's JobRemoved signals: %m");
        /* systemd sends job signals to a job's creator anyway; Subscribe() makes sure of them */
        r = call_sync(bus, SYSTEMD_PATH, SYSTEMD_MANAGER, "Subscribe", &e, NULL, "");
        if (r < 0)
                return log_warning_errno(r, "Failed to subscribe to the systemd manager's signals: %s",
                                         bus_error_text(&e, r));
        return 0;
}

static int scope_control_group(sd_bus *bus, const char *unit, char **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *path = NULL;
        const char *cgroup = NULL;
        int r;

        r = sd_bus_path_encode(SYSTEMD_UNIT_PREFIX, unit, &path);
        if (r < 0)
                return r;
        r = call_sync(bus, path, "org.freedesktop.DBus.Properties", "Get", &e, &reply, "ss",
                      "org.freedesktop.systemd1.Scope", "ControlGroup");
        if (r >= 0)
                r = sd_bus_message_read(reply, "v", "s", &cgroup);
        if (r < 0)
                return log_warning_errno(r, "Failed to read the cgroup of %s: %s", unit, bus_error_text(&e, r));
        if (isempty(cgroup))
                return -ENODATA;
        *ret = strdup(cgroup);
        return *ret ? 0 : -ENOMEM;
}

static int found_add(BackendFound **found, size_t *n, unsigned id, const char *unit, char *cgroup) {
        BackendFound *a = reallocarray(*found, *n + 1, sizeof *a);
        size_t i;

        if (!a)
                return -ENOMEM;
        *found = a;
        for (i = *n; i > 0 && a[i - 1].id > id; i--)
                a[i] = a[i - 1];
        a[i] = (BackendFound) { .id = id, .unit = unit ? strdup(unit) : NULL, .cgroup_path = cgroup };
        (*n)++;
        return unit && !a[i].unit ? -ENOMEM : 0;
}

/* Scopes of this group that outlived an earlier commander hold running workers (that is the point of
 * scopes): listed by name through the manager, with their cgroups, for re-adoption. */
static int scope_discover(Backend *b, BackendFound **ret, size_t *ret_n) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *pattern = NULL;
        Scope *s = scope_from(b);
        BackendFound *found = NULL;
        const char *name, *active;
        size_t n = 0;
        int r;

        if (asprintf(&pattern, "%s*.scope", s->unit_prefix) < 0)
                return -ENOMEM;
        r = call_sync(b->bus, SYSTEMD_PATH, SYSTEMD_MANAGER, "ListUnitsByPatterns", &e, &reply, "asas", 0, 1,
                      pattern);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(ssssssouso)");
        while (r > 0) {
                char *cgroup = NULL;
                unsigned id;

                r = sd_bus_message_read(reply, "(ssssssouso)", &name, NULL, NULL, &active, NULL, NULL, NULL,
                                        NULL, NULL, NULL);
                if (r <= 0 || !streq(active, "active") ||
                    sscanf(name + s->unit_prefix_len, "%u.scope", &id) != 1)
                        continue;
                if (scope_control_group(b->bus, name, &cgroup) < 0)
                        continue;
                r = found_add(&found, &n, id, name, cgroup);
                if (r < 0)
                        break;
                r = 1;
        }
        if (r < 0) {
                backend_found_free(found, n);
                return log_warning_errno(r, "Failed to list the scopes of group %s: %s", b->group,
                                         bus_error_text(&e, r));
        }
        /* the slice holds them: stop it at exit once they are gone */
        s->placed_any = s->placed_any || n > 0;
        *ret = found;
        *ret_n = n;
        return 0;
}

static Scope *scope_free(Scope *s) {
        if (!s)
                return NULL;
        safe_close(s->slice_fd);
        while (s->placements)
                placement_free(s->placements);
        sd_bus_slot_unref(s->job_removed_slot);
        free(s->unit_prefix);
        free(s);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Scope *, scope_free);

static int open_manager_bus(bool user, sd_bus **ret) {
        int r;

        r = user ? sd_bus_open_user_with_description(ret, "elastic-pool-scope")
                 : sd_bus_open_system_with_description(ret, "elastic-pool-scope");
        if (r < 0)
                return log_warning_errno(r, "Failed to connect to the %s bus: %m", user ? "user" : "system");
        /* done() still talks to the manager after the loop has exited: keep the bus open until then */
        (void) sd_bus_set_close_on_exit(*ret, false);
        return 0;
}

/* A dash in a slice name means nesting (a-b.slice sits in a.slice): a group called "my-app" must not
 * land in elastic-pool-my.slice, so its dashes are escaped the way systemd escapes them. */
static char *slice_name(const char *group) {
        size_t n = 0;
        char *s, *p;

        for (const char *g = group; *g; g++)
                n += *g == '-' ? 4 : 1;
        s = malloc(strlen("elastic-pool-.slice") + n + 1);
        if (!s)
                return NULL;
        p = stpcpy(s, "elastic-pool-");
        for (const char *g = group; *g; g++)
                p = *g == '-' ? stpcpy(p, "\\x2d") : (*p = *g, p + 1);
        strcpy(p, ".slice");
        return s;
}

static int scope_init(Backend *b) {
        /* declared first, so s (whose slot references the bus) is released before it on failure */
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *opened = NULL;
        _cleanup_(scope_freep) Scope *s = NULL;
        _cleanup_free_ char *slice = NULL;
        sd_bus *bus;
        int r;

        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->slice_fd = -EBADF;
        s->backend = b;
        s->user = use_user_manager();
        slice = slice_name(b->group);
        if (!slice || asprintf(&s->unit_prefix, "elastic-pool-%s-w", b->group) < 0)
                return -ENOMEM;
        s->unit_prefix_len = strlen(s->unit_prefix);

        /* tests hand us a bus to a fake manager; otherwise the manager we run under */
        if (!b->bus) {
                r = open_manager_bus(s->user, &opened);
                if (r < 0)
                        return r;
        }
        bus = b->bus ?: opened;
        s->no_pidfds = sd_bus_can_send(bus, SD_BUS_TYPE_UNIX_FD) <= 0;
        r = check_manager(s, bus);
        if (r < 0)
                return r;
        r = subscribe_job_removed(s, bus);
        if (r < 0)
                return r;
        r = sd_bus_attach_event(bus, b->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_warning_errno(r, "Failed to attach the bus to the event loop: %m");

        if (opened)
                b->bus = TAKE_PTR(opened);
        free(b->slice);
        b->slice = TAKE_PTR(slice);
        b->data = TAKE_PTR(s);
        log_debug("scope backend: workers become elastic-pool-%s-w<N>.scope units in %s on the %s manager",
                  b->group, b->slice, scope_from(b)->user ? "user" : "system");
        return 0;
}

/* At shutdown every worker is gone, but the slice systemd made for Slice= stays active until stopped,
 * and so do its parents: a dash in a slice name means nesting, so elastic-pool-web.slice lives in
 * elastic-pool.slice in elastic.slice. Only an empty one is ours to stop: a populated one still holds
 * workers (of another commander of this group or of another group, or ones we could not stop), and
 * stopping it would kill them. */
static void stop_slice(Backend *b, const char *slice) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *path = NULL, *full = NULL;
        _cleanup_close_ int fd = -EBADF;
        const char *cgroup = NULL;
        int r;

        r = sd_bus_path_encode(SYSTEMD_UNIT_PREFIX, slice, &path);
        if (r < 0)
                return;
        r = call_sync(b->bus, path, "org.freedesktop.DBus.Properties", "Get", &e, &reply, "ss",
                      "org.freedesktop.systemd1.Slice", "ControlGroup");
        if (r >= 0)
                r = sd_bus_message_read(reply, "v", "s", &cgroup);
        if (r < 0 || isempty(cgroup) || !b->cgroup_mount) {
                log_debug("Not stopping %s: its cgroup is unknown (%s)", slice,
                          r < 0 ? bus_error_text(&e, r) : "no cgroup");
                return;
        }
        if (asprintf(&full, "%s%s", b->cgroup_mount, cgroup) < 0)
                return;
        fd = open(full, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0 && !cgroup_is_empty(fd)) {
                log_info("Leaving %s active: processes still run in it", slice);
                return;
        }
        sd_bus_error_free(&e);
        r = call_sync(b->bus, SYSTEMD_PATH, SYSTEMD_MANAGER, "StopUnit", &e, NULL, "ss", slice,
                      "replace");
        if (r < 0)
                log_debug("Failed to stop %s, ignoring: %s", slice, bus_error_text(&e, r));
}

static void scope_done(Backend *b) {
        Scope *s = scope_from(b);

        if (!s)
                return;
        if (s->placed_any && b->bus) {
                /* the group's slice, then the parents its name implies, while they are empty */
                stop_slice(b, b->slice);
                stop_slice(b, "elastic-pool.slice");
                stop_slice(b, "elastic.slice");
        }
        b->data = scope_free(s);
}

static int scope_prepare(Backend *b, Worker *w, int *ret_cgroup_fd) {
        char *unit;

        /* nothing exists before birth: systemd makes the scope around the parked child */
        if (asprintf(&unit, "elastic-pool-%s-w%u.scope", b->group, w->id) < 0)
                return -ENOMEM;
        free(w->place.unit);
        w->place.unit = unit;
        *ret_cgroup_fd = -EBADF;
        return 0;
}

static int scope_attach(Backend *b, Worker *w) {
        Scope *s = scope_from(b);
        Placement *p;
        int r;

        r = placement_new(s, w, &p);
        if (r < 0)
                return r;
        /* from here on the slice may exist, even if this scope fails */
        s->placed_any = true;
        r = start_transient_unit(p);
        if (r < 0) {
                placement_free(p);
                return log_error_errno(r, "Failed to ask systemd for scope '%s': %m", w->place.unit);
        }
        return 0;
}

static void scope_release(Backend *b, Worker *w) {
        Scope *s = scope_from(b);
        bool populated;

        if (!s || !w->place.unit)
                return;
        /* died while its scope was being made: cancel our side, attach_done() must not follow */
        placement_free(placement_by_worker(s, w));
        populated = w->place.cgroup_fd < 0 || !cgroup_is_empty(w->place.cgroup_fd);
        w->place.cgroup_fd = safe_close(w->place.cgroup_fd);
        /* A unit systemd refused us (UnitExists: another commander's worker) is not ours to touch. Nor
         * is one whose StartTransientUnit is still unanswered: if systemd makes it, it finds the child
         * gone, fails the start, and CollectMode= removes it. */
        if (!w->place.unit_owned)
                return;
        /* An empty scope is stopped and collected by systemd on its own. One still populated (the
         * worker left children behind) or of unknown state is stopped here, which also cancels a start
         * job still queued. */
        if (populated)
                stop_unit_async(b, w->place.unit);
        /* belt and braces: CollectMode= already collects a failed scope, and a reset costs one message */
        reset_failed_unit_async(b, w->place.unit);
}

/* The slice's count went up by kills nobody has accounted for: one of them is this death's (workers
 * that die the same instant may take each other's, the count stays right). */
static int slice_oom_kills(Scope *s, Worker *w, uint64_t *ret) {
        uint64_t now = 0;

        if (!s || s->slice_fd < 0 || cgroup_read_keyed(s->slice_fd, "memory.events", "oom_kill", &now) < 0)
                return -ENODATA;
        *ret = w->place.oom_kills_at_start;
        if (now > s->slice_oom_seen) {
                s->slice_oom_seen++;
                (*ret)++;
        }
        return 0;
}

static int scope_oom_kills(Backend *b, Worker *w, uint64_t *ret) {
        Scope *s = scope_from(b);
        uint64_t slice = 0;
        int r;

        if (w->place.cgroup_fd < 0)
                return slice_oom_kills(s, w, ret);
        r = cgroup_read_keyed(w->place.cgroup_fd, "memory.events", "oom_kill", ret);
        if (r == -ENOENT || r == -ENODEV)
                /* systemd removed the scope of the dead worker before we looked: the slice still knows */
                return slice_oom_kills(s, w, ret);
        if (r >= 0 && *ret > w->place.oom_kills_at_start && s && s->slice_fd >= 0 &&
            cgroup_read_keyed(s->slice_fd, "memory.events", "oom_kill", &slice) >= 0)
                s->slice_oom_seen = MAX(s->slice_oom_seen, MIN(slice, s->slice_oom_seen + 1));
        return r;
}

const BackendVTable backend_scope_vtable = {
        .kind = BACKEND_SCOPE,
        .init = scope_init,
        .done = scope_done,
        .prepare = scope_prepare,
        .attach = scope_attach,
        .release = scope_release,
        .oom_kills = scope_oom_kills,
        .discover = scope_discover,
};
