#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a worker answering with bytes that are no HTTP response, with a bare CR in a response field,
# or with a transfer coding the commander cannot frame (anything but chunked alone: issue 16, defect
# 10), makes that request 502 (HTTP/1.1 and HTTP/2), logged with the request id, and the worker
# connection that carried it is discarded: the next request comes on another one (the worker keeps
# the bad connection open, so reuse would show), and is served. A plain chunked answer still passes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)"
fe_start
body=$("${CURL[@]}" "$EP_URL/te-chunked") || fail "chunked answer"
[[ $body == hello ]] || fail "a chunked answer arrived as '$body'"
for path in /garbage /badhead /te-gzip /te-two; do
        id=bad${path//\//-}
        out=$("${CURL[@]}" -H "X-Request-Id: $id" -o /dev/null -w '%{http_code}' "$EP_URL$path")
        [[ $out == 502 ]] || fail "$path answered $out, not 502"
        wait_log "Request $id GET $path on w1: 502"
        bad=$(head_conn "$path")
        [[ $("${CURL[@]}" -o /dev/null -w '%{http_code}' "$EP_URL/next$path") == 200 ]] || fail "request after $path"
        next=$(head_conn "/next$path")
        [[ $next != "$bad" ]] || fail "the worker connection $bad of $path was reused"
        note "$path: 502, its worker connection $bad discarded, the next request on $next"
        out=$(h2_request --path "$path")
        [[ $out == *'"status": 502'* ]] || fail "HTTP/2 $path: $out"
done
commander_alive || fail "the commander died"
fe_stop
