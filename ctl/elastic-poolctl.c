/* SPDX-License-Identifier: MIT */
/* elastic-poolctl: a thin client of a group's D-Bus API (elastic-poolctl(1)). */

#include <stdio.h>
#include <unistd.h>

#include "ctl-args.h"
#include "ctl-bus.h"
#include "ctl-format.h"

static int show(CtlBus *c, const CtlArgs *a) {
        CtlStatus s = {};
        int r;

        r = ctl_bus_read_status(c, &s);
        if (r != CTL_EXIT_OK)
                return r;
        switch (a->verb) {
        case CTL_STATUS:
                (a->json ? ctl_json_status : ctl_print_status)(stdout, &s);
                break;
        case CTL_WORKERS:
                (a->json ? ctl_json_workers : ctl_print_workers)(stdout, &s);
                break;
        default:
                (a->json ? ctl_json_users : ctl_print_users)(stdout, &s);
                break;
        }
        ctl_status_done(&s);
        if (fflush(stdout) != 0) {
                perror("elastic-poolctl: stdout");
                return CTL_EXIT_FAILURE;
        }
        return CTL_EXIT_OK;
}

static int run(CtlBus *c, const CtlArgs *a) {
        switch (a->verb) {
        case CTL_MOVE:
                return ctl_bus_move(c, a->user, a->worker);
        case CTL_SCALE:
                return ctl_bus_scale(c, a->n);
        case CTL_COMPACT:
                return ctl_bus_compact(c);
        case CTL_RETIRE:
                return ctl_bus_retire(c, a->worker);
        case CTL_RELOAD:
                return ctl_bus_reload(c, a->wait);
        default:
                return show(c, a);
        }
}

int main(int argc, char *argv[]) {
        CtlBus c = {};
        CtlArgs a;
        char error[256];
        int r;

        if (ctl_args_parse(argc, argv, getuid(), &a, error, sizeof error) < 0) {
                fprintf(stderr, "elastic-poolctl: %s\n", error);
                return CTL_EXIT_USAGE;
        }
        if (a.verb == CTL_HELP) {
                fputs(ctl_usage, stdout);
                return CTL_EXIT_OK;
        }
        if (a.verb == CTL_VERSION) {
                puts("elastic-poolctl " EP_VERSION);
                return CTL_EXIT_OK;
        }
        r = ctl_bus_open(&c, &a);
        if (r == CTL_EXIT_OK)
                r = run(&c, &a);
        ctl_bus_close(&c);
        return r;
}
