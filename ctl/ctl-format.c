/* SPDX-License-Identifier: MIT */
#include "ctl-format.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json-write.h"
#include "macro.h"

#define BAR_WIDTH 20

void ctl_status_done(CtlStatus *s) {
        free(s->workers);
        free(s->users);
        free(s->holds);
        s->workers = NULL;
        s->users = NULL;
        s->holds = NULL;
        s->n_workers = s->n_users = s->n_holds = 0;
}

char *ctl_occupancy_bar(double occupancy, unsigned width, char *buf) {
        double v = isfinite(occupancy) ? CLAMP(occupancy, 0.0, 1.0) : 0.0;
        unsigned filled = (unsigned) lround(v * width);

        memset(buf, '#', filled);
        memset(buf + filled, '.', width - filled);
        buf[width] = 0;
        return buf;
}

/* "0.31", or "-" for an absent value */
static const char *fmt_fraction(char *buf, size_t size, bool has, double v) {
        if (!has || !isfinite(v))
                return "-";
        snprintf(buf, size, "%.2f", v);
        return buf;
}

static const char *fmt_bytes(char *buf, size_t size, bool has, uint64_t v) {
        static const char units[] = "KMGT";
        double d = (double) v;
        int u = -1;

        if (!has)
                return "-";
        while (d >= 1024 && u < (int) sizeof units - 2) {
                d /= 1024;
                u++;
        }
        if (u < 0)
                snprintf(buf, size, "%" PRIu64 "B", v);
        else
                snprintf(buf, size, "%.1f%c", d, units[u]);
        return buf;
}

static const char *fmt_usec(char *buf, size_t size, uint64_t usec) {
        uint64_t s = usec / 1000000;

        if (s < 60)
                snprintf(buf, size, "%" PRIu64 ".%01" PRIu64 "s", s, usec / 100000 % 10);
        else if (s < 3600)
                snprintf(buf, size, "%" PRIu64 "min %" PRIu64 "s", s / 60, s % 60);
        else
                snprintf(buf, size, "%" PRIu64 "h %" PRIu64 "min", s / 3600, s / 60 % 60);
        return buf;
}

static const char *plural(uint64_t n, const char *one, const char *many) {
        return n == 1 ? one : many;
}

static void print_holds(FILE *f, const CtlStatus *s) {
        char span[32];

        if (s->n_holds == 0) {
                fputs("      Holds: none\n", f);
                return;
        }
        for (size_t i = 0; i < s->n_holds; i++) {
                const CtlHold *h = &s->holds[i];

                fprintf(f, "%s %s %s", i == 0 ? "      Holds:" : "            ", h->decision, h->kind);
                if (h->worker >= 0)
                        fprintf(f, " on w%d", h->worker);
                fprintf(f, " for %s: %s\n", fmt_usec(span, sizeof span, h->for_usec), h->reason);
        }
}

static void print_drain(FILE *f, const CtlDrain *d) {
        char span[32];

        if (d->worker == 0)
                fputs("      Drain: none", f);
        else
                fprintf(f,
                        "      Drain: w%u for %s (%s%s): %u of %u users moved, %u re-pointed, %u deferred, "
                        "%u "
                        "left",
                        d->worker, fmt_usec(span, sizeof span, d->for_usec), d->asked ? "operator, " : "",
                        d->why, d->moved, d->users_at_start, d->repointed, d->deferred, d->users_left);
        if (d->last && d->last[0])
                fprintf(f, "; last: %s", d->last);
        fprintf(f, " (%" PRIu64 " done, %" PRIu64 " stopped)\n", d->done, d->stopped);
}

void ctl_print_workers(FILE *f, const CtlStatus *s) {
        fprintf(f, "%-8s %-9s %-27s %-10s %5s %5s %5s %5s %5s %6s %7s %8s  %s\n", "WORKER", "STATE",
                "OCCUPANCY", "BOTTLENECK", "MEM", "CPU", "EXEC", "USERS", "INFL", "RPS", "RSS", "PID",
                "HELD");
        for (size_t i = 0; i < s->n_workers; i++) {
                const CtlWorker *w = &s->workers[i];
                char name[24], bar[BAR_WIDTH + 1], m[16], c[16], e[16], rps[16], rss[16];
                bool out = w->unhealthy && w->unhealthy[0];

                snprintf(name, sizeof name, "w%u%s%s", w->id, w->reception ? " rec" : "",
                         w->evacuating ? " evac" : "");
                fprintf(f, "%-8s %-9s [%s] %4.2f %-10s %5s %5s %5s %5u %5u %6s %7s %8u  %s%s%s%s\n", name,
                        w->state, ctl_occupancy_bar(w->occupancy, BAR_WIDTH, bar), w->occupancy,
                        w->bottleneck[0] ? w->bottleneck : "-",
                        fmt_fraction(m, sizeof m, w->has & BUS_API_HAS_MEMORY, w->memory),
                        fmt_fraction(c, sizeof c, w->has & BUS_API_HAS_CPU, w->cpu),
                        fmt_fraction(e, sizeof e, w->has & BUS_API_HAS_EXECUTOR, w->executor), w->users,
                        w->inflight, fmt_fraction(rps, sizeof rps, w->has & BUS_API_HAS_RPS, w->rps),
                        fmt_bytes(rss, sizeof rss, w->has & BUS_API_HAS_MEMORY_BYTES, w->memory_bytes),
                        w->pid, out ? "out of new work: " : "", out ? w->unhealthy : "",
                        out && w->held[0] ? "; " : "",
                        w->held[0]                           ? w->held
                        : out                                ? ""
                        : strcmp(w->freshness, "fresh") == 0 ? "-"
                                                             : w->freshness);
        }
}

