/* SPDX-License-Identifier: MIT */
#include "loadgen-parse.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "loadgen-json.h"
#include "macro.h"

static int read_uint(JsonCursor *c, unsigned *ret) {
        double d;
        int r;

        r = json_read_number(c, &d);
        if (r < 0)
                return r;
        if (d < 0 || d > 4294967295.0 || d != floor(d))
                return -EBADMSG;
        *ret = (unsigned) d;
        return 0;
}

/* Strings we only display: a too-long one is shown truncated rather than refused. */
static int read_label(JsonCursor *c, char *buf, size_t size) {
        int r = json_read_string(c, buf, size);

        return r == -ENOBUFS ? 0 : r;
}

static int parse_worker_field(JsonCursor *c, const char *key, WorkerStatus *w) {
        char s[16];
        int r;

        if (streq(key, "name"))
                return read_label(c, w->name, sizeof w->name);
        if (streq(key, "state"))
                return read_label(c, w->state, sizeof w->state);
        if (streq(key, "reception"))
                return json_read_bool(c, &w->reception);
        if (streq(key, "occupancy"))
                return json_read_number(c, &w->occupancy);
        if (streq(key, "users"))
                return read_uint(c, &w->users);
        if (streq(key, "freshness")) {
                r = read_label(c, s, sizeof s);
                w->fresh = streq(s, "fresh") || streq(s, "new");
                return r;
        }
        return json_skip_value(c);
}

static int parse_worker(JsonCursor *c, WorkerStatus *w) {
        bool first = true;
        char key[32];
        int r;

        *w = (WorkerStatus){.fresh = true};
        r = json_enter(c, '{');
        while (r >= 0 && (r = json_next_key(c, &first, key, sizeof key)) > 0)
                r = parse_worker_field(c, key, w);
        return r;
}

static int parse_workers(JsonCursor *c, PoolStatus *st) {
        WorkerStatus scratch;
        bool first = true;
        int r;

        r = json_enter(c, '[');
        while (r >= 0 && (r = json_next_element(c, &first)) > 0) {
                WorkerStatus *w =
                        st->n_shown < POOL_STATUS_WORKERS_MAX ? &st->workers[st->n_shown] : &scratch;

                r = parse_worker(c, w);
                if (r < 0)
                        break;
                st->n_workers++;
                if (streq(w->state, "routable"))
                        st->n_routable++;
                if (w != &scratch)
                        st->n_shown++;
        }
        return r;
}

/* A hold is null or {"kind":…,"worker":…,"for_ms":…,"reason":"…"}: keep the reason. */
static int parse_hold(JsonCursor *c, char *reason, size_t size) {
        bool first = true;
        char key[16];
        int r;

        reason[0] = 0;
        if (json_read_null(c))
                return 0;
        r = json_enter(c, '{');
        while (r >= 0 && (r = json_next_key(c, &first, key, sizeof key)) > 0)
                r = streq(key, "reason") ? read_label(c, reason, size) : json_skip_value(c);
        return r;
}

static int parse_holds(JsonCursor *c, PoolStatus *st) {
        bool first = true;
        char key[32];
        int r;

        r = json_enter(c, '{');
        while (r >= 0 && (r = json_next_key(c, &first, key, sizeof key)) > 0) {
                if (streq(key, "scale_up"))
                        r = parse_hold(c, st->scale_up_hold, sizeof st->scale_up_hold);
                else if (streq(key, "compaction"))
                        r = parse_hold(c, st->compaction_hold, sizeof st->compaction_hold);
                else
                        r = json_skip_value(c);
        }
        return r;
}

static int parse_counters(JsonCursor *c, PoolStatus *st) {
        bool first = true;
        char key[32];
        double d;
        int r;

        r = json_enter(c, '{');
        while (r >= 0 && (r = json_next_key(c, &first, key, sizeof key)) > 0) {
                if (!streq(key, "spawns") && !streq(key, "deaths")) {
                        r = json_skip_value(c);
                        continue;
                }
                r = json_read_number(c, &d);
                if (r >= 0 && d >= 0)
                        *(streq(key, "spawns") ? &st->spawns : &st->deaths) = (uint64_t) d;
        }
        return r;
}

int pool_status_parse(const char *json, size_t n, PoolStatus *ret) {
        JsonCursor c = json_cursor(json, n);
        bool first = true, seen_workers = false;
        char key[32];
        int r;

        *ret = (PoolStatus){};
        r = json_enter(&c, '{');
        while (r >= 0 && (r = json_next_key(&c, &first, key, sizeof key)) > 0) {
                if (streq(key, "workers")) {
                        r = parse_workers(&c, ret);
                        seen_workers = true;
                } else if (streq(key, "stopping"))
                        r = json_read_bool(&c, &ret->stopping);
                else if (streq(key, "holds"))
                        r = parse_holds(&c, ret);
                else if (streq(key, "counters"))
                        r = parse_counters(&c, ret);
                else
                        r = json_skip_value(&c);
        }
        if (r < 0)
                return -EBADMSG;
        /* a document that ends early, or a stray trailer, is a torn or foreign file */
        if (!seen_workers || json_peek(&c) != 0)
                return -EBADMSG;
        return 0;
}

int state_reply_parse(const char *body, size_t n, uint64_t *ret_counter, char *ret_worker, size_t size) {
        JsonCursor c = json_cursor(body, n);
        bool first = true, has_counter = false;
        double counter = 0;
        char key[16];
        int r;

        if (size > 0)
                ret_worker[0] = 0;
        r = json_enter(&c, '{');
        while (r >= 0 && (r = json_next_key(&c, &first, key, sizeof key)) > 0) {
                if (streq(key, "counter")) {
                        r = json_read_number(&c, &counter);
                        has_counter = r >= 0;
                } else if (streq(key, "worker"))
                        r = read_label(&c, ret_worker, size);
                else
                        r = json_skip_value(&c);
        }
        if (r < 0 || !has_counter || counter < 0 || counter != floor(counter) ||
            counter > 9007199254740992.0)
                return -EBADMSG;
        *ret_counter = (uint64_t) counter;
        return 0;
}
