#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: an overloaded pool must not flood the journal, and must not drop anything silently either.
# With no routable worker (the only one never says Hello), 200 requests are each answered 503; the
# commander logs at most 20 error lines a second, each naming its request id, and reports the rest
# ("... and N more 503s in the last second") once the second is over, even though nothing follows the
# flood. The lines logged and the ones counted add up to the 200 requests.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

N=200
fe_config /bin/sleep\ 600 pool.spawn_timeout=60s
start_commander
wait_log 'Listening on 127.0.0.1:'
wait_log 'Spawned worker w1'

# N requests on one keep-alive connection, X-Request-Id flood-1..N; prints the statuses, one a line
t0=$(date +%s%N)
statuses=$("$EP_PYTHON" - "$EP_ADDR" "$N" <<'PY'
import http.client, sys
host, port = sys.argv[1].rsplit(":", 1)
c = http.client.HTTPConnection(host, int(port), timeout=20)
for i in range(1, int(sys.argv[2]) + 1):
    c.request("GET", "/flood/%d" % i, headers={"X-Request-Id": "flood-%d" % i})
    r = c.getresponse()
    r.read()
    print(r.status)
PY
)
[[ $(sort -u <<<"$statuses") == 503 && $(wc -l <<<"$statuses") == "$N" ]] ||
        fail "not $N answers of 503: $(sort <<<"$statuses" | uniq -c | tr '\n' ' ')"
# the windows of one second the flood can have touched
windows=$((($(date +%s%N) - t0) / 1000000000 + 2))

# the report of what was left out comes by itself once each second is over: every request is either
# logged or counted in a report, without another error to roll the window over
count_lines() {
        logged=$(grep -cE 'Request flood-[0-9]+ GET /flood/[0-9]+: 503 no routable worker' "$EP_LOG" || true)
        counted=0
        while read -r n; do
                counted=$((counted + n))
        done < <(grep -E '\.\.\. and ' "$EP_LOG" | grep -oE '[0-9]+ more 503s?' | cut -d' ' -f1)
        ((logged + counted == N))
}
wait_log '\.\.\. and [0-9]+ more 503s? in the last second'
wait_until count_lines || true
count_lines || true
note "$logged lines logged and $counted counted in $(grep -c '\.\.\. and' "$EP_LOG") reports," \
        "the flood within $windows windows"
((logged + counted == N)) || fail "$logged logged + $counted counted is not $N"
((logged <= 20 * windows)) || fail "$logged lines in at most $windows seconds: more than 20 a second"
# each line names its request
for id in 1 2 3; do
        log_has "Request flood-$id GET /flood/$id: 503 no routable worker" ||
                fail "no line names request flood-$id"
done
commander_alive || fail "the commander died"
fe_stop
