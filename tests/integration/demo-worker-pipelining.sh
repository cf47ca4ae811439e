#!/bin/bash
# SPDX-License-Identifier: MIT
# Requests pipelined on one connection are answered in order, each completely, even when one of them is
# slow or has a body; garbage after valid requests gets those answered first, then a 400 and a close.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/demo-worker-lib.sh"

demo_start --threads 4
curl -sf "${DEMO_CURL[@]}" -o /dev/null 'http://demo/login?user=pipe'

u='X-Elastic-Pool-User: pipe\r\n'
req="GET /state HTTP/1.1\r\n$u\r\n"
req+="GET /work?sleep_ms=200 HTTP/1.1\r\n\r\n"
req+="POST /state HTTP/1.1\r\n${u}Content-Length: 5\r\n\r\nabcde"
req+="GET /work?bytes=64000 HTTP/1.1\r\n\r\n" # whole 64-byte lines: the next answer starts a line
req+="HEAD /state HTTP/1.1\r\n$u\r\n"
req+="GET /state HTTP/1.1\r\n${u}Connection: close\r\n\r\n"
out=$(raw_exchange "$req")
[[ $(statuses <<<"$out" | tr '\n' ' ') == "200 200 200 200 200 200 " ]] || fail "pipelined statuses: $(statuses <<<"$out")"
counters=$(grep -ao '"counter":[0-9]*' <<<"$out" | cut -d: -f2 | tr '\n' ' ')
# HEAD /state counts too (the handler runs; only the body is left out), so the last one is 4.
[[ $counters == "1 2 4 " ]] || fail "pipelined answers out of order: counters '$counters'"
grep -aq '"slept_ms":' <<<"$out" || fail "the slow request's answer is missing"
grep -q '<no EOF>' <<<"$out" && fail "the connection was not closed after 'Connection: close'"

# The answer to a fast request does not wait behind a slow one pipelined after it.
"$EP_PYTHON" - "$DEMO_SOCK" <<'PY' || fail "an answer waited behind a slow pipelined request"
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.settimeout(20)
t = time.monotonic()
s.sendall(b"GET /hello HTTP/1.1\r\n\r\nGET /work?sleep_ms=2000 HTTP/1.1\r\nConnection: close\r\n\r\n")
data = b""
while b"worker\n" not in data:
    data += s.recv(65536)
first = time.monotonic() - t
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
total = time.monotonic() - t
assert first < 1.0 and total >= 2.0, "first answer after %.2f s, both after %.2f s" % (first, total)
PY

# Valid, valid, garbage: two answers, then 400, then the connection closes.
out=$(raw_exchange 'GET /hello HTTP/1.1\r\n\r\nGET /hello HTTP/1.1\r\n\r\n\x01\x02garbage\r\n\r\nGET /hello HTTP/1.1\r\n\r\n')
[[ $(statuses <<<"$out" | tr '\n' ' ') == "200 200 400 " ]] || fail "valid+garbage: $(statuses <<<"$out")"
grep -q '<no EOF>' <<<"$out" && fail "the connection stayed open after garbage"

# Many small requests in one write (more than one read buffer's worth of answers).
req=""
for _ in $(seq 2000); do req+='GET / HTTP/1.1\r\n\r\n'; done
req+='GET / HTTP/1.1\r\nConnection: close\r\n\r\n'
[[ $(raw_exchange "$req" | statuses | grep -c 200) -eq 2001 ]] || fail "2001 pipelined requests"
demo_alive
demo_stop
echo "OK"
