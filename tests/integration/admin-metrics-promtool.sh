#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: /metrics is what Prometheus can take and what the pool did. A demo pool of two workers gets a
# known number of requests through the front end (guests and two logged-in users); the scrape passes
# `promtool check metrics`, and its counters match: the front end began exactly the requests sent, the
# workers completed them (per-worker counters and the response-time histogram's counts add up to the
# same), the users are placed; a worker killed from outside is counted as a death by signal and its
# replacement as a spawn under the min_workers floor.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
. "$(dirname "$0")/admin-lib.sh"
need_cmd promtool
make_test_cgroup

admin_config "$DEMO_WORKER" pool.min_workers=2
fe_start

# what the test sends: 20 guest requests, 2 logins, 13 /state of the users, 1 logout: 36
sent=0
for i in $(seq 20); do
        "${CURL[@]}" -f -o /dev/null "$EP_URL/hello" || fail "guest request $i"
        sent=$((sent + 1))
done
login ann
login bob
sent=$((sent + 2))
for i in $(seq 13); do
        as_user $([[ $((i % 2)) == 0 ]] && echo ann || echo bob) /state >/dev/null || fail "/state $i"
        sent=$((sent + 1))
done
"${CURL[@]}" -f -b "$EP_TMP/jar-bob" -o /dev/null "$EP_URL/logout" || fail "logout of bob"
sent=$((sent + 1))

scrape() {
        admin_curl /metrics -o "$1" -D "$1.headers" || fail "no /metrics"
}
scrape "$EP_TMP/metrics.txt"
cp "$EP_TMP/metrics.txt" "$EP_TEST_OUTPUT/metrics.txt"
grep -qi '^content-type: text/plain; version=0.0.4' "$EP_TMP/metrics.txt.headers" ||
        fail "not the exposition format: $(grep -i content-type "$EP_TMP/metrics.txt.headers")"
promtool check metrics <"$EP_TMP/metrics.txt" >"$EP_TMP/promtool.out" 2>&1 ||
        fail "promtool check metrics: $(cat "$EP_TMP/promtool.out")"
note "promtool check metrics: passed ($(grep -c '^elastic_pool_' "$EP_TMP/metrics.txt") samples)"

# sum of a family's samples matching a label filter (a regex on the label set)
metric_sum() {
        awk -v name="$1" -v filter="${2:-}" '
                $1 ~ "^" name "\\{" && (filter == "" || $1 ~ filter) { s += $2; n++ }
                END { if (n == 0) { print "none"; exit } printf "%d\n", s }' "${3:-$EP_TMP/metrics.txt}"
}
expect() {
        local got
        got=$(metric_sum "$1" "${3:-}" "${4:-}")
        [[ $got == "$2" ]] || fail "$1${3:+ [$3]}: $got, want $2"
}
expect elastic_pool_frontend_requests_total "$sent"
expect elastic_pool_worker_requests_total "$sent"
expect elastic_pool_worker_request_duration_seconds_count "$sent"
expect elastic_pool_worker_request_duration_seconds_bucket "$sent" 'le="[+]Inf"'
expect elastic_pool_worker_errors_total 0
expect elastic_pool_frontend_errors_total 0
expect elastic_pool_worker_users 1
expect elastic_pool_workers 2 'state="routable"'
expect elastic_pool_spawns_total 2 'cause="floor"'
expect elastic_pool_deaths_total 0
note "$sent requests sent; front end and workers count $sent"

# the worker that is not the reception is killed from outside; the floor brings another
rec=$(reception)
victim=$((rec == 1 ? 2 : 1))
kill -KILL "$(worker_pid "w$victim")"
wait_log "Worker w3 is routable"
scrape "$EP_TMP/metrics2.txt"
promtool check metrics <"$EP_TMP/metrics2.txt" >"$EP_TMP/promtool.out" 2>&1 ||
        fail "promtool check metrics after the kill: $(cat "$EP_TMP/promtool.out")"
expect elastic_pool_deaths_total 1 'cause="signaled"' "$EP_TMP/metrics2.txt"
expect elastic_pool_deaths_total 1 '' "$EP_TMP/metrics2.txt"
expect elastic_pool_spawns_total 3 'cause="floor"' "$EP_TMP/metrics2.txt"
expect elastic_pool_spawns_total 0 'cause="scale-up"' "$EP_TMP/metrics2.txt"
expect elastic_pool_workers 2 'state="routable"' "$EP_TMP/metrics2.txt"
fe_stop
