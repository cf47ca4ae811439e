/* SPDX-License-Identifier: MIT */
#include "decision-log.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "json-write.h"
#include "macro.h"

const char *decision_direction_to_string(DecisionDirection d) {
        static const char *const table[_DECIDE_MAX] = {
                [DECIDE_SCALE_UP] = "scale_up",
                [DECIDE_COMPACTION] = "compaction",
        };
        return d >= 0 && d < _DECIDE_MAX ? table[d] : NULL;
}

static void write_worker(FILE *f, const PolicyWorker *w) {
        fprintf(f, "{\"id\":%u,\"reception\":%d,\"routable\":%d,\"retiring\":%d,\"outdated\":%d,\"freshness\":",
                w->id, w->reception, w->routable, w->retiring, w->outdated);
        json_write_string(f, freshness_to_string(w->freshness));
        fprintf(f, ",\"since\":%llu,\"occupancy\":%.17g,\"users\":%u,\"missing\":", (unsigned long long) w->since,
                w->occupancy, w->users);
        if (w->missing)
                json_write_string(f, w->missing);
        else
                fputs("null", f);
        fputc('}', f);
}

static void write_burst(FILE *f, const BurstReading *b) {
        fputs(",\"burst\":", f);
        if (!b) {
                fputs("null", f);
                return;
        }
        fprintf(f, "{\"status\":\"%s\",\"culprit\":%d,\"since\":%llu,\"reason\":", burst_status_to_string(b->status),
                b->culprit, (unsigned long long) b->since);
        json_write_string(f, b->reason);
        fputc('}', f);
}

int decision_log_write(FILE *f, DecisionDirection direction, const PolicyInput *in, const PolicyParams *p,
                       const RateReading *rate, const BurstReading *burst, const Decision *d) {
        fprintf(f, "{\"direction\":\"%s\",\"now\":%llu,\"mem_available\":%llu,\"params\":{\"reception_threshold\":%.17g,"
                "\"admission_threshold\":%.17g,\"compaction_margin\":%.17g,\"min_workers\":%u,\"max_workers\":%u,"
                "\"min_free_memory\":%llu,\"rps_target\":%.17g},\"workers\":[",
                decision_direction_to_string(direction), (unsigned long long) in->now,
                (unsigned long long) in->mem_available, p->reception_threshold, p->admission_threshold,
                p->compaction_margin, p->min_workers, p->max_workers, (unsigned long long) p->min_free_memory,
                p->rps_target);
        for (size_t i = 0; i < in->n_workers; i++) {
                if (i > 0)
                        fputc(',', f);
                write_worker(f, &in->workers[i]);
        }
        fputs("],\"rate\":", f);
        if (rate) {
                fprintf(f, "{\"status\":\"%s\",\"total\":%.17g,\"per_worker\":%.17g,\"serving\":%u,\"culprit\":%d,"
                        "\"length\":%llu,\"reason\":", rate_status_to_string(rate->status), rate->total,
                        rate->per_worker, rate->serving, rate->culprit, (unsigned long long) rate->length);
                json_write_string(f, rate->reason);
                fputc('}', f);
        } else
                fputs("null", f);
        write_burst(f, burst);
        fprintf(f, ",\"decision\":{\"kind\":\"%s\",\"worker\":%d,\"reason\":", decision_kind_to_string(d->kind),
                d->worker);
        json_write_string(f, d->reason);
        fputs("}}\n", f);
        return ferror(f) ? -EIO : 0;
}

/* ---- reading back ---- */

static int parse_error(char **ret_error, const char *format, ...) _printf_(2, 3);
static int parse_error(char **ret_error, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        if (vasprintf(ret_error, format, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
        return -EINVAL;
}

/* The member `key` of o with the json type wanted; NULL when absent or of another type. */
static json_object *member(json_object *o, const char *key, json_type type) {
        json_object *v = NULL;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, type))
                return NULL;
        return v;
}

static bool get_u64(json_object *o, const char *key, uint64_t *ret) {
        json_object *v = member(o, key, json_type_int);

        if (!v)
                return false;
        *ret = json_object_get_uint64(v);
        return true;
}

static bool get_double(json_object *o, const char *key, double *ret) {
        json_object *v = NULL;

        if (!json_object_object_get_ex(o, key, &v) ||
            (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)))
                return false;
        *ret = json_object_get_double(v);
        return true;
}

