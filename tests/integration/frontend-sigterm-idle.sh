#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: at SIGTERM an idle HTTP/1.1 keep-alive connection gets up to 1 s for a next request: one that
# sends it within that second is answered, with Connection: close; one that stays silent is closed
# after about 1 s, without a word; then the commander exits 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER"
fe_start
out=$("$EP_PYTHON" - "$EP_PORT" "$EP_COMMANDER_PID" <<'PY'
import os, signal, socket, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
def request(s, path):
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: a\r\n\r\n".encode())
    got = b""
    while b"\r\n\r\n" not in got:
        b = s.recv(65536)
        if not b:
            return "EOF"
        got += b
    head, _, body = got.partition(b"\r\n\r\n")
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(body) < n:
        body += s.recv(65536)
    return head.decode("latin-1")
busy, quiet = (socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(2))
request(busy, "/hello"), request(quiet, "/hello")          # both kept alive, now idle
os.kill(pid, signal.SIGTERM)
t0 = time.monotonic()
time.sleep(0.3)                                           # idle for a while, within the grace
again = request(busy, "/hello")
quiet.settimeout(5)
try:
    eof = quiet.recv(100)
except ConnectionResetError:
    eof = b"<reset>"
print(f"close_in_answer={'connection: close' in again.lower()} status={again.splitlines()[0]!r} "
      f"quiet_got={eof!r} quiet_closed_after={time.monotonic() - t0:.2f}")
PY
)
note "$out"
[[ $out == *"close_in_answer=True status='HTTP/1.1 200 OK'"* ]] || fail "the request in the grace second: $out"
[[ $out == *"quiet_got=b''"* ]] || fail "the silent connection: $out"
[[ $out =~ quiet_closed_after=([0-9.]+) ]] && awk -v t="${BASH_REMATCH[1]}" 'BEGIN { exit !(t >= 0.8 && t < 2) }' ||
        fail "the silent connection was not closed after ~1 s: $out"
rc=0
wait "$EP_COMMANDER_PID" || rc=$?
sanitizer_clean
((rc == 0)) || fail "the commander exited $rc"
