/* SPDX-License-Identifier: MIT */
/* The group on D-Bus: the connection and its name, the object's vtable, the operator's methods (each
 * checked against the sender's credentials), the signals, and the tick that coalesces PropertiesChanged
 * and takes a ScaleTo shrink one retire further. See bus.h. */

#include "bus.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "bus-internal.h"
#include "cleanup.h"
#include "log.h"
#include "macro.h"

/* At most four PropertiesChanged a second, whatever the report rate; also how soon a ScaleTo shrink
 * notices that a retire is over. */
#define BUS_TICK (250 * USEC_PER_MSEC)

BusApiKind bus_choose(const char *env, uid_t uid) {
        BusApiKind k;

        if (!env || !env[0])
                return bus_api_kind_default(uid);
        k = bus_api_kind_from_string(env);
        if (k < 0) {
                log_warning("EP_BUS=%s is none of user, system, none; using the %s bus", env,
                            bus_api_kind_to_string(bus_api_kind_default(uid)));
                return bus_api_kind_default(uid);
        }
        return k;
}

const char *bus_name(const Bus *b) {
        return b ? b->name : NULL;
}

/* ---- who may change the pool ---- */

static int check_privileged(Bus *b, sd_bus_message *m, const char *what, sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        uid_t euid;
        int r;

        r = sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID | SD_BUS_CREDS_AUGMENT, &creds);
        if (r >= 0)
                r = sd_bus_creds_get_euid(creds, &euid);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "%s of group '%s' refused: the caller's uid cannot be told (%s)",
                                         what, b->group, strerror(-r));
        if (euid == 0 || euid == b->own_uid)
                return 0;
        log_notice("D-Bus: %s of group '%s' refused to %s (uid %u): only root or uid %u may", what, b->group,
                   strna(sd_bus_message_get_sender(m)), (unsigned) euid, (unsigned) b->own_uid);
        return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                 "%s of group '%s' refused: only root or the commander's own uid (%u) may; "
                                 "the caller runs as uid %u",
                                 what, b->group, (unsigned) b->own_uid, (unsigned) euid);
}

/* ---- ScaleTo ---- */

/* The least occupied worker a shrink may retire: routable, takes users, not the reception. */
static Worker *pick_to_retire(Bus *b) {
        Worker *best = NULL;

        for (size_t i = 0; i < b->pool->n_workers; i++) {
                Worker *w = b->pool->workers[i];

                if (!worker_takes_users(w) || w == b->pool->reception)
                        continue;
                if (!best || w->reading.occupancy.value < best->reading.occupancy.value)
                        best = w;
        }
        return best;
}

/* Something leaves already (a drain, a retiring or stopping worker): the next retire waits for it. */
static bool pool_shrinking(const Bus *b) {
        if (compaction_draining(b->compaction))
                return true;
        for (size_t i = 0; i < b->pool->n_workers; i++)
                if (b->pool->workers[i]->state == WORKER_DRAINING ||
                    b->pool->workers[i]->state == WORKER_STOPPING)
                        return true;
        return false;
}

static void scale_step(Bus *b) {
        unsigned staying;
        Worker *w;
        int r;

        if (b->scale_target == 0)
                return;
        staying = bus_workers_staying(b->pool);
        if (staying <= b->scale_target || b->pool->stopping) {
                log_info("ScaleTo: group '%s' has %u workers staying, target %u reached", b->group, staying,
                         b->scale_target);
                b->scale_target = 0;
                return;
        }
        if (pool_shrinking(b))
                return;
        w = pick_to_retire(b);
        if (!w)
                return; /* only the reception, or workers still starting: wait */
        r = compaction_retire(b->compaction, w->id, now_usec(CLOCK_MONOTONIC));
        if (r == -EBUSY)
                return;
        if (r < 0) {
                log_warning_errno(r,
                                  "ScaleTo: cannot retire %s of group '%s', stopping at %u workers (target "
                                  "%u): %m",
                                  WORKER_NAME(w), b->group, staying, b->scale_target);
                b->scale_target = 0;
                return;
        }
        log_info("ScaleTo: retiring %s (occupancy %.2f), %u workers staying, target %u", WORKER_NAME(w),
                 w->reading.occupancy.value, staying - 1, b->scale_target);
}