static const char *get_string(json_object *o, const char *key) {
        json_object *v = member(o, key, json_type_string);

        return v ? json_object_get_string(v) : NULL;
}

static bool get_bool_int(json_object *o, const char *key, bool *ret) {
        uint64_t v;

        if (!get_u64(o, key, &v))
                return false;
        *ret = v != 0;
        return true;
}

static Freshness freshness_from_string(const char *s) {
        for (Freshness f = 0; s && f < _FRESHNESS_MAX; f++)
                if (streq(s, freshness_to_string(f)))
                        return f;
        return _FRESHNESS_INVALID;
}

static int parse_worker(json_object *o, PolicyWorker *w, char **ret_missing) {
        uint64_t id = 0, since = 0, users = 0;
        const char *missing = get_string(o, "missing");

        if (!get_u64(o, "id", &id) || !get_bool_int(o, "reception", &w->reception) ||
            !get_bool_int(o, "routable", &w->routable) || !get_bool_int(o, "retiring", &w->retiring) ||
            !get_bool_int(o, "outdated", &w->outdated) || !get_u64(o, "since", &since) ||
            !get_double(o, "occupancy", &w->occupancy) || !get_u64(o, "users", &users))
                return -EINVAL;
        w->id = (unsigned) id;
        w->since = since;
        w->users = (uint32_t) users;
        w->freshness = freshness_from_string(get_string(o, "freshness"));
        if (w->freshness < 0)
                return -EINVAL;
        if (missing) {
                *ret_missing = strdup(missing);
                if (!*ret_missing)
                        return -ENOMEM;
                w->missing = *ret_missing;
        }
        return 0;
}

static int parse_params(json_object *o, PolicyParams *p) {
        uint64_t min = 0, max = 0, mem = 0;

        if (!o || !get_double(o, "reception_threshold", &p->reception_threshold) ||
            !get_double(o, "admission_threshold", &p->admission_threshold) ||
            !get_double(o, "compaction_margin", &p->compaction_margin) || !get_u64(o, "min_workers", &min) ||
            !get_u64(o, "max_workers", &max) || !get_u64(o, "min_free_memory", &mem) ||
            !get_double(o, "rps_target", &p->rps_target))
                return -EINVAL;
        p->min_workers = (uint32_t) min;
        p->max_workers = (uint32_t) max;
        p->min_free_memory = mem;
        return 0;
}

static int parse_rate(json_object *o, RateReading *r) {
        uint64_t serving = 0, length = 0, culprit = 0;
        const char *status, *reason;
        json_object *c;

        *r = (RateReading) { .status = RATE_OFF, .culprit = -1 };
        if (!o)
                return 0; /* none measured */
        status = get_string(o, "status");
        reason = get_string(o, "reason");
        for (RateStatus s = 0; status && s < _RATE_STATUS_MAX; s++)
                if (streq(status, rate_status_to_string(s)))
                        r->status = s;
        if (!status || !reason || !get_double(o, "total", &r->total) || !get_double(o, "per_worker", &r->per_worker) ||
            !get_u64(o, "serving", &serving) || !get_u64(o, "length", &length) ||
            !(c = member(o, "culprit", json_type_int)))
                return -EINVAL;
        (void) culprit;
        r->culprit = json_object_get_int(c);
        r->serving = (unsigned) serving;
        r->length = length;
        snprintf(r->reason, sizeof r->reason, "%s", reason);
        return 0;
}

static int parse_burst(json_object *o, BurstReading *b) {
        const char *reason;
        uint64_t since = 0;
        json_object *c;

        *b = (BurstReading) { .status = BURST_OFF, .culprit = -1 };
        if (!o)
                return 0; /* none: a log from before the burst path, or the compaction direction */
        b->status = burst_status_from_string(get_string(o, "status"));
        reason = get_string(o, "reason");
        c = member(o, "culprit", json_type_int);
        if (b->status < 0 || !reason || !c || !get_u64(o, "since", &since))
                return -EINVAL;
        b->culprit = json_object_get_int(c);
        b->since = since;
        snprintf(b->reason, sizeof b->reason, "%s", reason);
        return 0;
}

