#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a worker merely slow on one endpoint is not taken for a hung one. Rounds of three requests to a
# slow endpoint (/work?sleep_ms=1500, response_timeout=1s: each gets 504) go to the reception while
# guests' fast requests keep being answered by it in between: after nine timeouts (three times
# unanswered_limit) it is still the reception, never taken out of new work, and status.json says nothing
# of it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER --threads 4" pool.min_workers=2 pool.max_workers=2 pool.unanswered_limit=3 \
        frontend.response_timeout=1s
fe_start
wait_log 'Worker w2 is routable'
rec=$(reception)

# guests keep asking the reception for the fast path while the slow rounds run
spawn_bg bash -c 'while :; do curl -s --noproxy "*" --max-time 5 -o /dev/null "$0/hello"; sleep 0.1; done' "$EP_URL"
for round in 1 2 3; do
        pids=()
        for i in 1 2 3; do
                "${CURL[@]}" -o /dev/null -w '%{http_code}' "$EP_URL/work?sleep_ms=1500" >"$EP_TMP/code.$round.$i" &
                pids+=($!)
        done
        wait "${pids[@]}"
        for i in 1 2 3; do
                [[ $(<"$EP_TMP/code.$round.$i") == 504 ]] ||
                        fail "slow request $round.$i: $(<"$EP_TMP/code.$round.$i"), expected 504 (response_timeout=1s)"
        done
done
(($(grep -c 'no response head within 1s' "$EP_LOG") >= 9)) || fail "fewer than nine 504s were logged"
sleep 1.5 # health looks once a second: a take-out would show by now (there is no event for its absence)
log_has "is taken out of new work" && fail "a worker slow on one endpoint was taken out of new work"
grep -q '"unhealthy"' "$EP_RUN/status.json" && fail "status.json calls a slow worker unhealthy"
[[ $(reception) == "$rec" ]] || fail "the reception moved away from the slow w$rec"
note "nine 504s on a slow endpoint, w$rec still takes new work"
fe_stop
