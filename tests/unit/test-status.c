/* SPDX-License-Identifier: MIT */
/* status.json on a Manager in memory (manager-fixture.c): a pool with a worker in every freshness and
 * most states, strings that need escaping, holds with their reasons; the document must be valid JSON
 * (checked with python3's json module) and say what the pool is. Also the atomic file write and a
 * stream that fails. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>

#include <cmocka.h>

#include "cleanup.h"
#include "fd-util.h"
#include "macro.h"
#include "manager-fixture.h"
#include "status.h"

#define PYTHON "/usr/bin/python3"

static Manager *m;
static char dir[] = "/tmp/test-status.XXXXXX";

static int setup(void **state) {
        m = fixture_manager_new();
        strcpy(dir + strlen(dir) - 6, "XXXXXX");
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
        char cmd[sizeof dir + 16];

        fixture_manager_free(m);
        m = NULL;
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        return system(cmd) == 0 ? 0 : -1;
}

static char *status_string(void) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        assert_non_null(f);
        assert_int_equal(status_write(&m->status, f), 0);
        assert_int_equal(fclose(f), 0);
        assert_non_null(buf);
        return buf;
}

static void write_file(const char *path, const char *content) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, content, strlen(content)), 0);
}

/* Runs python3 with script on the JSON document; the script's assertions are the test's. */
static void check_with_python(const char *json, const char *script) {
        char json_path[sizeof dir + 16], script_path[sizeof dir + 16], out_path[sizeof dir + 16], cmd[512];
        char out[8192] = "";
        int status;

        if (access(PYTHON, X_OK) < 0) {
                print_message("SKIP: %s not available to check the JSON\n", PYTHON);
                skip();
        }
        snprintf(json_path, sizeof json_path, "%s/status.json", dir);
        snprintf(script_path, sizeof script_path, "%s/check.py", dir);
        snprintf(out_path, sizeof out_path, "%s/out", dir);
        write_file(json_path, json);
        write_file(script_path, script);
        snprintf(cmd, sizeof cmd, "%s %s %s >%s 2>&1", PYTHON, script_path, json_path, out_path);
        status = system(cmd);
        (void) read_string_at(AT_FDCWD, out_path, out, sizeof out);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("python3 refused the document:\n%s\n--- document:\n%s", out, json);
}

static void test_status_write_empty_pool(void **state) {
        _cleanup_free_ char *s = status_string();

        assert_memory_equal(s, "{\"group\":\"test\",\"backend\":\"none\",\"stopping\":false,\"workers\":[],", 62);
        assert_int_equal(s[strlen(s) - 1], '\n');
        check_with_python(s, "import json, sys\n"
                             "d = json.load(open(sys.argv[1]))\n"
                             "assert d['workers'] == [], d\n"
                             "assert d['ledger']['n'] == 0 and d['ledger']['capacity'] == 0, d['ledger']\n"
                             "assert d['holds'] == {'scale_up': None, 'compaction': None}, d['holds']\n"
                             "assert d['spawn'] == {'failures': 0, 'given_up': True, 'last_error': ''}, d['spawn']\n"
                             "assert d['adopting'] == 0, d\n"
                             "assert d['counters'] == {'reports': 0, 'spawns': 0, 'deaths': 0, 'adopted': 0,\n"
                             "                         'channel_refused': 0}, d['counters']\n");
}