static int parse_decision(json_object *o, Decision *d) {
        const char *kind = o ? get_string(o, "kind") : NULL, *reason = o ? get_string(o, "reason") : NULL;
        json_object *w = o ? member(o, "worker", json_type_int) : NULL;

        if (!kind || !reason || !w)
                return -EINVAL;
        *d = (Decision) { .kind = _DECISION_KIND_INVALID, .worker = json_object_get_int(w) };
        for (DecisionKind k = 0; k < _DECISION_KIND_MAX; k++)
                if (streq(kind, decision_kind_to_string(k)))
                        d->kind = k;
        snprintf(d->reason, sizeof d->reason, "%s", reason);
        return d->kind < 0 ? -EINVAL : 0;
}

static int parse_object(json_object *o, DecisionEntry *e, char **ret_error) {
        const char *direction = get_string(o, "direction");
        json_object *workers = member(o, "workers", json_type_array), *rate = NULL;
        uint64_t now = 0, mem = 0;
        size_t n;

        e->direction = _DECIDE_INVALID;
        for (DecisionDirection d = 0; direction && d < _DECIDE_MAX; d++)
                if (streq(direction, decision_direction_to_string(d)))
                        e->direction = d;
        if (e->direction < 0)
                return parse_error(ret_error, "no known \"direction\"");
        if (!get_u64(o, "now", &now) || !get_u64(o, "mem_available", &mem) || !workers)
                return parse_error(ret_error, "\"now\", \"mem_available\" or \"workers\" missing");
        if (parse_params(member(o, "params", json_type_object), &e->params) < 0)
                return parse_error(ret_error, "\"params\" incomplete");
        (void) json_object_object_get_ex(o, "rate", &rate);
        if (parse_rate(json_object_is_type(rate, json_type_object) ? rate : NULL, &e->rate) < 0)
                return parse_error(ret_error, "\"rate\" incomplete");
        if (parse_burst(member(o, "burst", json_type_object), &e->burst) < 0)
                return parse_error(ret_error, "\"burst\" incomplete");
        if (parse_decision(member(o, "decision", json_type_object), &e->decision) < 0)
                return parse_error(ret_error, "\"decision\" incomplete");
        n = json_object_array_length(workers);
        e->workers = calloc(MAX(n, 1U), sizeof *e->workers);
        e->missing = calloc(MAX(n, 1U), sizeof *e->missing);
        if (!e->workers || !e->missing)
                return -ENOMEM;
        e->in.n_workers = n; /* what decision_entry_done() frees, also on a failure below */
        for (size_t i = 0; i < n; i++) {
                json_object *w = json_object_array_get_idx(workers, i);
                if (!json_object_is_type(w, json_type_object) || parse_worker(w, &e->workers[i], &e->missing[i]) < 0)
                        return parse_error(ret_error, "worker %zu incomplete", i);
        }
        e->in = (PolicyInput) { .workers = e->workers, .n_workers = n, .mem_available = mem, .now = now };
        return 0;
}

int decision_log_parse(const char *line, DecisionEntry *ret, char **ret_error) {
        json_tokener *tok = json_tokener_new_ex(8); /* the format is 4 deep: a deeper document is not ours */
        json_object *o;
        int r;

        *ret = (DecisionEntry) {};
        *ret_error = NULL;
        if (!tok)
                return -ENOMEM;
        o = json_tokener_parse_ex(tok, line, (int) strlen(line));
        if (!o || !json_object_is_type(o, json_type_object)) {
                r = parse_error(ret_error, "not a JSON object: %s",
                                json_tokener_error_desc(json_tokener_get_error(tok)));
                json_object_put(o);
                json_tokener_free(tok);
                return r;
        }
        json_tokener_free(tok);
        r = parse_object(o, ret, ret_error);
        json_object_put(o);
        if (r < 0)
                decision_entry_done(ret);
        return r;
}

void decision_entry_done(DecisionEntry *e) {
        for (size_t i = 0; e->missing && i < e->in.n_workers; i++)
                free(e->missing[i]);
        free(e->missing);
        free(e->workers);
        *e = (DecisionEntry) {};
}

void decision_replay(const DecisionEntry *e, const PolicyParams *params, Decision *ret) {
        if (e->direction == DECIDE_SCALE_UP) {
                policy_scale_up(&e->in, params, ret);
                policy_scale_up_rate(&e->in, params, &e->rate, ret);
                policy_scale_up_burst(&e->in, params, &e->burst, ret);
        } else {
                policy_compaction(&e->in, params, ret);
                policy_compaction_rate(&e->in, params, &e->rate, ret);
        }
}
