#!/bin/bash
# Intent: a worker that never says Hello is killed through its pidfd after spawn_timeout, the log
# says why, and repeated failures back off and then stop with a message saying so (no fork storm).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
make_test_cgroup

write_config "$(bin ep-fake-worker) --no-hello" pool.spawn_timeout=1s
start_commander --no-frontend
wait_log 'Spawned worker w1'
pid=$(grep -m1 -oE 'Spawned worker w1 \(pid [0-9]+' "$EP_LOG" | grep -oE '[0-9]+$')
EP_WAIT=10 wait_log 'w1 failed to start: no Hello on its channel within spawn_timeout=1s; killed it'
wait_log '\[death w1\].*killed by signal SIGKILL'
kill -0 "$pid" 2>/dev/null && fail "w1 (pid $pid) is still alive"
EP_WAIT=30 wait_log 'Stopped spawning workers after 5 consecutive failed spawns'
n=$(grep -c 'Spawned worker' "$EP_LOG")
((n == 5)) || fail "expected exactly 5 spawn attempts, saw $n"
# the spawns are spread by the back-off, not fired in a burst
first=$(grep -m1 'Spawned worker w1' "$EP_LOG" | cut -c1-12)
last=$(grep 'Spawned worker w5' "$EP_LOG" | cut -c1-12)
note "5 attempts between $first and $last"
commander_alive || fail "commander died"
stop_commander || fail "commander exited with $?"
