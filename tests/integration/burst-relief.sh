#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: users who all logged in at once do not stop the pool from growing past two workers. 36 users
# log in together on the reception w1 and keep it saturated (demo workers with one executor thread,
# /work?cpu_ms=5 and /state without think time). The burst path spawns w2, but the users are sticky: w2
# stands idle beside w1, so "every worker saturated" would never hold again. Relief on the burst path
# ("Relief (burst path): w1 has had N requests waiting for ...") moves some of w1's users to w2 at once,
# w2 saturates with them, the burst path spawns w3 (max_workers 3), and relief hands it users too.
# The smoothed path is slow on purpose (1 s reports, 30 averaged: a smoothed relief round needs 30 s
# over the threshold), so every relief round in this test is the burst path's. Checked: 3 workers
# routable within a generous bound (a behaviour, not a benchmark: bench/burst-growth.sh measures), a
# burst relief round from w1, w3 serving users, and the load generator's summary: no failed request, no
# /state counter that jumped or restarted (a move is a live move: the user's state goes along), no lost
# state.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup
LOADGEN=$(bin elastic-pool-loadgen)
# the sanitizers slow the commander and the workers: the same behaviour, a wider bound
BOUND_S=25
[[ ${EP_SANITIZE:-OFF} == ON ]] && BOUND_S=40

fe_config "$DEMO_WORKER --threads 1" pool.min_workers=1 pool.max_workers=3 pool.hung_timeout=0 \
        policy.occupancy_interval=1s policy.smoothing_rows=30 policy.burst_window=1500ms \
        policy.burst_queue=8 policy.relief_moves=yes
fe_start
wait_log 'Worker w1 is routable'

workers() {
        "$EP_PYTHON" -c 'import json, sys
print(sum(w["state"] == "routable" for w in json.load(open(sys.argv[1]))["workers"]))' "$EP_RUN/status.json"
}
users_on() {
        "$EP_PYTHON" -c 'import json, sys
print(sum(w["users"] for w in json.load(open(sys.argv[1]))["workers"] if w["name"] == sys.argv[2]))' \
                "$EP_RUN/status.json" "$1"
}

start=$SECONDS
spawn_bg "$LOADGEN" --url "$EP_URL" --users 36 --profile constant --duration 60s --think 0 --mix 1:3 \
        --cpu-ms 5 --max-errors 0 --max-sticky-errors 0 --max-lost 0 --user-prefix b \
        --summary-file "$EP_TMP/load.summary" --quiet
load=$EP_LAST_PID
on_exit "kill -INT $load 2>/dev/null"

diagnose() {
        grep -E 'Relief|Scale-up|routable|Burst|burst held|Move [0-9]+ of user .* aborted|WARNING' \
                "$EP_LOG" | tail -n 30 | cut -c1-300 >&2
}
EP_WAIT=$BOUND_S wait_for_line "$EP_LOG" "Worker w3 is routable" >/dev/null ||
        { diagnose; fail "no 3rd worker within ${BOUND_S}s"; }
note "w3 routable $((SECONDS - start))s after the load began"
log_has 'Relief \(burst path\): w1 has had [0-9]+ requests waiting for' ||
        { diagnose; fail "w3 came without a burst relief round from w1"; }
rounds='Relief \(burst path\)|Relief of w[0-9]+ ends|Scale-up \(burst path\)|Worker w[23] is routable'
grep -E "$rounds" "$EP_LOG" | cut -c1-220 | sed 's/^/# /'
# w3 takes users: relief hands it some of the saturated workers' (or placement new ones)
w3_serves() { (($(users_on w3) > 0)); }
EP_WAIT=20 wait_until w3_serves ||
        { diagnose; fail "w3 has no users"; }
[[ $(workers) -ge 3 ]] || fail "status.json shows $(workers) routable workers"
relief_burst=$(status_get '["relief_burst_rounds"]')
((relief_burst >= 1)) || fail "status.json counts $relief_burst burst relief rounds"
note "users: w1 $(users_on w1), w2 $(users_on w2), w3 $(users_on w3); $relief_burst burst relief rounds"

aborted=$(grep -cE 'Move [0-9]+ of user .* aborted' "$EP_LOG" || true)
((aborted == 0)) ||
        fail "$aborted moves aborted: $(grep -m3 -E 'Move [0-9]+ of user .* aborted' "$EP_LOG" | cut -c1-300)"
kill -INT "$load"
wait "$load" || fail "the load failed: $(cat "$EP_TMP/load.summary")"
note "load: $(head -n1 "$EP_TMP/load.summary")"
grep -qE ', 0 errors, 0 sticky errors, 0 lost states' "$EP_TMP/load.summary" ||
        fail "users lost state or stickiness: $(head -n1 "$EP_TMP/load.summary")"
commander_alive || fail "commander died"
fe_stop
