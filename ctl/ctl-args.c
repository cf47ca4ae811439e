/* SPDX-License-Identifier: MIT */
#include "ctl-args.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

const char ctl_usage[] =
        "Usage: elastic-poolctl [OPTIONS] COMMAND [ARGS]\n"
        "\n"
        "The state of an elastic-pool group, and an operator's hand on it, over D-Bus.\n"
        "\n"
        "Commands:\n"
        "  status [GROUP]        the pool: workers with occupancy, users, holds, drain\n"
        "  workers               one line per worker\n"
        "  users                 one line per logged-in user\n"
        "  move USER WORKER      move USER live to WORKER (w3 or 3) and wait for the end\n"
        "  scale N               resize the pool to N workers once (the policies go on deciding)\n"
        "  compact               retire the least occupied worker now (its users moved off first)\n"
        "  retire WORKER         retire WORKER (its users moved off first)\n"
        "  reload [--wait]       re-read the group's configuration; with --wait, until the workers a\n"
        "                        changed worker definition replaces are replaced (rolling reload)\n"
        "\n"
        "Options:\n"
        "  -g, --group=GROUP     the group (default: the only one on the bus)\n"
        "      --json            status, workers, users as JSON\n"
        "      --user            the user's bus (default unless run as root)\n"
        "      --system          the system bus (default as root)\n"
        "  -h, --help            this text\n"
        "      --version         the version\n"
        "\n"
        "Exit status: 0 done, 1 failed, 2 usage, 3 group not running, 4 access denied.\n";

static const char *const verb_names[_CTL_VERB_MAX] = {
        [CTL_STATUS] = "status", [CTL_WORKERS] = "workers", [CTL_USERS] = "users",   [CTL_MOVE] = "move",
        [CTL_SCALE] = "scale",   [CTL_COMPACT] = "compact", [CTL_RETIRE] = "retire", [CTL_RELOAD] = "reload",
        [CTL_HELP] = "help",     [CTL_VERSION] = "version",
};

const char *ctl_verb_to_string(CtlVerb v) {
        return v >= 0 && v < _CTL_VERB_MAX ? verb_names[v] : NULL;
}

CtlVerb ctl_verb_from_string(const char *s) {
        for (CtlVerb v = 0; v < _CTL_VERB_MAX; v++)
                if (s && strcmp(s, verb_names[v]) == 0)
                        return v;
        return _CTL_VERB_INVALID;
}

bool ctl_verb_reads(CtlVerb v) {
        return v == CTL_STATUS || v == CTL_WORKERS || v == CTL_USERS;
}