static int method_scale_to(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Bus *b = userdata;
        unsigned staying, spawned = 0;
        uint32_t n;
        int r;

        r = sd_bus_message_read(m, "u", &n);
        if (r < 0)
                return r;
        r = check_privileged(b, m, "ScaleTo", error);
        if (r < 0)
                return r;
        if (n < b->config->min_workers)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "ScaleTo(%u): group '%s' keeps at least min_workers=%u", n,
                                         b->group, b->config->min_workers);
        if (b->config->max_workers > 0 && n > b->config->max_workers)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "ScaleTo(%u): group '%s' has at most max_workers=%u", n, b->group,
                                         b->config->max_workers);
        if (b->pool->stopping)
                return sd_bus_error_setf(error, BUS_API_ERROR_NOT_NOW, "group '%s' is stopping", b->group);

        staying = bus_workers_staying(b->pool);
        log_info("ScaleTo(%u) asked by %s: group '%s' has %u workers staying", n,
                 strna(sd_bus_message_get_sender(m)), b->group, staying);
        b->scale_target = 0;
        for (; staying + spawned < n; spawned++) {
                r = pool_spawn(b->pool, "operator ScaleTo");
                if (r < 0)
                        return sd_bus_error_setf(error, BUS_API_ERROR_NOT_NOW,
                                                 "ScaleTo(%u): %u of %u spawns began, then: %s%s", n,
                                                 spawned, n - staying, strerror(-r),
                                                 r == -EAGAIN || r == -ECANCELED ? " (spawn throttle)" : "");
                pool_count_spawn(b->pool, POOL_SPAWN_OPERATOR);
        }
        if (n < staying) {
                b->scale_target = n;
                scale_step(b);
        }
        return sd_bus_reply_method_return(m, NULL);
}

/* ---- Compact, MoveUser, RetireWorker, Reload ---- */

static int method_compact(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Bus *b = userdata;
        char why[256] = "";
        int r;

        r = check_privileged(b, m, "Compact", error);
        if (r < 0)
                return r;
        r = compaction_now(b->compaction, why, sizeof why, now_usec(CLOCK_MONOTONIC));
        if (r == -EAGAIN)
                return sd_bus_error_setf(error, BUS_API_ERROR_NOT_NOW, "group '%s' may not shrink now: %s",
                                         b->group, why);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Compact of group '%s' failed: %s", b->group,
                                               strerror(-r));
        return sd_bus_reply_method_return(m, NULL);
}

/* compaction_move_user() refused `to` (-EHOSTUNREACH): absent, or it takes no users and says why. A
 * starting worker takes users in a moment (NotNow); the other reasons stand until an operator acts. */
static int move_refused_worker(Bus *b, unsigned to, sd_bus_error *error) {
        Worker *w = pool_get_worker(b->pool, to);

        if (!w)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "no worker w%u in group '%s'", to,
                                         b->group);
        return sd_bus_error_setf(
                error, worker_is_starting(w) ? BUS_API_ERROR_NOT_NOW : SD_BUS_ERROR_INVALID_ARGS,
                "w%u of group '%s' takes no users: %s", to, b->group, worker_why_no_users(w));
}

