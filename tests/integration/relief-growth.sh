#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: growth relief. Two workers saturated with logged-in users, a third spawns, and within two
# smoothing periods it serves some of the existing users; nobody's counter resets.
# The reception w1 and w2 (demo workers, 2 executor threads each) carry users whose own back-to-back
# /work?sleep_ms requests fill their executors: w2 sits at occupancy 1.0, over admission_threshold=0.8, so
# scale-up spawns w3 (max_workers=3), and relief moves w2's heaviest users to it ("Relief: w2 at X has
# been at or over admission_threshold...", "Move N of user U from w2 to w3 done after ...", "Relief of w2
# ends after K moves"). From "Worker w3 is routable" (T), the move must be done by T + 2 smoothing
# periods + 1 interval (the interval: w2's report that sees the period out comes up to one interval
# after it), and the moved user must show up in w3's own /_monitor/state and in its /state answers naming
# worker 3 (relief-users.py: a little later, after the user's own pending request). Every user's /state
# counter rises by exactly one per request throughout, its blob_crc never changes, every answer is 2xx.
# relief-users.py drives the users, bounded to 30 s (+ 5 s for their last requests); the checks after it
# wait 10 s at most: the test ends by itself within about 45 s even when relief never comes (3 s when
# it works).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

INTERVAL_MS=200
SMOOTHING_ROWS=3
fe_config "$DEMO_WORKER --threads 2 --user-blob-size 64K" pool.min_workers=1 pool.max_workers=3 \
        policy.occupancy_interval=${INTERVAL_MS}ms policy.smoothing_rows=$SMOOTHING_ROWS \
        policy.admission_threshold=0.8 policy.reception_threshold=0.5 policy.relief_moves=yes
fe_start

rc=0
"$EP_PYTHON" "$FE_DIR/relief-users.py" "$EP_ADDR" "$EP_RUN/status.json" "$EP_LOG" \
        --interval-ms "$INTERVAL_MS" --smoothing-rows "$SMOOTHING_ROWS" --load-ms 50 --timeout 30 \
        >"$EP_TMP/client.out" 2>"$EP_TMP/client.err" || rc=$?
cat "$EP_TMP/client.out"
if ((rc != 0)); then
        cat "$EP_TMP/client.err" >&2
        echo "# status.json: relief, holds:" >&2
        "$EP_PYTHON" -c 'import json, sys
d = json.load(open(sys.argv[1]))
keys = ("relief", "relief_rounds", "relief_moves", "holds", "drain", "ledger")
print(json.dumps({k: d.get(k) for k in keys}))
for w in d["workers"]:
    print(w["name"], w["state"], w["occupancy"], w["freshness"], "users", w["users"])' "$EP_RUN/status.json" >&2 ||
                true
        grep -E 'Relief|Move [0-9]+ of|Moving|Re-pointing|Scale-up|Compaction|held|routable|WARNING' "$EP_LOG" |
                tail -n 40 | cut -c1-400 >&2
        fail "relief-users.py failed (exit $rc)"
fi

# the journal's account of the same run
grep -E 'Relief|Move [0-9]+ of user .* to w3|Worker w3 is routable' "$EP_LOG" | cut -c1-220 | sed 's/^/# /'
round='Relief: w2 at [0-9.]+ has been at or over admission_threshold=0\.80 for .*; moving its heaviest users to w3'
log_has "$round" || fail "no 'Relief: w2 at ...' round towards w3 in the log"
EP_WAIT=5 wait_log 'Relief of w2 ends after [1-9][0-9]* moves to w3'
aborted=$(grep -cE 'Move [0-9]+ of user .* aborted' "$EP_LOG" || true)
((aborted == 0)) ||
        fail "$aborted moves aborted: $(grep -m3 -E 'Move [0-9]+ of user .* aborted' "$EP_LOG" | cut -c1-300)"
! log_has 'Compaction: draining' ||
        fail "compaction drained a worker while all were full: $(grep -m1 'Compaction: draining' "$EP_LOG")"
# status.json is rewritten every second (and on pool changes): its count may lag the log by that much
relief_counted() {
        (($(status_get '["relief_moves"]') >= 1))
}
EP_WAIT=5 wait_until relief_counted ||
        fail "status.json counts $(status_get '["relief_moves"]') relief moves, the log at least one"
note "status.json: $(status_get '["relief_rounds"]') relief rounds, $(status_get '["relief_moves"]') relief moves"
commander_alive || fail "the commander died"
fe_stop
