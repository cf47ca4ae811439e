#!/bin/bash
# Intent: under real CPU load a one-worker group grows, and once the load is gone the empty worker is
# retired. Real demo workers in cgroup v2 leaves (cgroup backend), load driven straight at the first
# worker's Unix socket, decisions read from the commander's journal lines.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
need_cmd curl
make_test_cgroup
demo=$(bin elastic-pool-demo-worker)

write_config "$demo --threads 1" policy.occupancy_interval=500ms
start_commander --no-frontend
EP_WAIT=20 wait_log 'Worker w1 is routable'

# Two clients keep the single executor thread of w1 busy: about one core.
load() { while :; do curl -s --max-time 5 --unix-socket "$EP_RUN/w1.sock" 'http://w1/work?cpu_ms=200' >/dev/null; done; }
spawn_bg load
l1=$EP_LAST_PID
spawn_bg load
l2=$EP_LAST_PID

EP_WAIT=30 wait_log 'Scale-up: spawning a worker: sole worker w1 at'
EP_WAIT=20 wait_log 'Worker w2 is routable'
note "w2 spawned under load: $(grep -m1 'sole worker w1 at' "$EP_LOG" | cut -c1-200)"
[[ -d $EP_TEST_CGROUP/w2 ]] || fail "w2 has no cgroup leaf"
[[ $(cat "$EP_TEST_CGROUP/w2/cgroup.procs") =~ [0-9] ]] || fail "w2's leaf holds no process"

kill "$l1" "$l2"
wait "$l1" "$l2" 2>/dev/null || true
EP_WAIT=40 wait_log 'Compaction: retiring a worker: retire w2'
EP_WAIT=20 wait_log '\[death w2\]'
wait_until test ! -d "$EP_TEST_CGROUP/w2" || fail "w2's cgroup leaf was not removed"
commander_alive || fail "commander died"
note "$(grep -m1 'Compaction: retiring' "$EP_LOG" | cut -c1-200)"
stop_commander || fail "commander exited with $?"
