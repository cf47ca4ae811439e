/* SPDX-License-Identifier: MIT */
/* elastic-pool: the commander of one group of HTTP workers. */

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "manager.h"

static void help(void) {
        printf("Usage: elastic-pool --group NAME [OPTIONS]\n"
               "       elastic-pool --check-config [--group NAME | --config PATH]\n\n"
               "Supervises a pool of HTTP workers and sizes it on measured pressure.\n\n"
               "  -g --group NAME        the group (reads /etc/elastic-pool/NAME.conf)\n"
               "  -c --config PATH       read this configuration file instead\n"
               "     --runtime-dir DIR   sockets and status here (default $RUNTIME_DIRECTORY,\n"
               "                         /run/elastic-pool/NAME as root, else $XDG_RUNTIME_DIR/elastic-pool/NAME)\n"
               "     --state-dir DIR     the cookie key here (default $STATE_DIRECTORY, /var/lib/elastic-pool/NAME\n"
               "                         as root, else $XDG_STATE_HOME/elastic-pool/NAME)\n"
               "     --demo              no configuration file needed: built-in defaults, the bundled demo worker\n"
               "     --no-frontend       run the pool without listeners (workers reached on their sockets)\n"
               "  -n --check-config      validate the configuration and exit (0 valid, 1 invalid)\n"
               "     --log-level LEVEL   debug, info, notice, warning, err (default info)\n"
               "  -h --help              this text\n"
               "     --version           the version\n");
}

static bool group_name_valid(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > 64)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
                      *p == '_' || *p == '.'))
                        return false;
        return true;
}

static int check_config(const char *group, const char *path) {
        _cleanup_free_ char *dflt = NULL, *error = NULL;
        Config c;
        int r;

        if (!path) {
                if (asprintf(&dflt, "/etc/elastic-pool/%s.conf", group) < 0)
                        return log_oom();
                path = dflt;
        }
        r = config_init_defaults(&c);
        if (r < 0)
                return log_oom();
        r = config_load(&c, path, &error);
        config_done(&c);
        if (r < 0) {
                fprintf(stderr, "%s\n", error ? error : strerror(-r));
                return r;
        }
        printf("%s: valid\n", path);
        return 0;
}

/* Every client and worker connection is a descriptor, and the usual soft limit of 1024 is far under
 * max_connections; the hard limit is what the administrator allows. */
static void raise_nofile(void) {
        unsigned long long old = 0, now = 0;
        int r;

        r = fd_raise_nofile(&old, &now);
        if (r < 0)
                log_warning_errno(r, "Failed to raise the soft RLIMIT_NOFILE to the hard limit, staying at %llu "
                                  "descriptors: %m", now);
        else if (now != old)
                log_debug("Raised the soft RLIMIT_NOFILE from %llu to %llu descriptors", old, now);
}

int main(int argc, char *argv[]) {
        enum { ARG_RUNTIME_DIR = 0x100, ARG_STATE_DIR, ARG_DEMO, ARG_NO_FRONTEND, ARG_LOG_LEVEL, ARG_VERSION };
        static const struct option options[] = {
                { "group", required_argument, NULL, 'g' },
                { "config", required_argument, NULL, 'c' },
                { "runtime-dir", required_argument, NULL, ARG_RUNTIME_DIR },
                { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                { "no-frontend", no_argument, NULL, ARG_NO_FRONTEND },
                { "demo", no_argument, NULL, ARG_DEMO },
                { "check-config", no_argument, NULL, 'n' },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {}
        };
        _cleanup_(manager_freep) Manager *m = NULL;
        ManagerOptions o = {};
        bool check = false;
        sigset_t mask;
        int c, r;

        while ((c = getopt_long(argc, argv, "g:c:nh", options, NULL)) >= 0) {
                switch (c) {
                case 'g':
                        o.group = optarg;
                        break;
                case 'c':
                        o.config_path = optarg;
                        break;
                case ARG_RUNTIME_DIR:
                        o.runtime_dir = optarg;
                        break;
                case ARG_STATE_DIR:
                        o.state_dir = optarg;
                        break;
                case ARG_NO_FRONTEND:
                        o.no_frontend = true;
                        break;
                case ARG_DEMO:
                        o.defaults = true;
                        break;
                case 'n':
                        check = true;
                        break;
                case ARG_LOG_LEVEL:
                        r = log_level_from_string(optarg);
                        if (r < 0) {
                                fprintf(stderr, "elastic-pool: --log-level: unknown level '%s'\n", optarg);
                                return 2;
                        }
                        log_set_max_level(r);
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("elastic-pool %s\n", EP_VERSION);
                        return 0;
                default:
                        return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "elastic-pool: unexpected argument '%s' (see --help)\n", argv[optind]);
                return 2;
        }
        if (!o.group && o.defaults)
                o.group = "demo";
        if (!o.group && !(check && o.config_path)) {
                fprintf(stderr, "elastic-pool: --group NAME is required (see --help)\n");
                return 2;
        }
        if (o.group && !group_name_valid(o.group)) {
                fprintf(stderr, "elastic-pool: --group '%s': use 1-64 of A-Z a-z 0-9 . _ -\n", o.group);
                return 2;
        }
        log_setup("elastic-pool", o.group);
        if (check)
                return check_config(o.group, o.config_path) < 0 ? 1 : 0;

        /* sd-event takes these through signalfd and pidfds; they must not be delivered the old way */
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);

        raise_nofile();

        r = manager_new(&o, &m);
        if (r < 0)
                return 1;
        r = manager_run(m);
        return r < 0 ? 1 : r;
}
