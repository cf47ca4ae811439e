/* SPDX-License-Identifier: MIT */
#include "ctl-bus.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "macro.h"
#include "time-util.h"

/* How long `move` waits for the move to end: longer than any move timeout a group would configure. */
#define MOVE_WAIT (120 * USEC_PER_SEC)

static const char *kind_name(const CtlBus *c) {
        return bus_api_kind_to_string(c->kind);
}

int ctl_bus_error_exit(const CtlBus *c, const char *what, const sd_bus_error *error, int r) {
        const char *msg = error && error->message ? error->message : strerror(-r);

        if (sd_bus_error_has_names(error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER)) {
                fprintf(stderr, "elastic-poolctl: group '%s' is not running: nobody owns %s on the %s bus\n",
                        c->group, c->name, kind_name(c));
                return CTL_EXIT_NOT_RUNNING;
        }
        /* the error's name decides; the errno only without one (sd-bus maps some names to EACCES) */
        if (sd_bus_error_has_name(error, SD_BUS_ERROR_ACCESS_DENIED) ||
            (!sd_bus_error_is_set(error) && (r == -EACCES || r == -EPERM))) {
                fprintf(stderr, "elastic-poolctl: %s of group '%s': access denied: %s\n", what, c->group,
                        msg);
                return CTL_EXIT_DENIED;
        }
        fprintf(stderr, "elastic-poolctl: %s of group '%s' failed: %s\n", what, c->group, msg);
        return sd_bus_error_has_name(error, SD_BUS_ERROR_INVALID_ARGS) ? CTL_EXIT_USAGE : CTL_EXIT_FAILURE;
}

