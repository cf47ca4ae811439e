#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: SIGTERM under HTTP/1.1 load (50 keep-alive connections, every fifth request a 200 ms one)
# loses nothing that reached the commander: every request sent on an accepted connection gets a complete
# answer, answers after the signal say Connection: close, connections made once the listener is closed
# are refused by the kernel (counted apart, not failures), and the commander exits 0 well before
# shutdown_timeout. New connections race the closing listener (a burst, back to back, with SIGTERM sent
# in its middle): each is answered (the queue the kernel completed is taken in before the close) or
# refused, never accepted and then reset.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER --threads 16" pool.min_workers=2 frontend.shutdown_timeout=10s
fe_start
# the load client sends SIGTERM itself, in the middle of a burst of new connections
spawn_bg "$EP_PYTHON" "$FE_DIR/frontend-sigterm-h1.py" "$EP_ADDR" "$EP_TMP/sigterm" "$EP_TMP/ready" \
        --kill "$EP_COMMANDER_PID" >"$EP_TMP/load.out" 2>&1
load=$EP_LAST_PID
wait_until test -e "$EP_TMP/ready" || fail "the load never got going: $(cat "$EP_TMP/load.out")"
wait_until test -e "$EP_TMP/sigterm" || fail "the load client did not send SIGTERM: $(cat "$EP_TMP/load.out")"
t0=$(date +%s.%N)
rc=0
wait "$EP_COMMANDER_PID" || rc=$?
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
note "the commander exited $rc after $took s"
wait "$load" || fail "requests failed: $(cat "$EP_TMP/load.out")"
note "load: $(cat "$EP_TMP/load.out")"
sanitizer_clean
((rc == 0)) || fail "the commander exited $rc"
awk -v t="$took" 'BEGIN { exit !(t < 10) }' || fail "the commander took $took s, over shutdown_timeout=10s"
out=$(cat "$EP_TMP/load.out")
[[ $(json_get "$out" announced_close) -gt 0 ]] || fail "no answer said Connection: close"
[[ $(($(json_get "$out" refused) + $(json_get "$out" churn_refused) + $(json_get "$out" burst_refused))) -gt 0 ]] ||
        fail "no connection was refused after the listener closed"
log_has 'Front end drained: every client connection closed' || fail "the front end did not drain"
log_has 'client connections still open at shutdown_timeout' && fail "the hard deadline cut connections"
true
