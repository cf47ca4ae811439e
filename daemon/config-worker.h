/* SPDX-License-Identifier: MIT */
#pragma once

/* The [worker] settings that make a group a runtime version besides its command: the environment
 * (environment=, environment_file=), the working directory and the identity (user=, group=); and the
 * digest of the whole worker definition, which tells a reload whether the workers must be replaced.
 *
 * config.c parses the keys; what they name (the environment file, the user database, the directory) is
 * read here, by config_load() on every load and reload. The child applies the result (spawn.c). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* ---- environment lists: NULL-terminated "KEY=VALUE" strings, each key at most once ---- */

/* Frees l and its strings; returns NULL. */
char **config_env_free(char **l);
size_t config_env_length(char *const *l);
/* The value of key in l, or NULL. */
const char *config_env_get(char *const *l, const char *key);
/* Sets a copy of assignment ("KEY=VALUE") in *l: it replaces KEY's entry where there is one (so its
 * place stays), else it is appended. 0 or -ENOMEM. */
int config_env_set(char ***l, const char *assignment);

/* Whether assignment ("KEY=VALUE") may be a worker's variable. KEY must be a name (letters, digits,
 * '_', not starting with a digit); the variables the commander sets itself for each worker
 * (LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES, ELASTIC_POOL_*) and NOTIFY_SOCKET are refused. 0; -EINVAL
 * with *ret_error (malloc()ed: the assignment quoted, then why); -ENOMEM. */
int config_env_check(const char *assignment, char **ret_error);

/* One environment= value: shell words like exec= (config_exec_split()), each a "KEY=VALUE" set in *l;
 * an empty value empties *l (systemd's Environment=). 0; -EINVAL with *ret_error (malloc()ed, quoting the
 * bad word) when a word is not an assignment or its key is refused; -ENOMEM. *l is unchanged on
 * error. */
int config_env_assign(char ***l, const char *value, char **ret_error);

/* Reads an environment file: KEY=VALUE lines (blanks around '=' ignored), whole-line comments starting
 * with '#' or ';', blank lines; a value may be wrapped whole in '...' (literal) or "..." (\\ \" \$ \`
 * escaped), an unquoted one is taken as is without its trailing blanks. A key set twice: the last line
 * wins. 0 with *ret (NULL when the file sets nothing); -errno when it cannot be opened or read, with
 * *ret_error "cannot open 'PATH': ..."; -EINVAL with *ret_error "PATH:LINE: what is wrong"; -ENOMEM
 * (*ret_error NULL). */
int config_env_file_read(const char *path, char ***ret, char **ret_error);

/* Resolves user= and group= (either may be NULL) into *ret: names through getpwnam()/getgrnam(), numbers
 * as they are (a uid without an entry in the user database needs group=); the group defaults to the
 * user's primary group, the supplementary groups are the user's (getgrouplist(), what initgroups()
 * would set). A commander that is not root can only name its own ids. 0; -EINVAL with *ret_key (the key
 * at fault) and *ret_error (malloc()ed); -ENOMEM. */
int config_identity_resolve(const char *user, const char *group, ConfigIdentity *ret, ConfigKey *ret_key,
                            char **ret_error);
void config_identity_done(ConfigIdentity *id);

/* Checks that working_directory is a directory now. 0, or -EINVAL with *ret_error; -ENOMEM. */
int config_working_directory_check(const char *path, char **ret_error);

/* The variables a worker gets from the configuration: environment_file's, overridden by environment=.
 * A new list (the caller frees it with config_env_free()), NULL when there are none. 0 or -ENOMEM. */
int config_worker_environment(const Config *c, char ***ret);

/* The parts of the worker definition: what a worker process is. A change to any of them on reload
 * replaces the running workers (a rolling reload). cpu_wall_cores and concurrency are how the commander
 * reads a worker, not what it runs: they are no part of it. */
typedef enum ConfigWorkerPart {
        CONFIG_WORKER_EXEC,
        CONFIG_WORKER_MEMORY_LIMIT,
        CONFIG_WORKER_ENVIRONMENT, /* the merged variables (config_worker_environment()) */
        CONFIG_WORKER_WORKING_DIRECTORY,
        CONFIG_WORKER_IDENTITY, /* uid, gid, supplementary groups */
        _CONFIG_WORKER_PART_MAX,
} ConfigWorkerPart;

typedef struct ConfigWorkerDigest {
        uint64_t part[_CONFIG_WORKER_PART_MAX];
        /* not parts, only for naming where a changed environment came from */
        uint64_t environment_assignments, environment_file_vars;
} ConfigWorkerDigest;

void config_worker_digest_parts(const Config *c, ConfigWorkerDigest *ret);
/* One number for the whole worker definition: equal for two configurations whose workers would be the
 * same processes (the order of variables does not count). */
uint64_t config_worker_digest(const Config *c);
/* Writes what changed from old to c into buf ("exec changed to '...'; environment changed
 * (environment_file '/x')"); returns how many parts changed (0: the workers stay, buf is ""). */
unsigned config_worker_changes(const ConfigWorkerDigest *old, const Config *c, char *buf, size_t size);
