#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: over HTTP/1.1 (curl), guests reach the reception; a login sets the signed sticky cookie
# (HttpOnly; SameSite=Lax; Path=/); 100 requests with it, each on its own connection, reach the same
# worker of a three-worker pool and its counter goes 1..100; logout clears the cookie (Max-Age=0) and
# the user's state is gone; Elastic-Pool-User never reaches the client.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER" pool.min_workers=3
fe_start
sticky_scenario --http1.1
fe_stop