void ctl_print_users(FILE *f, const CtlStatus *s) {
        fprintf(f, "%-24s %-7s %9s %10s %5s %s\n", "USER", "WORKER", "REQUESTS", "BUSY", "OPEN", "MOVING");
        for (size_t i = 0; i < s->n_users; i++) {
                const CtlUser *u = &s->users[i];
                char w[16];

                snprintf(w, sizeof w, "w%u", u->worker);
                fprintf(f, "%-24s %-7s %9" PRIu64 " %9.3fs %5u %s\n", u->name, w, u->requests,
                        u->busy_seconds, u->open, u->moving ? "yes" : "no");
        }
}

void ctl_print_status(FILE *f, const CtlStatus *s) {
        unsigned routable = 0, starting = 0, leaving = 0, users = 0;

        for (size_t i = 0; i < s->n_workers; i++) {
                const char *st = s->workers[i].state;

                users += s->workers[i].users;
                if (strcmp(st, "routable") == 0)
                        routable++;
                else if (strcmp(st, "starting") == 0 || strcmp(st, "probing") == 0)
                        starting++;
                else
                        leaving++;
        }
        fprintf(f, "%s elastic-pool group %s\n", s->n_holds > 0 ? "!" : "*", s->group);
        fprintf(f, "        Bus: %s on the %s bus\n", s->bus_name, s->bus_kind);
        fprintf(f, "    Backend: %s\n", s->backend);
        fprintf(f, "    Workers: %zu (%u routable, %u starting, %u leaving), %u %s logged in\n",
                s->n_workers, routable, starting, leaving, users, plural(users, "user", "users"));
        print_holds(f, s);
        print_drain(f, &s->drain);
        if (s->scale_target > 0)
                fprintf(f, "    Scaling: down to %u workers, one retire at a time\n", s->scale_target);
        fprintf(f, "   Counters: %" PRIu64 " reports, %" PRIu64 " %s, %" PRIu64 " %s, %" PRIu64 " %s\n",
                s->reports, s->spawns, plural(s->spawns, "spawn", "spawns"), s->deaths,
                plural(s->deaths, "death", "deaths"), s->moves, plural(s->moves, "move", "moves"));
        fputc('\n', f);
        ctl_print_workers(f, s);
}

/* ---- JSON ---- */

static void json_worker(FILE *f, const CtlWorker *w) {
        fprintf(f, "{\"id\":%u,\"name\":\"w%u\",\"pid\":%u,\"place\":", w->id, w->id, w->pid);
        json_write_string(f, w->place);
        fputs(",\"state\":", f);
        json_write_string(f, w->state);
        fprintf(f, ",\"reception\":%s,\"evacuating\":%s,\"freshness\":", w->reception ? "true" : "false",
                w->evacuating ? "true" : "false");
        json_write_string(f, w->freshness);
        fprintf(f, ",\"occupancy\":%.4f,\"bottleneck\":", w->occupancy);
        if (w->bottleneck[0])
                json_write_string(f, w->bottleneck);
        else
                fputs("null", f);
        fputs(",\"components\":{\"memory\":", f);
        json_write_number_or_null(f, w->has & BUS_API_HAS_MEMORY, w->memory);
        fputs(",\"cpu\":", f);
        json_write_number_or_null(f, w->has & BUS_API_HAS_CPU, w->cpu);
        fputs(",\"executor\":", f);
        json_write_number_or_null(f, w->has & BUS_API_HAS_EXECUTOR, w->executor);
        fprintf(f, "},\"users\":%u,\"inflight\":%u,\"rps\":", w->users, w->inflight);
        json_write_number_or_null(f, w->has & BUS_API_HAS_RPS, w->rps);
        fputs(",\"memory_bytes\":", f);
        if (w->has & BUS_API_HAS_MEMORY_BYTES)
                fprintf(f, "%" PRIu64, w->memory_bytes);
        else
                fputs("null", f);
        fputs(",\"cpu_cores\":", f);
        json_write_number_or_null(f, w->has & BUS_API_HAS_CPU_CORES, w->cpu_cores);
        fputs(",\"held\":", f);
        if (w->held[0])
                json_write_string(f, w->held);
        else
                fputs("null", f);
        fputs(",\"unhealthy\":", f);
        if (w->unhealthy && w->unhealthy[0])
                json_write_string(f, w->unhealthy);
        else
                fputs("null", f);
        fputc('}', f);
}

