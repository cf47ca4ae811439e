#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a target that refuses the install does not cost the user its state. The target (w2) refuses
# every install (--install-error): the move of a user passed on from the reception aborts in install
# ("w2 refused the install" with the worker's reason), and the user stays on the reception with its state
# (the counter goes on, the same blob); the target keeps no copy.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
. "$(dirname "$0")/move-lib.sh"
make_test_cgroup

move_start_pool "$MOVE_TARGET" --install-error
crc=$(move_seed_state alice 5)
move_busy_reception 3000
move_login alice

line=$(move_end_line alice "aborted in install: ")
note "$line"
want="w$MOVE_TARGET refused the install: install of user 'alice' failed: Operation not permitted"
[[ $line == *"$want; the user stays on w$MOVE_SOURCE after"* ]] ||
        fail "the move did not abort on the target's refusal: $line"
log_has "Refused to install user 'alice' \([0-9]+ bytes\): --install-error" ||
        fail "the target did not log its refusal"

for i in 6 7 8; do
        expect_state "$(move_state alice)" alice "$i" "$MOVE_SOURCE" "$crc"
done
note "alice's counter went on 6..8 on w$MOVE_SOURCE with blob_crc $crc"
worker_lists_user "$MOVE_SOURCE" alice || fail "w$MOVE_SOURCE does not list alice"
worker_lacks_user "$MOVE_TARGET" alice ||
        fail "w$MOVE_TARGET holds alice: $(worker_curl "$MOVE_TARGET" http://w/_monitor/state)"
wait "$MOVE_BUSY_PID" || fail "the busy request failed"
fe_stop
