#!/bin/bash
# Intent: the admin listener (loopback only) tells an operator the state of the pool without reading
# code: /_commander/status is the status document, /metrics the same in Prometheus text, where a
# component the worker does not report is absent rather than 0; /_commander/population asks workers
# that serve no /_monitor/state and says so per worker instead of failing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
need_cmd curl
make_test_cgroup
port=$(free_port)
admin=http://127.0.0.1:$port

# no --cpu-file: the fake worker's reports carry no cpu reading
write_config "$(bin ep-fake-worker)" pool.min_workers=2 "frontend.admin_listen=127.0.0.1:$port"
start_commander --no-frontend
wait_ready
wait_log "Admin listener on 127.0.0.1:$port"

pop=$(curl -sf "$admin/_commander/status") || fail "no status document"
"$EP_PYTHON" -c 'import json, sys
d = json.loads(sys.argv[1])
names = [w["name"] for w in d["workers"]]
assert names == ["w1", "w2"], names
assert d["workers"][0]["components"]["cpu"] is None, d["workers"][0]["components"]
assert "holds" in d and "ledger" in d' "$pop" || fail "unexpected status: $pop"

# the fake worker has no HTTP server on its socket: an error row each, with the reason, never a failure
pop=$(curl -sf "$admin/_commander/population") || fail "no population document"
"$EP_PYTHON" -c 'import json, sys
d = json.loads(sys.argv[1])
assert [w["status"] for w in d["workers"]] == ["error", "error"], d
assert all(w["error"] for w in d["workers"]), d' "$pop" || fail "unexpected population: $pop"

metrics=$(curl -sf "$admin/metrics") || fail "no metrics"
[[ $(curl -s -o /dev/null -w '%{http_code}' "$admin/_commander/monitor") == 200 ]] || fail "no monitor page"
grep -q "^elastic_pool_workers{group=\"t$$\",state=\"routable\"} 2$" <<<"$metrics" ||
        fail "metrics lack the two routable workers: $(grep elastic_pool_workers <<<"$metrics")"
grep -q '^# TYPE elastic_pool_reports_total counter$' <<<"$metrics" || fail "metrics lack TYPE lines"
# cpu was never reported: no line for it, rather than a 0 that would read as idle
grep -q 'component="cpu"' <<<"$metrics" && fail "an absent cpu component was exported: $(grep component <<<"$metrics")"

[[ $(curl -s -o /dev/null -w '%{http_code}' "$admin/nothing") == 404 ]] || fail "unknown path is not 404"
[[ $(curl -s -o /dev/null -w '%{http_code}' -X POST "$admin/metrics") == 405 ]] || fail "POST is not 405"
stop_commander || fail "commander exited with $?"