static void json_workers_array(FILE *f, const CtlStatus *s) {
        fputc('[', f);
        for (size_t i = 0; i < s->n_workers; i++) {
                if (i > 0)
                        fputc(',', f);
                json_worker(f, &s->workers[i]);
        }
        fputc(']', f);
}

static void json_users_array(FILE *f, const CtlStatus *s) {
        fputc('[', f);
        for (size_t i = 0; i < s->n_users; i++) {
                const CtlUser *u = &s->users[i];

                fprintf(f, "%s{\"name\":", i > 0 ? "," : "");
                json_write_string(f, u->name);
                fprintf(f,
                        ",\"worker\":\"w%u\",\"requests\":%" PRIu64 ",\"busy_seconds\":%.6f,\"open\":%u,"
                        "\"moving\":%s}",
                        u->worker, u->requests, u->busy_seconds, u->open, u->moving ? "true" : "false");
        }
        fputc(']', f);
}

static void json_drain(FILE *f, const CtlDrain *d) {
        fputs("\"drain\":", f);
        if (d->worker == 0)
                fputs("null", f);
        else {
                fprintf(f,
                        "{\"worker\":\"w%u\",\"for_ms\":%" PRIu64 ",\"operator\":%s,\"users_at_start\":%u,"
                        "\"moved\":%u,\"repointed\":%u,\"deferred\":%u,\"users_left\":%u,\"why\":",
                        d->worker, d->for_usec / 1000, d->asked ? "true" : "false", d->users_at_start,
                        d->moved, d->repointed, d->deferred, d->users_left);
                json_write_string(f, d->why);
                fputc('}', f);
        }
        fputs(",\"last_drain\":", f);
        if (d->last && d->last[0])
                json_write_string(f, d->last);
        else
                fputs("null", f);
        fprintf(f, ",\"drains_done\":%" PRIu64 ",\"drains_stopped\":%" PRIu64, d->done, d->stopped);
}

/* "decision":{...} of the active hold of that decision, or "decision":null */
static void json_hold(FILE *f, const char *decision, const CtlStatus *s) {
        const CtlHold *h = NULL;

        for (size_t i = 0; i < s->n_holds && !h; i++)
                if (strcmp(s->holds[i].decision, decision) == 0)
                        h = &s->holds[i];
        fprintf(f, "\"%s\":", decision);
        if (!h) {
                fputs("null", f);
                return;
        }
        fputs("{\"kind\":", f);
        json_write_string(f, h->kind);
        fputs(",\"worker\":", f);
        if (h->worker >= 0)
                fprintf(f, "\"w%d\"", h->worker);
        else
                fputs("null", f);
        fprintf(f, ",\"for_ms\":%" PRIu64 ",\"reason\":", h->for_usec / 1000);
        json_write_string(f, h->reason);
        fputc('}', f);
}

void ctl_json_status(FILE *f, const CtlStatus *s) {
        fputs("{\"group\":", f);
        json_write_string(f, s->group);
        fputs(",\"bus_name\":", f);
        json_write_string(f, s->bus_name);
        fputs(",\"bus\":", f);
        json_write_string(f, s->bus_kind);
        fputs(",\"backend\":", f);
        json_write_string(f, s->backend);
        fputs(",\"workers\":", f);
        json_workers_array(f, s);
        fputs(",\"users\":", f);
        json_users_array(f, s);
        fputs(",\"holds\":{", f);
        json_hold(f, "scale_up", s);
        fputc(',', f);
        json_hold(f, "compaction", s);
        fputs("},", f);
        json_drain(f, &s->drain);
        fprintf(f, ",\"scale_target\":");
        if (s->scale_target > 0)
                fprintf(f, "%u", s->scale_target);
        else
                fputs("null", f);
        fprintf(f,
                ",\"counters\":{\"reports\":%" PRIu64 ",\"spawns\":%" PRIu64 ",\"deaths\":%" PRIu64
                ",\"moves\":%" PRIu64 "}}\n",
                s->reports, s->spawns, s->deaths, s->moves);
}

void ctl_json_workers(FILE *f, const CtlStatus *s) {
        json_workers_array(f, s);
        fputc('\n', f);
}

void ctl_json_users(FILE *f, const CtlStatus *s) {
        json_users_array(f, s);
        fputc('\n', f);
}
