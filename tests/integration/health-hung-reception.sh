#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a hung worker does not take the pool down with it. The reception is SIGSTOPped (its reports
# stop, its socket still accepts but nothing answers): within a second it is taken out of new work
# ("taken out of new work: no report for ..."), the reception passes to the healthy worker and guests get
# 200 from it; status.json says why (unhealthy). Silent for hung_timeout, it is stopped and replaced
# (min_workers=2), and the user that lived on it is placed again on its next request, the journal saying
# its state there is lost.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER" pool.min_workers=2 pool.max_workers=3 pool.hung_timeout=3s
fe_start
wait_log 'Worker w2 is routable'
rec=$(reception) other=$((3 - $(reception)))
"${CURL[@]}" -c "$EP_TMP/jar" -o /dev/null "$EP_URL/login?user=ann" || fail "login"
pid1=$(worker_pid "w$rec")
kill -STOP "$pid1"
on_exit "kill -CONT $pid1 2>/dev/null"

EP_WAIT=10 wait_log "w$rec is taken out of new work: no report for"
wait_log "w$other is now the reception"
wait_until grep -q '"unhealthy":"no report for' "$EP_RUN/status.json" || fail "status.json does not say why"
for i in 1 2 3 4 5; do
        code=$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$EP_URL/hello") || true
        [[ $code == 200 ]] || fail "guest request $i answered $code while w$rec hangs"
done
note "guests served by w$other while w$rec hangs"

EP_WAIT=15 wait_log "w$rec sent no report for .* \\(hung_timeout=3s\\): stopping it"
EP_WAIT=15 wait_log "\\[death w$rec\\]"
EP_WAIT=15 wait_log 'Worker w3 is routable'
wait_log "1 users lived on w$rec, which is gone"
code=$("${CURL[@]}" -b "$EP_TMP/jar" -o /dev/null -w '%{http_code}' "$EP_URL/hello") || true
[[ $code == 200 ]] || fail "ann's next request answered $code"
fe_stop