/* A worker in every freshness and most states, with strings that need escaping. */
static void busy_pool(void) {
        Worker *w[7];

        free(m->group);
        m->group = strdup("te\"st\\grp");
        /* what was wired with the old name reads the new one */
        m->pool.group = m->status.group = m->group;
        for (int i = 0; i < 5; i++)
                w[i] = fixture_add_worker(m, WORKER_ROUTABLE);
        w[5] = fixture_add_worker(m, WORKER_STARTING);
        w[6] = fixture_add_worker(m, WORKER_DRAINING);
        fixture_set_users(m, w[0], 2);
        w[0]->place.cgroup_path = strdup("/elastic-pool-test/w1");
        w[1]->place.unit = strdup("elastic-pool-\"test\"-w2.scope");
        w[0]->socket_path = strdup("/run/elastic-pool/test/w1.sock");
        w[0]->pid = 4242;

        /* w1 fresh, w2 stale, w3 missing its cpu, w4 without a channel, w5 new, w7 draining */
        fixture_report(w[1], READING(.cpu = 0.2));
        fixture_advance(20 * USEC_PER_SEC);
        fixture_report(w[0], READING(.cpu = 0.3, .memory = 1048576, .busy = 3, .total = 4));
        fixture_report(w[2], READING(.cpu = 0.1));
        fixture_report(w[2], READING());
        fixture_report(w[3], READING(.cpu = 0.1));
        fixture_report(w[6], READING(.cpu = 0.6));
        fixture_close_channel(w[3]);
        free(w[3]->channel_close_reason);
        w[3]->channel_close_reason = strdup("bad \"frame\"\n\ttab \\ \x01 end");
        w[4]->routable_at = fixture_now - USEC_PER_SEC;
        m->pool.throttle.last_error = strdup("cannot execute '/usr/bin/worker\t': \"No such file\"");
        m->pool.throttle.failures = 5;
        m->pool.reports_received = 7;
        fixture_advance(1500 * USEC_PER_MSEC);
        fixture_report(w[0], READING(.cpu = 0.3, .memory = 1048576, .busy = 3, .total = 4));
}

static void test_status_write_valid_json(void **state) {
        _cleanup_free_ char *s = NULL;

        busy_pool();
        s = status_string();
        check_with_python(
                s,
                "import json, sys\n"
                "d = json.load(open(sys.argv[1]))\n"
                "assert d['group'] == 'te\"st\\\\grp', d['group']\n"
                "assert d['backend'] == 'none'\n"
                "ws = {w['name']: w for w in d['workers']}\n"
                "assert [w['id'] for w in d['workers']] == [1, 2, 3, 4, 5, 6, 7]\n"
                "f = {n: w['freshness'] for n, w in ws.items()}\n"
                "assert f == {'w1': 'fresh', 'w2': 'stale', 'w3': 'missing', 'w4': 'no-channel', 'w5': 'new',\n"
                "             'w6': 'stale', 'w7': 'fresh'}, f\n"
                "st = {n: w['state'] for n, w in ws.items()}\n"
                "assert st['w1'] == 'routable' and st['w6'] == 'starting' and st['w7'] == 'draining', st\n"
                "w1 = ws['w1']\n"
                "assert w1['reception'] is True and ws['w2']['reception'] is False\n"
                "assert w1['pid'] == 4242 and w1['users'] == 2 and w1['rows'] == 2\n"
                "assert abs(w1['occupancy'] - 0.75) < 1e-4 and w1['bottleneck'] == 'executor', w1\n"
                "assert w1['components']['memory'] is None, w1['components']\n"
                "assert abs(w1['components']['cpu'] - 0.3) < 1e-4 and abs(w1['components']['executor'] - 0.75) < 1e-4\n"
                "assert w1['memory_bytes'] == 1048576 and abs(w1['cpu'] - 0.3) < 1e-4 and w1['last_report_ms_ago'] == 0\n"
                "assert w1['cgroup'] == '/elastic-pool-test/w1' and w1['socket'] == '/run/elastic-pool/test/w1.sock'\n"
                "assert 'not_fresh_for_ms' not in w1 and 'channel_closed' not in w1 and 'unit' not in w1\n"
                "w2 = ws['w2']\n"
                "assert w2['unit'] == 'elastic-pool-\"test\"-w2.scope', w2\n"
                "assert w2['not_fresh_for_ms'] == 21500 and w2['last_report_ms_ago'] == 21500, w2\n"
                "assert w2['socket'] == ''\n"
                "w3 = ws['w3']\n"
                "assert w3['missing'] == 'cpu' and w3['not_fresh_for_ms'] == 1500 and w3['cpu'] is None, w3\n"
                "w4 = ws['w4']\n"
                "assert w4['channel_closed'] == 'bad \"frame\"\\n\\ttab \\\\ \\x01 end', repr(w4['channel_closed'])\n"
                "assert w4['not_fresh_for_ms'] == 1500, w4\n"
                "assert 'last_report_ms_ago' in w4\n"
                "assert 'last_report_ms_ago' not in ws['w5'] and ws['w5']['rows'] == 0\n"
                "assert ws['w5']['bottleneck'] is None and ws['w5']['occupancy'] == 0\n"
                "l = d['ledger']\n"
                "assert l['n'] == 5 and abs(l['capacity'] - (0.5 + 4 * 0.8)) < 1e-4, l\n"
                "assert abs(l['threshold'] - 1.2) < 1e-4 and abs(l['headroom'] - (l['capacity'] - l['occupied'])) < 2e-4\n"
                "h = d['holds']\n"
                "assert h['scale_up'] == {'kind': 'wait', 'worker': 'w6', 'for_ms': 21500,\n"
                "                         'reason': 'w6 spawn in flight (1 in flight)'}, h\n"
                "assert h['compaction']['kind'] == 'wait' and h['compaction']['worker'] == 'w7', h\n"
                "assert h['compaction']['reason'] == 'w7 is retiring (1 retiring)', h\n"
                "assert d['spawn']['failures'] == 5 and d['spawn']['given_up'] is True\n"
                "assert d['spawn']['last_error'] == 'cannot execute \\'/usr/bin/worker\\t\\': \"No such file\"', d['spawn']\n"
                "assert d['counters']['reports'] == 8, d['counters']\n");
}

