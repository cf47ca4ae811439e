/* SPDX-License-Identifier: MIT */
#pragma once

/* Small helpers private to the sensor library. */

#include <stdlib.h>

/* The public API (sensor.h) is the only thing the shared library exports: everything is compiled with
 * -fvisibility=hidden and the linker version script drops whatever the static ep-shared/ep-proto bring. */
#define _public_ __attribute__((visibility("default")))
