/* SPDX-License-Identifier: MIT */
/* manager_reload() on a Manager in memory (manager-fixture.c): a changed threshold reaches the policies
 * at once, a changed [worker] exec marks the running workers as running the old command, so does a
 * changed environment file under an unchanged configuration (and nothing that is no part of the worker
 * definition), an invalid file
 * keeps the running configuration and says file:line where status shows it, and a run on built-in
 * defaults has nothing to read again. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "config-worker.h"
#include "macro.h"
#include "manager-fixture.h"

static Manager *m;
static char path[] = "/tmp/test-reload.XXXXXX";

static int setup(void **state) {
        int fd = mkstemp(path);

        assert_true(fd >= 0);
        close(fd);
        m = fixture_manager_new();
        return 0;
}

static int teardown(void **state) {
        fixture_manager_free(m);
        m = NULL;
        (void) unlink(path);
        memcpy(path + strlen(path) - 6, "XXXXXX", 6);
        return 0;
}

static void write_config(const char *text) {
        FILE *f = fopen(path, "we");

        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

/* The fixture's manager as if it had been started with --config path. */
static void started_from_file(const char *text) {
        _cleanup_free_ char *error = NULL;

        write_config(text);
        config_done(&m->config);
        assert_int_equal(config_load(&m->config, path, &error), 0);
        capacity_setup_parameters(&m->capacity);
}

static void test_reload_applies_thresholds_and_timeouts(void **state) {
        _cleanup_free_ char *error = NULL;

        started_from_file("[worker]\nexec = /bin/true\n[policy]\nadmission_threshold = 0.8\n");
        write_config("[worker]\nexec = /bin/true\n[policy]\nadmission_threshold = 0.6\nrelief_moves = no\n"
                     "[pool]\nmove_timeout = 2s\n");
        assert_int_equal(manager_reload(m, &error), 0);
        assert_null(error);
        assert_true(m->capacity.policy.admission_threshold == 0.6);
        assert_false(m->config.relief_moves);
        assert_int_equal(m->moves.timeout, 2 * USEC_PER_SEC);
        assert_null(m->reload_error);
}

static void test_reload_new_exec_for_new_workers(void **state) {
        _cleanup_free_ char *error = NULL;
        Worker *w;
        char line[512];

        started_from_file("[worker]\nexec = /bin/true\n");
        w = fixture_add_worker(m, WORKER_ROUTABLE);
        assert_int_equal(w->exec_generation, m->pool.exec_generation);
        write_config("[worker]\nexec = /bin/false --new\n");
        assert_int_equal(manager_reload(m, &error), 0);
        assert_string_equal(m->config.exec[0], "/bin/false");
        assert_int_not_equal(w->exec_generation, m->pool.exec_generation); /* it runs the old one */
        status_line(&m->status, line, sizeof line);
        assert_null(strstr(line, "reload failed"));

        /* the same command again is no change */
        write_config("[worker]\nexec = /bin/false --new\n");
        unsigned before = m->pool.exec_generation;
        assert_int_equal(manager_reload(m, NULL), 0);
        assert_int_equal(m->pool.exec_generation, before);
}

