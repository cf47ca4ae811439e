/* SPDX-License-Identifier: MIT */
#pragma once

/* /metrics: the pool in the Prometheus text exposition format (version 0.0.4). Every family has its
 * # HELP and # TYPE, names start with elastic_pool_ and carry their unit (_ratio, _bytes, _seconds,
 * _total for counters), labels are group and worker (wN) plus the family's own. A value that is not
 * known is left out, never exported as 0 (a component a worker does not report, the forward counters of
 * a worker the front end has no pool for): Prometheus reads a missing series as missing. */

#include <stdio.h>

#include "status.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* 0 or -EIO. */
int metrics_write(const StatusView *v, FILE *f);
