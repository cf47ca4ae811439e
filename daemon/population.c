/* SPDX-License-Identifier: MIT */
#include "population.h"

#include <ctype.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "json-write.h"
#include "log.h"
#include "macro.h"
#include "population-fetch.h"

/* Deep enough for any monitor document, shallow enough that a hostile one costs nothing. */
#define POPULATION_JSON_DEPTH 16

typedef struct Target {
        Population *population;
        unsigned worker;
        PopulationFetch *fetch;
        json_object *doc;      /* the worker's document, once it answered with one */
        const char **listed;   /* the names it lists, sorted (they point into doc) */
        size_t n_listed;
        char error[256];       /* set: the error row's reason */
        usec_t elapsed;
} Target;

struct Population {
        sd_event *event;
        usec_t timeout;
        usec_t started, elapsed;
        Target *targets;       /* by worker id */
        size_t n_targets;
        unsigned pending;
        sd_event_source *timer;
        sd_event_source *finish; /* calls done from the loop */
        PopulationDone done;
        void *userdata;
};

static usec_t loop_now(sd_event *e) {
        usec_t t;

        return sd_event_now(e, CLOCK_MONOTONIC, &t) >= 0 ? t : now_usec(CLOCK_MONOTONIC);
}

/* ---- reading an answer ---- */

static int compare_names(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* The users array of a monitor document, checked: objects with a "user" string each. */
static int collect_listed(Target *t, json_object *users) {
        size_t n = json_object_array_length(users);

        t->listed = calloc(MAX(n, (size_t) 1), sizeof *t->listed);
        if (!t->listed)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *u = json_object_array_get_idx(users, i), *name;

                if (!json_object_is_type(u, json_type_object) || !json_object_object_get_ex(u, "user", &name) ||
                    !json_object_is_type(name, json_type_string)) {
                        snprintf(t->error, sizeof t->error,
                                 "answered a document whose users[%zu] is not an object with a \"user\" string", i);
                        return -EBADMSG;
                }
                t->listed[t->n_listed++] = json_object_get_string(name);
        }
        qsort(t->listed, t->n_listed, sizeof *t->listed, compare_names);
        return 0;
}

static bool only_blanks(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!isspace((unsigned char) s[i]))
                        return false;
        return true;
}

/* Parses the body of a 200 answer into t->doc, or sets t->error. */
static void take_document(Target *t, const PopulationFetchResult *res) {
        json_tokener *tok = json_tokener_new_ex(POPULATION_JSON_DEPTH);
        json_object *doc, *users;
        size_t end;

        if (!tok) {
                snprintf(t->error, sizeof t->error, "out of memory reading its answer");
                return;
        }
        doc = json_tokener_parse_ex(tok, res->body, (int) MIN(res->body_len, (size_t) INT32_MAX));
        end = json_tokener_get_parse_end(tok);
        if (!doc || json_tokener_get_error(tok) != json_tokener_success ||
            !only_blanks(res->body + end, res->body_len - end)) {
                snprintf(t->error, sizeof t->error, "answered something that is not JSON (%s)",
                         doc ? "bytes after the document" : json_tokener_error_desc(json_tokener_get_error(tok)));
                json_object_put(doc);
                json_tokener_free(tok);
                return;
        }
        json_tokener_free(tok);
        if (!json_object_is_type(doc, json_type_object) || !json_object_object_get_ex(doc, "users", &users) ||
            !json_object_is_type(users, json_type_array)) {
                snprintf(t->error, sizeof t->error, "answered JSON without a \"users\" array");
                json_object_put(doc);
                return;
        }
        t->doc = doc;
        if (collect_listed(t, users) < 0) {
                if (!t->error[0])
                        snprintf(t->error, sizeof t->error, "out of memory reading its answer");
                t->listed = mfree(t->listed);
                t->n_listed = 0;
                t->doc = NULL;
                json_object_put(doc);
        }
}

static void take_result(Target *t, const PopulationFetchResult *res) {
        t->elapsed = res->elapsed;
        if (res->error < 0)
                snprintf(t->error, sizeof t->error, "%s", res->reason);
        else if (res->status != 200)
                snprintf(t->error, sizeof t->error, "answered HTTP %u to " POPULATION_TARGET, res->status);
        else
                take_document(t, res);
}

static void on_fetch_done(PopulationFetch *f, void *userdata) {
        Target *t = userdata;
        Population *p = t->population;

        take_result(t, population_fetch_result(f));
        t->fetch = population_fetch_free(t->fetch);
        if (--p->pending == 0) {
                p->timer = sd_event_source_disable_unref(p->timer);
                p->elapsed = loop_now(p->event) - p->started;
                (void) sd_event_source_set_enabled(p->finish, SD_EVENT_ONESHOT);
        }
}

