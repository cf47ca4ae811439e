/* SPDX-License-Identifier: MIT */
/* The configuration file: defaults, every key, units, exec quoting, list semantics, and for every kind of
 * mistake the one exact message an operator gets, with file and line. The [worker] runtime settings
 * (config-worker.c): environment= and the environment file's format, working_directory, user= and
 * group= resolved (as another user when run as root; as a commander that is not root in a child), and
 * the digest of the worker definition, which moves with every part of it and with nothing else. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "config-worker.h"
#include "config.h"
#include "macro.h"

#ifndef EP_SOURCE_DIR
#error "EP_SOURCE_DIR must name the source tree"
#endif

static char tmpdir[] = "/tmp/test-config.XXXXXX";
static unsigned n_files;

/* Writes size bytes of text to a new file in tmpdir; returns its path (malloc()ed). */
static char *write_file_n(const char *text, size_t size) {
        char *path;
        FILE *f;

        assert_true(asprintf(&path, "%s/%u.conf", tmpdir, n_files++) > 0);
        f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, size, f), size);
        assert_int_equal(fclose(f), 0);
        return path;
}

static char *write_file(const char *text) {
        return write_file_n(text, strlen(text));
}

/* Loads text into *c (which must be zeroed or hold a configuration); returns config_load()'s result. */
static int load_text(const char *text, Config *c, char **ret_error, char **ret_path) {
        char *path = write_file(text);
        int r = config_load(c, path, ret_error);

        if (ret_path)
                *ret_path = path;
        else
                free(path);
        return r;
}

/* Loads text, expecting failure with error and the message "PATH:" + suffix. */
static void assert_load_fails(const char *text, int error, const char *suffix) {
        _cleanup_free_ char *path = NULL, *message = NULL, *expected = NULL;
        Config c = {};

        assert_int_equal(load_text(text, &c, &message, &path), error);
        assert_true(asprintf(&expected, "%s:%s", path, suffix) > 0);
        assert_non_null(message);
        assert_string_equal(message, expected);
        /* nothing was published */
        assert_null(c.path);
        assert_null(c.exec);
}

static void assert_config_equal(const Config *a, const Config *b) {
        assert_int_equal(a->memory_limit, b->memory_limit);
        assert_true(a->cpu_wall_cores == b->cpu_wall_cores);
        assert_int_equal(a->concurrency, b->concurrency);
        assert_int_equal(a->backend, b->backend);
        assert_int_equal(a->min_workers, b->min_workers);
        assert_int_equal(a->max_workers, b->max_workers);
        assert_int_equal(a->min_free_memory, b->min_free_memory);
        assert_int_equal(a->spawn_timeout, b->spawn_timeout);
        assert_int_equal(a->drain_timeout, b->drain_timeout);
        assert_int_equal(a->stop_timeout, b->stop_timeout);
        assert_true(a->reception_threshold == b->reception_threshold);
        assert_true(a->admission_threshold == b->admission_threshold);
        assert_true(a->compaction_margin == b->compaction_margin);
        assert_int_equal(a->occupancy_interval, b->occupancy_interval);
        assert_int_equal(a->window_rows, b->window_rows);
        assert_int_equal(a->smoothing_rows, b->smoothing_rows);
        assert_int_equal(a->stale_after, b->stale_after);
        assert_int_equal(a->burst_window, b->burst_window);
        assert_int_equal(a->burst_queue, b->burst_queue);
        for (size_t i = 0; i <= CONFIG_LISTEN_MAX; i++) {
                assert_true(streq_ptr(a->listen[i], b->listen[i]));
                if (!a->listen[i])
                        break;
        }
        assert_true(streq_ptr(a->admin_listen, b->admin_listen));
        assert_int_equal(a->admin_allow_public, b->admin_allow_public);
        assert_int_equal(a->admin_population_timeout, b->admin_population_timeout);
        assert_int_equal(a->header_timeout, b->header_timeout);
        assert_int_equal(a->idle_timeout, b->idle_timeout);
        assert_int_equal(a->response_timeout, b->response_timeout);
        assert_int_equal(a->hold_timeout, b->hold_timeout);
        assert_int_equal(a->shutdown_timeout, b->shutdown_timeout);
        assert_int_equal(a->max_header_size, b->max_header_size);
        assert_int_equal(a->max_header_fields, b->max_header_fields);
        assert_int_equal(a->max_body_size, b->max_body_size);
        assert_int_equal(a->max_connections, b->max_connections);
        assert_int_equal(a->h2_max_concurrent_streams, b->h2_max_concurrent_streams);
        assert_int_equal(a->upstream_connections, b->upstream_connections);
        assert_true((a->trusted_proxies == NULL) == (b->trusted_proxies == NULL));
        assert_int_equal(a->cookie_max_age, b->cookie_max_age);
        assert_int_equal(a->max_revoked_users, b->max_revoked_users);
        assert_int_equal(a->relief_moves, b->relief_moves);
        assert_int_equal(a->move_timeout, b->move_timeout);
        assert_int_equal(a->user_expiry, b->user_expiry);
        assert_int_equal(a->websocket, b->websocket);
        assert_int_equal(a->websocket_idle_timeout, b->websocket_idle_timeout);
        assert_int_equal(config_env_length(a->environment), config_env_length(b->environment));
        assert_true(streq_ptr(a->environment_file, b->environment_file));
        assert_int_equal(config_env_length(a->environment_file_vars),
                         config_env_length(b->environment_file_vars));
        assert_true(streq_ptr(a->working_directory, b->working_directory));
        assert_true(streq_ptr(a->user, b->user));
        assert_true(streq_ptr(a->group, b->group));
        assert_int_equal(a->identity.set, b->identity.set);
        /* exec is compared by the callers that mean to (the packaged path is not the built one) */
        ConfigWorkerDigest da, db;
        config_worker_digest_parts(a, &da);
        config_worker_digest_parts(b, &db);
        for (ConfigWorkerPart p = CONFIG_WORKER_EXEC + 1; p < _CONFIG_WORKER_PART_MAX; p++)
                assert_true(da.part[p] == db.part[p]);
        assert_int_equal(a->min_body_rate, b->min_body_rate);
        assert_true(a->client_worker_share == b->client_worker_share);
        assert_int_equal(a->io_uring, b->io_uring);
}

static void test_config_init_defaults_values(void **state) {
        _cleanup_free_ char *error = NULL;
        Config c;

        assert_int_equal(config_init_defaults(&c), 0);
        assert_null(c.path);
        assert_string_equal(c.exec[0], EP_DEMO_WORKER_PATH);
        assert_null(c.exec[1]);
        assert_string_equal(c.exec_line, EP_DEMO_WORKER_PATH);
        assert_int_equal(c.memory_limit, 0);
        assert_true(c.cpu_wall_cores == 1.0);
        assert_int_equal(c.concurrency, 0);
        assert_int_equal(c.backend, BACKEND_AUTO);
        assert_int_equal(c.min_workers, 1);
        assert_int_equal(c.max_workers, 0);
        assert_int_equal(c.min_free_memory, 0);
        assert_int_equal(c.spawn_timeout, 10 * USEC_PER_SEC);
        assert_int_equal(c.drain_timeout, 30 * USEC_PER_SEC);
        assert_int_equal(c.stop_timeout, 10 * USEC_PER_SEC);
        assert_true(c.reception_threshold == 0.5);
        assert_true(c.admission_threshold == 0.8);
        assert_true(c.compaction_margin == 1.5);
        assert_true(c.client_worker_share == 0.5);
        assert_false(c.io_uring);
        assert_int_equal(c.occupancy_interval, 5 * USEC_PER_SEC);
        assert_int_equal(c.window_rows, 60);
        assert_int_equal(c.smoothing_rows, 6);
        assert_int_equal(c.stale_after, 3);
        assert_string_equal(c.listen[0], "127.0.0.1:8080");
        assert_null(c.listen[1]);
        assert_null(c.admin_listen);
        assert_false(c.admin_allow_public);
        assert_int_equal(c.admin_population_timeout, USEC_PER_SEC);
        assert_int_equal(c.header_timeout, 10 * USEC_PER_SEC);
        assert_int_equal(c.idle_timeout, 60 * USEC_PER_SEC);
        assert_int_equal(c.response_timeout, 60 * USEC_PER_SEC);
        assert_int_equal(c.hold_timeout, 10 * USEC_PER_SEC);
        assert_int_equal(c.shutdown_timeout, 30 * USEC_PER_SEC);
        assert_int_equal(c.max_header_size, 65536);
        assert_int_equal(c.max_header_fields, 100);
        assert_int_equal(c.max_body_size, 0);
        assert_int_equal(c.max_connections, 10000);
        assert_int_equal(c.h2_max_concurrent_streams, 100);
        assert_int_equal(c.upstream_connections, 64);
        assert_null(c.trusted_proxies);
        assert_int_equal(c.cookie_max_age, 7 * 24 * 3600 * USEC_PER_SEC);
        assert_int_equal(c.max_revoked_users, 100000);
        for (ConfigKey k = 0; k < _CONFIG_KEY_MAX; k++)
                assert_int_equal(c.line[k], 0);
        assert_int_equal(config_validate(&c, &error), 0);
        assert_null(error);

        config_done(&c);
        config_done(&c); /* idempotent */
        assert_null(c.exec);
}

/* How a row's member is read: a number, or the n-th string of a list. */
typedef enum Kind { U32, U64, DBL, BOOL, BACKEND, RELOAD, STR, STRV1, ARRAY1 } Kind;

typedef struct KeyCase {
        ConfigKey key;
        const char *section, *name, *value;
        Kind kind;
        size_t offset;
        uint64_t u;
        double d;
        const char *s; /* STR: the string; STRV1/ARRAY1: the list's second entry */
} KeyCase;