/* Writes text to path (an environment file). */
static void write_file_at(const char *at, const char *text) {
        FILE *f = fopen(at, "we");

        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

static void test_reload_worker_definition_digest(void **state) {
        char env[] = "/tmp/test-reload-env.XXXXXX";
        _cleanup_free_ char *text = NULL, *other = NULL;
        unsigned generation;
        Worker *w;
        int fd = mkstemp(env);

        assert_true(fd >= 0);
        close(fd);
        write_file_at(env, "COLOR=blue\n");
        assert_true(asprintf(&text, "[worker]\nexec = /bin/true\nenvironment_file = %s\n", env) > 0);
        started_from_file(text);
        w = fixture_add_worker(m, WORKER_ROUTABLE);
        generation = m->pool.exec_generation;

        /* nothing changed: the workers stay */
        assert_int_equal(manager_reload(m, NULL), 0);
        assert_int_equal(m->pool.exec_generation, generation);

        /* only the environment file changed, the configuration file did not: the workers are replaced */
        write_file_at(env, "COLOR=green\n");
        assert_int_equal(manager_reload(m, NULL), 0);
        assert_int_equal(m->pool.exec_generation, generation + 1);
        assert_int_not_equal(w->exec_generation, m->pool.exec_generation);
        assert_int_equal(m->rollout.generation, m->pool.exec_generation); /* a rolling reload began */

        /* how the commander reads a worker is no part of what it runs */
        assert_true(asprintf(&other, "%s[worker]\nconcurrency = 4\ncpu_wall_cores = 2\n[pool]\nmin_workers = 2\n",
                             text) > 0);
        write_config(other);
        assert_int_equal(manager_reload(m, NULL), 0);
        assert_int_equal(m->pool.exec_generation, generation + 1);

        /* the working directory is */
        free(other);
        assert_true(asprintf(&other, "%sworking_directory = /tmp\n", text) > 0);
        write_config(other);
        assert_int_equal(manager_reload(m, NULL), 0);
        assert_int_equal(m->pool.exec_generation, generation + 2);

        /* a file that cannot be read any more fails the reload, and the running definition stays */
        assert_int_equal(unlink(env), 0);
        assert_int_equal(manager_reload(m, NULL), -EINVAL);
        assert_non_null(strstr(m->reload_error, "[worker] environment_file: cannot open"));
        assert_int_equal(m->pool.exec_generation, generation + 2);
        assert_string_equal(config_env_get(m->config.environment_file_vars, "COLOR"), "green");
}

static void test_reload_invalid_keeps_running_configuration(void **state) {
        _cleanup_free_ char *error = NULL, *want = NULL;
        char line[1024];

        started_from_file("[worker]\nexec = /bin/true\n[policy]\nadmission_threshold = 0.7\n");
        write_config("[worker]\nexec = /bin/true\n[policy]\nadmission_threshold = 7\n");
        assert_int_equal(manager_reload(m, &error), -EINVAL);
        assert_true(asprintf(&want, "%s:4: [policy] admission_threshold", path) > 0);
        assert_non_null(error);
        assert_non_null(strstr(error, want));
        assert_true(m->config.admission_threshold == 0.7);
        assert_true(m->capacity.policy.admission_threshold == 0.7);
        assert_non_null(m->reload_error);
        status_line(&m->status, line, sizeof line);
        assert_non_null(strstr(line, "reload failed, running on the previous configuration"));
        assert_non_null(strstr(line, want));

        /* fixed: the failure is no longer shown */
        write_config("[worker]\nexec = /bin/true\n[policy]\nadmission_threshold = 0.75\n");
        assert_int_equal(manager_reload(m, NULL), 0);
        assert_null(m->reload_error);
        assert_true(m->capacity.policy.admission_threshold == 0.75);
}

static void test_reload_on_builtin_defaults(void **state) {
        _cleanup_free_ char *error = NULL;

        assert_null(m->config.path);
        assert_int_equal(manager_reload(m, &error), -EOPNOTSUPP);
        assert_non_null(strstr(error, "built-in defaults"));
}

static void test_status_line(void **state) {
        char line[512];
        Worker *w[2];

        w[0] = fixture_add_worker(m, WORKER_ROUTABLE);
        w[1] = fixture_add_worker(m, WORKER_ROUTABLE);
        fixture_set_users(m, w[1], 3);
        fixture_report(w[0], READING(.cpu = 0.41));
        fixture_report(w[1], READING(.cpu = 0.63));
        status_line(&m->status, line, sizeof line);
        assert_string_equal(line, "2 workers, 3 users, occupancy 0.41/0.63, held: scale-up none, compaction none");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_reload_applies_thresholds_and_timeouts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reload_new_exec_for_new_workers, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reload_worker_definition_digest, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reload_invalid_keeps_running_configuration, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reload_on_builtin_defaults, setup, teardown),
                cmocka_unit_test_setup_teardown(test_status_line, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
