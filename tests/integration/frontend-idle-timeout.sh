#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: an idle keep-alive connection is closed after idle_timeout (1 s) counted from its last
# response: HTTP/1.1 silently (EOF), HTTP/2 with GOAWAY NO_ERROR "idle timeout"; while it was idle
# within the timeout, a second request on it is still served.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)" frontend.idle_timeout=1s
fe_start
out=$("$EP_PYTHON" - "$EP_PORT" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(10)
def request():
    s.sendall(b"GET /idle HTTP/1.1\r\nHost: a\r\n\r\n")
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(65536)
    head, _, body = got.partition(b"\r\n\r\n")
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(body) < n:
        body += s.recv(65536)
    return head.split(b"\r\n")[0].decode()
first = request()
time.sleep(0.5)   # idle, but within idle_timeout: the connection is still there
second = request()
t0 = time.monotonic()
try:
    b = s.recv(100)
except ConnectionResetError:
    b = b"<reset>"
print(f"first={first!r} second={second!r} eof_after={time.monotonic() - t0:.2f} got={b!r}")
PY
)
note "HTTP/1.1: $out"
[[ $out == *"first='HTTP/1.1 200 OK' second='HTTP/1.1 200 OK'"* ]] || fail "requests on the connection: $out"
[[ $out == *"got=b''"* ]] || fail "the idle connection was not closed cleanly: $out"
[[ $out =~ eof_after=([0-9.]+) ]] && awk -v t="${BASH_REMATCH[1]}" 'BEGIN { exit !(t >= 0.9 && t < 3) }' ||
        fail "closed after ${BASH_REMATCH[1]:-?} s, not ~1 s"

out=$("$EP_PYTHON" "$FE_DIR/h2-abuse.py" "$EP_ADDR" headers --fields 0 --wait 4 --expect goaway=NO_ERROR --expect closed) ||
        fail "HTTP/2 idle connection: $out"
note "HTTP/2: $out"
[[ $out == *'"debug": "idle timeout"'* ]] || fail "GOAWAY without the reason: $out"
[[ $out == *'"status": {"1": 200}'* ]] || fail "the request before the idle time was not answered: $out"
fe_stop
