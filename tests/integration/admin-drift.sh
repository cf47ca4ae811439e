#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: the drift sentinels catch a worker whose register counts part from what the commander knows,
# and say so once. A user logged in on a worker's own socket, around the front end, is one the worker
# holds and the commander never placed: after smoothing_rows reports in a row (at least 3) the drift is
# journaled once (however long it lasts), shown on the monitor (monitor.json, the page's data) and in
# /metrics, and the population lists the user as the worker's but placed nowhere. Once the worker drops
# the user the drift is over (said, and gone from the monitor); a new drift is journaled again. Ordinary
# logins through the front end never drift.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
. "$(dirname "$0")/admin-lib.sh"
make_test_cgroup

admin_config "$DEMO_WORKER" pool.min_workers=2
fe_start
rec=$(reception)
[[ -n $rec ]] || fail "no reception in the log"

drift_lines() {
        grep -cE "Drift on w$rec: the worker reports [0-9]+ users" "$EP_LOG" || true
}
drift_shown() {
        [[ $(monitor_json '[x["register"] + ":%d/%d" % (x["reported"], x["expected"]) for w in d["workers"] if w["name"] == "w'"$rec"'" for x in w["drift"]]') == "$1" ]]
}
# n more reports (of both workers together): what a sustained drift needs, and more
reports_now() {
        admin_curl /metrics | awk '/^elastic_pool_reports_total\{/ { print $2 }'
}
reports_over() {
        (($(reports_now) >= $1))
}
reports_pass() {
        wait_until reports_over $(($(reports_now) + $1))
}

# through the front end: both sides agree, whatever the timing
for u in ann bob; do
        login "$u"
        as_user "$u" /state >/dev/null || fail "/state of $u"
done
reports_pass 12 || fail "reports stopped"
[[ $(grep -c 'Drift on' "$EP_LOG" || true) == 0 ]] || fail "logins through the front end drifted: $(grep 'Drift on' "$EP_LOG")"
drift_shown "[]" || fail "a drift is shown: $(monitor_json 'd["workers"]')"

# around the front end: the worker holds ghost, the commander knows nothing of it
worker_curl "$rec" -f -H 'X-Elastic-Pool-User: ghost' -o /dev/null http://w/login?user=ghost ||
        fail "login on w$rec's own socket"
wait_log "Drift on w$rec: the worker reports 3 users, the commander knows of 2 \([0-9]+ reports in a row"
grep "Drift on w$rec" "$EP_LOG" | head -n 1 | sed 's/^/# /'
drift_shown "['users:3/2']" || fail "the monitor does not show the drift: $(monitor_json 'd["workers"]')"
admin_curl /metrics | grep -x "elastic_pool_worker_drift{group=\"t$$\",worker=\"w$rec\",register=\"users\"} 1" >/dev/null ||
        fail "/metrics does not show the drift: $(admin_curl /metrics | grep worker_drift)"
admin_curl /_commander/population | "$EP_PYTHON" -c 'import json, sys
d = json.load(sys.stdin)
w = next(w for w in d["workers"] if w["worker"] == sys.argv[1])
u = next(u for u in w["users"] if u["user"] == "ghost")
assert u["listed"] and not u["placed"] and u["placed_on"] is None and u["requests"] is None, u' "w$rec" ||
        fail "the population does not show ghost as the worker's own"
# it lasts: told once all the same
reports_pass 15 || fail "reports stopped"
[[ $(drift_lines) == 1 ]] || fail "the drift was journaled $(drift_lines) times"

# the worker drops ghost: over
worker_curl "$rec" -f -H 'X-Elastic-Pool-User: ghost' -o /dev/null http://w/logout || fail "logout on w$rec's socket"
wait_log "Drift of users on w$rec is over"
drift_shown "[]" || fail "the drift is still shown: $(monitor_json 'd["workers"]')"
admin_curl /metrics | grep -x "elastic_pool_worker_drift{group=\"t$$\",worker=\"w$rec\",register=\"users\"} 0" >/dev/null ||
        fail "/metrics still shows the drift"

# a new episode is told again
worker_curl "$rec" -f -H 'X-Elastic-Pool-User: ghost2' -o /dev/null http://w/login?user=ghost2 ||
        fail "second login on w$rec's own socket"
wait_until bash -c "[[ \$(grep -c 'Drift on w$rec: the worker reports' '$EP_LOG') == 2 ]]" ||
        fail "the second drift was not journaled"
admin_curl /_commander/monitor.json >"$EP_TEST_OUTPUT/monitor-with-drift.json"
fe_stop
