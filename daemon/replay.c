/* SPDX-License-Identifier: MIT */
/* elastic-pool-replay: a decision log ([policy] decision_log) run again through the same pure policy
 * code, offline. Answers "why did it scale at 03:12?" (each decision with the pool it was taken on) and
 * "what would other thresholds have done on yesterday's traffic?" (--set). */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "decision-log.h"
#include "macro.h"
#include "parse-util.h"

#define PROGRAM "elastic-pool-replay"
#define EXIT_USAGE 2

typedef struct Options {
        const char *path;
        bool check;
        bool verbose;
        /* --set: each parameter overridden or not */
        bool set_reception, set_admission, set_margin, set_min, set_max, set_rps;
        double reception, admission, margin, rps;
        uint32_t min, max;
} Options;

static void help(void) {
        printf("Usage: %s [OPTIONS] DECISION_LOG\n\n"
               "Runs each decision recorded in DECISION_LOG (elastic-pool.conf [policy] decision_log) through the\n"
               "policies again, on the inputs recorded with it, and prints what they decide.\n\n"
               "  --check            exit 1 unless every decision is the one recorded (same code, same inputs)\n"
               "  --set KEY=VALUE    decide with another parameter: reception_threshold, admission_threshold,\n"
               "                     compaction_margin, min_workers, max_workers, rps_target (repeatable)\n"
               "  -v --verbose       also print each decision's pool (worker, occupancy, freshness, users)\n"
               "  -h --help          this text\n",
               PROGRAM);
}

static int set_param(Options *o, const char *kv) {
        const char *eq = strchr(kv, '=');
        char key[64];
        double d;

        if (!eq || (size_t) (eq - kv) >= sizeof key)
                return -EINVAL;
        snprintf(key, sizeof key, "%.*s", (int) (eq - kv), kv);
        if (streq(key, "min_workers") || streq(key, "max_workers")) {
                uint32_t v;
                if (parse_uint32(eq + 1, &v) < 0)
                        return -EINVAL;
                if (streq(key, "min_workers"))
                        o->set_min = true, o->min = v;
                else
                        o->set_max = true, o->max = v;
                return 0;
        }
        if (parse_double(eq + 1, &d) < 0 || d < 0)
                return -EINVAL;
        if (streq(key, "reception_threshold"))
                o->set_reception = true, o->reception = d;
        else if (streq(key, "admission_threshold"))
                o->set_admission = true, o->admission = d;
        else if (streq(key, "compaction_margin"))
                o->set_margin = true, o->margin = d;
        else if (streq(key, "rps_target"))
                o->set_rps = true, o->rps = d;
        else
                return -EINVAL;
        return 0;
}

static int parse_args(int argc, char **argv, Options *o) {
        static const struct option options[] = {
                { "check", no_argument, NULL, 'c' },
                { "set", required_argument, NULL, 's' },
                { "verbose", no_argument, NULL, 'v' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "vh", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        o->check = true;
                        break;
                case 's':
                        if (set_param(o, optarg) < 0) {
                                fprintf(stderr, "%s: --set '%s': not KEY=VALUE with a known key and a value >= 0\n",
                                        PROGRAM, optarg);
                                return -EINVAL;
                        }
                        break;
                case 'v':
                        o->verbose = true;
                        break;
                case 'h':
                        help();
                        return 1;
                default:
                        return -EINVAL;
                }
        if (optind != argc - 1) {
                fprintf(stderr, "%s: one decision log expected; try --help\n", PROGRAM);
                return -EINVAL;
        }
        o->path = argv[optind];
        return 0;
}

static PolicyParams params_for(const Options *o, const PolicyParams *recorded) {
        PolicyParams p = *recorded;

        if (o->set_reception)
                p.reception_threshold = o->reception;
        if (o->set_admission)
                p.admission_threshold = o->admission;
        if (o->set_margin)
                p.compaction_margin = o->margin;
        if (o->set_min)
                p.min_workers = o->min;
        if (o->set_max)
                p.max_workers = o->max;
        if (o->set_rps)
                p.rps_target = o->rps;
        return p;
}

static bool same(const Decision *a, const Decision *b) {
        return a->kind == b->kind && a->worker == b->worker && streq(a->reason, b->reason);
}

static void print_pool(const DecisionEntry *e) {
        for (size_t i = 0; i < e->in.n_workers; i++) {
                const PolicyWorker *w = &e->in.workers[i];
                printf("        w%u%s %.3f %s users=%u%s%s\n", w->id, w->reception ? " (reception)" : "", w->occupancy,
                       freshness_to_string(w->freshness), w->users, w->retiring ? " retiring" : "",
                       w->routable ? "" : " in flight");
        }
        if (e->rate.status != RATE_OFF)
                printf("        rps: %s %.2f/s per worker (%s)\n", rate_status_to_string(e->rate.status),
                       e->rate.per_worker, e->rate.reason);
}

/* One line of the log: decided again, printed, compared. Returns 1 when it differs from the record. */
static int replay_line(const Options *o, const char *line, unsigned lineno, usec_t *t0) {
        _cleanup_free_ char *error = NULL;
        DecisionEntry e;
        PolicyParams p;
        Decision d;
        bool differs;

        if (decision_log_parse(line, &e, &error) < 0) {
                fprintf(stderr, "%s: %s:%u: %s\n", PROGRAM, o->path, lineno, strna(error));
                return -EINVAL;
        }
        if (*t0 == 0)
                *t0 = e.in.now;
        p = params_for(o, &e.params);
        decision_replay(&e, &p, &d);
        differs = !same(&d, &e.decision);
        printf("%9.3fs %-10s %-10s%s %s\n", (double) (e.in.now - *t0) / USEC_PER_SEC,
               decision_direction_to_string(e.direction), decision_kind_to_string(d.kind), differs ? " *" : "",
               d.reason);
        if (differs)
                printf("           recorded: %s %s\n", decision_kind_to_string(e.decision.kind), e.decision.reason);
        if (o->verbose)
                print_pool(&e);
        decision_entry_done(&e);
        return differs;
}

int main(int argc, char **argv) {
        _cleanup_free_ char *line = NULL;
        unsigned lineno = 0, n = 0, differ = 0;
        Options o = {};
        usec_t t0 = 0;
        size_t size = 0;
        FILE *f;
        int r;

        r = parse_args(argc, argv, &o);
        if (r != 0)
                return r > 0 ? 0 : EXIT_USAGE;
        f = fopen(o.path, "re");
        if (!f) {
                fprintf(stderr, "%s: cannot open %s: %s\n", PROGRAM, o.path, strerror(errno));
                return 1;
        }
        while (getline(&line, &size, f) > 0) {
                lineno++;
                r = replay_line(&o, line, lineno, &t0);
                if (r < 0) {
                        fclose(f);
                        return 1;
                }
                n++;
                differ += r;
        }
        fclose(f);
        printf("# %u decisions replayed, %u differ from the record (*)\n", n, differ);
        return o.check && differ > 0 ? 1 : 0;
}
