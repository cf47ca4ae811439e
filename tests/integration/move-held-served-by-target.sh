#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a request sent while its user moves is answered where the user lands. The reception (w1) takes
# 1 s to snapshot each user; a request alice sends meanwhile is held in the commander and, once the move
# is done, answered by the target (w2) with alice's state carried over (the counter goes on, the same
# blob). w2 lists alice afterwards, w1 no longer does.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
. "$(dirname "$0")/move-lib.sh"
make_test_cgroup

move_start_pool "$MOVE_SOURCE" "--snapshot-delay 1s"
crc=$(move_seed_state alice 5)
move_busy_reception 3000
move_login alice
move_send_held alice /state held
held=$EP_LAST_PID

line=$(move_end_line alice "done after")
note "$line"
log_has "Delaying the snapshot of user 'alice'" || fail "w$MOVE_SOURCE did not stall the snapshot"
[[ $line == *"; 1 held requests released)"* ]] || fail "the request sent during the move was not held: $line"

move_held_result held "$held"
[[ $HELD_CODE == 200 ]] || fail "the held request got $HELD_CODE: $HELD_BODY"
expect_state "$HELD_BODY" alice 6 "$MOVE_TARGET" "$crc"
note "the held request: 200 from w$MOVE_TARGET after ${HELD_TIME}s, counter 6"
worker_lists_user "$MOVE_TARGET" alice || fail "w$MOVE_TARGET does not list alice"
wait_until worker_lacks_user "$MOVE_SOURCE" alice || fail "w$MOVE_SOURCE still holds alice"
for i in 7 8; do
        expect_state "$(move_state alice)" alice "$i" "$MOVE_TARGET" "$crc"
done
wait "$MOVE_BUSY_PID" || fail "the busy request failed"
fe_stop
