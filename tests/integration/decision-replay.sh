#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: the decision log replays. A commander records every decision with its inputs
# ([policy] decision_log) through a run that grows on the request rate (load above rps_target), holds
# and waits, and shrinks by compaction once the load is gone. elastic-pool-replay --check runs each line
# through the same policies and reaches exactly the recorded decisions; with --set rps_target=100000 the
# rate-driven spawn is no longer decided (the replay marks it), which is how an operator tries other
# thresholds on yesterday's traffic.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup
LOADGEN=$(bin elastic-pool-loadgen)
REPLAY=$(bin elastic-pool-replay)
LOG=$EP_TMP/decisions.jsonl

fe_config "$DEMO_WORKER" pool.min_workers=1 pool.max_workers=2 policy.rps_target=20 policy.rps_up_window=2s \
        policy.rps_down_window=3s "policy.decision_log=$LOG"
fe_start
wait_log "Recording every policy decision with its inputs in $LOG"

spawn_bg "$LOADGEN" --url "$EP_URL" --users 6 --profile constant --duration 600s --think 20ms --mix 1:0 \
        --max-errors 0 --summary-file "$EP_TMP/load.summary" --quiet
load=$EP_LAST_PID
EP_WAIT=30 wait_log 'Scale-up: spawning a worker: rps [0-9.]+/s per worker'
wait_log 'Worker w2 is routable'
kill -INT "$load"
wait "$load" || fail "loadgen: $(cat "$EP_TMP/load.summary")"
EP_WAIT=40 wait_log 'Compaction: (retiring a worker|draining w2)'
wait_until bash -c "grep -q '\"direction\":\"compaction\".*\"kind\":\"retire\"\\|\"direction\":\"compaction\".*\"kind\":\"wait-moves\"' '$LOG'" ||
        fail "no compaction decision recorded"
fe_stop

n=$(wc -l <"$LOG")
((n >= 3)) || fail "only $n decisions recorded"
"$REPLAY" --check "$LOG" >"$EP_TMP/replay.out" 2>&1 || fail "the replay differs from the record: $(grep -B1 'recorded:' "$EP_TMP/replay.out" | head)"
grep -q "^# $n decisions replayed, 0 differ" "$EP_TMP/replay.out" || fail "replay said: $(tail -n1 "$EP_TMP/replay.out")"
grep -qE 'scale_up +spawn +rps [0-9.]+/s per worker' "$EP_TMP/replay.out" || fail "no rate-driven spawn replayed"
note "$n decisions replayed exactly: $(grep -cE 'scale_up +spawn' "$EP_TMP/replay.out") spawns, $(grep -cE 'compaction +(retire|wait-moves)' "$EP_TMP/replay.out") compactions"

# other thresholds on the same traffic: the rate-driven spawn is not decided any more
rc=0
"$REPLAY" --check --set rps_target=100000 "$LOG" >"$EP_TMP/what-if.out" 2>&1 || rc=$?
((rc == 1)) || fail "--set rps_target=100000 --check: exit $rc, want 1 (decisions differ)"
grep -qE 'scale_up +none +\*' "$EP_TMP/what-if.out" || fail "the what-if did not change the spawn: $(cat "$EP_TMP/what-if.out")"
"$REPLAY" --set bogus=1 "$LOG" >/dev/null 2>&1 && fail "--set of an unknown key was accepted"
true
