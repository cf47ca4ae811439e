#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: the request a worker gets is re-serialised by the commander, as specified, over HTTP/1.1 and
# HTTP/2: hop-by-hop fields (and those Connection names) removed, Host from the authority (absolute-form
# and :authority included), Cookie fields joined into one with the sticky cookie taken out,
# X-Forwarded-For appended with the peer, X-Forwarded-Proto https only from a trusted_proxies address,
# X-Request-Id kept when valid and generated otherwise, a client's X-Elastic-Pool-User dropped, body
# framing rewritten (Content-Length kept, unknown lengths chunked). An echo worker returns the head.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

# 127.0.0.2 is a second loopback address: a "proxy" the commander trusts
fe_config "$(test_worker)" frontend.trusted_proxies=127.0.0.2
fe_start

note "HTTP/1.1: hop-by-hop fields, cookies, forwarded fields"
out=$(raw_send 'GET /a?q=1 HTTP/1.1\r\nHost: example.test:8080\r\nConnection: keep-alive, X-Hop\r\nKeep-Alive: timeout=5\r\nX-Hop: secret\r\nTE: trailers\r\nProxy-Connection: keep-alive\r\nUpgrade: websocket\r\nTrailer: X-T\r\nCookie: a=1\r\nX-Custom: one  \r\nCookie: b=2; ep_user=forged.1.x\r\nX-Forwarded-For: 10.1.2.3\r\nX-Forwarded-Proto: https\r\nX-Request-Id: my-id-123\r\nX-Elastic-Pool-User: mallory\r\nConnection: close\r\n\r\n')
[[ $(statuses <<<"$out") == 200 ]] || fail "answer: $out"
[[ $(last_head | head -n1 | tr -d '\r') == 'GET /a?q=1 HTTP/1.1' ]] || fail "request line: $(last_head | head -n1)"
expect_field Host example.test:8080
for f in Connection Keep-Alive X-Hop TE Proxy-Connection Upgrade Trailer X-Elastic-Pool-User Transfer-Encoding \
        Content-Length; do
        expect_no_field "$f"
done
expect_field Cookie 'a=1; b=2'
expect_field X-Custom one
expect_field X-Forwarded-For '10.1.2.3, 127.0.0.1'
expect_field X-Forwarded-Proto http
expect_field X-Request-Id my-id-123
grep -qi '^x-request-id: my-id-123' <<<"$out" || true # the answer's fields are the worker's business

note "HTTP/1.1: absolute-form target, invalid X-Request-Id"
out=$(raw_send 'GET http://abs.test/p?z HTTP/1.1\r\nHost: example.test\r\nX-Request-Id: not a valid id\r\nConnection: close\r\n\r\n')
[[ $(statuses <<<"$out") == 200 ]] || fail "answer: $out"
[[ $(last_head | head -n1 | tr -d '\r') == 'GET /p?z HTTP/1.1' ]] || fail "request line: $(last_head | head -n1)"
expect_field Host abs.test
[[ $(head_values X-Request-Id) =~ ^[0-9a-f]{32}$ ]] || fail "X-Request-Id not generated: $(head_values X-Request-Id)"
expect_field X-Forwarded-For 127.0.0.1

note "HTTP/1.1 from a trusted proxy: X-Forwarded-Proto https believed, the cookie says Secure"
"${CURL[@]}" --interface 127.0.0.2 -H 'X-Forwarded-Proto: https' -o /dev/null "$EP_URL/b" || fail "curl via 127.0.0.2"
expect_field X-Forwarded-Proto https
expect_field X-Forwarded-For 127.0.0.2
sc=$("${CURL[@]}" --interface 127.0.0.2 -H 'X-Forwarded-Proto: https' -D - -o /dev/null "$EP_URL/login?user=carol" |
        grep -i '^set-cookie:' | tr -d '\r')
grep -qE '; ?Secure(;|$)' <<<"$sc" || fail "cookie set through a trusted https proxy lacks Secure: $sc"
sc=$("${CURL[@]}" -H 'X-Forwarded-Proto: https' -D - -o /dev/null "$EP_URL/login?user=carol" | grep -i '^set-cookie:')
grep -q 'Secure' <<<"$sc" && fail "an untrusted client's X-Forwarded-Proto made the cookie Secure: $sc"

note "HTTP/1.1 bodies: Content-Length kept, chunked re-chunked"
"${CURL[@]}" -o /dev/null --data-binary @<(head -c 3000 /dev/zero) "$EP_URL/post" || fail "POST failed"
[[ $(last_head | head -n1 | tr -d '\r') == 'POST /post HTTP/1.1' ]] || fail "request line: $(last_head | head -n1)"
expect_field Content-Length 3000
expect_no_field Transfer-Encoding
body_bytes=$("${CURL[@]}" -D - -o /dev/null -H 'Transfer-Encoding: chunked' --data-binary @<(head -c 5000 /dev/zero) \
        "$EP_URL/post" | grep -i '^x-body-bytes:' | tr -d '\r')
expect_field Transfer-Encoding chunked
expect_no_field Content-Length
[[ $body_bytes == 'X-Body-Bytes: 5000' ]] || fail "the worker counted '$body_bytes' of a 5000-byte chunked body"

note "HTTP/2: :authority, cookie crumbs, te, a client's X-Elastic-Pool-User"
out=$(h2_request --path '/h2?x=1' --authority h2.test:1234 -H 'cookie: a=1' -H 'x-custom: two' -H 'cookie: b=2' \
        -H 'cookie: ep_user=zz.1.y' -H 'te: trailers' -H 'x-forwarded-for: 192.0.2.1' -H 'x-forwarded-proto: https' \
        -H 'x-elastic-pool-user: mallory') || fail "h2 request failed"
[[ $out == *'"status": 200'* ]] || fail "h2 answer: $out"
[[ $(last_head | head -n1 | tr -d '\r') == 'GET /h2?x=1 HTTP/1.1' ]] || fail "request line: $(last_head | head -n1)"
expect_field Host h2.test:1234
expect_field Cookie 'a=1; b=2'
expect_field x-custom two
expect_no_field te
expect_no_field X-Elastic-Pool-User
expect_field X-Forwarded-For '192.0.2.1, 127.0.0.1'
expect_field X-Forwarded-Proto http
[[ $(head_values X-Request-Id) =~ ^[0-9a-f]{32}$ ]] || fail "X-Request-Id not generated: $(head_values X-Request-Id)"

note "HTTP/2 from a trusted proxy, with a body of unknown length and a valid X-Request-Id"
out=$(h2_request --source 127.0.0.2 --method POST --path /up -H 'x-forwarded-proto: https' -H 'x-request-id: abc-42' \
        --body-bytes 1000 --no-length) || fail "h2 POST failed"
[[ $out == *'"status": 200'* && $out == *'["x-body-bytes", "1000"]'* ]] || fail "h2 answer: $out"
expect_field X-Forwarded-Proto https
expect_field X-Request-Id abc-42
expect_field Transfer-Encoding chunked
expect_no_field Content-Length
out=$(h2_request --method POST --path /up --body-bytes 700) || fail "h2 POST failed"
[[ $out == *'["x-body-bytes", "700"]'* ]] || fail "h2 answer: $out"
expect_field Content-Length 700
expect_no_field Transfer-Encoding

fe_stop