static int parse_unsigned(const char *s, unsigned *ret) {
        char *end;
        unsigned long v;

        if (!s || !*s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno != 0 || *end || v > UINT_MAX)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

int ctl_parse_worker(const char *s, unsigned *ret) {
        unsigned v;

        if (s && (s[0] == 'w' || s[0] == 'W'))
                s++;
        if (parse_unsigned(s, &v) < 0 || v == 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

_printf_(3, 4) static int usage_error(char *error, size_t size, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(error, size, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

/* One option at argv[*i]; advances *i past a separate value. */
static int parse_option(int argc, char *const *argv, int *i, CtlArgs *a, char *error, size_t size) {
        const char *o = argv[*i];

        if (strcmp(o, "--json") == 0)
                a->json = true;
        else if (strcmp(o, "--wait") == 0)
                a->wait = true;
        else if (strcmp(o, "--user") == 0)
                a->bus = BUS_API_USER;
        else if (strcmp(o, "--system") == 0)
                a->bus = BUS_API_SYSTEM;
        else if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0)
                a->verb = CTL_HELP;
        else if (strcmp(o, "--version") == 0)
                a->verb = CTL_VERSION;
        else if (strncmp(o, "--group=", 8) == 0)
                a->group = o + 8;
        else if (strcmp(o, "-g") == 0 || strcmp(o, "--group") == 0) {
                if (*i + 1 >= argc)
                        return usage_error(error, size, "%s needs a group name", o);
                a->group = argv[++*i];
        } else
                return usage_error(error, size, "unknown option '%s'", o);
        if (a->group && !a->group[0])
                return usage_error(error, size, "the group name is empty");
        return 0;
}

static int parse_operands(const char *const *ops, size_t n, CtlArgs *a, char *error, size_t size) {
        static const size_t arity[_CTL_VERB_MAX] = {[CTL_MOVE] = 2, [CTL_SCALE] = 1, [CTL_RETIRE] = 1};
        const char *verb = ctl_verb_to_string(a->verb);

        if (a->verb == CTL_STATUS && n == 1) {
                if (a->group && strcmp(a->group, ops[0]) != 0)
                        return usage_error(error, size, "two groups named: '%s' and '%s'", a->group, ops[0]);
                a->group = ops[0];
                return 0;
        }
        if (n != arity[a->verb])
                return usage_error(error, size, "'%s' takes %zu argument%s, not %zu", verb, arity[a->verb],
                                   arity[a->verb] == 1 ? "" : "s", n);
        switch (a->verb) {
        case CTL_MOVE:
                a->user = ops[0];
                if (!a->user[0])
                        return usage_error(error, size, "the user name is empty");
                if (ctl_parse_worker(ops[1], &a->worker) < 0)
                        return usage_error(error, size, "'%s' is no worker (w3 or 3)", ops[1]);
                return 0;
        case CTL_RETIRE:
                if (ctl_parse_worker(ops[0], &a->worker) < 0)
                        return usage_error(error, size, "'%s' is no worker (w3 or 3)", ops[0]);
                return 0;
        case CTL_SCALE:
                if (parse_unsigned(ops[0], &a->n) < 0 || a->n == 0)
                        return usage_error(error, size, "'%s' is no number of workers (1 or more)", ops[0]);
                return 0;
        default:
                return 0;
        }
}

int ctl_args_parse(int argc, char *const *argv, uid_t uid, CtlArgs *ret, char *error, size_t size) {
        CtlArgs a = {.verb = _CTL_VERB_INVALID, .bus = bus_api_kind_default(uid)};
        const char *ops[4];
        size_t n_ops = 0;
        bool dashdash = false, help = false, version = false;
        int r;

        error[0] = 0;
        for (int i = 1; i < argc; i++) {
                const char *s = argv[i];

                if (!dashdash && strcmp(s, "--") == 0) {
                        dashdash = true;
                        continue;
                }
                if (!dashdash && s[0] == '-' && s[1]) {
                        CtlVerb before = a.verb;

                        r = parse_option(argc, argv, &i, &a, error, size);
                        if (r < 0)
                                return r;
                        /* -h and --version win over any command, wherever they stand */
                        help = help || a.verb == CTL_HELP;
                        version = version || a.verb == CTL_VERSION;
                        a.verb = before;
                        continue;
                }
                if (a.verb < 0) {
                        a.verb = ctl_verb_from_string(s);
                        if (a.verb < 0 || a.verb == CTL_HELP || a.verb == CTL_VERSION) {
                                if (a.verb == CTL_HELP) {
                                        help = true;
                                        continue;
                                }
                                return usage_error(error, size, "unknown command '%s' (see --help)", s);
                        }
                        continue;
                }
                if (n_ops >= ELEMENTSOF(ops))
                        return usage_error(error, size, "too many arguments for '%s'",
                                           ctl_verb_to_string(a.verb));
                ops[n_ops++] = s;
        }
        if (help || version) {
                a.verb = help ? CTL_HELP : CTL_VERSION;
                *ret = a;
                return 0;
        }
        if (a.verb < 0)
                a.verb = CTL_STATUS; /* like systemctl: no command is the status */
        r = parse_operands(ops, n_ops, &a, error, size);
        if (r < 0)
                return r;
        if (a.wait && a.verb != CTL_RELOAD)
                return usage_error(error, size, "--wait applies to reload, not '%s'", ctl_verb_to_string(a.verb));
        if (a.json && !ctl_verb_reads(a.verb))
                return usage_error(error, size, "--json applies to status, workers and users, not '%s'",
                                   ctl_verb_to_string(a.verb));
        *ret = a;
        return 0;
}
