/* SPDX-License-Identifier: MIT */
#pragma once

/* A front end for the status surfaces' tests: FrontendHooks whose measures the test sets. Only
 * worker_traffic and totals answer; the other hooks are not called by the status surfaces. */

#include <stdbool.h>

#include "frontend-port.h"
#include "status.h"

#define FAKE_FRONTEND_WORKERS 16

typedef struct FakeFrontend {
        bool known[FAKE_FRONTEND_WORKERS];
        WorkerTraffic traffic[FAKE_FRONTEND_WORKERS];
        FrontendTotals totals;
} FakeFrontend;

/* Hands f to v as its front end. */
void fake_frontend_attach(FakeFrontend *f, StatusView *v);
