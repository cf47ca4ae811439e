#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: over HTTP/1.1, a 1 GiB upload (with and without a length) and a 1 GiB download stream through
# the commander with its memory flat (VmRSS under 64 MiB above its start): the bounded buffers hold
# whatever the size.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER"
fe_start
stream_scenario $((1024 * 1024 * 1024)) --http1.1
fe_stop
