#!/bin/bash
# SPDX-License-Identifier: MIT
# The demo worker's plain HTTP surface over TCP (--listen 127.0.0.1:0, port read from its log): the fast
# path GET / and /hello, HEAD without a body, 404 for unknown paths, 405 with Allow for other methods,
# Content-Length on every answer; and its command line: --help, --version, bad options exit 2 naming
# the bad input.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/demo-worker-lib.sh"

"$DEMO_WORKER" --help | grep -q -- '--listen' || fail "--help does not describe --listen"
"$DEMO_WORKER" --version | grep -qE '^elastic-pool-demo-worker [0-9]' || fail "--version"
for args in "--threads 0" "--threads abc" "--user-blob-size 2G" "--listen nocolon" "--idle-timeout x" \
        "--bogus" "--listen 127.0.0.1:1 extra"; do
        rc=0
        # shellcheck disable=SC2086
        msg=$("$DEMO_WORKER" $args 2>&1) || rc=$?
        [[ $rc -eq 2 ]] || fail "'$args' exited $rc, expected 2"
        bad=${args#--}
        bad=${bad%% *}
        [[ $args == *extra ]] && bad=extra
        grep -q -- "$bad" <<<"$msg" || fail "the message for '$args' does not name '$bad': $msg"
done

spawn_bg "$DEMO_WORKER" --listen 127.0.0.1:0 --threads 2 >"$DEMO_LOG" 2>&1
DEMO_PID=$EP_LAST_PID
line=$(wait_for_line "$DEMO_LOG" 'Listening on 127\.0\.0\.1:[0-9]+') || fail "no 'Listening on' line"
port=${line##*:}
base=http://127.0.0.1:$port
wait_until curl -sf -o /dev/null "$base/" || fail "the worker does not answer on port $port"

body=$(curl -sf "$base/")
[[ $body == "Hello from elastic-pool-demo-worker" ]] || fail "GET / answered '$body'"
headers=$(curl -sf -D - -o /dev/null "$base/hello")
grep -qi '^Content-Length: 36'$'\r' <<<"$headers" || fail "no Content-Length on /hello: $headers"

# HEAD: the headers of GET, no body (curl -I would complain about a body it did not expect).
out=$(raw_exchange 'HEAD /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' "127.0.0.1:$port")
grep -q '^Content-Length: 36'$'\r' <<<"$out" || fail "HEAD lacks the GET Content-Length: $out"
[[ $(tail -c 4 <<<"$out" | od -An -c | tr -d ' ') == '\r\n\r\n' ]] || fail "HEAD answer has a body: $out"

code=$(curl -s -o /dev/null -w '%{http_code}' "$base/nope")
[[ $code == 404 ]] || fail "an unknown path answered $code, expected 404"
headers=$(curl -s -D - -o /dev/null -X DELETE "$base/state")
grep -q '^HTTP/1.1 405' <<<"$headers" || fail "DELETE /state: $headers"
grep -qi '^Allow: GET, HEAD, POST' <<<"$headers" || fail "405 without Allow: $headers"

# HTTP/1.0 closes unless keep-alive is asked for; HTTP/1.1 "Connection: close" is honoured.
out=$(raw_exchange 'GET / HTTP/1.0\r\n\r\n' "127.0.0.1:$port")
grep -q '^Connection: close' <<<"$out" && grep -q 'Hello' <<<"$out" || fail "HTTP/1.0 answer: $out"
out=$(raw_exchange 'GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /hello HTTP/1.0\r\n\r\n' "127.0.0.1:$port")
[[ $(statuses <<<"$out" | wc -l) -eq 2 ]] || fail "HTTP/1.0 keep-alive did not keep the connection: $out"
grep -q '^Connection: keep-alive' <<<"$out" || fail "HTTP/1.0 keep-alive answer lacks 'Connection: keep-alive'"
out=$(raw_exchange 'GET / HTTP/1.1\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n' "127.0.0.1:$port")
[[ $(statuses <<<"$out" | wc -l) -eq 1 ]] || fail "'Connection: close' was not honoured: $out"
grep -q '<no EOF>' <<<"$out" && fail "no EOF after 'Connection: close'"

demo_stop
echo "OK"
