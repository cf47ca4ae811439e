#!/bin/bash
# SPDX-License-Identifier: MIT
# Keep-alive connections stay open between requests and are closed by the worker once idle past
# --idle-timeout; a connection stuck in the middle of a request head is closed the same way. Many
# concurrent keep-alive connections are served and counted in /_monitor/state.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/demo-worker-lib.sh"

demo_start --threads 2 --idle-timeout 1s

"$EP_PYTHON" - "$DEMO_SOCK" <<'PY' || fail "idle timeout"
import socket, sys, time

def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.settimeout(15)
    return s

def read_response(s):
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(4096)
    head, _, rest = data.partition(b"\r\n\r\n")
    n = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0].split(b":")[1])
    while len(rest) < n:
        rest += s.recv(4096)
    return head

s = connect()
for _ in range(3):  # the same connection answers again and again
    s.sendall(b"GET / HTTP/1.1\r\n\r\n")
    assert read_response(s).startswith(b"HTTP/1.1 200"), "keep-alive request"
t = time.monotonic()
assert s.recv(1) == b"", "expected EOF from the idle timeout"
idle = time.monotonic() - t
assert 0.5 <= idle <= 5, "closed after %.2f s idle, expected about 1 s" % idle

s = connect()
s.sendall(b"GET / HTTP/1.1\r\nX-Slow: ")  # a head that never ends
assert s.recv(1) == b"", "expected EOF for a stalled request head"
print("idle connections closed after %.2f s" % idle)
PY

# 200 keep-alive connections at once, each doing 5 requests; all open together at one point.
"$EP_PYTHON" - "$DEMO_SOCK" <<'PY' || fail "concurrent connections"
import json, socket, sys
socks = []
for i in range(200):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.settimeout(15)
    socks.append(s)
for _ in range(5):
    for s in socks:
        s.sendall(b"GET /hello HTTP/1.1\r\n\r\n")
    for s in socks:
        data = b""
        while not data.endswith(b"elastic-pool-demo-worker\n"):
            data += s.recv(4096)
m = socks[0]
m.sendall(b"GET /_monitor/state HTTP/1.1\r\nConnection: close\r\n\r\n")
data = b""
while True:
    b = m.recv(65536)
    if not b:
        break
    data += b
state = json.loads(data.partition(b"\r\n\r\n")[2])
assert state["connections"] >= 200, state
PY
demo_alive
demo_stop
echo "OK"
