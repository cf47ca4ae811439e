/* SPDX-License-Identifier: MIT */
#pragma once

/* The monitor: /_commander/monitor is one self-contained HTML page (monitor-page.c) that polls
 * /_commander/monitor.json (this file) and /_commander/population every few seconds and draws the pool:
 *
 *   - per worker: its state as an operator says it (starting, routable, evacuating, draining, stopping)
 *     and what holds a decision on it and why; the occupancy, each component and which one is the
 *     bottleneck; users; rps, errors and p50/p99 latency from the front end's forward counters; the
 *     occupancy of every row of its window (the histogram); drift sentinels that stand;
 *   - the capacity ledger (N, C, O, H, margin, threshold) and the last decision with its reason;
 *   - the holds, the drain under way, moves under way and the recent ones; the front end's totals.
 *
 * Missing is never zero here either: a value the commander does not know is null. */

#include <stdio.h>

#include "status.h"

/* The document the page polls. 0 or -EIO. */
int monitor_write_json(const StatusView *v, FILE *f);