#define ROW(k, sec, member, value, kind, ...) \
        { CONFIG_KEY_##k, sec, #member, value, kind, offsetof(Config, member), __VA_ARGS__ }

static void assert_key_case(const Config *c, const KeyCase *t) {
        const uint8_t *p = (const uint8_t *) c + t->offset;

        switch (t->kind) {
        case U32:
                assert_int_equal(*(const uint32_t *) p, t->u);
                break;
        case U64:
                assert_int_equal(*(const uint64_t *) p, t->u);
                break;
        case BOOL:
                assert_int_equal(*(const bool *) p, t->u);
                break;
        case DBL:
                assert_true(*(const double *) p == t->d);
                break;
        case BACKEND:
                assert_int_equal(*(const BackendKind *) p, t->u);
                break;
        case RELOAD:
                assert_int_equal(*(const ReloadState *) p, t->u);
                break;
        case STR:
                assert_string_equal(*(char *const *) p, t->s);
                break;
        case STRV1:
                assert_string_equal((*(char **const *) p)[1], t->s);
                break;
        case ARRAY1:
                assert_string_equal(((char *const *) p)[1], t->s);
                break;
        }
}

/* The name of the user and group this test runs as: the ones user= and group= may always name. */
static void own_names(char *user, char *group, size_t size) {
        struct passwd *pw = getpwuid(geteuid());
        struct group *gr = getgrgid(getegid());

        assert_non_null(pw);
        assert_non_null(gr);
        snprintf(user, size, "%s", pw->pw_name);
        snprintf(group, size, "%s", gr->gr_name);
}

static void test_config_load_every_key(void **state) {
        _cleanup_free_ char *env_file = write_file("FROM_FILE=1\n");
        char user[64], group[64];

        own_names(user, group, sizeof user);
        const KeyCase cases[] = {
                ROW(EXEC, "worker", exec, "/usr/bin/app --port 'a b'", STRV1, .s = "--port"),
                ROW(MEMORY_LIMIT, "worker", memory_limit, "512M", U64, 512ULL << 20),
                ROW(CPU_WALL_CORES, "worker", cpu_wall_cores, "2.5", DBL, .d = 2.5),
                ROW(CONCURRENCY, "worker", concurrency, "8", U32, 8),
                ROW(ENVIRONMENT, "worker", environment, "A=1 'B=two words'", STRV1, .s = "B=two words"),
                ROW(ENVIRONMENT_FILE, "worker", environment_file, env_file, STR, .s = env_file),
                ROW(WORKING_DIRECTORY, "worker", working_directory, "/tmp", STR, .s = "/tmp"),
                ROW(USER, "worker", user, user, STR, .s = user),
                ROW(GROUP, "worker", group, group, STR, .s = group),
                ROW(BACKEND, "pool", backend, "cgroup", BACKEND, BACKEND_CGROUP),
                ROW(MIN_WORKERS, "pool", min_workers, "2", U32, 2),
                ROW(MAX_WORKERS, "pool", max_workers, "12", U32, 12),
                ROW(MIN_FREE_MEMORY, "pool", min_free_memory, "1G", U64, 1ULL << 30),
                ROW(SPAWN_TIMEOUT, "pool", spawn_timeout, "3s", U64, 3 * USEC_PER_SEC),
                ROW(DRAIN_TIMEOUT, "pool", drain_timeout, "2min", U64, 120 * USEC_PER_SEC),
                ROW(STOP_TIMEOUT, "pool", stop_timeout, "1500ms", U64, 1500 * USEC_PER_MSEC),
                ROW(MOVE_TIMEOUT, "pool", move_timeout, "3s", U64, 3 * USEC_PER_SEC),
                ROW(RECEPTION_THRESHOLD, "policy", reception_threshold, "0.4", DBL, .d = 0.4),
                ROW(ADMISSION_THRESHOLD, "policy", admission_threshold, "0.9", DBL, .d = 0.9),
                ROW(COMPACTION_MARGIN, "policy", compaction_margin, "2", DBL, .d = 2.0),
                ROW(OCCUPANCY_INTERVAL, "policy", occupancy_interval, "1s", U64, USEC_PER_SEC),
                ROW(WINDOW_ROWS, "policy", window_rows, "120", U32, 120),
                ROW(SMOOTHING_ROWS, "policy", smoothing_rows, "10", U32, 10),
                ROW(STALE_AFTER, "policy", stale_after, "4", U32, 4),
                ROW(RELIEF_MOVES, "policy", relief_moves, "no", BOOL, false),
                ROW(RPS_TARGET, "policy", rps_target, "50", DBL, .d = 50.0),
                ROW(RPS_UP_WINDOW, "policy", rps_up_window, "10s", U64, 10 * USEC_PER_SEC),
                ROW(RPS_DOWN_WINDOW, "policy", rps_down_window, "1min", U64, 60 * USEC_PER_SEC),
                ROW(DECISION_LOG, "policy", decision_log, "/var/log/ep-decisions.jsonl", STR,
                    .s = "/var/log/ep-decisions.jsonl"),
                ROW(BURST_WINDOW, "policy", burst_window, "2500ms", U64, 2500 * USEC_PER_MSEC),
                ROW(BURST_QUEUE, "policy", burst_queue, "3", U32, 3),
                ROW(READOPT, "pool", readopt, "no", BOOL, false),
                ROW(ADOPT_TIMEOUT, "pool", adopt_timeout, "2s", U64, 2 * USEC_PER_SEC),
                ROW(HUNG_TIMEOUT, "pool", hung_timeout, "0", U64, 0),
                ROW(UNANSWERED_LIMIT, "pool", unanswered_limit, "5", U32, 5),
                ROW(RELOAD_STATE, "pool", reload_state, "require-compatible", RELOAD,
                    RELOAD_STATE_REQUIRE_COMPATIBLE),
                ROW(RELOAD_TIMEOUT, "pool", reload_timeout, "90s", U64, 90 * USEC_PER_SEC),
                ROW(LISTEN, "frontend", listen, "0.0.0.0:80 [::]:8443", ARRAY1, .s = "[::]:8443"),
                ROW(ADMIN_LISTEN, "frontend", admin_listen, "/run/ep/admin.sock", STR,
                    .s = "/run/ep/admin.sock"),
                ROW(ADMIN_ALLOW_PUBLIC, "frontend", admin_allow_public, "yes", BOOL, true),
                ROW(ADMIN_POPULATION_TIMEOUT, "frontend", admin_population_timeout, "250ms", U64,
                    250 * USEC_PER_MSEC),
                ROW(HEADER_TIMEOUT, "frontend", header_timeout, "5s", U64, 5 * USEC_PER_SEC),
                ROW(IDLE_TIMEOUT, "frontend", idle_timeout, "30s", U64, 30 * USEC_PER_SEC),
                ROW(RESPONSE_TIMEOUT, "frontend", response_timeout, "2min", U64, 120 * USEC_PER_SEC),
                ROW(HOLD_TIMEOUT, "frontend", hold_timeout, "500ms", U64, 500 * USEC_PER_MSEC),
                ROW(SHUTDOWN_TIMEOUT, "frontend", shutdown_timeout, "1min", U64, 60 * USEC_PER_SEC),
                ROW(MAX_HEADER_SIZE, "frontend", max_header_size, "32K", U64, 32768),
                ROW(MAX_HEADER_FIELDS, "frontend", max_header_fields, "50", U32, 50),
                ROW(MAX_BODY_SIZE, "frontend", max_body_size, "10M", U64, 10ULL << 20),
                ROW(MAX_CONNECTIONS, "frontend", max_connections, "20000", U32, 20000),
                ROW(H2_MAX_CONCURRENT_STREAMS, "frontend", h2_max_concurrent_streams, "64", U32, 64),
                ROW(UPSTREAM_CONNECTIONS, "frontend", upstream_connections, "16", U32, 16),
                ROW(TRUSTED_PROXIES, "frontend", trusted_proxies, "10.0.0.0/8 ::1", STRV1, .s = "::1"),
                ROW(COOKIE_MAX_AGE, "frontend", cookie_max_age, "1d", U64, 86400 * USEC_PER_SEC),
                ROW(MAX_REVOKED_USERS, "frontend", max_revoked_users, "5000", U32, 5000),
                ROW(USER_EXPIRY, "frontend", user_expiry, "2h", U64, 7200 * USEC_PER_SEC),
                ROW(WEBSOCKET, "frontend", websocket, "no", BOOL, false),
                ROW(WEBSOCKET_IDLE_TIMEOUT, "frontend", websocket_idle_timeout, "90s", U64, 90 * USEC_PER_SEC),
                ROW(MIN_BODY_RATE, "frontend", min_body_rate, "2K", U64, 2048),
                ROW(CLIENT_WORKER_SHARE, "frontend", client_worker_share, "0.25", DBL, .d = 0.25),
                ROW(IO_URING, "frontend", io_uring, "yes", BOOL, true),
        };
        _cleanup_free_ char *text = NULL, *error = NULL, *path = NULL;
        bool seen[_CONFIG_KEY_MAX] = {};
        size_t size = 0;
        FILE *f;
        Config c = {};

        /* one "[section]\nkey = value\n" pair per row: row i sits on line 2i+2 */
        f = open_memstream(&text, &size);
        assert_non_null(f);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                fprintf(f, "[%s]\n%s = %s\n", cases[i].section, cases[i].name, cases[i].value);
        assert_int_equal(fclose(f), 0);

        assert_int_equal(load_text(text, &c, &error, &path), 0);
        assert_null(error);
        assert_string_equal(c.path, path);

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const KeyCase *t = &cases[i];

                assert_string_equal(config_key_name(t->key), t->name);
                assert_string_equal(config_key_section(t->key), t->section);
                assert_int_equal(c.line[t->key], 2 * i + 2);
                assert_key_case(&c, t);
                seen[t->key] = true;
        }
        for (ConfigKey k = 0; k < _CONFIG_KEY_MAX; k++)
                assert_true(seen[k]); /* the table covers every key */

        /* the rest of the lists */
        assert_string_equal(c.exec[0], "/usr/bin/app");
        assert_string_equal(c.exec[2], "a b");
        assert_null(c.exec[3]);
        assert_string_equal(c.exec_line, "/usr/bin/app --port 'a b'");
        assert_string_equal(c.listen[0], "0.0.0.0:80");
        assert_null(c.listen[2]);
        assert_string_equal(c.trusted_proxies[0], "10.0.0.0/8");
        assert_null(c.trusted_proxies[2]);
        assert_string_equal(c.environment[0], "A=1");
        assert_null(c.environment[2]);
        /* what the runtime keys name was read */
        assert_string_equal(config_env_get(c.environment_file_vars, "FROM_FILE"), "1");
        assert_true(c.identity.set);
        assert_int_equal(c.identity.uid, geteuid());
        assert_int_equal(c.identity.gid, getegid());
        config_done(&c);
}

static void test_config_load_duration_units(void **state) {
        static const struct {
                const char *text;
                usec_t usec;
        } cases[] = {
                {"250us", 250},
                {"500ms", 500 * USEC_PER_MSEC},
                {"5s", 5 * USEC_PER_SEC},
                {"5", 5 * USEC_PER_SEC}, /* a bare number is seconds */
                {"1.5s", 1500 * USEC_PER_MSEC},
                {"5 s", 5 * USEC_PER_SEC},
                {"2min", 120 * USEC_PER_SEC},
                {"1h", 3600 * USEC_PER_SEC},
                {"7d", 7 * 86400 * USEC_PER_SEC},
                {"10msec", 10 * USEC_PER_MSEC},
                {"3sec", 3 * USEC_PER_SEC},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *text = NULL, *error = NULL;
                Config c = {};

                assert_true(asprintf(&text, "[pool]\nspawn_timeout = %s\n", cases[i].text) > 0);
                assert_int_equal(load_text(text, &c, &error, NULL), 0);
                assert_int_equal(c.spawn_timeout, cases[i].usec);
                config_done(&c);
        }
        assert_load_fails(
                "[pool]\nspawn_timeout = 5 parsecs\n", -EINVAL,
                "2: [pool] spawn_timeout: '5 parsecs' is not a duration (a number followed by us, ms, "
                "s, min, h or d; a bare number is seconds)");
        assert_load_fails(
                "[pool]\nspawn_timeout = 1min 30s\n", -EINVAL,
                "2: [pool] spawn_timeout: '1min 30s' is not a duration (a number followed by us, ms, "
                "s, min, h or d; a bare number is seconds)");
}

