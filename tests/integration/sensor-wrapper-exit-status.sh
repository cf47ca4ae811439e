#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: the sensor wrapper exits with its child's status (128+N for a signal N, 127 when the command
# does not exist), forwards SIGTERM to the child and says Goodbye on the channel, and names a bad option.
. "$(dirname "$0")/lib.sh"

peer=$(bin ep-channel-peer)
wrapper=$(bin elastic-pool-sensor)

expect_status() {
        local want=$1 rc=0
        shift
        "$wrapper" "$@" 2>"$EP_TMP/wrapper.log" </dev/null || rc=$?
        [[ $rc -eq $want ]] || fail "'$*' exited with $rc, want $want"
}

expect_status 0 -- true
expect_status 3 -- sh -c 'exit 3'
expect_status 137 -- sh -c 'kill -KILL $$'
expect_status 127 -- /nonexistent/command
grep -q "/nonexistent/command" "$EP_TMP/wrapper.log" || fail "exec failure does not name the command"
expect_status 1 --interval abc -- true
grep -q "'abc'" "$EP_TMP/wrapper.log" || fail "bad --interval is not named"
expect_status 1
grep -qi "no command" "$EP_TMP/wrapper.log" || fail "a missing command is not reported"

# SIGTERM to the wrapper reaches the child; the wrapper reports its death and exits 128+15.
out=$EP_TMP/peer.log
"$peer" --interval 200ms -- "$wrapper" -- sleep 600 >"$out" 2>"$EP_TMP/peer-stderr.log" </dev/null &
peer_pid=$!
EP_PIDS+=("$peer_pid")
hello=$(wait_for_line "$out" '^hello ') || fail "no Hello from the wrapper"
wrapper_pid=$(sed -E 's/.* pid=([0-9]+) .*/\1/' <<<"$hello")
wait_for_line "$out" '^report ' >/dev/null || fail "no report from the wrapper"
kill -TERM "$wrapper_pid"
rc=0
wait "$peer_pid" || rc=$?
cat "$out"
[[ $rc -eq 143 ]] || fail "peer reports the wrapper exited with $rc, want 143"
grep -q '^goodbye reason="child killed by signal SIGTERM"$' "$out" || fail "no Goodbye naming the signal"
grep -q '^exited status=143$' "$out" || fail "no exit line"
note "ok"
