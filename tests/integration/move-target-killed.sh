#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a target that dies mid-install does not take the user with it. The target (w2) stalls every
# install for 3 s; while it installs alice, it is killed (SIGKILL). The move aborts ("the target worker is
# gone"), alice stays on the reception with her state (the counter goes on, the same blob), and a request
# she sent during the move is held and then answered 200 by the reception.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
. "$(dirname "$0")/move-lib.sh"
make_test_cgroup

move_start_pool "$MOVE_TARGET" "--install-delay 3s"
crc=$(move_seed_state alice 5)
move_busy_reception 3000
move_login alice
move_send_held alice /state held
held=$EP_LAST_PID
wait_log "Delaying the install of user 'alice'"
pid=$(worker_pid "w$MOVE_TARGET")
kill -KILL "$pid"
note "killed w$MOVE_TARGET (pid $pid) while it installs alice"

line=$(move_end_line alice "aborted in install: ")
note "$line"
[[ $line == *"the target worker is gone; the user stays on w$MOVE_SOURCE after"* ]] ||
        fail "the move did not abort on the target's death: $line"
[[ $line == *"; 1 held requests released)"* ]] || fail "the request sent during the move was not held: $line"
wait_log "Worker w$MOVE_TARGET \(pid $pid\) .*SIGKILL"

move_held_result held "$held"
[[ $HELD_CODE == 200 ]] || fail "the held request got $HELD_CODE: $HELD_BODY"
expect_state "$HELD_BODY" alice 6 "$MOVE_SOURCE" "$crc"
note "the held request: 200 from w$MOVE_SOURCE after ${HELD_TIME}s, counter 6"
for i in 7 8 9; do
        expect_state "$(move_state alice)" alice "$i" "$MOVE_SOURCE" "$crc"
done
note "alice's counter went on 7..9 on w$MOVE_SOURCE with blob_crc $crc"
worker_lists_user "$MOVE_SOURCE" alice || fail "w$MOVE_SOURCE does not list alice"
! log_has "User alice re-placed" ||
        fail "alice was placed again: $(grep -m1 'User alice re-placed' "$EP_LOG")"
wait "$MOVE_BUSY_PID" || fail "the busy request failed"
fe_stop
