#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a demo worker whose commander dies re-announces its users to the next one. Under a fake commander
# (tests/tools/ep-channel-peer) that also listens where ELASTIC_POOL_CHANNEL points: the first connection
# carries a Hello with the list-users capability, then one empty Users frame (no user lives here yet); two
# users log in by HTTP; the peer closes the channel as a crashed commander would; the worker reconnects to
# the ELASTIC_POOL_CHANNEL path by itself, and its new Hello (same pid) is followed by one Users frame that
# lists exactly those two users. Reports and the Goodbye then go over the new connection.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/demo-worker-lib.sh"

DEMO_PEER_ARGS=(--channel "$EP_TMP/channel.sock")
demo_peer_start --threads 2
frames=$DEMO_FRAMES

# The line after the first line matching REGEX in the frames printed since the last (re)connection.
since_connected() {
        if grep -q '^connected$' "$frames"; then
                sed -n '/^connected$/,$p' "$frames" | tail -n +2
        else
                cat "$frames"
        fi
}
line_after() {
        since_connected | awk -v re="$1" 'found { print; exit } $0 ~ re { found = 1 }'
}
pid_of_hello() {
        grep -oE ' pid=[0-9]+' <<<"$1"
}

expect_frame '^hello .*caps=[a-z,-]*list-users' "a Hello with the list-users capability"
first_hello=$(grep -m1 '^hello ' "$frames")
[[ $(line_after '^hello ') =~ ^users\ more=no\ n=0\ list=-$ ]] ||
        fail "the first Hello is not followed by one empty Users frame: '$(line_after '^hello ')'"

for user in alice bob; do
        curl -sf "${DEMO_CURL[@]}" -o /dev/null "http://demo/login?user=$user" || fail "login of $user"
done
expect_frame '^report .* users=2 ' "a report with the two users"

peer_command close
expect_frame '^closed reason="closed by command"' "the peer closing the channel"
expect_frame '^connected$' "the worker reconnecting to ELASTIC_POOL_CHANNEL"
wait_until bash -c "sed -n '/^connected\$/,\$p' '$frames' | grep -q '^users '" ||
        fail "no Users frame after the reconnection"

hello=$(since_connected | head -n 1)
[[ $hello =~ ^hello\ .*caps=[a-z,-]*list-users ]] || fail "the new connection does not start with a Hello: '$hello'"
[[ $(pid_of_hello "$hello") == "$(pid_of_hello "$first_hello")" ]] ||
        fail "another process came back: '$first_hello' then '$hello'"
users=$(line_after '^hello ')
[[ $users =~ ^users\ more=no\ n=2\ list= ]] || fail "the new Hello is not followed by one Users frame of 2: '$users'"
listed=$(tr , '\n' <<<"${users#* list=}" | sort | paste -sd,)
[[ $listed == alice,bob ]] || fail "the Users frame lists '$listed', not alice,bob"

# the new connection carries on: reports, then the Goodbye at the end
wait_until bash -c "sed -n '/^connected\$/,\$p' '$frames' | grep -q '^report .* users=2 '" ||
        fail "no report over the new connection"
demo_peer_stop
echo "OK"
