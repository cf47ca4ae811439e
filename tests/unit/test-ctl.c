/* SPDX-License-Identifier: MIT */
/* elastic-poolctl's pure parts: the command line (a table of argv → verb, group, bus, arguments, or a
 * usage error), worker names, the occupancy bar, and the formatting of a group for humans and as JSON
 * (valid, checked with python3's json module; absent values null, never 0). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "ctl-args.h"
#include "ctl-format.h"
#include "macro.h"

#define PYTHON   "/usr/bin/python3"
#define MAX_ARGS 8

typedef struct ArgsCase {
        const char *argv[MAX_ARGS];
        uid_t uid;
        int ret;
        CtlVerb verb;
        const char *group;
        bool json;
        BusApiKind bus;
        const char *user;
        unsigned worker, n;
        const char *error; /* a part of the message */
} ArgsCase;

static const ArgsCase args_cases[] = {
        {{NULL}, 1000, 0, CTL_STATUS, NULL, false, BUS_API_USER},
        {{NULL}, 0, 0, CTL_STATUS, NULL, false, BUS_API_SYSTEM},
        {{"status", "web"}, 1000, 0, CTL_STATUS, "web", false, BUS_API_USER},
        {{"--json", "status"}, 0, 0, CTL_STATUS, NULL, true, BUS_API_SYSTEM},
        {{"status", "--user", "-g", "web"}, 0, 0, CTL_STATUS, "web", false, BUS_API_USER},
        {{"--system", "workers", "--json"}, 1000, 0, CTL_WORKERS, NULL, true, BUS_API_SYSTEM},
        {{"users", "--group=a-b"}, 1000, 0, CTL_USERS, "a-b", false, BUS_API_USER},
        {{"move", "alice", "w2"}, 0, 0, CTL_MOVE, NULL, false, BUS_API_SYSTEM, "alice", 2},
        {{"move", "--", "-bob", "3"}, 0, 0, CTL_MOVE, NULL, false, BUS_API_SYSTEM, "-bob", 3},
        {{"scale", "4", "--group", "web"}, 0, 0, CTL_SCALE, "web", false, BUS_API_SYSTEM, NULL, 0, 4},
        {{"compact"}, 0, 0, CTL_COMPACT, NULL, false, BUS_API_SYSTEM},
        {{"retire", "W7"}, 0, 0, CTL_RETIRE, NULL, false, BUS_API_SYSTEM, NULL, 7},
        {{"reload", "--user"}, 0, 0, CTL_RELOAD, NULL, false, BUS_API_USER},
        {{"move", "alice", "--help"}, 0, 0, CTL_HELP},
        {{"help"}, 0, 0, CTL_HELP},
        {{"--version", "scale"}, 0, 0, CTL_VERSION},
        /* usage errors */
        {{"frobnicate"}, 0, -EINVAL, .error = "unknown command 'frobnicate'"},
        {{"--verbose"}, 0, -EINVAL, .error = "unknown option '--verbose'"},
        {{"move", "alice"}, 0, -EINVAL, .error = "'move' takes 2 arguments, not 1"},
        {{"move", "alice", "w0"}, 0, -EINVAL, .error = "'w0' is no worker"},
        {{"move", "", "2"}, 0, -EINVAL, .error = "user name is empty"},
        {{"retire", "x3"}, 0, -EINVAL, .error = "'x3' is no worker"},
        {{"retire"}, 0, -EINVAL, .error = "'retire' takes 1 argument, not 0"},
        {{"scale", "0"}, 0, -EINVAL, .error = "'0' is no number of workers"},
        {{"scale", "-1"}, 0, -EINVAL, .error = "unknown option '-1'"},
        {{"scale", "99999999999"}, 0, -EINVAL, .error = "is no number"},
        {{"compact", "now"}, 0, -EINVAL, .error = "'compact' takes 0 arguments, not 1"},
        {{"compact", "--json"}, 0, -EINVAL, .error = "--json applies to status, workers and users"},
        {{"status", "--wait"}, 0, -EINVAL, .error = "--wait applies to reload, not 'status'"},
        {{"reload", "--wait"}, 0, 0, CTL_RELOAD, NULL, false, BUS_API_SYSTEM},
        {{"status", "a", "b"}, 0, -EINVAL, .error = "'status' takes 0 arguments, not 2"},
        {{"status", "a", "-g", "b"}, 0, -EINVAL, .error = "two groups named"},
        {{"-g"}, 0, -EINVAL, .error = "-g needs a group name"},
        {{"--group="}, 0, -EINVAL, .error = "group name is empty"},
};

