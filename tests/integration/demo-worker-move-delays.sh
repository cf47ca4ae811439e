#!/bin/bash
# SPDX-License-Identifier: MIT
# The demo worker's --snapshot-delay and --install-delay faults, under a fake commander
# (tests/tools/ep-channel-peer): the Package comes no sooner than the snapshot delay after the request,
# the InstallResult no sooner than the install delay after the Install (measured with the test's
# monotonic clock: lower bounds only, a loaded machine may add any amount), and after the delay the
# move completes normally: the installed user keeps its counter.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/demo-worker-lib.sh"

SNAPSHOT_DELAY_MS=700
INSTALL_DELAY_MS=1200

demo_peer_start --user-blob-size 100 --snapshot-delay ${SNAPSHOT_DELAY_MS}ms \
        --install-delay ${INSTALL_DELAY_MS}ms
state() {
        curl -s "${DEMO_CURL[@]}" -H "X-Elastic-Pool-User: $1" http://demo/state
}
state_code() {
        curl -s "${DEMO_CURL[@]}" -o /dev/null -w '%{http_code}' -H "X-Elastic-Pool-User: $1" \
                http://demo/state
}
curl -sf "${DEMO_CURL[@]}" -o /dev/null 'http://demo/login?user=alice' || fail "login"
before=$(state alice)
grep -q '"counter":1,' <<<"$before" || fail "state before the move: $before"

# assert_took START_USEC MIN_MS WHAT
assert_took() {
        local took_ms=$((($(now_usec) - $1) / 1000))
        ((took_ms >= $2)) || fail "$3 came after $took_ms ms, before the $2 ms delay"
        note "$3 after $took_ms ms (delay $2 ms)"
}

start=$(now_usec)
peer_command snapshot 1 alice
expect_frame '^package move=1 user=alice size=124 ' "the package of alice"
assert_took "$start" $SNAPSHOT_DELAY_MS "the Package"
grep -q "Delaying the snapshot of user 'alice'" "$DEMO_LOG" || fail "the snapshot delay is not logged"

peer_command drop 2 alice
gone() { [[ $(state_code alice) == 404 ]]; }
wait_until gone || fail "alice still has state after Drop"

start=$(now_usec)
peer_command install-from-last-package alice
expect_frame '^install-result move=1 user=alice ok=yes' "a successful install after the delay"
assert_took "$start" $INSTALL_DELAY_MS "the InstallResult"
grep -q "Delaying the install of user 'alice'" "$DEMO_LOG" || fail "the install delay is not logged"
after=$(state alice)
grep -q '"counter":2,' <<<"$after" || fail "the installed user did not keep its counter: $after"

demo_peer_stop
echo "OK"
