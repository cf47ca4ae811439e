#!/bin/bash
# SPDX-License-Identifier: MIT
# The demo worker's --install-error fault, under a fake commander (tests/tools/ep-channel-peer): an
# install of a sound package (the worker's own snapshot) is refused, the InstallResult says ok=false with
# an error text naming the user, the refusal is logged, no state is left behind; snapshots and the HTTP
# side keep working.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/demo-worker-lib.sh"

demo_peer_start --user-blob-size 100 --install-error
curl -sf "${DEMO_CURL[@]}" -o /dev/null 'http://demo/login?user=alice' || fail "login"

peer_command snapshot 1 alice
expect_frame '^package move=1 user=alice size=124 ' "the package of alice (a snapshot is no install)"
peer_command drop 2 alice
peer_command install-from-last-package alice
expect_frame '^install-result move=1 user=alice ok=no error="[^"]+"' "a refused install with an error text"
result=$(grep -E '^install-result move=1 ' "$DEMO_FRAMES")
grep -q "alice" <<<"${result#*error=}" || fail "the error text does not name the user: $result"
grep -q "Operation not permitted" <<<"$result" || fail "the error text does not give the reason: $result"
wait_for_line "$DEMO_LOG" "Refused to install user 'alice'.*--install-error" >/dev/null ||
        fail "the refusal is not logged"

code=$(curl -s "${DEMO_CURL[@]}" -o /dev/null -w '%{http_code}' -H 'X-Elastic-Pool-User: alice' \
        http://demo/state)
[[ $code == 404 ]] || fail "a refused install left state behind (/state answered $code)"
demo_alive

demo_peer_stop
echo "OK"
