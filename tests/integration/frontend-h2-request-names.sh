#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: an HTTP/2 request's :path, :authority and :scheme get the checks the HTTP/1.1 request line and
# Host get (issue 16, defect 8): whitespace, controls, bytes over 0x7f or a fragment in :path, an
# authority with userinfo, a path or a bad port, a scheme other than http(s) are answered 400 by the
# commander and never reach a worker; what HTTP/1.1 accepts still passes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)"
fe_start

# refused ARGS...: one h2 request answered 400 by the commander (or reset by nghttp2's own checks, for
# what RFC 9113 already forbids), and no head reached the worker
refused() {
        local before out
        before=$(heads_count)
        out=$(h2_request "$@")
        note "$*: $out"
        [[ $out == *'"status": 400'* || $out == *'"reset": "PROTOCOL_ERROR"'* ]] ||
                fail "h2 request $* was not refused: $out"
        [[ $(heads_count) == "$before" ]] || fail "h2 request $* reached the worker: $(last_head)"
}

passes() {
        local out
        out=$(h2_request "$@")
        [[ $out == *'"status": 200'* ]] || fail "h2 request $* was not served: $out"
}

passes --path '/ok?a=b&c=%20' --authority 'app.test:8080'
passes --path '/ok' --scheme https --authority '[::1]:443'
refused --path '/a b'
refused --path $'/a\tb'
refused --path '/a#fragment'
refused --path $'/caf\xc3\xa9'
refused --path 'noslash'
refused --path '*'
refused --path '/x' --authority 'user@app.test'
refused --path '/x' --authority 'app.test/evil'
refused --path '/x' --authority 'app.test:8o8o'
refused --path '/x' --authority 'app test'
refused --path '/x' --scheme ftp
passes --method OPTIONS --path '*'
# and the same over HTTP/1.1, for comparison: refused there too
for t in '/a#fragment' 'noslash'; do
        [[ $(raw_send "GET $t HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n" | statuses) == 400 ]] ||
                fail "HTTP/1.1 accepted $t"
done
[[ $(raw_send 'GET /x HTTP/1.1\r\nHost: user@app.test\r\nConnection: close\r\n\r\n' | statuses) == 400 ]] ||
        fail "HTTP/1.1 accepted Host: user@app.test"
fe_stop
