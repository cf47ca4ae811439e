#!/bin/bash
# Intent: a worker that dies leaving a child of its own behind in its cgroup leaf: the commander kills
# the leaf (cgroup.kill) and removes it once the kernel has emptied it, retrying from its event loop
# instead of waiting there, so the leftover neither survives nor keeps the leaf, and the commander
# replaces the worker as usual.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
make_test_cgroup

# the worker forks a long sleep into its own leaf, then becomes an ordinary fake worker
write_config "/bin/bash -c 'sleep 600 & echo \$! >$EP_TMP/leftover-\$ELASTIC_POOL_WORKER; exec $(bin ep-fake-worker)'"
start_commander --no-frontend
wait_log 'Worker w1 is routable'
wait_until test -s "$EP_TMP/leftover-1" || fail "w1 did not start its child"
leftover=$(cat "$EP_TMP/leftover-1")
leaf=$EP_TEST_CGROUP/w1
grep -qx "$leftover" "$leaf/cgroup.procs" || fail "the leftover $leftover is not in $leaf"

kill -KILL "$(worker_pid w1)"
wait_log '\[death w1\].*killed by signal SIGKILL'
wait_until bash -c "! kill -0 $leftover" || fail "the leftover $leftover of w1 survived"
wait_until bash -c "[[ ! -d $leaf ]]" || fail "$leaf was not removed"
log_has 'Gave up removing cgroup|Failed to remove cgroup' && fail "the leaf removal complained"
# the pool carries on: a replacement is spawned and becomes routable
wait_log 'Worker w2 is routable'
commander_alive || fail "commander died"
stop_commander || fail "commander exited with $?"
[[ -d $EP_TEST_CGROUP/w2 ]] && fail "w2's leaf outlived the commander"
true
