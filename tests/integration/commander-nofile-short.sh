#!/bin/bash
# Intent: a descriptor limit short of what the configuration can need (issue 14: 10 000 workers use two
# descriptors each) is named at start and at reload, with the figures and what to raise, instead of being
# found later from paused accepts and failed spawns; the pool still starts. A limit with room says nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
make_test_cgroup

# this shell's hard limit is what the commander inherits and can raise its soft limit to
ulimit -n 256
write_config "$(bin ep-fake-worker)" pool.max_workers=200
start_commander --no-frontend
wait_log 'The descriptor limit \(256\) is short of what max_workers=200 and max_connections=10000 can need \(about 464'
wait_log 'Worker w1 is routable'
log_has 'Raise LimitNOFILE=' || fail "the warning does not say what to raise"

# a reload to a pool that fits: nothing more is said
write_config "$(bin ep-fake-worker)" pool.max_workers=50
kill -HUP "$EP_COMMANDER_PID"
wait_log 'Reloaded the configuration'
n=$(grep -c 'The descriptor limit' "$EP_LOG")
((n == 1)) || fail "expected the warning once (at start), saw it $n times"
commander_alive || fail "commander died"
stop_commander || fail "commander exited with $?"
