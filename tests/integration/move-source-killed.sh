#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a source that dies mid-move is an ordinary death. The reception (w1) stalls every snapshot for
# 3 s; while it snapshots alice, it is killed (SIGKILL). The move aborts ("the source worker is gone"),
# alice's state is lost with the worker (documented: DESIGN.md "Users, cookies, moves"): her request held
# during the move and her next ones are answered 200 by the worker she is re-placed on (logged
# "re-placed"), /state there knows her only after a new login, and her counter starts afresh. Bob, moved
# to w2 earlier, keeps his counter; guests are served; status.json counts no user on the dead worker.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
. "$(dirname "$0")/move-lib.sh"
make_test_cgroup

move_start_pool "$MOVE_SOURCE" "--snapshot-delay 3s"
# long enough to outlast bob's move (3 s of snapshot) and alice's login: it dies with w1
move_busy_reception 15000

# bob first: passed on to w2, after the 3 s snapshot
move_login bob
move_end_line bob "done after" >/dev/null
for i in 1 2 3; do
        expect_state "$(move_state bob)" bob "$i" "$MOVE_TARGET"
done

crc=$(move_seed_state alice 5)
wait_until occupancy_over "$MOVE_SOURCE" 0.1 || fail "the reception is not busy any more"
move_login alice
wait_log "Delaying the snapshot of user 'alice'"
move_send_held alice / held
held=$EP_LAST_PID
pid=$(worker_pid "w$MOVE_SOURCE")
kill -KILL "$pid"
note "killed w$MOVE_SOURCE (pid $pid) while it snapshots alice"

line=$(move_end_line alice "aborted in snapshot: ")
note "$line"
want="the source worker is gone (the user's state with it)"
[[ $line == *"$want; the user stays on w$MOVE_SOURCE after"* ]] ||
        fail "the move did not abort on the source's death: $line"
[[ $line == *"; 1 held requests released)"* ]] || fail "the request sent during the move was not held: $line"
wait_log "Worker w$MOVE_SOURCE \(pid $pid\) .*SIGKILL"

# checked last: whatever it got, the rest of the user's experience is checked first
move_held_result held "$held"
note "alice's request held during the move: $HELD_CODE after ${HELD_TIME}s"
code=$("${CURL[@]}" -b "$EP_TMP/alice.jar" -o /dev/null -w '%{http_code}' "$EP_URL/")
[[ $code == 200 ]] || fail "alice's next request got $code"
wait_log "User alice re-placed on w[0-9]+: .*\(its state there is lost\)"
note "$(grep -m1 -E 'User alice re-placed' "$EP_LOG")"

# her state went with w1: the worker she is on now does not know her until she logs in again
code=$("${CURL[@]}" -b "$EP_TMP/alice.jar" -o /dev/null -w '%{http_code}' "$EP_URL/state")
[[ $code == 404 ]] || fail "alice's /state after the loss of her state got $code, want 404"
"${CURL[@]}" -b "$EP_TMP/alice.jar" -c "$EP_TMP/alice.jar" -o /dev/null "$EP_URL/login?user=alice" ||
        fail "alice's second login failed"
body=$(move_state alice)
[[ $body == *'"user":"alice","counter":1,'* ]] || fail "alice's counter did not start afresh: $body"
[[ $body != *"\"worker\":\"$MOVE_SOURCE\""* ]] || fail "alice is served by the dead w$MOVE_SOURCE: $body"
note "alice afresh: $body"

for i in 4 5 6; do
        expect_state "$(move_state bob)" bob "$i" "$MOVE_TARGET"
done
note "bob's counter went on 4..6 on w$MOVE_TARGET"
for i in 1 2 3; do
        code=$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$EP_URL/hello")
        [[ $code == 200 ]] || fail "guest request $i got $code"
done

# status.json (rewritten every few hundred ms): no user counted on the dead worker (gone from the list, or
# 0), alice and bob on the live ones
users_counted() {
        "$EP_PYTHON" -c 'import json, sys
d = json.load(open(sys.argv[1]))
dead = sum(w["users"] for w in d["workers"] if w["name"] == sys.argv[2])
live = sum(w["users"] for w in d["workers"] if w["name"] != sys.argv[2])
sys.exit(0 if dead == 0 and live == 2 else 1)' "$EP_RUN/status.json" "w$MOVE_SOURCE"
}
wait_until users_counted ||
        fail "status.json does not count alice and bob on live workers only: $(cat "$EP_RUN/status.json")"
note "users per worker: $("$EP_PYTHON" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join("%s=%s" % (w["name"], w["users"]) for w in d["workers"]))' "$EP_RUN/status.json")"
wait "$MOVE_BUSY_PID" || true # it ran on w1: cut short by the kill

# A request held while its user moved is released when the move ends; with the source dead, to the worker
# the user is placed on again, like any request of a user whose worker died.
[[ $HELD_CODE == 200 ]] || fail "alice's request held during the move got $HELD_CODE after the source died" \
        "(w$MOVE_TARGET was routable): $HELD_BODY"
fe_stop
