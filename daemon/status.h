/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdio.h>

#include "manager.h"

/* The pool as JSON on f. 0 or -EIO. */
int status_write(Manager *m, FILE *f);

/* Atomically replaces path with the current JSON (temp file + rename). 0 or -errno. */
int status_write_file(Manager *m, const char *path);
