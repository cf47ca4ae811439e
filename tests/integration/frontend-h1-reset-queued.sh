#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: HTTP/1.1 requests that wait in the commander for a worker connection and whose client closes
# its connection are dropped, never forwarded (issue 16, defect 3, the queued requests): a plain GET, a
# POST whose body had begun, and the second of two pipelined requests all vanish with their client; the
# worker sees only the request that held its one connection, and the next client is served.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)" frontend.upstream_connections=1
fe_start

out=$("$EP_PYTHON" - "$EP_PORT" "$FE_HEADS" <<'PY'
import os, socket, sys, time
port, heads = int(sys.argv[1]), sys.argv[2]
def conn():
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    return s
# the one worker connection goes to this request (1.5 s on the worker)
holder = conn()
holder.sendall(b"GET /sleep?ms=1500 HTTP/1.1\r\nHost: a\r\n\r\n")
deadline = time.monotonic() + 10
while time.monotonic() < deadline and not (os.path.exists(heads) and "/sleep" in open(heads).read()):
    time.sleep(0.02)
queued = [conn() for _ in range(3)]
queued[0].sendall(b"GET /queued-get HTTP/1.1\r\nHost: a\r\n\r\n")
queued[1].sendall(b"POST /queued-post HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n12345")
queued[2].sendall(b"GET /queued-first HTTP/1.1\r\nHost: a\r\n\r\nGET /queued-second HTTP/1.1\r\nHost: a\r\n\r\n")
# closed in a later read than their heads, so that the commander began them and queued them
time.sleep(0.2)
for s in queued:
    s.close()
reply = b""
while b"\r\n\r\n" not in reply:
    b = holder.recv(65536)
    if not b:
        break
    reply += b
print(reply.split(b"\r\n")[0].decode())
PY
)
note "holder: $out"
[[ $out == 'HTTP/1.1 200'* ]] || fail "the request holding the worker connection was not answered: $out"
code=$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$EP_URL/after")
[[ $code == 200 ]] || fail "the request after got $code"
grep -q '/queued-' "$FE_HEADS" && fail "a queued request of a closed connection reached the worker: $(grep -o '/queued-[a-z]*' "$FE_HEADS" | tr '\n' ' ')"
grep -q '/after' "$FE_HEADS" || fail "the request after never reached the worker"
commander_alive || fail "the commander died"
fe_stop