static void test_ctl_args_parse_table(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(args_cases); i++) {
                const ArgsCase *t = &args_cases[i];
                char *argv[MAX_ARGS + 1] = {(char *) "elastic-poolctl"};
                char error[256];
                CtlArgs a = {};
                int argc = 1, r;

                for (size_t j = 0; j < MAX_ARGS && t->argv[j]; j++)
                        argv[argc++] = (char *) t->argv[j];
                r = ctl_args_parse(argc, argv, t->uid, &a, error, sizeof error);
                if (r != t->ret)
                        fail_msg("case %zu (%s ...): %d, want %d (%s)", i, strna(t->argv[0]), r, t->ret,
                                 error);
                if (r < 0) {
                        if (!strstr(error, t->error))
                                fail_msg("case %zu: message '%s' lacks '%s'", i, error, t->error);
                        continue;
                }
                assert_int_equal(a.verb, t->verb);
                if (t->verb == CTL_HELP || t->verb == CTL_VERSION)
                        continue;
                if (t->group)
                        assert_string_equal(a.group, t->group);
                else
                        assert_null(a.group);
                assert_int_equal(a.json, t->json);
                assert_int_equal(a.bus, t->bus);
                if (t->user)
                        assert_string_equal(a.user, t->user);
                assert_int_equal(a.worker, t->worker);
                assert_int_equal(a.n, t->n);
        }
}

static void test_ctl_parse_worker_forms(void **state) {
        unsigned w = 0;

        assert_int_equal(ctl_parse_worker("w12", &w), 0);
        assert_int_equal(w, 12);
        assert_int_equal(ctl_parse_worker("3", &w), 0);
        assert_int_equal(w, 3);
        assert_int_equal(ctl_parse_worker("w", &w), -EINVAL);
        assert_int_equal(ctl_parse_worker("", &w), -EINVAL);
        assert_int_equal(ctl_parse_worker("w-1", &w), -EINVAL);
        assert_int_equal(ctl_parse_worker("w1x", &w), -EINVAL);
        assert_int_equal(ctl_parse_worker("0", &w), -EINVAL);
}

static void test_ctl_occupancy_bar_clamps(void **state) {
        char buf[11];

        assert_string_equal(ctl_occupancy_bar(0.0, 10, buf), "..........");
        assert_string_equal(ctl_occupancy_bar(0.5, 10, buf), "#####.....");
        assert_string_equal(ctl_occupancy_bar(0.26, 10, buf), "###.......");
        assert_string_equal(ctl_occupancy_bar(1.7, 10, buf), "##########");
        assert_string_equal(ctl_occupancy_bar(-1, 10, buf), "..........");
        assert_string_equal(ctl_occupancy_bar(0.0 / 0.0, 10, buf), "..........");
}

