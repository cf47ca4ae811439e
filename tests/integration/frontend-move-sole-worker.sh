#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: with no second worker (min_workers = max_workers = 1) the reception keeps a user logging in
# even when it is over reception_threshold: no move is attempted, the user is served there.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER" pool.max_workers=1 policy.reception_threshold=0.01
fe_start
spawn_bg "${CURL[@]}" -o /dev/null "$EP_URL/work?sleep_ms=3000"
busy=$EP_LAST_PID
wait_until occupancy_over 1 0.1 || fail "the reception's occupancy never rose: $(cat "$EP_RUN/status.json")"
"${CURL[@]}" -c "$EP_TMP/jar" -o /dev/null "$EP_URL/login?user=bob" || fail "login failed"
wait_log 'User bob logged in on w1 and stays there'
body=$("${CURL[@]}" -b "$EP_TMP/jar" "$EP_URL/state")
[[ $body == *'"user":"bob","counter":1,"worker":"1"'* ]] || fail "/state: $body"
log_has 'Moving user bob' && fail "a move was attempted with no second worker"
wait "$busy" || fail "the busy request failed"
fe_stop