/* The deadline: what has not answered by now becomes an error row. */
static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Population *p = userdata;
        char span[32], reason[96];

        snprintf(reason, sizeof reason, "no answer within %s (stopped, hung or overloaded)",
                 format_timespan(span, sizeof span, p->timeout));
        for (size_t i = 0; i < p->n_targets; i++)
                if (p->targets[i].fetch)
                        population_fetch_abort(p->targets[i].fetch, -ETIMEDOUT, reason);
        return 0;
}

static int on_finish(sd_event_source *s, void *userdata) {
        Population *p = userdata;

        p->done(p, p->userdata); /* last: the callee may free p */
        return 0;
}

/* ---- the fan-out ---- */

static bool asked(const Worker *w) {
        /* a draining worker still holds users and answers until it stops */
        return w->state == WORKER_ROUTABLE || w->state == WORKER_DRAINING;
}

static int start_targets(Population *p, const Pool *pool) {
        for (size_t i = 0; i < pool->n_workers; i++) {
                const Worker *w = pool->workers[i];
                Target *t;
                int r;

                if (!asked(w) || !w->socket_path)
                        continue;
                t = &p->targets[p->n_targets++];
                *t = (Target) { .population = p, .worker = w->id };
                r = population_fetch_start(p->event, w->socket_path, POPULATION_TARGET, on_fetch_done, t,
                                           &t->fetch);
                if (r < 0)
                        return r;
                p->pending++;
        }
        return 0;
}

int population_start(sd_event *event, const StatusView *v, usec_t timeout, PopulationDone done, void *userdata,
                     Population **ret) {
        Population *p;
        int r;

        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        *p = (Population) {
                .event = event,
                .timeout = timeout,
                .started = loop_now(event),
                .done = done,
                .userdata = userdata,
        };
        p->targets = calloc(MAX(v->pool->n_workers, (size_t) 1), sizeof *p->targets);
        r = p->targets ? sd_event_add_defer(event, &p->finish, on_finish, p) : -ENOMEM;
        if (r >= 0)
                r = sd_event_source_set_enabled(p->finish, SD_EVENT_OFF);
        if (r >= 0)
                r = start_targets(p, v->pool);
        if (r >= 0 && p->pending > 0)
                r = sd_event_add_time_relative(event, &p->timer, CLOCK_MONOTONIC, timeout, USEC_PER_MSEC, on_timer,
                                               p);
        if (r >= 0 && p->pending == 0)
                r = sd_event_source_set_enabled(p->finish, SD_EVENT_ONESHOT);
        if (r < 0) {
                population_free(p);
                return r;
        }
        *ret = p;
        return 0;
}

Population *population_free(Population *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_targets; i++) {
                Target *t = &p->targets[i];

                population_fetch_free(t->fetch);
                free(t->listed);
                json_object_put(t->doc);
        }
        free(p->targets);
        p->timer = sd_event_source_disable_unref(p->timer);
        p->finish = sd_event_source_disable_unref(p->finish);
        free(p);
        return NULL;
}

/* ---- the document ---- */

static void write_ms(FILE *f, const char *name, usec_t usec) {
        fprintf(f, ",\"%s\":%llu", name, (unsigned long long) (usec / USEC_PER_MSEC));
}

