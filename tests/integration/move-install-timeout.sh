#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a hung target does not take the user with it. The target (w2) stalls every install for 4 s,
# longer than move_timeout=1500ms: the move of a user passed on from the reception aborts in install
# ("no answer from w2 within the move timeout"), the user stays on the reception with its state (the
# counter goes on, the same blob), a request it sent during the move is held and then answered 200 by
# the reception, and the target, once its stall is over, is told to drop the copy it installed late.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
. "$(dirname "$0")/move-lib.sh"
make_test_cgroup

move_start_pool "$MOVE_TARGET" "--install-delay 4s" pool.move_timeout=1500ms frontend.hold_timeout=10s
crc=$(move_seed_state alice 5)
move_busy_reception 3000
move_login alice
wait_log "Delaying the install of user 'alice'"
move_send_held alice /state held
held=$EP_LAST_PID

line=$(move_end_line alice "aborted in install: ")
note "$line"
want="no answer from w$MOVE_TARGET within the move timeout"
[[ $line == *"$want; the user stays on w$MOVE_SOURCE after"* ]] ||
        fail "the move did not time out waiting for the target: $line"
[[ $line == *"; 1 held requests released)"* ]] || fail "the request sent during the move was not held: $line"

move_held_result held "$held"
[[ $HELD_CODE == 200 ]] || fail "the held request got $HELD_CODE: $HELD_BODY"
expect_state "$HELD_BODY" alice 6 "$MOVE_SOURCE" "$crc"
note "the held request: 200 from w$MOVE_SOURCE after ${HELD_TIME}s, counter 6"
for i in 7 8 9; do
        expect_state "$(move_state alice)" alice "$i" "$MOVE_SOURCE" "$crc"
done
worker_lists_user "$MOVE_SOURCE" alice || fail "w$MOVE_SOURCE does not list alice"

# the target installs once its stall is over, then acts on the Drop the abort sent it
wait_log "Installed user 'alice'"
wait_log "Dropped user 'alice'"
wait_until worker_lacks_user "$MOVE_TARGET" alice ||
        fail "w$MOVE_TARGET still holds alice: $(worker_curl "$MOVE_TARGET" http://w/_monitor/state)"
note "w$MOVE_TARGET installed alice late and dropped it"
expect_state "$(move_state alice)" alice 10 "$MOVE_SOURCE" "$crc"
wait "$MOVE_BUSY_PID" || fail "the busy request failed"
fe_stop
