#!/bin/bash
# SPDX-License-Identifier: MIT
# The demo worker under a fake commander (tests/tools/ep-channel-peer, which spawns it with a channel and
# its listening socket by socket activation): Hello advertises the move capabilities; reports carry
# executor total = --threads and the user count; a snapshot / drop / install round trip restores a user
# with its counter and blob intact; a damaged package is refused; Drain is logged; SIGTERM from the peer
# ends the worker with a Goodbye and exit 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/demo-worker-lib.sh"

demo_peer_start --threads 3 --user-blob-size 1000
frames=$DEMO_FRAMES

state() {
        curl -s "${DEMO_CURL[@]}" -H "X-Elastic-Pool-User: $1" http://demo/state
}

expect_frame '^hello .*caps=[a-z,-]*snapshot,install,drop' "Hello with the move capabilities"
curl -sf "${DEMO_CURL[@]}" -o /dev/null 'http://demo/login?user=alice' || fail "login"
for _ in 1 2 3; do before=$(state alice); done
grep -q '"counter":3,' <<<"$before" || fail "state before the move: $before"
grep -q '"worker":"1"' <<<"$before" || fail "the worker id from ELASTIC_POOL_WORKER is not in /state: $before"
crc=$(grep -o '"blob_crc":[0-9]*' <<<"$before")

expect_frame '^report .* users=1 .* executor=[0-9]+/3/[0-9]+ ' "a report with users=1 and executor total 3"
grep -E '^report ' "$frames" | grep -qE ' connections=[0-9]+ ' || fail "reports lack the connection count"

peer_command snapshot 7 alice
expect_frame '^package move=7 user=alice size=1024 blob=45504455' "the package of alice (24-byte header + 1000)"
peer_command drop 8 alice
wait_until bash -c "! curl -sf --unix-socket '$DEMO_SOCK' -H 'X-Elastic-Pool-User: alice' -o /dev/null http://demo/state" ||
        fail "alice still has state after Drop"
expect_frame '^report .* users=0 ' "a report with users=0 after the drop"

peer_command install-from-last-package alice
expect_frame '^install-result move=7 user=alice ok=yes' "a successful install"
after=$(state alice)
grep -q '"counter":4,' <<<"$after" || fail "the installed user did not keep its counter: $after"
grep -q "$crc" <<<"$after" || fail "the installed user's blob differs: before $before, after $after"

peer_command install 9 bob 4550445501000000
expect_frame '^install-result move=9 user=bob ok=no' "a refused install of a damaged package"
[[ $(curl -s "${DEMO_CURL[@]}" -o /dev/null -w '%{http_code}' -H 'X-Elastic-Pool-User: bob' http://demo/state) == 404 ]] ||
        fail "a refused install left a user behind"
peer_command snapshot 10 nobody
expect_frame '^package move=10 user=nobody .*error=' "an error package for an unknown user"

peer_command drain 5000
wait_for_line "$DEMO_LOG" 'Asked to drain' >/dev/null || fail "Drain was not logged"

demo_peer_stop
echo "OK"
