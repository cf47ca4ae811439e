#!/bin/bash
# Intent: a worker that says Hello, becomes routable and crashes 0.2 s later is a failed spawn too: the
# commander backs off between respawns (250 ms, doubling) and, after the fifth such death, stops
# spawning with a critical message naming that death. No respawn storm, a bounded number of spawns.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
make_test_cgroup

# spawn_timeout=5s: the stable period is then its 10 s floor, far above the worker's 0.2 s of life
write_config "$(bin ep-fake-worker) --exit-after 200ms"
start_commander --no-frontend
wait_log 'Worker w1 is routable'
wait_log 'Worker w1 failed to start: exited with status 3 [0-9.]+m?s after it became routable \(a worker must stay up 10s\) \(1 consecutive'
EP_WAIT=30 wait_log 'Stopped spawning workers after 5 consecutive failed spawns \(last: exited with status 3 .* after it became routable'
# nothing after the stop: give a storm the time to show itself
sleep 1.5
n=$(grep -c 'Spawned worker' "$EP_LOG")
((n == 5)) || fail "expected exactly 5 spawns, saw $n"
r=$(grep -c 'is routable' "$EP_LOG")
((r == 5)) || fail "expected each of the 5 workers to have become routable, saw $r"

# the back-off shows between the deaths and the next spawns: 250 + 500 + 1000 + 2000 ms at least
ms() { awk -F'[:. ]' '{ print (($1 * 60 + $2) * 60 + $3) * 1000 + $4 }'; }
first=$(grep -m1 'Spawned worker w1' "$EP_LOG" | ms)
last=$(grep -m1 'Spawned worker w5' "$EP_LOG" | ms)
span=$((last - first))
note "w1 to w5 spawned ${span} ms apart"
((span >= 3750)) || fail "5 spawns within ${span} ms: the back-off did not hold them apart"

commander_alive || fail "commander died"
wait_until bash -c "grep -q '\"given_up\":true' '$EP_RUN/status.json'" || fail "status.json does not say spawning stopped"
stop_commander || fail "commander exited with $?"
