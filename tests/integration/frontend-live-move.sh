#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: placement at login, reception-first. With reception_threshold=0.01 and the reception busy (a
# guest request holds one of its executor threads: occupancy 0.25), a user logging in on the reception
# is passed to the other worker by a live move (snapshot on w1, install on w2, switch), logged as
# "Moving user ... from w1 to w2" and "... done", and keeps its state: the counter it had on w1 goes on
# on w2, with the same blob; w1 dropped its copy.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER --user-blob-size 4096" pool.min_workers=2 pool.max_workers=2 policy.reception_threshold=0.01
fe_start
rec=$(reception)
other=$((rec == 1 ? 2 : 1))
note "reception w$rec, other worker w$other"

# alice already has state on the reception (made there directly, around the commander): counter 5
worker_curl "$rec" -o /dev/null -H 'X-Elastic-Pool-User: alice' "http://w/login?user=alice" || fail "direct login"
for i in 1 2 3 4 5; do
        body=$(worker_curl "$rec" -H 'X-Elastic-Pool-User: alice' http://w/state) || fail "direct /state"
done
[[ $body == *'"counter":5,'* ]] || fail "alice's state on w$rec: $body"
crc=$(json_get "$body" blob_crc)

# make the reception busy: one of its four executor threads sleeps; wait until the reports say so
spawn_bg "${CURL[@]}" -o /dev/null "$EP_URL/work?sleep_ms=3000"
busy=$EP_LAST_PID
wait_until occupancy_over "$rec" 0.1 || fail "the reception's occupancy never rose: $(cat "$EP_RUN/status.json")"

"${CURL[@]}" -c "$EP_TMP/jar" -o /dev/null "$EP_URL/login?user=alice" || fail "login failed"
wait_log "User alice logged in on w$rec; placement passes it to w$other"
wait_log "Moving user alice from w$rec to w$other"
wait_log "Move [0-9]+ of user alice from w$rec to w$other done"
for i in 6 7 8 9 10; do
        body=$("${CURL[@]}" -b "$EP_TMP/jar" "$EP_URL/state") || fail "/state $i"
        [[ $body == *"\"user\":\"alice\",\"counter\":$i,\"worker\":\"$other\",\"blob_crc\":$crc}"* ]] ||
                fail "/state $i after the move: $body (want counter $i on w$other, blob_crc $crc)"
done
note "alice's counter went on 6..10 on w$other with blob_crc $crc"
users=$(worker_curl "$rec" http://w/_monitor/state)
[[ $users != *'"user":"alice"'* ]] || fail "w$rec still holds alice after the move: $users"
wait "$busy" || fail "the busy request failed"
fe_stop
