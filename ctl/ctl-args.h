/* SPDX-License-Identifier: MIT */
#pragma once

/* elastic-poolctl's command line, parsed without side effects (tested in tests/unit/test-ctl.c). */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "bus-api.h"

/* Exit codes (elastic-poolctl(1), "EXIT STATUS"). */
enum {
        CTL_EXIT_OK = 0,
        CTL_EXIT_FAILURE = 1,     /* anything else: no bus, the call refused for now, a move aborted */
        CTL_EXIT_USAGE = 2,       /* the command line, or an argument the commander rejects */
        CTL_EXIT_NOT_RUNNING = 3, /* nobody owns the group's name on that bus */
        CTL_EXIT_DENIED = 4,      /* the commander (or the bus policy) refused the caller */
};

typedef enum CtlVerb {
        CTL_STATUS,
        CTL_WORKERS,
        CTL_USERS,
        CTL_MOVE,
        CTL_SCALE,
        CTL_COMPACT,
        CTL_RETIRE,
        CTL_RELOAD,
        CTL_HELP,
        CTL_VERSION,
        _CTL_VERB_MAX,
        _CTL_VERB_INVALID = -EINVAL,
} CtlVerb;

const char *ctl_verb_to_string(CtlVerb v);
CtlVerb ctl_verb_from_string(const char *s);
/* status, workers, users: the ones --json applies to. */
bool ctl_verb_reads(CtlVerb v);

typedef struct CtlArgs {
        CtlVerb verb;
        const char *group; /* NULL: the one group on the bus */
        bool json;
        bool wait;        /* reload: until the rolling reload it started ended */
        BusApiKind bus;   /* BUS_API_USER or BUS_API_SYSTEM */
        const char *user; /* move */
        unsigned worker;  /* move, retire: wN */
        unsigned n;       /* scale */
} CtlArgs;

/* "w3" or "3" → 3; -EINVAL for anything else (0 included: workers count from 1). */
int ctl_parse_worker(const char *s, unsigned *ret);

/* Parses argv (argv[0] skipped) for a caller of uid (the default bus: system for root, else user).
 * 0, or -EINVAL with a one-line message in error (exit with CTL_EXIT_USAGE). */
int ctl_args_parse(int argc, char *const *argv, uid_t uid, CtlArgs *ret, char *error, size_t size);

/* The --help text. */
extern const char ctl_usage[];
