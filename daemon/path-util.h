/* SPDX-License-Identifier: MIT */
#pragma once

#include <sys/types.h>

/* mkdir -p: the parents 0755, the last component `mode`. Existing directories are fine. 0 or -errno. */
int mkdir_parents(const char *path, mode_t mode);

/* Where a directory of ours goes, in systemd's order: the override; else $env_var as systemd sets it
 * (RUNTIME_DIRECTORY, STATE_DIRECTORY: the first of a colon-separated list); else, as root,
 * root_base/elastic-pool/<group>; else $xdg_var/elastic-pool/<group>; else, when home_rel is given,
 * $HOME/<home_rel>/elastic-pool/<group>. 0, -ENXIO when none applies, -ENOMEM. */
int service_dir(const char *override, const char *env_var, const char *root_base, const char *xdg_var,
                const char *home_rel, const char *group, char **ret);
