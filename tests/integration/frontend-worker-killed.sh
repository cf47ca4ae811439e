#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a worker killed (SIGKILL) during a slow request answers that request 502 and no other: a
# guest's slow request on the other worker, running at the same time, completes 200. The dead worker's
# user (alice, moved there at login) is placed again on its next request, logged as such, and its state
# is gone (the new worker does not know alice: 404) until it logs in again (counter from 1).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER" pool.min_workers=2 pool.max_workers=2 policy.reception_threshold=0.01
fe_start
rec=$(reception)
other=$((rec == 1 ? 2 : 1))

# alice lands on the other worker: the busy reception passes her on at login (see frontend-live-move)
spawn_bg "${CURL[@]}" -o /dev/null "$EP_URL/work?sleep_ms=2000"
busy=$EP_LAST_PID
wait_until occupancy_over "$rec" 0.1 || fail "the reception's occupancy never rose"
"${CURL[@]}" -c "$EP_TMP/jar" -o /dev/null "$EP_URL/login?user=alice" || fail "login failed"
wait_log "Move [0-9]+ of user alice from w$rec to w$other done"
body=$("${CURL[@]}" -b "$EP_TMP/jar" "$EP_URL/state")
[[ $body == *"\"counter\":1,\"worker\":\"$other\""* ]] || fail "alice is not on w$other: $body"
wait "$busy" || fail "the busy request failed"

# two slow requests at once: alice's on w$other, a guest's on the reception w$rec
spawn_bg "${CURL[@]}" -b "$EP_TMP/jar" -H 'X-Request-Id: alice-slow' -o "$EP_TMP/alice.body" -w '%{http_code}' \
        "$EP_URL/work?sleep_ms=3000" >"$EP_TMP/alice.code"
alice=$EP_LAST_PID
spawn_bg "${CURL[@]}" -o "$EP_TMP/guest.body" -w '%{http_code}' "$EP_URL/work?sleep_ms=1500" >"$EP_TMP/guest.code"
guest=$EP_LAST_PID
slow_running() {
        [[ $(json_get "$(worker_curl "$1" http://w/_monitor/state)" busy) -ge 2 ]] # the monitor request is 1
}
wait_until slow_running "$other" || fail "alice's slow request does not run on w$other"
wait_until slow_running "$rec" || fail "the guest's slow request does not run on w$rec"
kill -KILL "$(worker_pid "w$other")"

wait "$alice" || true
[[ $(cat "$EP_TMP/alice.code") == 502 ]] || fail "alice's request on the killed worker: $(cat "$EP_TMP/alice.code")"
wait_log "\[death w$other\] Worker w$other \(pid [0-9]+\) killed by signal SIGKILL"
wait_log "Request alice-slow GET /work\?sleep_ms=3000 on w$other: 502"
wait_log "1 users lived on w$other, which is gone"
wait "$guest" || true
[[ $(cat "$EP_TMP/guest.code") == 200 ]] || fail "the guest's request on w$rec: $(cat "$EP_TMP/guest.code")"
note "alice's request on the killed w$other: 502; the guest's on w$rec meanwhile: 200"

out=$("${CURL[@]}" -b "$EP_TMP/jar" -w ' %{http_code}' "$EP_URL/state")
[[ $out == *' 404' ]] || fail "alice's state survived its worker: $out"
wait_log 'User alice re-placed on w[0-9]+: the surface does not know it \(its worker is gone\) \(its state there is lost\)'
note "$(grep -oE 'User alice re-placed on .*' "$EP_LOG" | tail -n1)"
"${CURL[@]}" -b "$EP_TMP/jar" -c "$EP_TMP/jar" -o /dev/null "$EP_URL/login?user=alice" || fail "login again"
body=$("${CURL[@]}" -b "$EP_TMP/jar" "$EP_URL/state")
[[ $body == *'"user":"alice","counter":1,'* ]] || fail "after logging in again: $body"
note "after logging in again: $body"
fe_stop
