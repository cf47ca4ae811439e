/* SPDX-License-Identifier: MIT */
#pragma once

/* Seams of the public sensor object for the unit tests and the tick benchmark; not exported. */

#include "elastic-pool/sensor.h"
#include "elastic_pool.pb-c.h"
#include "time-util.h"

#define SENSOR_INTERVAL_DEFAULT_USEC (5U * USEC_PER_SEC)
/* With ELASTIC_POOL_BURST_QUEUE set, how often the executor queue is looked at between ticks (an atomic
 * load, no system call): a crossing reaches the commander within this, well inside its burst_window. */
#define SENSOR_BURST_PROBE_USEC (100U * USEC_PER_MSEC)

/* Reads, builds and (when connected) sends one report stamped `now` (CLOCK_MONOTONIC), exactly as a due
 * tick does, without touching the cadence. 0 or -ENOMEM. */
int sensor_tick_at(ep_sensor *s, usec_t now);
/* With ELASTIC_POOL_BURST_QUEUE: looks at the executor queue at now and sends an early report when it is
 * on the other side of burst_queue than the commander was last told (by a tick or an early report). 0 or
 * -errno (the channel's). */
int sensor_probe_at(ep_sensor *s, usec_t now);
/* Early reports sent so far (tests). */
uint64_t sensor_early_reports(const ep_sensor *s);

/* The report built by the last tick, NULL before the first. Valid until the next tick. */
const ElasticPool__OccupancyReport *sensor_last_report(const ep_sensor *s);

/* The fixed cadence: the next deadline on the grid deadline + k * interval that lies after now. Slots
 * missed while the process was stopped are skipped, never caught up in a burst, and lateness never
 * shifts the grid (no drift). */
usec_t sensor_next_deadline(usec_t deadline, usec_t interval, usec_t now);
