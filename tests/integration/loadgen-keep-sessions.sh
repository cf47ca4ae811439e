#!/bin/bash
# Intent: with --keep-sessions the load generator's users that leave stay logged in. After a 3 s ramp
# of 12 users, none has logged out and the commander still holds all 12, which send only sparse /state
# checks, for as long as the pool is larger than at the start; once it is back to its size, every user
# checks /state a last time and logs out. Zero errors, zero sticky errors, every idle check passed, and
# the summary says so. The pool the load generator reads is a status file this test writes (one
# worker, then two, then one again), so that "larger than at the start" lasts until the test says
# otherwise; the users go through a real commander to real demo workers (cgroup backend).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
make_test_cgroup
[[ -x $EP_PYTHON ]] || skip "needs $EP_PYTHON"
loadgen=$(bin elastic-pool-loadgen)
port=$(free_port)

# --help documents the options; --idle-check alone is a usage error
"$loadgen" --help | grep -q -- '--keep-sessions' || fail "--help does not list --keep-sessions"
"$loadgen" --help | grep -q -- '--idle-check DURATION' || fail "--help does not list --idle-check"
rc=0
"$loadgen" --idle-check 1s >/dev/null 2>"$EP_TMP/usage.err" || rc=$?
[[ $rc -eq 2 ]] || fail "--idle-check without --keep-sessions exited with $rc, expected 2"
grep -q -- '--idle-check needs --keep-sessions' "$EP_TMP/usage.err" || fail "the usage error does not say why"

# pool N: the status file shows N routable workers (replaced whole, as the commander does)
pool() {
        local i json='{"workers":['
        for ((i = 1; i <= $1; i++)); do
                ((i == 1)) || json+=,
                json+="{\"name\":\"w$i\",\"state\":\"routable\"}"
        done
        echo "$json]}" >"$EP_TMP/pool.json.new"
        mv "$EP_TMP/pool.json.new" "$EP_TMP/pool.json"
}

# the users the commander holds, over every worker
commander_users() {
        "$EP_PYTHON" -c 'import json, sys
print(sum(w.get("users", 0) for w in json.load(open(sys.argv[1]))["workers"]))' "$EP_RUN/status.json"
}

write_config "$(bin elastic-pool-demo-worker)" "frontend.listen=127.0.0.1:$port"
start_commander
EP_WAIT=20 wait_ready

pool 1
spawn_bg "$loadgen" --url "http://127.0.0.1:$port" --users 12 --profile ramp --duration 3s --think 20ms \
        --cpu-ms 1 --keep-sessions --idle-check 300ms --status "$EP_TMP/pool.json" --linger 60s --max-lost 0 \
        >"$EP_TMP/loadgen.log" 2>&1
lg_pid=$EP_LAST_PID
# the first report line comes after the size at the start was read: from now on the pool is larger
wait_for_line "$EP_TMP/loadgen.log" '^ +[0-9]+s users ' >/dev/null || fail "no report line"
pool 2

wait_for_line "$EP_TMP/loadgen.log" '^ +[0-9]+s users +0/0 +idle 12 ' >/dev/null ||
        fail "no report line with every user gone idle: $(cat "$EP_TMP/loadgen.log")"
sleep 1 # a few idle checks each (every 150..450 ms)
log_has '\] User u[0-9]+ logged out' && fail "a user logged out while its session was to be kept"
[[ $(commander_users) -eq 12 ]] || fail "the commander holds $(commander_users) users, expected the 12 idle ones"

pool 1
EP_WAIT=20 wait_until bash -c '! kill -0 "$0"' "$lg_pid" || fail "the load generator did not close in 20 s"
rc=0
wait "$lg_pid" || rc=$?
cat "$EP_TMP/loadgen.log"
[[ $rc -eq 0 ]] || fail "elastic-pool-loadgen exited with $rc"

summary=$(grep '^summary: ' "$EP_TMP/loadgen.log") || fail "no summary line"
[[ $summary =~ ' 0 errors, 0 sticky errors, 0 lost states' ]] || fail "errors in: $summary"
[[ $summary =~ ' 12 logins, 12 logouts' ]] || fail "not every user logged in and out: $summary"
sessions=$(grep '^sessions: ' "$EP_TMP/loadgen.log") || fail "no sessions line in the summary"
re='^sessions: 12 users stayed logged in through the ramp-down; ([0-9]+) idle checks, ([0-9]+) passed, ([0-9]+) of them after the pool shrank \(2 -> 1 workers\)'
[[ $sessions =~ $re ]] || fail "unexpected sessions line: $sessions"
checks=${BASH_REMATCH[1]} passed=${BASH_REMATCH[2]} after=${BASH_REMATCH[3]}
((checks == passed)) || fail "only $passed of $checks idle checks passed"
((checks >= 24)) || fail "too few idle checks ($checks) for 12 users idle for over a second"
((after >= 12)) || fail "the last checks ($after) did not all come after the pool shrank"
[[ $(grep -cE '\] User u[0-9]+ logged out' "$EP_LOG") -eq 12 ]] || fail "the commander did not see 12 logouts"

commander_alive || fail "commander died under the load"
stop_commander || fail "commander exited with $?"