static void test_status_write_shows_held_reason(void **state) {
        _cleanup_free_ char *s = NULL;
        Worker *w[3];

        /* "Missing is never zero": a hold on a stale worker is shown with its reason */
        for (int i = 0; i < 3; i++) {
                w[i] = fixture_add_worker(m, WORKER_ROUTABLE);
                fixture_report(w[i], READING(.cpu = 0.5));
        }
        for (int round = 0; round < 4; round++) {
                fixture_advance(5 * USEC_PER_SEC);
                fixture_report(w[0], READING(.cpu = 0.5));
                fixture_report(w[1], READING(.cpu = 0.5));
        }
        fixture_advance(2 * USEC_PER_SEC);
        s = status_string();
        check_with_python(s, "import json, sys\n"
                             "d = json.load(open(sys.argv[1]))\n"
                             "c = d['holds']['compaction']\n"
                             "assert c['kind'] == 'held' and c['worker'] == 'w3', c\n"
                             "assert c['reason'].startswith('held: w3 no report for 20s'), c\n"
                             "assert c['for_ms'] == 7000, c  # held since w3 went stale, at 15 s\n"
                             "w3 = d['workers'][2]\n"
                             "assert w3['freshness'] == 'stale' and w3['not_fresh_for_ms'] == 22000, w3\n");
}

/* A drain under way shows its worker as evacuating, the users left and moved; a stopped one, why. */
static void test_status_write_shows_drain(void **state) {
        _cleanup_free_ char *s = NULL, *t = NULL;
        Worker *w[3];

        for (int i = 0; i < 3; i++) {
                w[i] = fixture_add_worker(m, WORKER_ROUTABLE);
                w[i]->capabilities = (1U << ELASTIC_POOL__CAPABILITY__CAPABILITY_SNAPSHOT_USERS) |
                                     (1U << ELASTIC_POOL__CAPABILITY__CAPABILITY_INSTALL_USERS);
        }
        fixture_set_users(m, w[2], 2);
        fixture_report(w[0], READING(.cpu = 0.05));
        fixture_report(w[1], READING(.cpu = 0.3));
        fixture_report(w[2], READING(.cpu = 0.02)); /* the ledger drains w3; its first snapshot is asked */
        fixture_advance(1500 * USEC_PER_MSEC);
        s = status_string();
        check_with_python(s,
                          "import json, sys\n"
                          "d = json.load(open(sys.argv[1]))\n"
                          "dr = d['drain']\n"
                          "assert dr['worker'] == 'w3' and dr['users_left'] == 2 and dr['moved'] == 0, dr\n"
                          "assert dr['for_ms'] == 1500 and dr['operator'] is False, dr\n"
                          "assert [w['evacuating'] for w in d['workers']] == [False, False, True], d\n"
                          "assert d['last_drain'] is None and d['drain_backoff_ms'] == 0, d\n"
                          "assert d['relief'] is None and d['relief_rounds'] == 0, d\n");

        moves_expire(&m->moves, fixture_now + 60 * USEC_PER_SEC); /* w3 never answers: its own failure */
        fixture_advance(16 * USEC_PER_SEC);
        fixture_report(w[0], READING(.cpu = 0.05));
        /* the second user's move, under way, ends too; with w2 and w3 stale now the drain is held */
        moves_expire(&m->moves, fixture_now);
        t = status_string();
        check_with_python(t, "import json, sys\n"
                             "d = json.load(open(sys.argv[1]))\n"
                             "assert d['drain'] is None, d['drain']\n"
                             "assert 'stopped after 0 of 2 users moved: held: w' in d['last_drain'], d\n"
                             "assert d['drains_stopped'] == 1, d\n"
                             "assert not any(w['evacuating'] for w in d['workers']), d\n");
}

