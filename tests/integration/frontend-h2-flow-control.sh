#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: HTTP/2 flow control is tied to the worker side. A stream whose client does not open its window
# stalls after its first 64 KiB, and its 100 MiB download waits in the worker, not in the commander
# (VmRSS stays within 16 MiB of its start); on the same connection a slow worker request (1.5 s) and a
# fast one run meanwhile, the fast one answered first; resetting the stalled stream frees its worker
# connection, and the pool goes on serving.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER"
fe_start
out=$("$EP_PYTHON" "$FE_DIR/frontend-h2-flow-control.py" "$EP_ADDR" "$EP_COMMANDER_PID" $((100 * 1024 * 1024))) ||
        fail "flow control client: $out"
note "$out"
[[ $(json_get "$out" stream1_bytes) == 65535 ]] || fail "the stalled stream got more than its window: $out"
[[ $out == *'"order": [5, 3]'* ]] || fail "the fast stream was not answered first, or not both: $out"
"$EP_PYTHON" -c 'import json, sys
r = json.loads(sys.argv[1])
sys.exit(0 if r["rss_peak_kib"] - r["rss_start_kib"] < 16 * 1024 else 1)' "$out" ||
        fail "the commander buffered the stalled download: $out"
[[ $("${CURL[@]}" --http2-prior-knowledge -o /dev/null -w '%{http_code}' "$EP_URL/hello") == 200 ]] ||
        fail "the pool no longer serves"
fe_stop
