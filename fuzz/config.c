/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the configuration parser (daemon/config.c over inih, daemon/config-worker.c). The
 * input is written to a file and loaded the way the commander loads its group's file (config_load: parse,
 * validate, read what the [worker] keys name); the same bytes are read as an environment_file too. What
 * loads must hold together: its exec= line, joined back with config_exec_to_string(), splits into the
 * same argv, and the worker digest and change report can be taken from it. A load that fails names its
 * reason.
 *
 * Input: the file's bytes, as they are (no options byte). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "config-worker.h"
#include "config.h"
#include "fuzz-util.h"
#include "log.h"

static const char *path;

static void write_input(const uint8_t *data, size_t size) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        if (fd < 0 || write(fd, data, size) != (ssize_t) size)
                abort();
}

static void check_exec_round_trip(char *const *argv) {
        _cleanup_free_ char *line = config_exec_to_string(argv);
        const char *reason;
        char **again = NULL;
        size_t i;

        if (!line)
                abort();
        if (config_exec_split(line, &again, &reason) < 0)
                abort(); /* our own quoting must split */
        for (i = 0; argv[i] && again[i]; i++)
                if (strcmp(argv[i], again[i]) != 0)
                        abort();
        if (argv[i] || again[i])
                abort();
        config_env_free(again);
}

static void check_loaded(const Config *c, const Config *defaults) {
        ConfigWorkerDigest old;
        char **env = NULL, changes[512];

        if (c->exec)
                check_exec_round_trip(c->exec);
        if (config_worker_environment(c, &env) < 0)
                abort();
        config_env_free(env);
        config_worker_digest_parts(defaults, &old);
        (void) config_worker_changes(&old, c, changes, sizeof changes);
        (void) config_worker_digest(c);
        if (config_validate(c, NULL) < 0)
                abort(); /* it loaded, so it validates */
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        log_set_max_level(LOG_CRIT);
        path = fuzz_scratch_path("config", "group.conf");
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(config_done) Config c = {}, defaults = {};
        _cleanup_free_ char *error = NULL, *env_error = NULL;
        char **vars = NULL;
        int r;

        write_input(data, size);
        if (config_init_defaults(&defaults) < 0)
                abort();

        r = config_load(&c, path, &error);
        if (r >= 0)
                check_loaded(&c, &defaults);
        else if (r != -ENOMEM && (!error || !*error))
                abort(); /* a refused file always says why */

        r = config_env_file_read(path, &vars, &env_error);
        if (r < 0 && r != -ENOMEM && !env_error)
                abort();
        config_env_free(vars);
        return 0;
}