static void test_config_load_size_units(void **state) {
        static const struct {
                const char *text;
                uint64_t bytes;
        } cases[] = {
                {"0", 0},
                {"512", 512},
                {"64K", 65536},
                {"64k", 65536},
                {"64KiB", 65536},
                {"1M", 1 << 20},
                {"1.5G", 3ULL << 29},
                {"2G", 2ULL << 30},
                {"1T", 1ULL << 40},
                {"100 MB", 100ULL << 20},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *text = NULL, *error = NULL;
                Config c = {};

                assert_true(asprintf(&text, "[worker]\nmemory_limit = %s\n", cases[i].text) > 0);
                assert_int_equal(load_text(text, &c, &error, NULL), 0);
                assert_int_equal(c.memory_limit, cases[i].bytes);
                config_done(&c);
        }
        assert_load_fails("[worker]\nmemory_limit = 12Q\n", -EINVAL,
                          "2: [worker] memory_limit: '12Q' is not a size (bytes, or a number followed by K, "
                          "M, G or T)");
}

static void test_config_exec_split_quoting(void **state) {
        static const struct {
                const char *line;
                const char *argv[6];
        } cases[] = {
                {"/bin/true", {"/bin/true"}},
                {"  /bin/echo   a\tb  ", {"/bin/echo", "a", "b"}},
                {"/bin/sh -c 'echo $HOME; exit 0'", {"/bin/sh", "-c", "echo $HOME; exit 0"}},
                {"/bin/echo \"a b\" \"say \\\"hi\\\"\"", {"/bin/echo", "a b", "say \"hi\""}},
                {"/bin/echo \"back\\slash \\\\ \\$x\"", {"/bin/echo", "back\\slash \\ $x"}},
                {"/bin/echo a\\ b \\'q\\'", {"/bin/echo", "a b", "'q'"}},
                {"/bin/echo '' \"\" x''y", {"/bin/echo", "", "", "xy"}},
                {"/bin/echo pre'mid dle'post", {"/bin/echo", "premid dlepost"}},
                {"/bin/echo ~ * $PATH #hash", {"/bin/echo", "~", "*", "$PATH", "#hash"}},
        };
        static const struct {
                const char *line, *reason;
        } bad[] = {
                {"", "empty command"},
                {"   \t ", "empty command"},
                {"/bin/sh -c 'echo", "unterminated single quote"},
                {"/bin/echo \"a", "unterminated double quote"},
                {"/bin/echo a\\", "trailing backslash"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *joined = NULL;
                char **argv = NULL, **again = NULL;
                const char *reason = NULL;
                size_t n = 0;

                assert_int_equal(config_exec_split(cases[i].line, &argv, &reason), 0);
                for (; cases[i].argv[n]; n++)
                        assert_string_equal(argv[n], cases[i].argv[n]);
                assert_null(argv[n]);

                /* config_exec_to_string() gives a line that splits back into the same argv */
                joined = config_exec_to_string(argv);
                assert_non_null(joined);
                assert_int_equal(config_exec_split(joined, &again, &reason), 0);
                for (size_t j = 0; j <= n; j++)
                        assert_true(streq_ptr(argv[j], again[j]));

                for (size_t j = 0; j < n; j++)
                        free(argv[j]), free(again[j]);
                free(argv), free(again);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char **argv = NULL;
                const char *reason = NULL;

                assert_int_equal(config_exec_split(bad[i].line, &argv, &reason), -EINVAL);
                assert_null(argv);
                assert_string_equal(reason, bad[i].reason);
        }
}

static void test_config_exec_to_string_quotes(void **state) {
        char *argv[] = {(char *) "/usr/bin/app", (char *) "--name=web", (char *) "a b",
                        (char *) "it's",         (char *) "",           NULL};
        _cleanup_free_ char *s = config_exec_to_string(argv);

        assert_string_equal(s, "/usr/bin/app --name=web 'a b' 'it'\\''s' ''");
}

static void test_config_load_exec_keeps_line(void **state) {
        _cleanup_free_ char *error = NULL;
        Config c = {};

        assert_int_equal(load_text("[worker]\nexec = /bin/sh -c 'echo #1; exit 0' ; not a comment\n", &c,
                                   &error, NULL),
                         0);
        assert_string_equal(c.exec[0], "/bin/sh");
        assert_string_equal(c.exec[2], "echo #1; exit 0");
        assert_string_equal(c.exec[3], ";");
        assert_string_equal(c.exec_line, "/bin/sh -c 'echo #1; exit 0' ; not a comment");
        config_done(&c);
}

static void test_config_load_listen_append_and_reset(void **state) {
        static const struct {
                const char *text;
                const char *listen[4];
        } cases[] = {
                /* the file's first listen= replaces the built-in address */
                {"[frontend]\nlisten = 0.0.0.0:80\n", {"0.0.0.0:80"}},
                /* repeating the key appends */
                {"[frontend]\nlisten = 0.0.0.0:80 [::1]:81\nlisten = 127.0.0.1:82\n",
                 {"0.0.0.0:80", "[::1]:81", "127.0.0.1:82"}},
                /* an empty assignment resets the list */
                {"[frontend]\nlisten = 0.0.0.0:80\nlisten =\nlisten = 127.0.0.1:82\n", {"127.0.0.1:82"}},
                /* and may leave it empty: only sockets passed by systemd */
                {"[frontend]\nlisten =\n", {NULL}},
                /* no listen= at all keeps the default */
                {"[frontend]\nidle_timeout = 5s\n", {"127.0.0.1:8080"}},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *error = NULL;
                Config c = {};
                size_t n = 0;

                assert_int_equal(load_text(cases[i].text, &c, &error, NULL), 0);
                for (; cases[i].listen[n]; n++)
                        assert_string_equal(c.listen[n], cases[i].listen[n]);
                assert_null(c.listen[n]);
                config_done(&c);
        }

        /* trusted_proxies follows the same rules */
        _cleanup_free_ char *error = NULL;
        Config c = {};
        assert_int_equal(load_text("[frontend]\ntrusted_proxies = 10.0.0.1\ntrusted_proxies = fd00::/8\n",
                                   &c, &error, NULL),
                         0);
        assert_string_equal(c.trusted_proxies[0], "10.0.0.1");
        assert_string_equal(c.trusted_proxies[1], "fd00::/8");
        assert_null(c.trusted_proxies[2]);
        assert_int_equal(
                load_text("[frontend]\ntrusted_proxies = 10.0.0.1\ntrusted_proxies =\n", &c, &error, NULL),
                0);
        assert_null(c.trusted_proxies);
        /* "unix" trusts the peers of a Unix socket listener; nothing does by default */
        assert_int_equal(load_text("[frontend]\ntrusted_proxies = unix 10.0.0.1\n", &c, &error, NULL), 0);
        assert_string_equal(c.trusted_proxies[0], CONFIG_TRUSTED_UNIX);
        assert_string_equal(c.trusted_proxies[1], "10.0.0.1");
        assert_null(c.trusted_proxies[2]);
        config_done(&c);

        /* 16 addresses fit, a 17th does not */
        _cleanup_free_ char *sixteen = strdup("[frontend]\nlisten ="), *seventeen = NULL;
        for (unsigned p = 1; p <= CONFIG_LISTEN_MAX; p++) {
                char *t;
                assert_true(asprintf(&t, "%s 127.0.0.1:%u", sixteen, 9000 + p) > 0);
                free(sixteen);
                sixteen = t;
        }
        assert_true(asprintf(&seventeen, "%s\nlisten = 127.0.0.1:9999\n", sixteen) > 0);
        assert_int_equal(load_text(sixteen, &c, &error, NULL), 0);
        assert_string_equal(c.listen[CONFIG_LISTEN_MAX - 1], "127.0.0.1:9016");
        assert_null(c.listen[CONFIG_LISTEN_MAX]);
        config_done(&c);
        assert_load_fails(seventeen, -EINVAL, "3: [frontend] listen: more than 16 addresses");
}

/* Every kind of mistake, each with the one message it gets. */
static void test_config_load_error_kinds(void **state) {
        static const struct {
                const char *text, *message; /* message: after "PATH:" */
        } cases[] = {
                /* sections */
                {"[poool]\n", "1: [poool]: unknown section; did you mean [pool]?"},
                {"[pool]\n[database]\nmin_workers = 1\n", "2: [database]: unknown section (the sections are "
                                                          "[worker], [pool], [policy] and [frontend])"},
                {"[pool\nmin_workers = 1\n", "1: '[pool': section header lacks ']'"},
                {"[]\n", "1: '[]': empty section name"},
                {"[pool] # the pool\n", "1: '[pool] # the pool': unexpected text after the section header "
                                        "(comments must be on a line "
                                        "of their own)"},
                /* keys */
                {"[pool]\nmin_worker = 2\n", "2: [pool] min_worker: unknown key; did you mean min_workers?"},
                {"[pool]\ncolour = blue\n", "2: [pool] colour: unknown key"},
                {"[pool]\nlisten = 127.0.0.1:80\n",
                 "2: [pool] listen: unknown key in [pool]; it belongs in [frontend]"},
                {"[pool]\nmax_body_sizes = 1M\n",
                 "2: [pool] max_body_sizes: unknown key; did you mean [frontend] max_body_size?"},
                {"min_workers = 2\n[pool]\n",
                 "1: min_workers: assignment before any section header (min_workers belongs in [pool])"},
                {"colour = blue\n", "1: colour: assignment before any section header"},
                /* lines */
                {"hello\n", "1: expected '[section]' or 'key = value', got 'hello'"},
                {"[pool]\n  min_workers 2\n", "2: [pool]: expected 'key = value', got 'min_workers 2'"},
                {"[pool]\nmin_workers: 2\n", "2: [pool]: expected 'key = value', got 'min_workers: 2'"},
                {"[pool]\n= 2\n", "2: [pool]: expected 'key = value', got '= 2'"},
                /* booleans */
                {"[policy]\nrelief_moves = sometimes\n",
                 "2: [policy] relief_moves: 'sometimes' is not a boolean (yes/no, true/false, on/off, 1/0)"},
                {"[policy]\nrelief_moves =\n",
                 "2: [policy] relief_moves: no value given (remove the line to get the default)"},
                /* numbers */
                {"[pool]\nmin_workers = two\n", "2: [pool] min_workers: 'two' is not a positive integer"},
                {"[pool]\nmin_workers = -1\n", "2: [pool] min_workers: '-1' is negative"},
                {"[pool]\nmin_workers = 99999999999\n",
                 "2: [pool] min_workers: '99999999999' is out of range"},
                {"[pool]\nmin_workers = 2 # two\n",
                 "2: [pool] min_workers: '2 # two' is not a positive integer (comments must be on a line of "
                 "their own)"},
                {"[pool]\nmin_workers =\n",
                 "2: [pool] min_workers: no value given (remove the line to get the default)"},
                {"[pool]\nmax_workers = lots\n",
                 "2: [pool] max_workers: 'lots' is not a non-negative integer or 'unbounded'"},
                {"[worker]\nconcurrency = 1.5\n",
                 "2: [worker] concurrency: '1.5' is not a non-negative integer"},
                {"[policy]\nadmission_threshold = high\n",
                 "2: [policy] admission_threshold: 'high' is not a number"},
                {"[policy]\nadmission_threshold = 1.5\n",
                 "2: [policy] admission_threshold: 1.5 is outside (0, 1]"},
                {"[policy]\nreception_threshold = 0\n",
                 "2: [policy] reception_threshold: 0 is outside (0, 1]"},
                {"[policy]\nreception_threshold = -0.2\n",
                 "2: [policy] reception_threshold: -0.2 is outside (0, 1]"},
                {"[policy]\ncompaction_margin = 0.5\n", "2: [policy] compaction_margin: 0.5 is less than 1 "
                                                        "(after a compaction the survivors would be "
                                                        "over capacity)"},
                {"[worker]\ncpu_wall_cores = 0\n",
                 "2: [worker] cpu_wall_cores: 0 is not positive (must be greater than 0)"},
                {"[policy]\nstale_after = 0\n",
                 "2: [policy] stale_after: 0 is not positive (must be greater than 0)"},
                {"[policy]\nwindow_rows = 100000\n",
                 "2: [policy] window_rows: 100000 is greater than 65536"},
                {"[pool]\nspawn_timeout = 0ms\n",
                 "2: [pool] spawn_timeout: 0ms is not positive (must be greater than 0)"},
                {"[pool]\nspawn_timeout = -5s\n", "2: [pool] spawn_timeout: '-5s' is negative"},
                {"[frontend]\nclient_worker_share = 0\n",
                 "2: [frontend] client_worker_share: 0 is outside (0, 1]"},
                {"[frontend]\nmax_connections = 0\n",
                 "2: [frontend] max_connections: 0 is not positive (must be greater than 0)"},
                {"[pool]\nbackend = docker\n",
                 "2: [pool] backend: 'docker' is not one of auto, scope, cgroup, none"},
                /* exec */
                {"[worker]\nexec =\n", "2: [worker] exec: no command given"},
                {"[worker]\nexec = /bin/sh -c 'echo\n", "2: [worker] exec: unterminated single quote"},
                {"[worker]\nexec = python3 app.py\n", "2: [worker] exec: 'python3' is not an absolute path"},
                /* addresses */
                {"[frontend]\nlisten = localhost:80\n", "2: [frontend] listen: 'localhost:80': not a "
                                                        "numeric IPv4 address (host names are not resolved) "
                                                        "(expected IPV4:PORT or [IPV6]:PORT)"},
                {"[frontend]\nlisten = 127.0.0.1\n",
                 "2: [frontend] listen: '127.0.0.1': missing ':PORT' (expected IPV4:PORT or [IPV6]:PORT)"},
                {"[frontend]\nlisten = 127.0.0.1:0\n",
                 "2: [frontend] listen: '127.0.0.1:0': the port must be a number from 1 to 65535 (expected "
                 "IPV4:PORT or [IPV6]:PORT)"},
                {"[frontend]\nlisten = ::1:80\n", "2: [frontend] listen: '::1:80': an IPv6 address goes in "
                                                  "brackets, as in [::1]:8080 (expected "
                                                  "IPV4:PORT or [IPV6]:PORT)"},
                {"[frontend]\nlisten = /run/x.sock\n",
                 "2: [frontend] listen: '/run/x.sock': Unix socket paths are not accepted here (expected "
                 "IPV4:PORT or [IPV6]:PORT)"},
                {"[frontend]\nlisten = 127.0.0.1:80\nlisten = 127.0.0.1:80\n",
                 "3: [frontend] listen: '127.0.0.1:80' is listed twice"},
                {"[frontend]\nadmin_listen = 0.0.0.0:9000\n",
                 "2: [frontend] admin_listen: '0.0.0.0:9000' is not a loopback address or a Unix socket "
                 "path (the admin listener shows every user and the pool's state, and must not be public: "
                 "set admin_allow_public = yes to listen there all the same)"},
                {"[frontend]\nadmin_listen = 192.0.2.7:9000\nadmin_allow_public = no\n",
                 "2: [frontend] admin_listen: '192.0.2.7:9000' is not a loopback address or a Unix socket "
                 "path (the admin listener shows every user and the pool's state, and must not be public: "
                 "set admin_allow_public = yes to listen there all the same)"},
                /* the override does not make the public listener's address an admin one */
                {"[frontend]\nlisten = 0.0.0.0:9000\nadmin_allow_public = yes\nadmin_listen = 192.0.2.7:9000\n",
                 "4: [frontend] admin_listen: '192.0.2.7:9000' overlaps listen address '0.0.0.0:9000' (line "
                 "2); the admin listener must never be reachable through the public one"},
                {"[frontend]\nadmin_population_timeout = 0\n",
                 "2: [frontend] admin_population_timeout: 0 is not positive (must be greater than 0)"},
                {"[frontend]\nadmin_listen = 127.0.0.1:8080\n",
                 "2: [frontend] admin_listen: '127.0.0.1:8080' overlaps listen address '127.0.0.1:8080' "
                 "(the "
                 "default); the admin listener must never be reachable through the public one"},
                {"[frontend]\nlisten = [::]:9000\nadmin_listen = 127.0.0.1:9000\n",
                 "3: [frontend] admin_listen: '127.0.0.1:9000' overlaps listen address '[::]:9000' (line "
                 "2); the "
                 "admin listener must never be reachable through the public one"},
                {"[frontend]\ntrusted_proxies = 10.0.0.0/8 10.0.0.0/33\n",
                 "2: [frontend] trusted_proxies: '10.0.0.0/33' is not an IP address, ADDRESS/PREFIXLEN or "
                 "'unix'"},
                /* only the exact word, not a path nor another case */
                {"[frontend]\ntrusted_proxies = Unix\n",
                 "2: [frontend] trusted_proxies: 'Unix' is not an IP address, ADDRESS/PREFIXLEN or 'unix'"},
                {"[frontend]\ntrusted_proxies = unix:/run/x.sock\n",
                 "2: [frontend] trusted_proxies: 'unix:/run/x.sock' is not an IP address, ADDRESS/PREFIXLEN "
                 "or 'unix'"},
                {"[frontend]\nmax_revoked_users = 0\n",
                 "2: [frontend] max_revoked_users: 0 is not positive (must be greater than 0)"},
                /* cross-key */
                {"[policy]\nwindow_rows = 4\n",
                 "2: [policy] window_rows: 4 is less than smoothing_rows = 6 (the default)"},
                {"[policy]\nsmoothing_rows = 10\nwindow_rows = 8\n",
                 "2: [policy] smoothing_rows: 10 is greater than window_rows = 8 (line 3)"},
                /* the first error stops the parse */
                {"[pool]\nmin_workers = x\nmax_workers = y\n[nowhere]\n",
                 "2: [pool] min_workers: 'x' is not a positive integer"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                assert_load_fails(cases[i].text, -EINVAL, cases[i].message);
}

/* A public admin address is refused without the override and taken with it, wherever in the file the
 * override stands; loopback and Unix paths need none. */
static void test_config_load_admin_allow_public(void **state) {
        static const char *const accepted[] = {
                "[frontend]\nadmin_listen = 0.0.0.0:9000\nadmin_allow_public = yes\n",
                "[frontend]\nadmin_allow_public = yes\nadmin_listen = [::]:9000\n",
                "[frontend]\nadmin_listen = 127.0.0.2:9000\n",
                "[frontend]\nadmin_listen = [::1]:9000\n",
                "[frontend]\nadmin_listen = /run/ep/admin.sock\n",
        };
        Config c = {};

        for (size_t i = 0; i < ELEMENTSOF(accepted); i++) {
                _cleanup_free_ char *error = NULL;

                assert_int_equal(load_text(accepted[i], &c, &error, NULL), 0);
                assert_null(error);
                assert_non_null(c.admin_listen);
        }
        assert_true(c.admin_allow_public == false);
        config_done(&c);
}

static void test_config_load_min_above_max_names_both_lines(void **state) {
        assert_load_fails("[pool]\nmax_workers = 2\n\n# more\nmin_workers = 4\n", -EINVAL,
                          "5: [pool] min_workers: 4 is greater than max_workers = 2 (line 2)");
        assert_load_fails("[pool]\nmin_workers = 4\nmax_workers = 3\n", -EINVAL,
                          "2: [pool] min_workers: 4 is greater than max_workers = 3 (line 3)");

        /* unbounded, in its three spellings, takes any min_workers */
        static const char *const unbounded[] = {"0", "unbounded", ""};
        for (size_t i = 0; i < ELEMENTSOF(unbounded); i++) {
                _cleanup_free_ char *text = NULL, *error = NULL;
                Config c = {};
                assert_true(asprintf(&text, "[pool]\nmax_workers = 3\nmin_workers = 40\nmax_workers = %s\n",
                                     unbounded[i]) > 0);
                assert_int_equal(load_text(text, &c, &error, NULL), 0);
                assert_int_equal(c.max_workers, 0);
                assert_int_equal(c.min_workers, 40);
                config_done(&c);
        }
}

static void test_config_load_missing_file_enoent(void **state) {
        _cleanup_free_ char *path = NULL, *error = NULL, *expected = NULL;
        Config c = {};

        assert_true(asprintf(&path, "%s/does-not-exist.conf", tmpdir) > 0);
        assert_int_equal(config_load(&c, path, &error), -ENOENT);
        assert_true(asprintf(&expected, "%s: cannot open: No such file or directory", path) > 0);
        assert_string_equal(error, expected);
        assert_null(c.exec);

        /* a NULL ret_error is allowed */
        assert_int_equal(config_load(&c, path, NULL), -ENOENT);
}

static void test_config_load_directory_eisdir(void **state) {
        _cleanup_free_ char *error = NULL, *expected = NULL;
        Config c = {};

        assert_int_equal(config_load(&c, tmpdir, &error), -EISDIR);
        assert_true(asprintf(&expected, "%s: cannot read: Is a directory", tmpdir) > 0);
        assert_string_equal(error, expected);
}

static void test_config_load_long_line(void **state) {
        _cleanup_free_ char *text = NULL, *error = NULL, *path = NULL, *expected = NULL;
        const size_t prefix = strlen("exec = /bin/echo ");
        Config c = {};

        /* exactly CONFIG_LINE_MAX bytes before the line ending (CRLF, the worst case) still fits */
        text = malloc(CONFIG_LINE_MAX + 64);
        assert_non_null(text);
        strcpy(text, "[worker]\nexec = /bin/echo ");
        memset(text + strlen(text), 'x', CONFIG_LINE_MAX - prefix);
        strcpy(text + strlen("[worker]\n") + CONFIG_LINE_MAX, "\r\n[pool]\nmin_workers = 2\n");
        assert_int_equal(load_text(text, &c, &error, NULL), 0);
        assert_int_equal(strlen(c.exec[1]), CONFIG_LINE_MAX - prefix);
        assert_int_equal(strlen(c.exec_line), CONFIG_LINE_MAX - strlen("exec = "));
        assert_int_equal(c.min_workers, 2); /* the next lines are read as lines, nothing split */
        config_done(&c);

        /* one byte more is refused rather than split into two lines */
        strcpy(text, "[worker]\nexec = /bin/echo ");
        memset(text + strlen(text), 'x', CONFIG_LINE_MAX - prefix + 1);
        strcpy(text + strlen("[worker]\n") + CONFIG_LINE_MAX + 1, "\n[pool]\nmin_workers = 2\n");
        assert_int_equal(load_text(text, &c, &error, &path), -EINVAL);
        assert_true(asprintf(&expected, "%s:2: line is longer than 65536 bytes", path) > 0);
        assert_string_equal(error, expected);
        assert_null(c.exec);

        /* and a long bad value is cut short in the message */
        free(error);
        free(expected);
        free(path);
        strcpy(text, "[pool]\nmin_workers = ");
        memset(text + strlen(text), '7', 1000);
        strcpy(text + strlen("[pool]\nmin_workers = ") + 1000, "x\n");
        assert_int_equal(load_text(text, &c, &error, &path), -EINVAL);
        char sevens[69];
        memset(sevens, '7', sizeof(sevens) - 1);
        sevens[sizeof(sevens) - 1] = 0;
        assert_true(asprintf(&expected, "%s:2: [pool] min_workers: '%s...' is not a positive integer", path,
                             sevens) > 0);
        assert_string_equal(error, expected);
}

static void test_config_load_crlf(void **state) {
        _cleanup_free_ char *error = NULL, *path = NULL, *expected = NULL;
        Config c = {};

        assert_int_equal(load_text("# web\r\n[worker]\r\nexec = /usr/bin/app 'a b'\r\n\r\n[pool]\r\n"
                                   "min_workers = 2\r\nspawn_timeout = 500ms\r\n[frontend]\r\n"
                                   "listen = 0.0.0.0:80 [::]:80\r\n",
                                   &c, &error, NULL),
                         0);
        assert_string_equal(c.exec[1], "a b");
        assert_string_equal(c.exec_line, "/usr/bin/app 'a b'");
        assert_int_equal(c.min_workers, 2);
        assert_int_equal(c.spawn_timeout, 500 * USEC_PER_MSEC);
        assert_string_equal(c.listen[1], "[::]:80");
        assert_null(c.listen[2]);
        assert_int_equal(c.line[CONFIG_KEY_LISTEN], 9);
        config_done(&c);

        /* the message carries no stray CR */
        assert_int_equal(load_text("[pool]\r\nmin_workers 2\r\n", &c, &error, &path), -EINVAL);
        assert_true(asprintf(&expected, "%s:2: [pool]: expected 'key = value', got 'min_workers 2'", path) >
                    0);
        assert_string_equal(error, expected);
}

static void test_config_load_empty_file(void **state) {
        _cleanup_free_ char *error = NULL, *path = NULL;
        Config c = {}, d;

        assert_int_equal(config_init_defaults(&d), 0);
        assert_int_equal(load_text("", &c, &error, &path), 0);
        assert_null(error);
        assert_string_equal(c.path, path);
        assert_config_equal(&c, &d);
        assert_string_equal(c.exec_line, d.exec_line);

        /* comments, blank lines and bare section headers are just as empty */
        assert_int_equal(load_text("\n# comment\n; comment\n   # indented comment\n\n[pool]\n[frontend]\n",
                                   &c, &error, NULL),
                         0);
        assert_config_equal(&c, &d);
        config_done(&c);
        config_done(&d);
}

static void test_config_load_layout_tolerance(void **state) {
        _cleanup_free_ char *error = NULL;
        Config c = {};

        /* a BOM, indentation, blanks around '=', a reopened section, a repeated key (the last one wins) */
        assert_int_equal(
                load_text("\xEF\xBB\xBF[pool]\n   min_workers=2\n\tmax_workers   =   9  \n[policy]\n"
                          "window_rows = 30\n[pool]\nmin_workers = 3\n",
                          &c, &error, NULL),
                0);
        assert_int_equal(c.min_workers, 3);
        assert_int_equal(c.line[CONFIG_KEY_MIN_WORKERS], 7);
        assert_int_equal(c.max_workers, 9);
        assert_int_equal(c.window_rows, 30);
        config_done(&c);
}

static void test_config_load_nul_byte(void **state) {
        static const char text[] = "[pool]\nmin_workers = 1\0 junk\n";
        _cleanup_free_ char *path = write_file_n(text, sizeof(text) - 1), *error = NULL, *expected = NULL;
        Config c = {};

        assert_int_equal(config_load(&c, path, &error), -EINVAL);
        assert_true(asprintf(&expected, "%s:2: line contains a NUL byte", path) > 0);
        assert_string_equal(error, expected);
}

static void test_config_load_failure_keeps_config(void **state) {
        _cleanup_free_ char *error = NULL, *path = NULL;
        Config c = {};

        assert_int_equal(load_text("[pool]\nmin_workers = 2\n", &c, &error, &path), 0);
        assert_int_equal(load_text("[pool]\nmin_workers = 5\nmax_workers = x\n", &c, &error, NULL), -EINVAL);
        assert_non_null(error);
        assert_int_equal(c.min_workers, 2);
        assert_string_equal(c.path, path);

        /* and a successful load replaces everything, path included */
        free(error);
        free(path);
        assert_int_equal(load_text("[pool]\nmax_workers = 4\n", &c, &error, &path), 0);
        assert_null(error);
        assert_int_equal(c.min_workers, 1);
        assert_int_equal(c.max_workers, 4);
        assert_string_equal(c.path, path);
        config_done(&c);
}

static void test_config_validate_code_built(void **state) {
        Config c;

        assert_int_equal(config_init_defaults(&c), 0);

        static const struct {
                const char *message;
        } expected[] = {
                {"[policy] admission_threshold: 1.5 is outside (0, 1]"},
                {"[pool] min_workers: 5 is greater than max_workers = 3"},
                {"[policy] smoothing_rows: 6 is greater than window_rows = 4"},
                {"[worker] exec: 'app' is not an absolute path"},
                {"[pool] stop_timeout: 0us is not positive (must be greater than 0)"},
                {"[frontend] listen: 'nowhere': missing ':PORT' (expected IPV4:PORT or [IPV6]:PORT)"},
                {"[worker] exec: empty command"},
                {"[worker] environment: 'LISTEN_FDS=1': LISTEN_FDS is set by the commander for each worker "
                 "(the "
                 "handover of its listening socket)"},
                {"[worker] working_directory: 'srv' is not an absolute path"},
                {"[worker] environment_file: 'web.env' is not an absolute path"},
        };
        for (size_t i = 0; i < ELEMENTSOF(expected); i++) {
                _cleanup_free_ char *error = NULL;
                Config t;
                char *saved_exec0 = c.exec[0], *saved_listen0 = c.listen[0];
                char *no_argv[] = {NULL};
                char *listen_fds[] = {(char *) "A=1", (char *) "LISTEN_FDS=1", NULL};

                t = c;
                switch (i) {
                case 0:
                        t.admission_threshold = 1.5;
                        break;
                case 1:
                        t.min_workers = 5, t.max_workers = 3;
                        break;
                case 2:
                        t.window_rows = 4;
                        break;
                case 3:
                        t.exec[0] = (char *) "app";
                        break;
                case 4:
                        t.stop_timeout = 0;
                        break;
                case 5:
                        t.listen[0] = (char *) "nowhere";
                        break;
                case 6:
                        t.exec = no_argv;
                        break;
                case 7:
                        t.environment = listen_fds;
                        break;
                case 8:
                        t.working_directory = (char *) "srv";
                        break;
                case 9:
                        t.environment_file = (char *) "web.env";
                        break;
                }
                assert_int_equal(config_validate(&t, &error), -EINVAL);
                assert_string_equal(error, expected[i].message);
                c.exec[0] = saved_exec0;
                c.listen[0] = saved_listen0;
        }

        /* a configuration that came from a file names it even for keys the file did not set */
        _cleanup_free_ char *error = NULL, *expected_msg = NULL;
        free(c.path);
        c.path = strdup("/etc/elastic-pool/web.conf");
        c.line[CONFIG_KEY_MIN_WORKERS] = 7;
        c.min_workers = 5, c.max_workers = 3;
        assert_int_equal(config_validate(&c, &error), -EINVAL);
        assert_string_equal(error, "/etc/elastic-pool/web.conf:7: [pool] min_workers: 5 is greater than "
                                   "max_workers = 3 (the default)");
        config_done(&c);
}

static void test_backend_kind_to_string_round_trip(void **state) {
        for (BackendKind k = 0; k < _BACKEND_KIND_MAX; k++)
                assert_int_equal(backend_kind_from_string(backend_kind_to_string(k)), k);
        assert_string_equal(backend_kind_to_string(BACKEND_SCOPE), "scope");
        assert_null(backend_kind_to_string(_BACKEND_KIND_MAX));
        assert_null(backend_kind_to_string(_BACKEND_KIND_INVALID));
        assert_int_equal(backend_kind_from_string("Scope"), _BACKEND_KIND_INVALID);
        assert_int_equal(backend_kind_from_string(NULL), _BACKEND_KIND_INVALID);
}

static void test_config_parse_socket_address_forms(void **state) {
        struct sockaddr_storage sa;
        socklen_t len;

        assert_int_equal(config_parse_socket_address("127.0.0.1:8080", false, &sa, &len), 0);
        assert_int_equal(sa.ss_family, AF_INET);
        assert_int_equal(len, sizeof(struct sockaddr_in));
        assert_int_equal(ntohs(((struct sockaddr_in *) &sa)->sin_port), 8080);

        assert_int_equal(config_parse_socket_address("[::1]:443", false, &sa, &len), 0);
        assert_int_equal(sa.ss_family, AF_INET6);
        assert_int_equal(ntohs(((struct sockaddr_in6 *) &sa)->sin6_port), 443);

        assert_int_equal(config_parse_socket_address("/run/elastic-pool/web/admin.sock", true, &sa, &len),
                         0);
        assert_int_equal(sa.ss_family, AF_UNIX);

        static const char *const bad[] = {
                "",
                "8080",
                "127.0.0.1",
                "127.0.0.1:",
                "127.0.0.1:65536",
                "127.0.0.1:-1",
                "127.0.0.1:http",
                "example.com:80",
                "[::1]",
                "[::1]80",
                "[::1:80",
                "::1:80",
                "[127.0.0.1]:80",
                "1.2.3.4:80x",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(config_parse_socket_address(bad[i], true, &sa, &len), -EINVAL);
        assert_int_equal(config_parse_socket_address("/run/x.sock", false, &sa, &len), -EINVAL);

        char long_path[200];
        memset(long_path, 'a', sizeof(long_path) - 1);
        long_path[0] = '/';
        long_path[sizeof(long_path) - 1] = 0;
        assert_int_equal(config_parse_socket_address(long_path, true, &sa, &len), -EINVAL);
}

static void test_config_parse_ip_prefix_forms(void **state) {
        ConfigPrefix p;

        assert_int_equal(config_parse_ip_prefix("10.1.2.3", &p), 0);
        assert_int_equal(p.family, AF_INET);
        assert_int_equal(p.prefixlen, 32);
        assert_int_equal(config_parse_ip_prefix("10.0.0.0/8", &p), 0);
        assert_int_equal(p.prefixlen, 8);
        assert_int_equal(config_parse_ip_prefix("fd00::/8", &p), 0);
        assert_int_equal(p.family, AF_INET6);
        assert_int_equal(p.prefixlen, 8);
        assert_int_equal(config_parse_ip_prefix("::1", &p), 0);
        assert_int_equal(p.prefixlen, 128);

        static const char *const bad[] = {
                "",      "/8",          "10.0.0.0/",   "10.0.0.0/33", "::/129", "10.0.0.0/+8", "10.0.0.0/ 8",
                "[::1]", "proxy.local", "10.0.0.0/8/8"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(config_parse_ip_prefix(bad[i], &p), -EINVAL);
}

/* ---- [worker] runtime settings ---- */

/* Loads "[worker]\n" + text; returns config_load()'s result. */
static int load_worker(const char *text, Config *c, char **ret_error, char **ret_path) {
        _cleanup_free_ char *full = NULL;

        assert_true(asprintf(&full, "[worker]\n%s", text) > 0);
        return load_text(full, c, ret_error, ret_path);
}

static void test_config_load_environment_append_and_reset(void **state) {
        static const struct {
                const char *text;
                const char *env[5];
        } cases[] = {
                {"environment = A=1\n", {"A=1"}},
                /* several words a line, quoted like exec=; each line adds */
                {"environment = A=1 \"B=two words\" 'C=$HOME; #x'\nenvironment = D=\n",
                 {"A=1", "B=two words", "C=$HOME; #x", "D="}},
                /* a key set again takes its new value, in its old place */
                {"environment = A=1 B=2\nenvironment = A=3\n", {"A=3", "B=2"}},
                /* an empty assignment resets */
                {"environment = A=1\nenvironment =\nenvironment = B=2\n", {"B=2"}},
                {"environment = A=1\nenvironment =\n", {NULL}},
                /* a value may hold '=' */
                {"environment = URL=http://x/?a=b\n", {"URL=http://x/?a=b"}},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *error = NULL;
                Config c = {};
                size_t n = 0;

                assert_int_equal(load_worker(cases[i].text, &c, &error, NULL), 0);
                for (; cases[i].env[n]; n++)
                        assert_string_equal(c.environment[n], cases[i].env[n]);
                assert_int_equal(config_env_length(c.environment), n);
                config_done(&c);
        }
}

static void test_config_load_worker_runtime_errors(void **state) {
        static const struct {
                const char *text, *message; /* message: after "PATH:" */
        } cases[] = {
                {"environment = FOO\n", "2: [worker] environment: 'FOO' is not an assignment (KEY=VALUE)"},
                {"environment = =x\n", "2: [worker] environment: '=x': no variable name before the '='"},
                {"environment = A=1 1X=y\n", "2: [worker] environment: '1X=y': '1X' is not a variable name "
                                             "(letters, digits and '_', not "
                                             "starting with a digit)"},
                {"environment = 'MY VAR=1'\n",
                 "2: [worker] environment: 'MY VAR=1': 'MY VAR' is not a variable name (letters, digits and "
                 "'_', not starting with a digit)"},
                {"environment = A-B=1\n",
                 "2: [worker] environment: 'A-B=1': 'A-B' is not a variable name (letters, digits and '_', "
                 "not starting with a digit)"},
                {"environment = LISTEN_FDS=3\n",
                 "2: [worker] environment: 'LISTEN_FDS=3': LISTEN_FDS is set by the commander for each "
                 "worker (the handover of its listening socket)"},
                {"environment = LISTEN_PID=1\n",
                 "2: [worker] environment: 'LISTEN_PID=1': LISTEN_PID is set by the commander for each "
                 "worker (the handover of its listening socket)"},
                {"environment = LISTEN_FDNAMES=http\n",
                 "2: [worker] environment: 'LISTEN_FDNAMES=http': LISTEN_FDNAMES is set by the commander "
                 "for each worker (the handover of its listening socket)"},
                {"environment = NOTIFY_SOCKET=/run/x\n",
                 "2: [worker] environment: 'NOTIFY_SOCKET=/run/x': NOTIFY_SOCKET would let a worker speak "
                 "for the service to systemd; the commander alone does"},
                {"environment = ELASTIC_POOL_CHANNEL_FD=9\n",
                 "2: [worker] environment: 'ELASTIC_POOL_CHANNEL_FD=9': ELASTIC_POOL_* variables are set "
                 "by the commander for each worker (its channel, group and number)"},
                {"environment = \"A=1\n", "2: [worker] environment: unterminated double quote"},
                /* a refused word leaves the line out whole, and the first error stops the parse */
                {"environment = A=1\nenvironment = B=2 LISTEN_PID=1\n",
                 "3: [worker] environment: 'LISTEN_PID=1': LISTEN_PID is set by the commander for each "
                 "worker (the handover of its listening socket)"},
                {"environment_file = etc/web.env\n",
                 "2: [worker] environment_file: 'etc/web.env' is not an absolute path"},
                {"environment_file = -etc/web.env\n",
                 "2: [worker] environment_file: 'etc/web.env' is not an absolute path"},
                {"environment_file = -\n", "2: [worker] environment_file: '-' names no file"},
                {"environment_file = /nonexistent/web.env\n",
                 "2: [worker] environment_file: cannot open '/nonexistent/web.env': No such file or "
                 "directory"},
                {"environment_file = /tmp\n",
                 "2: [worker] environment_file: cannot read '/tmp': Is a directory"},
                {"working_directory = srv/web\n",
                 "2: [worker] working_directory: 'srv/web' is not an absolute path"},
                {"working_directory = /nonexistent/web\n",
                 "2: [worker] working_directory: '/nonexistent/web': No such file or directory"},
                {"working_directory = /dev/null\n",
                 "2: [worker] working_directory: '/dev/null' is not a directory"},
                {"user = no-such-user-ep\n",
                 "2: [worker] user: unknown user 'no-such-user-ep' (not in the user database)"},
                {"group = no-such-group-ep\n",
                 "2: [worker] group: unknown group 'no-such-group-ep' (not in the group database)"},
                {"user = 3999999999\n",
                 "2: [worker] user: uid 3999999999 has no entry in the user database, so no primary group: "
                 "name one with group="},
                /* (uid_t) -1 is no uid, so it is a name, and there is no user of that name */
                {"user = 4294967295\n",
                 "2: [worker] user: unknown user '4294967295' (not in the user database)"},
                /* the error is at the line of the key at fault, not where the parse ended */
                {"user = no-such-user-ep\n[pool]\nmin_workers = 2\n",
                 "2: [worker] user: unknown user 'no-such-user-ep' (not in the user database)"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *text = NULL;
                assert_true(asprintf(&text, "[worker]\n%s", cases[i].text) > 0);
                assert_load_fails(text, -EINVAL, cases[i].message);
        }
}

/* Loads a configuration naming an environment file of the given text. */
static int load_env_file(const char *file_text, Config *c, char **ret_error, char **ret_conf,
                         char **ret_env) {
        _cleanup_free_ char *env = write_file(file_text), *text = NULL;
        int r;

        assert_true(asprintf(&text, "environment_file = %s\n", env) > 0);
        r = load_worker(text, c, ret_error, ret_conf);
        if (ret_env)
                *ret_env = TAKE_PTR(env);
        return r;
}

static void test_config_env_file_format(void **state) {
        static const char text[] = "\xEF\xBB\xBF# a comment\n"
                                   "; another\n"
                                   "\n"
                                   "   \t\n"
                                   "PLAIN=value with blanks   \n"
                                   "  SPACED = x\r\n"
                                   "SQ=' single $quoted # kept '\n"
                                   "DQ=\"say \\\"hi\\\" \\\\ \\$HOME \\n\"\n"
                                   "EMPTY=\n"
                                   "EMPTYQ=\"\"\n"
                                   "HASH=a#b;c\n"
                                   "PLAIN=second\n";
        static const struct {
                const char *key, *value;
        } want[] = {
                {"PLAIN", "second"}, /* a key set twice: the last line wins, in the first one's place */
                {"SPACED", "x"},
                {"SQ", " single $quoted # kept "},
                {"DQ", "say \"hi\" \\ $HOME \\n"},
                {"EMPTY", ""},
                {"EMPTYQ", ""},
                {"HASH", "a#b;c"},
        };
        _cleanup_free_ char *error = NULL;
        Config c = {};

        assert_int_equal(load_env_file(text, &c, &error, NULL, NULL), 0);
        assert_null(error);
        assert_int_equal(config_env_length(c.environment_file_vars), ELEMENTSOF(want));
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                assert_true(startswith(c.environment_file_vars[i], want[i].key));
                assert_string_equal(config_env_get(c.environment_file_vars, want[i].key), want[i].value);
        }
        config_done(&c);

        /* a file of comments only sets nothing */
        assert_int_equal(load_env_file("# nothing\n\n", &c, &error, NULL, NULL), 0);
        assert_null(c.environment_file_vars);
        config_done(&c);
}

static void test_config_env_file_errors(void **state) {
        static const struct {
                const char *text, *message; /* message: after "ENVPATH:" */
        } cases[] = {
                {"A=1\njunk\n", "2: expected KEY=VALUE, got 'junk'"},
                {"A='x\n", "1: A: unterminated single quote"},
                {"A=\"x\n", "1: A: unterminated double quote"},
                {"A=\"x\" y\n", "1: A: text after the closing quote"},
                {"BAD KEY=1\n",
                 "1: 'BAD KEY=1': 'BAD KEY' is not a variable name (letters, digits and '_', not "
                 "starting with a digit)"},
                {"export A=1\n",
                 "1: 'export A=1': 'export A' is not a variable name (letters, digits and '_', "
                 "not starting with a digit)"},
                {"\n\nLISTEN_PID=1\n",
                 "3: 'LISTEN_PID=1': LISTEN_PID is set by the commander for each worker "
                 "(the handover of its listening socket)"},
                {"ELASTIC_POOL_GROUP=x\n",
                 "1: 'ELASTIC_POOL_GROUP=x': ELASTIC_POOL_* variables are set by the "
                 "commander for each worker (its channel, group and number)"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *error = NULL, *conf = NULL, *env = NULL, *want = NULL;
                Config c = {};

                assert_int_equal(load_env_file(cases[i].text, &c, &error, &conf, &env), -EINVAL);
                assert_true(asprintf(&want, "%s:2: [worker] environment_file: %s:%s", conf, env,
                                     cases[i].message) > 0);
                assert_string_equal(error, want);
                assert_null(c.path);
        }

        /* a NUL byte */
        _cleanup_free_ char *env = write_file_n("A=1\nB=\0x\n", 9), *text = NULL, *error = NULL,
                            *conf = NULL, *want = NULL;
        Config c = {};
        assert_true(asprintf(&text, "environment_file = %s\n", env) > 0);
        assert_int_equal(load_worker(text, &c, &error, &conf), -EINVAL);
        assert_true(asprintf(&want, "%s:2: [worker] environment_file: %s:2: line contains a NUL byte", conf,
                             env) > 0);
        assert_string_equal(error, want);
}

static void test_config_env_file_optional_and_reread(void **state) {
        _cleanup_free_ char *error = NULL, *env = NULL, *text = NULL, *missing = NULL, *conf = NULL;
        Config c = {};
        FILE *f;

        /* "-PATH": a missing file is none */
        assert_true(asprintf(&missing, "%s/no-such.env", tmpdir) > 0);
        assert_true(asprintf(&text, "environment_file = -%s\n", missing) > 0);
        assert_int_equal(load_worker(text, &c, &error, NULL), 0);
        assert_string_equal(c.environment_file, missing);
        assert_true(c.environment_file_optional);
        assert_null(c.environment_file_vars);
        config_done(&c);
        /* but any other failure to read it is still an error */
        free(text);
        assert_true(asprintf(&text, "environment_file = -%s\n", tmpdir) > 0);
        assert_int_equal(load_worker(text, &c, &error, NULL), -EINVAL);
        assert_non_null(strstr(error, "Is a directory"));
        error = mfree(error);

        /* environment= overrides the file's variables; the merged list is what a worker gets */
        env = write_file("A=from-file\nB=from-file\n");
        free(text);
        assert_true(asprintf(&text,
                             "[worker]\nenvironment = B=from-conf C=from-conf\nenvironment_file = %s\n",
                             env) > 0);
        conf = write_file(text);
        assert_int_equal(config_load(&c, conf, &error), 0);
        char **merged = NULL;
        assert_int_equal(config_worker_environment(&c, &merged), 0);
        assert_int_equal(config_env_length(merged), 3);
        assert_string_equal(config_env_get(merged, "A"), "from-file");
        assert_string_equal(config_env_get(merged, "B"), "from-conf");
        assert_string_equal(config_env_get(merged, "C"), "from-conf");
        merged = config_env_free(merged);
        uint64_t before = config_worker_digest(&c);

        /* the file is read again on every load: a reload of the same configuration sees the change */
        f = fopen(env, "we");
        assert_non_null(f);
        fputs("A=changed\n", f);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(config_load(&c, conf, &error), 0);
        assert_string_equal(config_env_get(c.environment_file_vars, "A"), "changed");
        assert_null(config_env_get(c.environment_file_vars, "B"));
        assert_true(config_worker_digest(&c) != before);
        config_done(&c);

        /* nothing at all: no list */
        assert_int_equal(config_init_defaults(&c), 0);
        assert_int_equal(config_worker_environment(&c, &merged), 0);
        assert_null(merged);
        config_done(&c);
}

static void test_config_load_working_directory(void **state) {
        _cleanup_free_ char *error = NULL, *text = NULL;
        Config c = {};

        assert_true(asprintf(&text, "working_directory = %s\n", tmpdir) > 0);
        assert_int_equal(load_worker(text, &c, &error, NULL), 0);
        assert_string_equal(c.working_directory, tmpdir);
        /* empty: back to the commander's own */
        assert_int_equal(load_worker("working_directory = /tmp\nworking_directory =\n", &c, &error, NULL),
                         0);
        assert_null(c.working_directory);
        config_done(&c);
}

/* user= and group= as root: names and numbers, the primary group, the supplementary groups. */
static void test_config_load_user_group_as_root(void **state) {
        _cleanup_free_ char *error = NULL;
        Config c = {};

        if (geteuid() != 0)
                skip();
        assert_non_null(getpwnam("nobody"));
        assert_non_null(getgrnam("nogroup"));
        gid_t nogroup = getgrnam("nogroup")->gr_gid;
        uid_t nobody = getpwnam("nobody")->pw_uid;

        /* by name: the primary group and the supplementary groups (getgrouplist: its primary one here) */
        assert_int_equal(load_worker("user = nobody\n", &c, &error, NULL), 0);
        assert_true(c.identity.set);
        assert_int_equal(c.identity.uid, nobody);
        assert_int_equal(c.identity.gid, getpwnam("nobody")->pw_gid);
        assert_string_equal(c.identity.user_name, "nobody");
        assert_int_equal(c.identity.n_groups, 1);
        assert_int_equal(c.identity.groups[0], c.identity.gid);
        uint64_t by_name = config_worker_digest(&c);

        /* by number: the same identity, named after the user database */
        char text[128];
        snprintf(text, sizeof text, "user = %u\n", (unsigned) nobody);
        assert_int_equal(load_worker(text, &c, &error, NULL), 0);
        assert_string_equal(c.identity.user_name, "nobody");
        assert_true(config_worker_digest(&c) == by_name);

        /* group= replaces the primary group, and is among the groups */
        assert_int_equal(load_worker("user = nobody\ngroup = root\n", &c, &error, NULL), 0);
        assert_int_equal(c.identity.gid, 0);
        assert_string_equal(c.identity.group_name, "root");
        bool has_root = false;
        for (size_t i = 0; i < c.identity.n_groups; i++)
                has_root |= c.identity.groups[i] == 0;
        assert_true(has_root);

        /* a uid without an entry works with group=, and has no supplementary groups */
        assert_int_equal(load_worker("user = 3999999999\ngroup = 3999999998\n", &c, &error, NULL), 0);
        assert_int_equal(c.identity.uid, 3999999999U);
        assert_int_equal(c.identity.gid, 3999999998U);
        assert_string_equal(c.identity.user_name, "3999999999");
        assert_string_equal(c.identity.group_name, "3999999998");
        assert_int_equal(c.identity.n_groups, 0);

        /* group= alone: our user, that group, no supplementary groups */
        assert_int_equal(load_worker("group = nogroup\n", &c, &error, NULL), 0);
        assert_int_equal(c.identity.uid, 0);
        assert_int_equal(c.identity.gid, nogroup);
        assert_int_equal(c.identity.n_groups, 0);

        /* empty: the commander's own */
        assert_int_equal(load_worker("user = nobody\nuser =\n", &c, &error, NULL), 0);
        assert_false(c.identity.set);
        assert_null(c.user);
        config_done(&c);
}

/* user= and group= of a commander that is not root: only its own ids. Run in a child that became
 * nobody; its exit status is the number of the first check that failed. */
static int check_as_nobody(void) {
        _cleanup_free_ char *error = NULL;
        ConfigIdentity id = {};
        ConfigKey k = _CONFIG_KEY_INVALID;
        char want[256];

        if (config_identity_resolve("root", NULL, &id, &k, &error) != -EINVAL || k != CONFIG_KEY_USER)
                return 2;
        snprintf(want, sizeof want,
                 "'root' (uid 0): the commander runs as uid %u, and only root can run workers "
                 "as another user",
                 (unsigned) geteuid());
        if (!streq(error, want))
                return 3;
        error = mfree(error);
        if (config_identity_resolve(NULL, "root", &id, &k, &error) != -EINVAL || k != CONFIG_KEY_GROUP)
                return 4;
        snprintf(want, sizeof want,
                 "'root' (gid 0): the commander runs as gid %u, and only root can run workers "
                 "in another group",
                 (unsigned) getegid());
        if (!streq(error, want))
                return 5;
        error = mfree(error);
        /* its own user is fine, and there are no groups to set: it could not */
        if (config_identity_resolve("nobody", NULL, &id, &k, &error) != 0 || !id.set || id.n_groups != 0)
                return 6;
        config_identity_done(&id);
        return 0;
}

static void test_config_identity_resolve_not_root(void **state) {
        siginfo_t si = {};
        pid_t pid;

        if (geteuid() != 0)
                skip(); /* it needs to become nobody */
        struct passwd *pw = getpwnam("nobody");
        assert_non_null(pw);
        uid_t uid = pw->pw_uid;
        gid_t gid = pw->pw_gid;
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
                        _exit(1);
                _exit(check_as_nobody());
        }
        assert_int_equal(waitid(P_PID, (id_t) pid, &si, WEXITED), 0);
        assert_int_equal(si.si_code, CLD_EXITED);
        assert_int_equal(si.si_status, 0);
}

/* One [worker] line per case; the digest of each differs from the base's and from every other. */
static void test_config_worker_digest_per_setting(void **state) {
        _cleanup_free_ char *env_a = write_file("X=1\n"), *env_b = write_file("X=2\n"),
                            *env_same = write_file("X=1\n");
        char line[8][256];
        uint64_t digest[ELEMENTSOF(line)];
        _cleanup_free_ char *error = NULL;
        Config c = {};
        size_t n = 0;

        snprintf(line[n++], sizeof line[0], "%s", "");
        snprintf(line[n++], sizeof line[0], "%s", "exec = /bin/true --other\n");
        snprintf(line[n++], sizeof line[0], "%s", "memory_limit = 1G\n");
        snprintf(line[n++], sizeof line[0], "%s", "environment = X=1\n");
        snprintf(line[n++], sizeof line[0], "environment_file = %s\n", env_b);
        snprintf(line[n++], sizeof line[0], "%s", "working_directory = /tmp\n");
        snprintf(line[n++], sizeof line[0], "%s",
                 geteuid() == 0 ? "user = nobody\n" : "environment = Y=1\n");
        snprintf(line[n++], sizeof line[0], "%s",
                 geteuid() == 0 ? "group = nogroup\n" : "environment = Z=1\n");
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *text = NULL;
                assert_true(asprintf(&text, "exec = /bin/true\n%s", line[i]) > 0);
                assert_int_equal(load_worker(text, &c, &error, NULL), 0);
                digest[i] = config_worker_digest(&c);
                for (size_t j = 0; j < i; j++)
                        assert_true(digest[i] != digest[j]);
        }

        /* what is not the worker process: how the commander reads it, and every other section */
        static const char *const unrelated[] = {
                "cpu_wall_cores = 3\n",          "concurrency = 8\n",
                "[pool]\nmin_workers = 3\n",     "[pool]\nbackend = none\n",
                "[policy]\nwindow_rows = 9\n",   "[frontend]\nlisten = 127.0.0.1:9999\n",
                "[pool]\nreload_timeout = 1s\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(unrelated); i++) {
                _cleanup_free_ char *text = NULL;
                assert_true(asprintf(&text, "exec = /bin/true\n%s", unrelated[i]) > 0);
                assert_int_equal(load_worker(text, &c, &error, NULL), 0);
                assert_true(config_worker_digest(&c) == digest[0]);
        }

        /* the same variables, however they are written: order, source, an override of the same value */
        static const char *const same_env[] = {
                "environment = A=1 B=2\n",
                "environment = B=2\nenvironment = A=1\n",
                "environment = A=0 B=2\nenvironment = A=1\n",
        };
        uint64_t first = 0;
        for (size_t i = 0; i < ELEMENTSOF(same_env); i++) {
                _cleanup_free_ char *text = NULL;
                assert_true(asprintf(&text, "exec = /bin/true\n%s", same_env[i]) > 0);
                assert_int_equal(load_worker(text, &c, &error, NULL), 0);
                if (i == 0)
                        first = config_worker_digest(&c);
                assert_true(config_worker_digest(&c) == first);
        }
        /* X=1 from the file or from environment= is the same variable; another file with it too */
        _cleanup_free_ char *from_file = NULL, *other_file = NULL;
        assert_true(asprintf(&from_file, "exec = /bin/true\nenvironment_file = %s\n", env_a) > 0);
        assert_true(asprintf(&other_file, "exec = /bin/true\nenvironment_file = %s\n", env_same) > 0);
        assert_int_equal(load_worker(from_file, &c, &error, NULL), 0);
        assert_true(config_worker_digest(&c) == digest[3]);
        assert_int_equal(load_worker(other_file, &c, &error, NULL), 0);
        assert_true(config_worker_digest(&c) == digest[3]);
        config_done(&c);
}

static void test_config_worker_changes_names_parts(void **state) {
        _cleanup_free_ char *env = write_file("X=1\n"), *text = NULL;
        ConfigWorkerDigest old;
        _cleanup_free_ char *error = NULL;
        char what[512];
        Config c = {};

        assert_true(asprintf(&text, "exec = /bin/true\nenvironment_file = %s\n", env) > 0);
        assert_int_equal(load_worker(text, &c, &error, NULL), 0);
        config_worker_digest_parts(&c, &old);
        assert_int_equal(config_worker_changes(&old, &c, what, sizeof what), 0);
        assert_string_equal(what, "");

        /* the configuration file did not change, the environment file did */
        FILE *f = fopen(env, "we");
        assert_non_null(f);
        fputs("X=2\n", f);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(load_worker(text, &c, &error, NULL), 0);
        assert_int_equal(config_worker_changes(&old, &c, what, sizeof what), 1);
        char want[512];
        snprintf(want, sizeof want, "environment changed (the variables of environment_file '%s')", env);
        assert_string_equal(what, want);

        /* several parts at once, in a fixed order */
        config_worker_digest_parts(&c, &old);
        free(text);
        assert_true(asprintf(&text,
                             "exec = /bin/false 'a b'\nmemory_limit = 1M\nenvironment = Y=1\n"
                             "environment_file = %s\nworking_directory = /tmp\n",
                             env) > 0);
        assert_int_equal(load_worker(text, &c, &error, NULL), 0);
        assert_int_equal(config_worker_changes(&old, &c, what, sizeof what), 4);
        assert_string_equal(
                what, "exec changed to '/bin/false 'a b''; memory_limit changed to 1048576; environment "
                      "changed (environment=); working_directory changed to '/tmp'");
        /* and back: to the defaults */
        config_worker_digest_parts(&c, &old);
        assert_int_equal(load_worker("exec = /bin/true\n", &c, &error, NULL), 0);
        assert_int_equal(config_worker_changes(&old, &c, what, sizeof what), 4);
        assert_string_equal(what,
                            "exec changed to '/bin/true'; memory_limit changed to 0; environment changed "
                            "(environment=, no environment_file now); working_directory changed to the "
                            "commander's own");

        if (geteuid() == 0) {
                config_worker_digest_parts(&c, &old);
                assert_int_equal(load_worker("exec = /bin/true\nuser = nobody\n", &c, &error, NULL), 0);
                assert_int_equal(config_worker_changes(&old, &c, what, sizeof what), 1);
                snprintf(want, sizeof want,
                         "user changed to 'nobody' (uid %u), group '%s' (gid %u), 1 supplementary "
                         "group",
                         (unsigned) c.identity.uid, c.identity.group_name, (unsigned) c.identity.gid);
                assert_string_equal(what, want);
                config_worker_digest_parts(&c, &old);
                assert_int_equal(load_worker("exec = /bin/true\n", &c, &error, NULL), 0);
                assert_int_equal(config_worker_changes(&old, &c, what, sizeof what), 1);
                assert_string_equal(what, "user and group changed to the commander's own");
        }

        /* a buffer too small is cut, and still a string */
        char tiny[8];
        config_worker_digest_parts(&c, &old);
        assert_int_equal(load_worker("exec = /bin/sh\n", &c, &error, NULL), 0);
        assert_int_equal(config_worker_changes(&old, &c, tiny, sizeof tiny), 1);
        assert_string_equal(tiny, "exec ch");
        config_done(&c);
}

static void test_config_env_set_and_get(void **state) {
        char **l = NULL;

        assert_int_equal(config_env_set(&l, "A=1"), 0);
        assert_int_equal(config_env_set(&l, "AB=2"), 0);
        assert_int_equal(config_env_set(&l, "A=3"), 0); /* replaces A, not AB */
        assert_int_equal(config_env_length(l), 2);
        assert_string_equal(l[0], "A=3");
        assert_string_equal(config_env_get(l, "AB"), "2");
        assert_null(config_env_get(l, "B"));
        assert_null(config_env_get(NULL, "A"));
        l = config_env_free(l);
        assert_null(l);
}

/* Reads a file of the source tree into a malloc()ed string. */
static char *read_source_file(const char *relative) {
        _cleanup_free_ char *path = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        char *text = NULL;
        size_t size = 0;

        assert_true(asprintf(&path, "%s/%s", EP_SOURCE_DIR, relative) > 0);
        f = fopen(path, "re");
        assert_non_null(f);
        assert_true(getdelim(&text, &size, 0, f) > 0);
        return text;
}

/* The shipped example, as is (everything commented out) and with every key uncommented, is the defaults. */
static void test_config_load_example_is_defaults(void **state) {
        _cleanup_free_ char *text = read_source_file("units/example.conf"), *path = NULL, *error = NULL;
        _cleanup_free_ char *uncommented = malloc(strlen(text) + 1);
        Config c = {}, d;
        char *o = uncommented;
        unsigned n_keys = 0;

        assert_int_equal(config_init_defaults(&d), 0);
        assert_true(asprintf(&path, "%s/units/example.conf", EP_SOURCE_DIR) > 0);
        assert_int_equal(config_load(&c, path, &error), 0);
        assert_config_equal(&c, &d);

        /* "#key = value" lines become "key = value"; prose comments ("# Text") stay */
        for (const char *line = text; *line;) {
                size_t l = strcspn(line, "\n");
                if (line[0] == '#' && islower((unsigned char) line[1])) {
                        line++, l--, n_keys++;
                }
                memcpy(o, line, l);
                o += l;
                line += l;
                if (*line == '\n')
                        *o++ = *line++;
        }
        *o = 0;
        assert_int_equal(n_keys, _CONFIG_KEY_MAX);
        assert_int_equal(load_text(uncommented, &c, &error, NULL), 0);
        assert_string_equal(c.exec[0], "/usr/bin/elastic-pool-demo-worker"); /* the packaged path */
        assert_config_equal(&c, &d);
        for (ConfigKey k = 0; k < _CONFIG_KEY_MAX; k++)
                assert_true(c.line[k] > 0);
        config_done(&c);
        config_done(&d);
}

static void test_config_docs_name_every_key(void **state) {
        _cleanup_free_ char *doc = read_source_file("docs/elastic-pool.conf.5.md");

        for (ConfigKey k = 0; k < _CONFIG_KEY_MAX; k++) {
                _cleanup_free_ char *heading = NULL, *section = NULL;
                assert_true(asprintf(&heading, "\n### `%s=`", config_key_name(k)) > 0);
                assert_true(asprintf(&section, "\n# [%s]\n", config_key_section(k)) > 0);
                assert_non_null(strstr(doc, heading));
                /* under its own section */
                const char *at = strstr(doc, heading), *sec = strstr(doc, section);
                assert_non_null(sec);
                assert_true(sec < at);
                const char *next = strstr(sec + 1, "\n# ");
                assert_true(!next || at < next);
        }
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static int setup(void **state) {
        return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
        return nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_config_init_defaults_values),
                cmocka_unit_test(test_config_load_every_key),
                cmocka_unit_test(test_config_load_duration_units),
                cmocka_unit_test(test_config_load_size_units),
                cmocka_unit_test(test_config_exec_split_quoting),
                cmocka_unit_test(test_config_exec_to_string_quotes),
                cmocka_unit_test(test_config_load_exec_keeps_line),
                cmocka_unit_test(test_config_load_listen_append_and_reset),
                cmocka_unit_test(test_config_load_error_kinds),
                cmocka_unit_test(test_config_load_admin_allow_public),
                cmocka_unit_test(test_config_load_min_above_max_names_both_lines),
                cmocka_unit_test(test_config_load_missing_file_enoent),
                cmocka_unit_test(test_config_load_directory_eisdir),
                cmocka_unit_test(test_config_load_long_line),
                cmocka_unit_test(test_config_load_crlf),
                cmocka_unit_test(test_config_load_empty_file),
                cmocka_unit_test(test_config_load_layout_tolerance),
                cmocka_unit_test(test_config_load_nul_byte),
                cmocka_unit_test(test_config_load_failure_keeps_config),
                cmocka_unit_test(test_config_validate_code_built),
                cmocka_unit_test(test_backend_kind_to_string_round_trip),
                cmocka_unit_test(test_config_parse_socket_address_forms),
                cmocka_unit_test(test_config_parse_ip_prefix_forms),
                cmocka_unit_test(test_config_load_environment_append_and_reset),
                cmocka_unit_test(test_config_load_worker_runtime_errors),
                cmocka_unit_test(test_config_env_file_format),
                cmocka_unit_test(test_config_env_file_errors),
                cmocka_unit_test(test_config_env_file_optional_and_reread),
                cmocka_unit_test(test_config_load_working_directory),
                cmocka_unit_test(test_config_load_user_group_as_root),
                cmocka_unit_test(test_config_identity_resolve_not_root),
                cmocka_unit_test(test_config_worker_digest_per_setting),
                cmocka_unit_test(test_config_worker_changes_names_parts),
                cmocka_unit_test(test_config_env_set_and_get),
                cmocka_unit_test(test_config_load_example_is_defaults),
                cmocka_unit_test(test_config_docs_name_every_key),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
