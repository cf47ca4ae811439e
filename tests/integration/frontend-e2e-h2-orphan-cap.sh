#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a client that resets HTTP/2 streams does not free the requests they started on workers, and
# cannot use that to keep more than 2 × h2_max_concurrent_streams requests running on the pool from one
# connection: with the cap reached by requests of reset streams (the worker holds them all), its next
# stream is refused with RST_STREAM REFUSED_STREAM although none of its streams is open, while another
# connection is served; once the worker really ends those requests, the same connection is served
# again, without GOAWAY. Refused streams never reach a worker. (frontend-e2e-h2-orphan-cap.py drives
# it; docs/frontend-http2.md, "Requests left running by reset streams", is the rule.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
"$EP_PYTHON" -c 'import h2' 2>/dev/null || skip "needs python3-h2 for $EP_PYTHON"
make_test_cgroup

streams=4
fe_config "$(bin elastic-pool-sensor) -- $EP_PYTHON $FE_DIR/frontend-e2e-gate-worker.py --log $FE_HEADS" \
        "frontend.h2_max_concurrent_streams=$streams"
fe_start
out=$("$EP_PYTHON" "$FE_DIR/frontend-e2e-h2-orphan-cap.py" "$EP_ADDR" --streams "$streams" 2>"$EP_TMP/client.log") ||
        fail "$(cat "$EP_TMP/client.log") after: $out"
note "$out"

gates=$(grep -c '"head": "GET /gate' "$FE_HEADS" || true)
[[ $gates == $((2 * streams)) ]] || fail "$gates /gate requests reached the worker, not $((2 * streams))"
probes=$(grep -c '"head": "GET /probe' "$FE_HEADS" || true)
[[ $probes == 0 ]] || fail "$probes refused streams reached the worker"
refused=$(grep -c '"head": "GET /after-release' "$FE_HEADS" || true)
[[ $refused == 1 ]] || fail "$refused /after-release requests reached the worker: only the one served should"
commander_alive || fail "the commander died"
fe_stop
