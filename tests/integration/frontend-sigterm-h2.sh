#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: SIGTERM under HTTP/2 load (20 streams open at once on one h2c connection, every fourth a
# 200 ms request): the connection gets the two-step GOAWAY (2^31-1 first, then the last stream id
# processed); every stream up to that id is answered completely, none above it was processed, the
# connection is closed, and the commander exits 0 well before shutdown_timeout.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER --threads 16" frontend.shutdown_timeout=10s
fe_start
# the client sends SIGTERM itself once the load runs
spawn_bg "$EP_PYTHON" "$FE_DIR/frontend-sigterm-h2.py" "$EP_ADDR" "$EP_TMP/sigterm" "$EP_COMMANDER_PID" \
        >"$EP_TMP/load.out" 2>&1
load=$EP_LAST_PID
wait_until test -e "$EP_TMP/sigterm" || fail "the load never got going: $(cat "$EP_TMP/load.out")"
t0=$(date +%s.%N)
rc=0
wait "$EP_COMMANDER_PID" || rc=$?
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
note "the commander exited $rc after $took s"
wait "$load" || fail "streams failed: $(cat "$EP_TMP/load.out")"
out=$(cat "$EP_TMP/load.out")
note "load: $out"
sanitizer_clean
((rc == 0)) || fail "the commander exited $rc"
awk -v t="$took" 'BEGIN { exit !(t < 10) }' || fail "the commander took $took s, over shutdown_timeout=10s"
"$EP_PYTHON" - "$out" <<'PY' || fail "GOAWAY sequence: $out"
import json, sys
r = json.loads(sys.argv[1])
g = r["goaways"]
assert len(g) == 2, "want two GOAWAYs"
assert g[0]["last_stream_id"] == 2**31 - 1 and g[0]["error"] == "NO_ERROR", "the first announces, 2^31-1"
assert g[1]["error"] == "NO_ERROR" and g[1]["last_stream_id"] < 2**31 - 1, "the second names the last stream"
assert r["max_answered"] == g[1]["last_stream_id"], "the last stream id is the last one answered"
PY
log_has 'Front end drained: every client connection closed' || fail "the front end did not drain"
true
