#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a worker retired under steady keep-alive and pipelined load loses nothing. 6 users over HTTP/1.1
# (4 pipelined requests at a time) and 3 over HTTP/2 (4 concurrent streams), each on one keep-alive
# connection, all moved to w2; w2 is retired while they go on: their moves release the held requests to
# w1, w2 drains and stops. No request fails or goes unanswered, no client connection is reset or closed,
# every counter goes on by one; the commander's connections to w2 close after complete responses (no
# forward error, no response aborted, w2 never waits for drain_timeout). drain-load.py drives the users.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
. "$(dirname "$0")/websocket-lib.sh"
make_test_cgroup
ws_private_bus

fe_config "$DEMO_WORKER --threads 4" pool.min_workers=1 pool.max_workers=2 policy.compaction_margin=100
fe_start
wait_log "On the user bus as org.elasticpool.Group1.t$$"
$CTL scale 2 >/dev/null || fail "scale 2 failed"
wait_log 'Worker w2 is routable'

rc=0
"$EP_PYTHON" "$FE_DIR/drain-load.py" "$EP_ADDR" "$EP_RUN/status.json" "$CTL" >"$EP_TMP/load.out" \
        2>"$EP_TMP/load.err" || rc=$?
cat "$EP_TMP/load.out"
((rc == 0)) || { cat "$EP_TMP/load.err" >&2; fail "drain-load.py failed (exit $rc)"; }
wait_log '\[death w2\] .*stopped: operator retire'
! log_has 'forward-error|response aborted|Request [0-9a-f]+ .* on w2: ' ||
        fail "a request on w2 failed: $(grep -m1 -E 'forward-error|response aborted|on w2: ' "$EP_LOG")"
! log_has 'still had [0-9]+ requests after drain_timeout' || fail "w2 waited for drain_timeout"
fe_stop
