/* SPDX-License-Identifier: MIT */
#include "path-util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

int mkdir_parents(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = 0;
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

int service_dir(const char *override, const char *env_var, const char *root_base, const char *xdg_var,
                const char *home_rel, const char *group, char **ret) {
        const char *e;
        char *p = NULL;
        int r = 0;

        if (override)
                p = strdup(override);
        else if ((e = getenv(env_var)) && *e)
                p = strndup(e, strcspn(e, ":"));
        else if (geteuid() == 0)
                r = asprintf(&p, "%s/elastic-pool/%s", root_base, group);
        else if ((e = getenv(xdg_var)) && *e)
                r = asprintf(&p, "%s/elastic-pool/%s", e, group);
        else if (home_rel && (e = getenv("HOME")) && *e)
                r = asprintf(&p, "%s/%s/elastic-pool/%s", e, home_rel, group);
        else
                return -ENXIO;
        if (r < 0 || !p)
                return -ENOMEM;
        *ret = p;
        return 0;
}