static int method_move_user(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Bus *b = userdata;
        const char *user;
        SurfaceUser *u;
        uint32_t to;
        int r;

        r = sd_bus_message_read(m, "su", &user, &to);
        if (r < 0)
                return r;
        r = check_privileged(b, m, "MoveUser", error);
        if (r < 0)
                return r;
        u = surface_user_get(b->surface, user);
        if (u && u->worker == to)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "user '%s' already lives on w%u",
                                         user, to);
        r = compaction_move_user(b->compaction, user, to, now_usec(CLOCK_MONOTONIC));
        switch (r) {
        case 0:
                return sd_bus_reply_method_return(m, NULL);
        case -ENOENT:
                if (!u)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "no logged-in user '%s' in group '%s'", user, b->group);
                return sd_bus_error_setf(
                        error, SD_BUS_ERROR_INVALID_ARGS,
                        "'%s' cannot move from w%u to w%u: one of them takes no part in moves", user,
                        u->worker, to);
        case -EHOSTUNREACH:
                return move_refused_worker(b, to, error);
        case -EBUSY:
                return sd_bus_error_setf(error, BUS_API_ERROR_NOT_NOW, "user '%s' is moving already", user);
        case -EOPNOTSUPP:
                return sd_bus_error_setf(error, SD_BUS_ERROR_NOT_SUPPORTED,
                                         "w%u cannot install users while w%u keeps state for '%s'", to,
                                         u ? u->worker : 0, user);
        default:
                return sd_bus_error_set_errnof(error, r, "moving '%s' to w%u failed: %s", user, to,
                                               strerror(-r));
        }
}

static int method_retire_worker(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Bus *b = userdata;
        uint32_t id;
        int r;

        r = sd_bus_message_read(m, "u", &id);
        if (r < 0)
                return r;
        r = check_privileged(b, m, "RetireWorker", error);
        if (r < 0)
                return r;
        if (bus_workers_staying(b->pool) <= b->config->min_workers && pool_get_worker(b->pool, id))
                return sd_bus_error_setf(error, BUS_API_ERROR_NOT_NOW,
                                         "group '%s' keeps at least min_workers=%u: w%u stays", b->group,
                                         b->config->min_workers, id);
        r = compaction_retire(b->compaction, id, now_usec(CLOCK_MONOTONIC));
        switch (r) {
        case 0:
                return sd_bus_reply_method_return(m, NULL);
        case -ENOENT:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "w%u is no routable worker of group '%s'", id, b->group);
        case -EPERM:
                return sd_bus_error_setf(error, BUS_API_ERROR_NOT_NOW,
                                         "w%u is the reception of group '%s': it is never retired", id,
                                         b->group);
        case -EBUSY:
                return sd_bus_error_setf(error, BUS_API_ERROR_NOT_NOW,
                                         "w%u of group '%s' is being drained already",
                                         b->compaction->drain.worker, b->group);
        default:
                return sd_bus_error_set_errnof(error, r, "retiring w%u failed: %s", id, strerror(-r));
        }
}

static int method_reload(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Bus *b = userdata;
        _cleanup_free_ char *why = NULL;
        int r;

        r = check_privileged(b, m, "Reload", error);
        if (r < 0)
                return r;
        if (!b->reload)
                return sd_bus_error_setf(error, SD_BUS_ERROR_NOT_SUPPORTED, "reload is not available");
        r = b->reload(b->userdata, &why);
        if (r < 0)
                /* not org.freedesktop.DBus.Error.Failed: sd-bus maps that one to EACCES */
                return sd_bus_error_setf(error, BUS_API_ERROR_RELOAD_FAILED, "reload of group '%s' failed: %s",
                                         b->group, why ? why : strerror(-r));
        return sd_bus_reply_method_return(m, NULL);
}

static int property_get_group(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Bus *b = userdata;

        return sd_bus_message_append(reply, "s", b->group);
}

static int property_get_backend(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Bus *b = userdata;

        return sd_bus_message_append(reply, "s", backend_kind_to_string(b->pool->backend->vtable->kind));
}

static int property_get_scale_target(sd_bus *bus, const char *path, const char *interface,
                                     const char *property, sd_bus_message *reply, void *userdata,
                                     sd_bus_error *error) {
        Bus *b = userdata;

        return sd_bus_message_append(reply, "u", b->scale_target);
}

