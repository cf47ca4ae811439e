#!/bin/bash
# Intent: the demo's load generator works end to end against a real commander: 20 virtual users log
# in through the front end, loop over /state and /work for ~3 s while their counters are checked for
# stickiness, and log out; it reports zero errors and zero sticky errors, prints its summary, reads the
# pool from status.json and exits 0. Real demo workers in cgroup v2 leaves (cgroup backend).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
make_test_cgroup
[[ -x $EP_PYTHON ]] || skip "needs $EP_PYTHON"
loadgen=$(bin elastic-pool-loadgen)
port=$(free_port)

# --help and a bad option: the documented exit statuses
"$loadgen" --help | grep -q -- '--max-errors' || fail "--help does not list --max-errors"
rc=0
"$loadgen" --users 0 >/dev/null 2>"$EP_TMP/usage.err" || rc=$?
[[ $rc -eq 2 ]] || fail "--users 0 exited with $rc, expected 2"
grep -q "invalid --users '0'" "$EP_TMP/usage.err" || fail "the usage error does not name the bad value"

write_config "$(bin elastic-pool-demo-worker)" "frontend.listen=127.0.0.1:$port"
start_commander
EP_WAIT=20 wait_ready

rc=0
"$loadgen" --url "http://127.0.0.1:$port" --users 20 --profile constant --duration 3s --think 20ms \
        --cpu-ms 2 --max-lost 0 --status "$EP_RUN/status.json" >"$EP_TMP/loadgen.log" 2>&1 || rc=$?
cat "$EP_TMP/loadgen.log"
[[ $rc -eq 0 ]] || fail "elastic-pool-loadgen exited with $rc"
summary=$(grep '^summary: ' "$EP_TMP/loadgen.log") || fail "no summary line"
[[ $summary =~ ' 0 errors, 0 sticky errors, 0 lost states' ]] || fail "errors in: $summary"
[[ $summary =~ ' 20 logins, 20 logouts' ]] || fail "not every user logged in and out: $summary"
re=' ([0-9]+) requests '
[[ $summary =~ $re ]] && ((BASH_REMATCH[1] > 100)) || fail "too few requests: $summary"
grep -qE '^ +[0-9]+s users +20/20 .*\| [0-9]+ workers?  w1 \[' "$EP_TMP/loadgen.log" ||
        fail "no report line with 20 users and the pool read from status.json"
grep -qE '^pool: max routable workers seen [0-9]+' "$EP_TMP/loadgen.log" || fail "the summary lacks the pool"

commander_alive || fail "commander died under the load"
stop_commander || fail "commander exited with $?"