/* A group of two workers, w2 with every component absent, one user moving, a hold on w2, a drain. */
static CtlStatus sample_status(CtlWorker *workers, CtlUser *users, CtlHold *holds) {
        workers[0] = (CtlWorker){.id = 1,
                                 .pid = 100,
                                 .place = "elastic-pool-web-w1.scope",
                                 .state = "routable",
                                 .freshness = "fresh",
                                 .bottleneck = "cpu",
                                 .held = "",
                                 .reception = true,
                                 .occupancy = 0.42,
                                 .has = BUS_API_HAS_MEMORY | BUS_API_HAS_CPU | BUS_API_HAS_EXECUTOR |
                                        BUS_API_HAS_RPS | BUS_API_HAS_MEMORY_BYTES | BUS_API_HAS_CPU_CORES,
                                 .memory = 0.1,
                                 .cpu = 0.42,
                                 .executor = 0.25,
                                 .rps = 12.5,
                                 .cpu_cores = 0.42,
                                 .memory_bytes = 50 << 20,
                                 .users = 3,
                                 .inflight = 1};
        workers[1] = (CtlWorker){.id = 2,
                                 .pid = 101,
                                 .place = "/x/w2",
                                 .state = "routable",
                                 .freshness = "stale",
                                 .bottleneck = "",
                                 .held = "no report for 17s",
                                 .unhealthy = "no report for 17s",
                                 .occupancy = 0.0,
                                 .users = 1};
        users[0] = (CtlUser){.name = "alice", .worker = 1, .requests = 10, .busy_seconds = 0.5};
        users[1] = (CtlUser){.name = "b\"ob", .worker = 2, .requests = 2, .open = 1, .moving = true};
        holds[0] = (CtlHold){.decision = "compaction",
                             .kind = "held",
                             .worker = 2,
                             .reason = "w2 no report for 17s",
                             .for_usec = 3 * 1000000};
        return (CtlStatus){
                .group = "web",
                .bus_name = "org.elasticpool.Group1.web",
                .bus_kind = "user",
                .backend = "scope",
                .workers = workers,
                .n_workers = 2,
                .users = users,
                .n_users = 2,
                .holds = holds,
                .n_holds = 1,
                .drain = {.worker = 2,
                          .asked = true,
                          .for_usec = 1500000,
                          .users_at_start = 2,
                          .moved = 1,
                          .users_left = 1,
                          .why = "operator retire",
                          .last = "w3 retired",
                          .done = 4},
                .reports = 100,
                .spawns = 3,
                .deaths = 1,
                .moves = 5,
                .scale_target = 1,
        };
}

static char *render(void (*fn)(FILE *, const CtlStatus *), const CtlStatus *s) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        assert_non_null(f);
        fn(f, s);
        assert_int_equal(fclose(f), 0);
        return buf;
}

static void test_ctl_print_status_readable(void **state) {
        CtlWorker workers[2];
        CtlUser users[2];
        CtlHold holds[1];
        CtlStatus s = sample_status(workers, users, holds);
        _cleanup_free_ char *out = render(ctl_print_status, &s);

        print_message("%s", out);
        assert_non_null(strstr(out, "! elastic-pool group web\n"));
        assert_non_null(strstr(out, "Bus: org.elasticpool.Group1.web on the user bus"));
        assert_non_null(strstr(out, "Workers: 2 (2 routable, 0 starting, 0 leaving), 4 users logged in"));
        assert_non_null(strstr(out, "Holds: compaction held on w2 for 3.0s: w2 no report for 17s"));
        assert_non_null(strstr(out, "Drain: w2 for 1.5s (operator, operator retire): 1 of 2 users moved"));
        assert_non_null(strstr(out, "last: w3 retired"));
        assert_non_null(strstr(out, "Scaling: down to 1 workers"));
        assert_non_null(strstr(out, "100 reports, 3 spawns, 1 death, 5 moves"));
        /* the bars, and absent components as "-" (never 0.00) */
        assert_non_null(strstr(out, "w1 rec   routable  [########............] 0.42 cpu"));
        assert_non_null(strstr(out, "50.0M"));
        assert_non_null(
                strstr(out, "w2       routable  [....................] 0.00 -              -     -     -"));
        /* taken out of new work, and why; then what holds it */
        assert_non_null(strstr(out, "  out of new work: no report for 17s; no report for 17s\n"));
        assert_non_null(strstr(out, "     100  -\n")); /* w1 takes work, nothing holds it */
}

static void test_ctl_print_users_lines(void **state) {
        CtlWorker workers[2];
        CtlUser users[2];
        CtlHold holds[1];
        CtlStatus s = sample_status(workers, users, holds);
        _cleanup_free_ char *out = render(ctl_print_users, &s);

        assert_non_null(strstr(out, "USER "));
        assert_non_null(strstr(out, "alice                    w1             10     0.500s     0 no\n"));
        assert_non_null(strstr(out, "b\"ob                     w2              2     0.000s     1 yes\n"));
}