static const sd_bus_vtable group_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Group", "s", property_get_group, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Backend", "s", property_get_backend, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Workers", "a" BUS_API_WORKER_SIG, bus_property_get_workers, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION),
        SD_BUS_PROPERTY("Users", "a" BUS_API_USER_SIG, bus_property_get_users, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION),
        SD_BUS_PROPERTY("Holds", "a" BUS_API_HOLD_SIG, bus_property_get_holds, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Drain", BUS_API_DRAIN_SIG, bus_property_get_drain, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Counters", BUS_API_COUNTERS_SIG, bus_property_get_counters, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ScaleTarget", "u", property_get_scale_target, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("RollingReload", BUS_API_ROLLING_RELOAD_SIG, bus_property_get_rolling_reload, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("RequestRate", BUS_API_REQUEST_RATE_SIG, bus_property_get_request_rate, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        /* every method checks its caller itself (check_privileged): sd-bus' own check trusts every
         * caller of a user bus */
        SD_BUS_METHOD_WITH_NAMES("ScaleTo", "u", SD_BUS_PARAM(workers), "", , method_scale_to,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Compact", "", "", method_compact, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("MoveUser", "su", SD_BUS_PARAM(user) SD_BUS_PARAM(worker), "", ,
                                 method_move_user, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("RetireWorker", "u", SD_BUS_PARAM(worker), "", , method_retire_worker,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Reload", "", "", method_reload, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_NAMES("WorkerSpawned", "u", SD_BUS_PARAM(worker), 0),
        SD_BUS_SIGNAL_WITH_NAMES("WorkerDied", "us", SD_BUS_PARAM(worker) SD_BUS_PARAM(cause), 0),
        SD_BUS_SIGNAL_WITH_NAMES(
                "UserMoved", "suus",
                SD_BUS_PARAM(user) SD_BUS_PARAM(from) SD_BUS_PARAM(to) SD_BUS_PARAM(outcome), 0),
        SD_BUS_VTABLE_END,
};

/* ---- signals ---- */

static void emit_changes(Bus *b) {
        const char *changed[_BUS_PROPERTY_MAX + 1] = {};
        size_t n = 0;
        int r;

        for (BusProperty p = 0; p < _BUS_PROPERTY_MAX; p++) {
                uint64_t f = bus_property_fingerprint(b, p);

                if (f == b->fingerprint[p])
                        continue;
                b->fingerprint[p] = f;
                changed[n++] = bus_property_to_string(p);
        }
        if (n == 0)
                return;
        r = sd_bus_emit_properties_changed_strv(b->bus, BUS_API_PATH, BUS_API_INTERFACE, (char **) changed);
        if (r < 0)
                log_debug_errno(r, "Failed to emit PropertiesChanged on %s, ignoring: %m", b->name);
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Bus *b = userdata;

        scale_step(b);
        emit_changes(b);
        (void) sd_event_source_set_time(s, usec + BUS_TICK);
        return 0;
}

static void emit(Bus *b, const char *member, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_signal(b->bus, &m, BUS_API_PATH, BUS_API_INTERFACE, member);
        if (r >= 0) {
                va_start(ap, types);
                r = sd_bus_message_appendv(m, types, ap);
                va_end(ap);
        }
        if (r >= 0)
                r = sd_bus_send(b->bus, m, NULL);
        if (r < 0)
                log_debug_errno(r, "Failed to emit %s on %s, ignoring: %m", member, b->name);
}

void bus_worker_spawned(Bus *b, const Worker *w) {
        if (b)
                emit(b, "WorkerSpawned", "u", w->id);
}

void bus_worker_died(Bus *b, const Worker *w) {
        if (b)
                emit(b, "WorkerDied", "us", w->id,
                     w->death_cause   ? w->death_cause
                     : w->stop_reason ? w->stop_reason
                                      : "gone");
}

void bus_user_moved(Bus *b, const MoveEnd *e) {
        if (!b)
                return;
        if (e->switched)
                b->moves++;
        emit(b, "UserMoved", "suus", strempty(e->user), e->from, e->to, strempty(e->outcome));
}

/* ---- the connection ---- */

static int bus_open(BusApiKind kind, sd_bus **ret) {
        return kind == BUS_API_SYSTEM ? sd_bus_open_system(ret) : sd_bus_open_user(ret);
}

/* Connected and named: the object, the name, the loop. 0, or -errno with the failing step logged. */
static int bus_publish(Bus *b, BusApiKind kind, sd_event *event) {
        int r;

        r = bus_open(kind, &b->bus);
        if (r < 0)
                return log_notice_errno(r, "No %s bus to be on (%m): group '%s' runs without a D-Bus name",
                                        bus_api_kind_to_string(kind), b->group);
        r = sd_bus_add_object_vtable(b->bus, &b->object, BUS_API_PATH, BUS_API_INTERFACE, group_vtable, b);
        if (r < 0)
                return log_error_errno(r, "Failed to publish %s on the %s bus: %m", BUS_API_PATH,
                                       bus_api_kind_to_string(kind));
        r = sd_bus_request_name(b->bus, b->name, 0);
        if (r < 0)
                return log_warning_errno(r,
                                         "Cannot take the name %s on the %s bus (%m%s): group '%s' runs "
                                         "without a D-Bus name",
                                         b->name, bus_api_kind_to_string(kind),
                                         r == -EEXIST ? ": another commander of the group holds it"
                                         : r == -EACCES
                                                 ? ": the bus policy (org.elasticpool.Group1.conf) denies it"
                                                 : "",
                                         b->group);
        r = sd_bus_attach_event(b->bus, event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the %s bus to the loop: %m",
                                       bus_api_kind_to_string(kind));
        r = sd_event_add_time_relative(event, &b->tick, CLOCK_MONOTONIC, BUS_TICK, 50 * USEC_PER_MSEC,
                                       on_tick, b);
        if (r < 0)
                return log_error_errno(r, "Failed to arm the bus tick: %m");
        (void) sd_event_source_set_enabled(b->tick, SD_EVENT_ON);
        return 0;
}

int bus_new(const BusOptions *o, Bus **ret) {
        _cleanup_free_ Bus *b = NULL;
        BusApiKind kind = bus_choose(o->bus_env, getuid());
        int r;

        *ret = NULL;
        if (kind == BUS_API_NONE) {
                log_info("EP_BUS=none: group '%s' stays off D-Bus", o->group);
                return 0;
        }
        b = calloc(1, sizeof *b);
        if (!b)
                return log_oom();
        *b = (Bus){
                .own_uid = geteuid(),
                .config = o->config,
                .pool = o->pool,
                .capacity = o->capacity,
                .compaction = o->compaction,
                .rollout = o->rollout,
                .surface = o->surface,
                .status = o->status,
                .reload = o->reload,
                .userdata = o->userdata,
        };
        r = bus_api_group_name(o->group, b->name, sizeof b->name);
        if (r < 0) {
                log_warning("Group name '%s' is too long for a D-Bus name: it runs without one", o->group);
                return 0;
        }
        b->group = strdup(o->group);
        if (!b->group)
                return log_oom();
        r = bus_publish(b, kind, o->event);
        if (r < 0) {
                (void) bus_free(TAKE_PTR(b));
                return 0;
        }
        for (BusProperty p = 0; p < _BUS_PROPERTY_MAX; p++)
                b->fingerprint[p] = bus_property_fingerprint(b, p);
        log_info("On the %s bus as %s, object %s", bus_api_kind_to_string(kind), b->name, BUS_API_PATH);
        *ret = TAKE_PTR(b);
        return 0;
}

Bus *bus_free(Bus *b) {
        if (!b)
                return NULL;
        b->tick = sd_event_source_disable_unref(b->tick);
        b->object = sd_bus_slot_unref(b->object);
        /* flush what was queued (a last WorkerDied), then leave: the name goes with the connection */
        b->bus = sd_bus_flush_close_unref(b->bus);
        free(b->group);
        free(b);
        return NULL;
}