/* No group named: the one whose name is on the bus. */
static int pick_group(CtlBus *c) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        size_t prefix = strlen(BUS_API_NAME_PREFIX), found = 0;
        char list[512] = ""; /* the labels found, for the message */
        const char *name;
        int r;

        r = sd_bus_call_method(c->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus", "ListNames", &error, &reply, NULL);
        if (r < 0) {
                fprintf(stderr, "elastic-poolctl: cannot list the names on the %s bus: %s\n", kind_name(c),
                        error.message ? error.message : strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        r = sd_bus_message_enter_container(reply, 'a', "s");
        while (r >= 0 && (r = sd_bus_message_read(reply, "s", &name)) > 0) {
                size_t len = strlen(list);

                if (strncmp(name, BUS_API_NAME_PREFIX, prefix) != 0)
                        continue;
                if (found++ == 0)
                        snprintf(c->name, sizeof c->name, "%s", name);
                snprintf(list + len, sizeof list - len, "%s%s", len > 0 ? ", " : "", name + prefix);
        }
        if (r < 0) {
                fprintf(stderr, "elastic-poolctl: cannot read the names on the %s bus: %s\n", kind_name(c),
                        strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        if (found > 1) {
                fprintf(stderr,
                        "elastic-poolctl: %zu groups run on the %s bus (%s): name one with --group\n", found,
                        kind_name(c), list);
                return CTL_EXIT_USAGE;
        }
        if (found == 0) {
                fprintf(stderr, "elastic-poolctl: no elastic-pool group is running on the %s bus%s\n",
                        kind_name(c), c->kind == BUS_API_USER ? " (try --system)" : " (try --user)");
                return CTL_EXIT_NOT_RUNNING;
        }
        /* the label until the group says its name (status reads it) */
        snprintf(c->group, sizeof c->group, "%s", c->name + prefix);
        return CTL_EXIT_OK;
}

int ctl_bus_open(CtlBus *c, const CtlArgs *a) {
        int r;

        *c = (CtlBus){.kind = a->bus};
        r = a->bus == BUS_API_SYSTEM ? sd_bus_open_system(&c->bus) : sd_bus_open_user(&c->bus);
        if (r < 0) {
                fprintf(stderr, "elastic-poolctl: cannot connect to the %s bus: %s\n", kind_name(c),
                        strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        if (!a->group)
                return pick_group(c);
        snprintf(c->group, sizeof c->group, "%s", a->group);
        r = bus_api_group_name(a->group, c->name, sizeof c->name);
        if (r < 0) {
                fprintf(stderr, "elastic-poolctl: group name '%s' is too long for a bus name\n", a->group);
                return CTL_EXIT_USAGE;
        }
        return CTL_EXIT_OK;
}

void ctl_bus_close(CtlBus *c) {
        c->reply = sd_bus_message_unref(c->reply);
        c->bus = sd_bus_flush_close_unref(c->bus);
}

/* ---- reading ---- */

#define GROW(array, n)                                                              \
        ({                                                                          \
                typeof(array) _a = reallocarray((array), (n) + 1, sizeof *(array)); \
                if (_a) {                                                           \
                        (array) = _a;                                               \
                        memset(&(array)[(n)], 0, sizeof *(array));                  \
                }                                                                   \
                _a ? &(array)[(n)++] : NULL;                                        \
        })

static int read_workers(sd_bus_message *m, CtlStatus *s) {
        int r, reception, evacuating;
        CtlWorker w;

        r = sd_bus_message_enter_container(m, 'a', BUS_API_WORKER_SIG);
        while (r >= 0 &&
               (r = sd_bus_message_read(m, BUS_API_WORKER_SIG, &w.id, &w.pid, &w.place, &w.state, &reception,
                                        &evacuating, &w.freshness, &w.occupancy, &w.bottleneck, &w.has,
                                        &w.memory, &w.cpu, &w.executor, &w.users, &w.inflight, &w.rps,
                                        &w.memory_bytes, &w.cpu_cores, &w.held, &w.unhealthy)) > 0) {
                CtlWorker *slot = GROW(s->workers, s->n_workers);

                if (!slot)
                        return -ENOMEM;
                w.reception = reception;
                w.evacuating = evacuating;
                *slot = w;
        }
        return r < 0 ? r : sd_bus_message_exit_container(m);
}

static int read_users(sd_bus_message *m, CtlStatus *s) {
        int r, moving;
        CtlUser u;

        r = sd_bus_message_enter_container(m, 'a', BUS_API_USER_SIG);
        while (r >= 0 && (r = sd_bus_message_read(m, BUS_API_USER_SIG, &u.name, &u.worker, &u.requests,
                                                  &u.busy_seconds, &u.open, &moving)) > 0) {
                CtlUser *slot = GROW(s->users, s->n_users);

                if (!slot)
                        return -ENOMEM;
                u.moving = moving;
                *slot = u;
        }
        return r < 0 ? r : sd_bus_message_exit_container(m);
}

static int read_holds(sd_bus_message *m, CtlStatus *s) {
        int32_t worker;
        CtlHold h;
        int r;

        r = sd_bus_message_enter_container(m, 'a', BUS_API_HOLD_SIG);
        while (r >= 0 && (r = sd_bus_message_read(m, BUS_API_HOLD_SIG, &h.decision, &h.kind, &worker,
                                                  &h.reason, &h.for_usec)) > 0) {
                CtlHold *slot = GROW(s->holds, s->n_holds);

                if (!slot)
                        return -ENOMEM;
                h.worker = worker;
                *slot = h;
        }
        return r < 0 ? r : sd_bus_message_exit_container(m);
}

static int read_drain(sd_bus_message *m, CtlDrain *d) {
        int asked, r;

        r = sd_bus_message_read(m, BUS_API_DRAIN_SIG, &d->worker, &asked, &d->for_usec, &d->users_at_start,
                                &d->moved, &d->repointed, &d->deferred, &d->users_left, &d->why, &d->last,
                                &d->done, &d->stopped);
        d->asked = asked;
        return r;
}

/* One property of GetAll's a{sv}, the reader positioned at its variant. */
static int read_property(sd_bus_message *m, const char *name, CtlStatus *s) {
        static const struct {
                const char *name, *sig;
        } known[] = {
                {"Group", "s"},
                {"Backend", "s"},
                {"Workers", "a" BUS_API_WORKER_SIG},
                {"Users", "a" BUS_API_USER_SIG},
                {"Holds", "a" BUS_API_HOLD_SIG},
                {"Drain", BUS_API_DRAIN_SIG},
                {"Counters", BUS_API_COUNTERS_SIG},
                {"ScaleTarget", "u"},
        };
        size_t i;
        int r;

        for (i = 0; i < ELEMENTSOF(known) && strcmp(known[i].name, name) != 0; i++)
                ;
        /* a newer commander's property, or one of a signature this client does not know: skipped */
        if (i == ELEMENTSOF(known) || sd_bus_message_verify_type(m, 'v', known[i].sig) <= 0)
                return sd_bus_message_skip(m, "v");
        r = sd_bus_message_enter_container(m, 'v', known[i].sig);
        if (r < 0)
                return r;
        switch (i) {
        case 0:
                r = sd_bus_message_read(m, "s", &s->group);
                break;
        case 1:
                r = sd_bus_message_read(m, "s", &s->backend);
                break;
        case 2:
                r = read_workers(m, s);
                break;
        case 3:
                r = read_users(m, s);
                break;
        case 4:
                r = read_holds(m, s);
                break;
        case 5:
                r = read_drain(m, &s->drain);
                break;
        case 6:
                r = sd_bus_message_read(m, BUS_API_COUNTERS_SIG, &s->reports, &s->spawns, &s->deaths,
                                        &s->moves);
                break;
        default:
                r = sd_bus_message_read(m, "u", &s->scale_target);
                break;
        }
        return r < 0 ? r : sd_bus_message_exit_container(m);
}

static int parse_get_all(sd_bus_message *m, CtlStatus *s) {
        const char *name;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                r = sd_bus_message_read(m, "s", &name);
                if (r >= 0)
                        r = read_property(m, name, s);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        }
        return r < 0 ? r : sd_bus_message_exit_container(m);
}

int ctl_bus_read_status(CtlBus *c, CtlStatus *s) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        ctl_status_done(s);
        *s = (CtlStatus){.group = c->group,
                         .bus_name = c->name,
                         .bus_kind = kind_name(c),
                         .backend = "?",
                         .drain = {.why = "", .last = ""}};
        c->reply = sd_bus_message_unref(c->reply);
        r = sd_bus_call_method(c->bus, c->name, BUS_API_PATH, "org.freedesktop.DBus.Properties", "GetAll",
                               &error, &c->reply, "s", BUS_API_INTERFACE);
        if (r < 0)
                return ctl_bus_error_exit(c, "reading the status", &error, r);
        r = parse_get_all(c->reply, s);
        if (r < 0) {
                fprintf(stderr, "elastic-poolctl: the status of group '%s' does not parse: %s\n", c->group,
                        strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        return CTL_EXIT_OK;
}

/* ---- the operator's methods ---- */

static int call(CtlBus *c, const char *what, const char *method, const char *types, ...) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(c->bus, &m, c->name, BUS_API_PATH, BUS_API_INTERFACE, method);
        if (r >= 0 && types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(m, types, ap);
                va_end(ap);
        }
        if (r < 0) {
                fprintf(stderr, "elastic-poolctl: %s: %s\n", what, strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        /* the caller's uid decides; no interactive authorization is offered */
        r = sd_bus_call(c->bus, m, 0, &error, &reply);
        if (r < 0)
                return ctl_bus_error_exit(c, what, &error, r);
        return CTL_EXIT_OK;
}

typedef struct MoveWait {
        const char *user;
        bool ended;
        unsigned from, to;
        char outcome[256];
} MoveWait;

static int on_user_moved(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        MoveWait *w = userdata;
        const char *user, *outcome;
        uint32_t from, to;

        if (sd_bus_message_read(m, "suus", &user, &from, &to, &outcome) < 0 || strcmp(user, w->user) != 0)
                return 0;
        w->ended = true;
        w->from = from;
        w->to = to;
        snprintf(w->outcome, sizeof w->outcome, "%s", outcome);
        return 0;
}

int ctl_bus_move(CtlBus *c, const char *user, unsigned worker) {
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        MoveWait w = {.user = user};
        usec_t deadline;
        int r;

        /* before the call: a re-point can end inside it. Matched on path and member (a well-known sender
         * would not match the unique name the signal comes from) and filtered on the user. */
        r = sd_bus_match_signal(c->bus, &slot, NULL, BUS_API_PATH, BUS_API_INTERFACE, "UserMoved",
                                on_user_moved, &w);
        if (r < 0) {
                fprintf(stderr, "elastic-poolctl: cannot watch UserMoved on the %s bus: %s\n", kind_name(c),
                        strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        r = call(c, "move", "MoveUser", "su", user, (uint32_t) worker);
        if (r != CTL_EXIT_OK)
                return r;
        deadline = now_usec(CLOCK_MONOTONIC) + MOVE_WAIT;
        while (!w.ended) {
                usec_t now = now_usec(CLOCK_MONOTONIC);

                if (now >= deadline) {
                        fprintf(stderr,
                                "elastic-poolctl: the move of '%s' to w%u in group '%s' began but did not "
                                "end within %llus\n",
                                user, worker, c->group, (unsigned long long) (MOVE_WAIT / USEC_PER_SEC));
                        return CTL_EXIT_FAILURE;
                }
                r = sd_bus_process(c->bus, NULL);
                if (r == 0)
                        r = sd_bus_wait(c->bus, deadline - now);
                if (r < 0) {
                        fprintf(stderr,
                                "elastic-poolctl: lost the %s bus waiting for the move of '%s': %s\n",
                                kind_name(c), user, strerror(-r));
                        return CTL_EXIT_FAILURE;
                }
        }
        if (strcmp(w.outcome, "done") != 0 && strcmp(w.outcome, "re-pointed") != 0) {
                fprintf(stderr,
                        "elastic-poolctl: the move of '%s' from w%u to w%u in group '%s' failed: %s\n", user,
                        w.from, w.to, c->group, w.outcome);
                return CTL_EXIT_FAILURE;
        }
        printf("Moved user %s from w%u to w%u in group %s (%s)\n", user, w.from, w.to, c->group, w.outcome);
        return CTL_EXIT_OK;
}

int ctl_bus_scale(CtlBus *c, unsigned n) {
        int r = call(c, "scale", "ScaleTo", "u", (uint32_t) n);

        if (r == CTL_EXIT_OK)
                printf("Group %s: scaling to %u workers (growing at once, shrinking one retire at a time; "
                       "the "
                       "policies go on deciding)\n",
                       c->group, n);
        return r;
}

int ctl_bus_compact(CtlBus *c) {
        int r = call(c, "compact", "Compact", NULL);

        if (r == CTL_EXIT_OK)
                printf("Group %s: compacting (the least occupied worker is retired, its users moved off "
                       "first)\n",
                       c->group);
        return r;
}

int ctl_bus_retire(CtlBus *c, unsigned worker) {
        int r = call(c, "retire", "RetireWorker", "u", (uint32_t) worker);

        if (r == CTL_EXIT_OK)
                printf("Group %s: retiring w%u (its users moved off first)\n", c->group, worker);
        return r;
}

typedef struct RollingReload {
        int active;
        char progress[256];
        char last[256];
        uint64_t ended;         /* done + stopped */
        uint64_t stopped;
} RollingReload;

static int read_rolling_reload(CtlBus *c, RollingReload *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *progress, *last;
        uint64_t done, stopped;
        int r;

        r = sd_bus_get_property(c->bus, c->name, BUS_API_PATH, BUS_API_INTERFACE, "RollingReload", &error, &reply,
                                BUS_API_ROLLING_RELOAD_SIG);
        if (r < 0)
                return ctl_bus_error_exit(c, "reload --wait", &error, r);
        r = sd_bus_message_read(reply, BUS_API_ROLLING_RELOAD_SIG, &ret->active, &progress, &last, &done, &stopped);
        if (r < 0) {
                fprintf(stderr, "elastic-poolctl: reload --wait: cannot read RollingReload: %s\n", strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        snprintf(ret->progress, sizeof ret->progress, "%s", progress);
        snprintf(ret->last, sizeof ret->last, "%s", last);
        ret->ended = done + stopped;
        ret->stopped = stopped;
        return CTL_EXIT_OK;
}

static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        *(bool *) userdata = true;
        return 0;
}

/* Follows RollingReload until the one the reload started (before: its counters then) ended. */
static int wait_rolling_reload(CtlBus *c, const RollingReload *before) {
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        RollingReload now = {};
        bool changed = true;
        char shown[256] = "";
        int r;

        r = sd_bus_match_signal(c->bus, &slot, NULL, BUS_API_PATH, "org.freedesktop.DBus.Properties",
                                "PropertiesChanged", on_properties_changed, &changed);
        if (r < 0) {
                fprintf(stderr, "elastic-poolctl: cannot watch the group's properties: %s\n", strerror(-r));
                return CTL_EXIT_FAILURE;
        }
        for (;;) {
                if (changed) {
                        changed = false;
                        r = read_rolling_reload(c, &now);
                        if (r != CTL_EXIT_OK)
                                return r;
                        if (!now.active)
                                break;
                        if (strcmp(shown, now.progress) != 0) {
                                snprintf(shown, sizeof shown, "%s", now.progress);
                                printf("Group %s: rolling reload %s\n", c->group, now.progress);
                                fflush(stdout);
                        }
                }
                r = sd_bus_process(c->bus, NULL);
                if (r == 0)
                        r = sd_bus_wait(c->bus, UINT64_MAX);
                if (r < 0) {
                        fprintf(stderr, "elastic-poolctl: lost the %s bus during the rolling reload: %s\n",
                                kind_name(c), strerror(-r));
                        return CTL_EXIT_FAILURE;
                }
        }
        if (now.ended == before->ended) {
                printf("Group %s: configuration reloaded; the worker definition did not change, no worker to "
                       "replace\n", c->group);
                return CTL_EXIT_OK;
        }
        if (now.stopped > before->stopped) {
                fprintf(stderr, "elastic-poolctl: group %s: rolling reload stopped: %s\n", c->group, now.last);
                return CTL_EXIT_FAILURE;
        }
        printf("Group %s: rolling reload done: %s\n", c->group, now.last);
        return CTL_EXIT_OK;
}

int ctl_bus_reload(CtlBus *c, bool wait) {
        RollingReload before = {};
        int r;

        if (wait) {
                r = read_rolling_reload(c, &before);
                if (r != CTL_EXIT_OK)
                        return r;
        }
        r = call(c, "reload", "Reload", NULL);
        if (r != CTL_EXIT_OK)
                return r;
        if (!wait) {
                printf("Group %s: configuration reloaded\n", c->group);
                return r;
        }
        return wait_rolling_reload(c, &before);
}