static void test_status_write_escapes_controls(void **state) {
        _cleanup_free_ char *s = NULL;
        Worker *w = fixture_add_worker(m, WORKER_ROUTABLE);

        /* every control character is \u00XX: a raw one is invalid JSON */
        char reason[40];
        for (int i = 1; i < 32; i++)
                reason[i - 1] = (char) i;
        reason[31] = 0;
        fixture_close_channel(w);
        free(w->channel_close_reason);
        w->channel_close_reason = strdup(reason);
        s = status_string();
        for (const char *p = s; *p; p++)
                assert_true((unsigned char) *p >= 0x20 || *p == '\n');
        assert_non_null(strstr(s, "\\u0001\\u0002"));
        assert_non_null(strstr(s, "\\u001f\""));
        check_with_python(s, "import json, sys\n"
                             "d = json.load(open(sys.argv[1]))\n"
                             "assert d['workers'][0]['channel_closed'] == ''.join(chr(i) for i in range(1, 32))\n");
}

static void test_status_write_stream_error(void **state) {
        FILE *f = fopen("/dev/null", "re"); /* read-only: every write fails */

        assert_non_null(f);
        fixture_add_worker(m, WORKER_ROUTABLE);
        assert_int_equal(status_write(&m->status, f), -EIO);
        fclose(f);
}

static unsigned entries(const char *path) {
        unsigned n = 0;
        struct dirent *de;
        DIR *d = opendir(path);

        assert_non_null(d);
        while ((de = readdir(d)))
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}

static void test_status_write_file_atomic(void **state) {
        char path[sizeof dir + 32], content[65536];
        struct stat st;

        fixture_add_worker(m, WORKER_ROUTABLE);
        snprintf(path, sizeof path, "%s/status.json", dir);
        write_file(path, "old");
        assert_int_equal(status_write_file(&m->status, path), 0);
        /* replaced whole (no temp file left beside it), readable by every operator */
        assert_int_equal(entries(dir), 1);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0644);
        assert_true(read_string_at(AT_FDCWD, path, content, sizeof content) > 0);
        assert_memory_equal(content, "{\"group\":\"test\"", 15);
        check_with_python(content, "import json, sys\njson.load(open(sys.argv[1]))\n");

        snprintf(path, sizeof path, "%s/missing/status.json", dir);
        assert_int_equal(status_write_file(&m->status, path), -ENOENT);
        assert_int_equal(entries(dir), 3); /* status.json, and check.py and out of the python check */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_status_write_empty_pool, setup, teardown),
                cmocka_unit_test_setup_teardown(test_status_write_valid_json, setup, teardown),
                cmocka_unit_test_setup_teardown(test_status_write_shows_held_reason, setup, teardown),
                cmocka_unit_test_setup_teardown(test_status_write_shows_drain, setup, teardown),
                cmocka_unit_test_setup_teardown(test_status_write_escapes_controls, setup, teardown),
                cmocka_unit_test_setup_teardown(test_status_write_stream_error, setup, teardown),
                cmocka_unit_test_setup_teardown(test_status_write_file_atomic, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