static void check_with_python(const char *json, const char *script) {
        char path[] = "/tmp/test-ctl.XXXXXX", cmd[256];
        _cleanup_fclose_ FILE *f = NULL;
        int fd, status;

        if (access(PYTHON, X_OK) < 0) {
                print_message("SKIP: %s not available to check the JSON\n", PYTHON);
                skip();
        }
        fd = mkstemp(path);
        assert_true(fd >= 0);
        f = fdopen(fd, "w");
        assert_non_null(f);
        fputs(json, f);
        assert_int_equal(fflush(f), 0);
        snprintf(cmd, sizeof cmd, "%s -c \"$EP_CHECK\" %s", PYTHON, path);
        assert_int_equal(setenv("EP_CHECK", script, 1), 0);
        status = system(cmd);
        (void) unlink(path);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("python3 refused the document:\n%s", json);
}

static void test_ctl_json_status_valid(void **state) {
        CtlWorker workers[2];
        CtlUser users[2];
        CtlHold holds[1];
        CtlStatus s = sample_status(workers, users, holds);
        _cleanup_free_ char *out = render(ctl_json_status, &s);

        check_with_python(
                out, "import json, sys\n"
                     "d = json.load(open(sys.argv[1]))\n"
                     "assert d['group'] == 'web' and d['bus'] == 'user', d\n"
                     "w1, w2 = d['workers']\n"
                     "assert w1['components'] == {'memory': 0.1, 'cpu': 0.42, 'executor': 0.25}, w1\n"
                     "assert w1['memory_bytes'] == 50 << 20 and w1['rps'] == 12.5 and w1['held'] is None\n"
                     "assert w2['components'] == {'memory': None, 'cpu': None, 'executor': None}, w2\n"
                     "assert w2['rps'] is None and w2['memory_bytes'] is None and w2['bottleneck'] is None\n"
                     "assert w2['held'] == 'no report for 17s'\n"
                     "assert w1['unhealthy'] is None and w2['unhealthy'] == 'no report for 17s', w2\n"
                     "assert [u['name'] for u in d['users']] == ['alice', 'b\"ob']\n"
                     "assert d['holds']['scale_up'] is None\n"
                     "assert d['holds']['compaction']['worker'] == 'w2'\n"
                     "assert d['drain']['worker'] == 'w2' and d['last_drain'] == 'w3 retired'\n"
                     "assert d['scale_target'] == 1\n"
                     "assert d['counters'] == {'reports': 100, 'spawns': 3, 'deaths': 1, 'moves': 5}\n");
}

static void test_ctl_json_lists_valid(void **state) {
        CtlWorker workers[2];
        CtlUser users[2];
        CtlHold holds[1];
        CtlStatus s = sample_status(workers, users, holds);
        _cleanup_free_ char *w = render(ctl_json_workers, &s), *u = render(ctl_json_users, &s);

        check_with_python(w, "import json, sys\n"
                             "d = json.load(open(sys.argv[1]))\n"
                             "assert [x['name'] for x in d] == ['w1', 'w2'], d\n");
        check_with_python(u, "import json, sys\n"
                             "d = json.load(open(sys.argv[1]))\n"
                             "assert d[1]['moving'] is True and d[1]['worker'] == 'w2', d\n");
        s.n_workers = s.n_users = s.n_holds = 0;
        s.drain = (CtlDrain){.why = "", .last = ""};
        s.scale_target = 0;
        free(w);
        w = render(ctl_json_status, &s);
        check_with_python(w, "import json, sys\n"
                             "d = json.load(open(sys.argv[1]))\n"
                             "assert d['workers'] == [] and d['users'] == [] and d['drain'] is None, d\n"
                             "assert d['last_drain'] is None and d['scale_target'] is None\n");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ctl_args_parse_table),
                cmocka_unit_test(test_ctl_parse_worker_forms),
                cmocka_unit_test(test_ctl_occupancy_bar_clamps),
                cmocka_unit_test(test_ctl_print_status_readable),
                cmocka_unit_test(test_ctl_print_users_lines),
                cmocka_unit_test(test_ctl_json_status_valid),
                cmocka_unit_test(test_ctl_json_lists_valid),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
