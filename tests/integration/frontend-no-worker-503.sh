#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: while no worker is routable (the only one is spawned but never says Hello), the front end
# already listens and answers every request 503 with Retry-After, over HTTP/1.1 and HTTP/2, and logs
# each with its request id; nothing hangs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

# a worker that never sends Hello: it stays a spawn in flight until spawn_timeout
fe_config /bin/sleep\ 600 pool.spawn_timeout=60s
start_commander
wait_log 'Listening on 127.0.0.1:'
wait_log 'Spawned worker w1'
hdr=$("${CURL[@]}" -D - -o "$EP_TMP/body" -H 'X-Request-Id: no-worker-1' "$EP_URL/some/page")
note "HTTP/1.1: $(head -n1 <<<"$hdr" | tr -d '\r'), $(grep -i '^retry-after' <<<"$hdr" | tr -d '\r')"
grep -qE '^HTTP/1.1 503' <<<"$hdr" || fail "no 503 without a routable worker: $hdr"
grep -qiE '^retry-after: [0-9]+' <<<"$hdr" || fail "503 without Retry-After: $hdr"
grep -qi '^connection: close' <<<"$hdr" && fail "a 503 of ours closed the connection: $hdr"
wait_log 'Request no-worker-1 GET /some/page: 503 no routable worker'

out=$(h2_request --path /h2page)
note "HTTP/2: $out"
[[ $out == *'"status": 503'* && $out == *'["retry-after", '* ]] || fail "HTTP/2 without a routable worker: $out"
commander_alive || fail "the commander died"
fe_stop
