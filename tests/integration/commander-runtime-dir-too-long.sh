#!/bin/bash
# Intent: a spawn that fails before any child exists (here: the worker's socket path does not fit a
# Unix socket address, under a --runtime-dir longer than 108 bytes) goes through the spawn throttle like
# any other failed spawn: logged with its cause, retried with back-off, and stopped after the fifth with
# the critical message, instead of being tried once or twice and then silently never again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
make_test_cgroup

EP_RUN=$EP_TMP/run/$(printf 'd%.0s' {1..120})
write_config "$(bin ep-fake-worker)"
start_commander --no-frontend
wait_log "Worker w1 failed to start: cannot create its listening socket $EP_RUN/w1.sock: File name too long \(1 consecutive"
EP_WAIT=30 wait_log 'Stopped spawning workers after 5 consecutive failed spawns \(last: cannot create its listening socket'
# nothing after the stop: an absence cannot be awaited, so give a retry the time to show itself
sleep 1
n=$(grep -c 'failed to start' "$EP_LOG")
((n == 5)) || fail "expected exactly 5 failed spawns, saw $n"
log_has 'Spawned worker' && fail "a worker was spawned without its socket"

ms() { awk -F'[:. ]' '{ print (($1 * 60 + $2) * 60 + $3) * 1000 + $4 }'; }
first=$(grep -m1 'w1 failed to start' "$EP_LOG" | ms)
last=$(grep -m1 'w5 failed to start' "$EP_LOG" | ms)
note "first and fifth failure $((last - first)) ms apart"
((last - first >= 3750)) || fail "5 attempts within $((last - first)) ms: no back-off between them"

commander_alive || fail "commander died"
wait_until bash -c "grep -q '\"given_up\":true' '$EP_RUN/status.json'" || fail "status.json does not say spawning stopped"
stop_commander || fail "commander exited with $?"
