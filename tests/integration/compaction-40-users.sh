#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: compaction keeps every logged-in user. 40 users log in while the pool grows under load (idle
# reception, then a busy reception passing them on to w2, then to w3: max_workers=3); the load stops and
# compaction drains the non-reception workers by live moves ("Compaction: draining wN by live moves",
# "Compaction: wN drained: K users moved ...; retiring it") until one worker is left. Meanwhile every
# user goes on with sequential requests: its /state counter goes on without reset or gap, its blob_crc
# never changes, no request of the run gets a non-2xx answer (or none), and at the end all users live on
# the one worker compaction left (a newcomer spawned beside it afterwards, on its reading, holds none of
# them). compaction-users.py drives the users and the load.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER --threads 2 --user-blob-size 64K" pool.min_workers=1 pool.max_workers=3
fe_start

# The users' own requests are what the survivors carry: 40 users 30 ms apart kept two ASan-built demo
# workers at 0.05 and 0.09 (2026-12-04), over what lets the ledger go from two workers to one (O under 0.1
# with the default thresholds), so compaction stopped at two. Under the sanitizers they think longer.
think_ms=30
[[ ${EP_SANITIZE:-OFF} == ON ]] && think_ms=100
rc=0
"$EP_PYTHON" "$FE_DIR/compaction-users.py" "$EP_ADDR" "$EP_RUN/status.json" --users 40 --think-ms $think_ms --timeout 60 \
        >"$EP_TMP/client.out" 2>"$EP_TMP/client.err" || rc=$?
cat "$EP_TMP/client.out"
if ((rc != 0)); then
        cat "$EP_TMP/client.err" >&2
        grep -E 'Compaction|held|Scale-up|WARNING' "$EP_LOG" | tail -n 30 | cut -c1-400 >&2
        fail "compaction-users.py failed (exit $rc)"
fi

# the journal's account of the same run
drains=$(grep -cE 'Compaction: draining w[0-9]+ by live moves' "$EP_LOG" || true)
moved=$(grep -E 'Compaction: w[0-9]+ drained: [0-9]+ users moved' "$EP_LOG" |
        sed -E 's/.*drained: ([0-9]+) users moved.*/\1/' | awk '{ s += $1 } END { print s + 0 }')
((drains >= 1)) || fail "no 'Compaction: draining wN by live moves' in the log"
((moved >= 1)) || fail "no drain that moved users: $(grep -m3 'Compaction:' "$EP_LOG" | cut -c1-300)"
grep -E 'Compaction: (draining|w[0-9]+ drained)' "$EP_LOG" | cut -c1-200 | sed 's/^/# /'
aborted=$(grep -cE 'Move [0-9]+ of user .* aborted' "$EP_LOG" || true)
stopped=$(grep -cE 'Compaction: drain of w[0-9]+ stopped' "$EP_LOG" || true)
# how often a drain's move met a user in the middle of a request (quiesce, then held requests released)
held=$(grep -E 'Move [0-9]+ of user .*\(compaction; ' "$EP_LOG" | grep -cvE '; 0 held requests released' || true)
note "$drains drains ($stopped stopped and begun again), $moved users moved by them, $aborted moves aborted" \
        "(the users stayed and went on); $held drain moves released held requests"
commander_alive || fail "the commander died"
fe_stop
