#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: the burst path grows the pool within seconds of real overload, and a spike spawns nothing.
# Demo workers (4 executor threads) in cgroup v2 leaves (cgroup backend), the demo's load generator
# through the front end, /work?cpu_ms=5 without think time. The smoothed path is set slow on purpose
# (1 s reports, 12 averaged: it needs about 6 s of overload to spawn) so that what spawns is the burst
# path (burst_window 1.5 s, burst_queue 8):
#   1. a spike (32 users for 800 ms: about a second of saturation once logins and the drained queue are
#      counted) saturates w1 and ends: the journal says "Burst over after ...: a spike, nothing spawned",
#      and the pool stays at one worker over the next reports;
#   2. sustained overload (24 users) spawns w2 by the burst path ("Scale-up (burst path)"), its reason
#      naming w1's waiting requests, within a few seconds of the load starting (a generous bound: this
#      is a behaviour, not a benchmark; bench/burst-growth.sh measures);
#   3. status.json shows the burst reading; the burst-spawned worker is not compacted while the load runs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup
LOADGEN=$(bin elastic-pool-loadgen)
# the sanitizers slow the commander and the workers: the same behaviour, a wider bound
BOUND_S=8
[[ ${EP_SANITIZE:-OFF} == ON ]] && BOUND_S=15

fe_config "$DEMO_WORKER --threads 4" pool.min_workers=1 pool.max_workers=4 pool.hung_timeout=0 \
        policy.occupancy_interval=1s policy.smoothing_rows=12 policy.burst_window=1500ms policy.burst_queue=8
fe_start
wait_log 'Worker w1 is routable'

reports() { status_get '["counters"]["reports"]'; }
workers() { "$EP_PYTHON" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["workers"]))' "$EP_RUN/status.json"; }
# a few reports first: the smoothed window then averages the spike with quiet rows, as in a running pool
EP_WAIT=30 wait_until bash -c "(( \$($EP_PYTHON -c 'import json,sys; print(json.load(open(sys.argv[1]))[\"counters\"][\"reports\"])' '$EP_RUN/status.json') >= 6 ))" ||
        fail "w1 did not report"

# load NAME USERS DURATION: constant users, no think time, /work only, 5 ms of CPU each
load() {
        spawn_bg "$LOADGEN" --url "$EP_URL" --users "$2" --profile constant --duration "$3" --think 0 --mix 0:1 \
                --cpu-ms 5 --max-errors 0 --user-prefix "$1" --summary-file "$EP_TMP/$1.summary" --quiet
}

# 1. a spike of about one second
load spike 32 800ms
spike=$EP_LAST_PID
wait "$spike" || fail "the spike's load failed: $(cat "$EP_TMP/spike.summary")"
EP_WAIT=10 wait_log 'Burst over after .*a spike, nothing spawned'
note "$(grep -m1 'Burst over after' "$EP_LOG" | cut -c1-220)"
after=$(($(reports) + 3))
EP_WAIT=20 wait_until bash -c "(( \$($EP_PYTHON -c 'import json,sys; print(json.load(open(sys.argv[1]))[\"counters\"][\"reports\"])' '$EP_RUN/status.json') >= $after ))" ||
        fail "no reports after the spike"
# growth beyond the min_workers floor (which spawned w1)
grown() { grep -E 'Scale-up.*spawning a worker' "$EP_LOG" | grep -v 'under min_workers'; }
grown >/dev/null && fail "a 1-s spike spawned a worker: $(grown | head -n1 | cut -c1-300)"
[[ $(workers) == 1 ]] || fail "the pool grew after a spike: $(workers) workers"

# 2. sustained overload
start=$SECONDS
load busy 24 60s
busy=$EP_LAST_PID
on_exit "kill -INT $busy 2>/dev/null"
EP_WAIT=$BOUND_S wait_log 'Scale-up \(burst path\): spawning a worker: burst: w1 waiting [0-9]+/8' ||
        fail "no burst spawn"
spawned=$((SECONDS - start))
EP_WAIT=20 wait_log 'Worker w2 is routable'
note "w2 spawned by the burst path ${spawned}s after the overload began: $(grep -m1 'Scale-up (burst path)' "$EP_LOG" | cut -c1-220)"
grown | grep -q 'Scale-up: spawning a worker' && fail "the smoothed path spawned first: $(grown | head -n1 | cut -c1-220)"

# 3. status.json carries the reading; w2 is kept while the load runs (compaction waits for the window)
"$EP_PYTHON" -c 'import json, sys
b = json.load(open(sys.argv[1]))["burst"]
assert b and b["status"] in ("calm", "rising", "sustained", "held") and b["queue"] == 8 and b["samples"] > 0, b' \
        "$EP_RUN/status.json" || fail "status.json lacks the burst reading: $(grep -o '"burst":{[^}]*}' "$EP_RUN/status.json")"
after=$(($(reports) + 5))
EP_WAIT=20 wait_until bash -c "(( \$($EP_PYTHON -c 'import json,sys; print(json.load(open(sys.argv[1]))[\"counters\"][\"reports\"])' '$EP_RUN/status.json') >= $after ))" ||
        fail "no reports under load"
log_has 'Compaction: (retiring|draining)' && fail "the burst-spawned worker was compacted under load"
kill -INT "$busy"
wait "$busy" || fail "the load failed: $(cat "$EP_TMP/busy.summary")"
note "busy: $(head -n1 "$EP_TMP/busy.summary")"
commander_alive || fail "commander died"
fe_stop
