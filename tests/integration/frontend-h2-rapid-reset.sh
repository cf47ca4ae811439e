#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: Rapid Reset (CVE-2023-44487: thousands of HEADERS each followed by its RST_STREAM) is ended
# by nghttp2's stream reset rate limit with GOAWAY, logged; streams reset in the read that brought them
# never reach a worker (the echo worker logs every head: at most the one pair per 64 KiB read that a
# read boundary splits gets there, under 10 of the 5000), and a client on another connection is served
# throughout.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)"
fe_start
spawn_bg "$EP_PYTHON" "$FE_DIR/frontend-h2-steady.py" "$EP_ADDR" "$EP_TMP/stop" --path /steady --ready "$EP_TMP/ready" \
        >"$EP_TMP/steady.out" 2>&1
steady=$EP_LAST_PID
wait_until test -e "$EP_TMP/ready" || fail "the steady client got no answer: $(cat "$EP_TMP/steady.out")"

out=$("$EP_PYTHON" "$FE_DIR/h2-abuse.py" "$EP_ADDR" rapid-reset --count 5000 --path /reset --wait 5 --expect closed) ||
        fail "rapid reset: $out"
note "rapid reset: $out"
[[ $out == *'"goaway": {'* ]] || fail "no GOAWAY after rapid reset: $out"
wait_log 'HTTP/2 client 127.0.0.1:[0-9]+: nghttp2 sent GOAWAY'
n=$(grep -c '"head": "GET /reset ' "$FE_HEADS" || true)
note "$n of 5000 reset streams reached the worker"
((n < 10)) || fail "$n reset streams reached the worker"
commander_alive || fail "the commander died"

touch "$EP_TMP/stop"
wait "$steady" || fail "the steady client failed: $(cat "$EP_TMP/steady.out")"
note "the steady client meanwhile: $(cat "$EP_TMP/steady.out")"
fe_stop
