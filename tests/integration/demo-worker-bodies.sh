#!/bin/bash
# SPDX-License-Identifier: MIT
# Request bodies are accepted and discarded, whatever their framing: Content-Length, chunked, with
# "Expect: 100-continue"; /work reports how many body bytes it received. A declared body over the limit
# (--max-body-size, 64M here) is 413 before any of it is read; a chunked one as soon as it passes it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/demo-worker-lib.sh"

demo_start --threads 2 --max-body-size 64M

body_bytes() {
        grep -o '"body_bytes":[0-9]*' | cut -d: -f2
}

head -c 100000 /dev/urandom >"$EP_TMP/payload"
n=$(curl -sf "${DEMO_CURL[@]}" --data-binary @"$EP_TMP/payload" http://demo/work | body_bytes)
[[ $n == 100000 ]] || fail "a Content-Length POST of 100000 bytes was counted as '$n'"
n=$(curl -sf "${DEMO_CURL[@]}" -H 'Transfer-Encoding: chunked' --data-binary @"$EP_TMP/payload" http://demo/work |
        body_bytes)
[[ $n == 100000 ]] || fail "a chunked POST of 100000 bytes was counted as '$n'"

# curl sends "Expect: 100-continue" for bodies over 1 MiB and waits (1 s) for the 100 before the body.
head -c $((20 * 1024 * 1024)) /dev/zero >"$EP_TMP/big"
out=$(curl -sf "${DEMO_CURL[@]}" -H 'Expect: 100-continue' --expect100-timeout 20 -w '\n%{time_total}\n' \
        --data-binary @"$EP_TMP/big" http://demo/work)
[[ $(body_bytes <<<"$out") == $((20 * 1024 * 1024)) ]] || fail "20 MiB with Expect: 100-continue: $out"

# Chunked by hand, with a chunk extension and a trailer, then a second request on the same connection.
out=$(raw_exchange 'POST /work HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\nGET /hello HTTP/1.1\r\nConnection: close\r\n\r\n')
[[ $(statuses <<<"$out" | tr '\n' ' ') == "200 200 " ]] || fail "chunked then GET: $out"
[[ $(body_bytes <<<"$out") == 11 ]] || fail "the hand-made chunked body was not 11 bytes: $out"

# POST to the fast path works too.
curl -sf "${DEMO_CURL[@]}" --data-binary 'x=1' -o /dev/null http://demo/ || fail "POST /"

out=$(raw_exchange 'POST /work HTTP/1.1\r\nContent-Length: 67108865\r\n\r\n')
[[ $(statuses <<<"$out") == 413 ]] || fail "a 64 MiB + 1 Content-Length was not 413: $out"
grep -q '^Connection: close' <<<"$out" || fail "413 without Connection: close"
# The client keeps sending the refused body: the 413 must still reach it (no reset destroying it).
"$EP_PYTHON" - "$DEMO_SOCK" <<'PY' || fail "the 413 was lost while the client kept sending"
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.settimeout(20)
s.sendall(b"POST /work HTTP/1.1\r\nContent-Length: 100000000\r\n\r\n")
try:
    for _ in range(64):
        s.sendall(b"x" * 65536)
except (BrokenPipeError, ConnectionResetError):
    pass
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
assert data.startswith(b"HTTP/1.1 413 "), data[:200]
PY
demo_alive
demo_stop

# --max-body-size moves the limit, for Content-Length and chunked bodies alike.
demo_start --max-body-size 1K
head -c 1024 /dev/zero >"$EP_TMP/1k"
head -c 1025 /dev/zero >"$EP_TMP/1k1"
[[ $(curl -s "${DEMO_CURL[@]}" -o /dev/null -w '%{http_code}' --data-binary @"$EP_TMP/1k" http://demo/work) == 200 ]] ||
        fail "1024 bytes under --max-body-size 1K"
[[ $(curl -s "${DEMO_CURL[@]}" -o /dev/null -w '%{http_code}' --data-binary @"$EP_TMP/1k1" http://demo/work) == 413 ]] ||
        fail "1025 bytes under --max-body-size 1K"
out=$(raw_exchange "POST /work HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n401\r\n$(head -c 1025 /dev/zero | tr '\0' a)\r\n0\r\n\r\n")
[[ $(statuses <<<"$out") == 413 ]] || fail "a 1025-byte chunk under --max-body-size 1K: $out"
demo_alive
demo_stop
echo "OK"