/* A worker's own fields of an object as it said them, all but the one named skip. */
static void write_fields_but(FILE *f, json_object *o, const char *skip) {
        bool first = true;

        fputc('{', f);
        json_object_object_foreach(o, key, val) {
                if (streq(key, skip))
                        continue;
                if (!first)
                        fputc(',', f);
                first = false;
                json_write_string(f, key);
                fputc(':', f);
                fputs(json_object_to_json_string_ext(val, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                      f);
        }
        fputc('}', f);
}

/* The commander's side of a user row: where the surface places the user, and what it consumed there. */
static void write_commander_side(FILE *f, const SurfaceUser *u, unsigned worker, usec_t now) {
        if (!u) {
                fputs(",\"placed\":false,\"placed_on\":null,\"requests\":null,\"seconds\":null,"
                      "\"last_seen_ms_ago\":null,\"logged_in_ms_ago\":null,\"moving\":false",
                      f);
                return;
        }
        fprintf(f, ",\"placed\":%s,\"placed_on\":\"w%u\",\"requests\":%llu,\"seconds\":%.6f",
                u->worker == worker ? "true" : "false", u->worker, (unsigned long long) u->requests,
                (double) u->busy_usec / USEC_PER_SEC);
        write_ms(f, "last_seen_ms_ago", now > u->last_seen ? now - u->last_seen : 0);
        write_ms(f, "logged_in_ms_ago", now > u->logged_in_at ? now - u->logged_in_at : 0);
        fprintf(f, ",\"moving\":%s", u->move ? "true" : "false");
}

static bool listed(const Target *t, const char *name) {
        return t && t->doc && bsearch(&name, t->listed, t->n_listed, sizeof *t->listed, compare_names);
}

/* Users as the worker listed them, each with the commander's side. */
static unsigned write_listed_users(FILE *f, const Target *t, const Surface *s, usec_t now, bool *first) {
        json_object *users;
        unsigned n = 0;

        if (!t->doc || !json_object_object_get_ex(t->doc, "users", &users))
                return 0;
        for (size_t i = 0; i < json_object_array_length(users); i++) {
                json_object *u = json_object_array_get_idx(users, i), *name;
                const char *user;

                (void) json_object_object_get_ex(u, "user", &name);
                user = json_object_get_string(name);
                fputs(*first ? "{\"user\":" : ",{\"user\":", f);
                *first = false;
                json_write_string(f, user);
                fputs(",\"listed\":true", f);
                write_commander_side(f, s ? surface_user_get(s, user) : NULL, t->worker, now);
                fputs(",\"app\":", f);
                write_fields_but(f, u, "user");
                fputc('}', f);
                n++;
        }
        return n;
}

/* Users the surface places on the worker that its answer did not list (all of them without an answer:
 * then whether it lists them is unknown, null). */
static unsigned write_unlisted_users(FILE *f, const Target *t, unsigned worker, const Surface *s, usec_t now,
                                     bool *first) {
        SurfaceUser *u;
        unsigned n = 0;

        if (!s)
                return 0;
        for (size_t i = 0; (u = surface_next_user(s, &i));) {
                if (u->worker != worker || listed(t, u->name))
                        continue;
                fputs(*first ? "{\"user\":" : ",{\"user\":", f);
                *first = false;
                json_write_string(f, u->name);
                fprintf(f, ",\"listed\":%s", t && t->doc ? "false" : "null");
                write_commander_side(f, u, worker, now);
                fputs(",\"app\":null}", f);
                n++;
        }
        return n;
}

static const char *target_status(const Target *t) {
        if (!t)
                return "not-asked";
        return t->doc ? "ok" : "error";
}

/* One worker's row; w NULL: it left the pool during the fan-out. Returns its user rows. */
static unsigned write_row(FILE *f, const StatusView *v, const Worker *w, unsigned id, const Target *t,
                          usec_t now) {
        bool first = true;
        unsigned n;

        fprintf(f, "{\"worker\":\"w%u\",\"id\":%u,\"state\":\"%s\",\"reception\":%s,\"status\":\"%s\"", id, id,
                w ? worker_state_to_string(w->state) : "gone", w && w == v->pool->reception ? "true" : "false",
                target_status(t));
        if (t && t->error[0]) {
                fputs(",\"error\":", f);
                json_write_string(f, t->error);
        }
        if (t)
                write_ms(f, "elapsed_ms", t->elapsed);
        if (t && t->doc) {
                fputs(",\"reported\":", f);
                write_fields_but(f, t->doc, "users");
        }
        fputs(",\"users\":[", f);
        n = t ? write_listed_users(f, t, v->surface, now, &first) : 0;
        n += write_unlisted_users(f, t, id, v->surface, now, &first);
        fprintf(f, "],\"n_users\":%u}", n);
        return n;
}

int population_write(const Population *p, const StatusView *v, FILE *f) {
        usec_t now = now_usec(CLOCK_MONOTONIC); /* the clock the surface's times are in */
        unsigned users = 0, answered = 0;
        size_t ti = 0;
        bool first = true;

        fputs("{\"group\":", f);
        json_write_string(f, v->group);
        fprintf(f, ",\"target\":\"" POPULATION_TARGET "\"");
        write_ms(f, "timeout_ms", p->timeout);
        write_ms(f, "elapsed_ms", p->elapsed);
        fputs(",\"workers\":[", f);
        /* the pool's workers and the ones asked, both ordered by id: a worker asked and gone since is kept */
        for (size_t wi = 0; wi < v->pool->n_workers || ti < p->n_targets;) {
                const Worker *w = wi < v->pool->n_workers ? v->pool->workers[wi] : NULL;
                const Target *t = ti < p->n_targets ? &p->targets[ti] : NULL;
                unsigned id;

                if (w && t && w->id > t->worker)
                        w = NULL;
                id = w ? w->id : t->worker;
                if (t && t->worker != id)
                        t = NULL;
                wi += !!w;
                ti += !!t;
                if (w && !t && !worker_is_alive(w))
                        continue;
                fputs(first ? "" : ",", f);
                first = false;
                users += write_row(f, v, w, id, t, now);
                answered += t && t->doc;
        }
        fprintf(f, "],\"asked\":%zu,\"answered\":%u,\"users\":%u}\n", p->n_targets, answered, users);
        return ferror(f) ? -EIO : 0;
}
