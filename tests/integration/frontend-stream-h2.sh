#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: over HTTP/2 (curl --http2-prior-knowledge), a 100 MiB upload (with and without a length) and a
# 100 MiB download stream through the commander with its memory flat: VmRSS stays under 64 MiB
# above its start.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER"
fe_start
stream_scenario $((100 * 1024 * 1024)) --http2-prior-knowledge
fe_stop
