#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: over HTTP/2, max_body_size (1000 here) holds: a content-length over it gets 413 and never
# reaches a worker; a body without content-length that grows past it gets 413 (no answer head went out
# yet), the exchange freed and the worker connection that got its start closed; a body within it is
# served; the connection goes on serving.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)" frontend.max_body_size=1000
fe_start
out=$(h2_request --method POST --path /big-length --body-bytes 2000)
note "content-length 2000: $out"
[[ $out == *'"status": 413'* ]] || fail "content-length over max_body_size: $out"
grep -q '/big-length' "$FE_HEADS" && fail "the over-long request reached the worker"

out=$(h2_request --method POST --path /big-stream --body-bytes 200000 --no-length)
note "200000 bytes without content-length: ${out:0:200}"
[[ $out == *'"status": 413'* || $out == *'"reset": '* ]] || fail "a body growing past max_body_size: $out"
if grep -q '/big-stream' "$FE_HEADS"; then # its head went ahead of the body: that worker connection is cut
        conn=$(head_conn /big-stream)
        wait_until grep -q "\"conn\": ${conn#*/}, \"event\": \"eof-in-body\"" "$FE_HEADS" ||
                fail "the worker connection $conn of the over-long body was not closed"
        note "the over-long body's worker connection $conn was closed mid-body"
fi

out=$(h2_request --method POST --path /small --body-bytes 1000)
[[ $out == *'"status": 200'* && $out == *'["x-body-bytes", "1000"]'* ]] || fail "a body within the limit: $out"
fe_stop
