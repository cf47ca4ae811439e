#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a worker that starts no response within response_timeout (1 s; the echo worker sleeps 3 s)
# gets its request answered 504 after about 1 s, over HTTP/1.1 and HTTP/2, logged with the request id;
# the connection and the pool go on serving.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)" frontend.response_timeout=1s
fe_start
out=$("${CURL[@]}" -H 'X-Request-Id: slow-1' -w '%{http_code} %{time_total} %{num_connects};' \
        -o /dev/null "$EP_URL/sleep?ms=3000" -o /dev/null "$EP_URL/fast")
note "HTTP/1.1, then a second request on the same connection: $out"
[[ $out =~ ^504\ ([0-9.]+)\ 1\;200\ [0-9.]+\ 0\;$ ]] || fail "want 504 then 200 on one connection: $out"
awk -v t="${BASH_REMATCH[1]}" 'BEGIN { exit !(t >= 0.9 && t < 2.5) }' || fail "504 after ${BASH_REMATCH[1]} s"
wait_log 'Request slow-1 GET /sleep\?ms=3000 on w1: 504: w1 request slow-1: no response head within 1s'

out=$(h2_request --path '/sleep?ms=3000' -H 'x-request-id: slow-2')
note "HTTP/2: $out"
[[ $out == *'"status": 504'* ]] || fail "HTTP/2: $out"
wait_log 'Request slow-2 GET /sleep\?ms=3000 on w1: 504'
[[ $("${CURL[@]}" -o /dev/null -w '%{http_code}' "$EP_URL/") == 200 ]] || fail "the pool no longer serves"
fe_stop
