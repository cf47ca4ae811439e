#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a request head that trickles in (slowloris: a field line every 200 ms) gets 408 and
# Connection: close once header_timeout (1 s) passed since the connection opened, and the connection is
# closed; a connection that sends nothing at all is closed silently after header_timeout; neither
# reaches a worker, and other clients are served meanwhile.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)" frontend.header_timeout=1s
fe_start
out=$("$EP_PYTHON" - "$EP_PORT" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
silent = socket.create_connection(("127.0.0.1", port))
s = socket.create_connection(("127.0.0.1", port))
t0 = time.monotonic()
s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n")
s.settimeout(0.2)
got, eof, i = b"", None, 0
while time.monotonic() - t0 < 6 and eof is None:
    try:
        b = s.recv(65536)
        if not b:
            eof = time.monotonic() - t0
        got += b
    except socket.timeout:
        try:
            s.sendall(b"X-Slow-%d: x\r\n" % i)
            i += 1
        except OSError:
            pass
    except ConnectionResetError:
        eof = time.monotonic() - t0
# meanwhile a normal client was never blocked; the silent one is closed without a word
silent.settimeout(5)
try:
    first = silent.recv(100)
except ConnectionResetError:
    first = b""
print(f"eof={eof} fields_sent={i} silent_got={first!r}")
print(got.decode("latin-1"))
PY
)
note "$(head -n1 <<<"$out")"
[[ $(statuses <<<"$out") == 408 ]] || fail "slowloris answered: $out"
grep -qi '^connection: close' <<<"$out" || fail "408 without Connection: close: $out"
[[ $out =~ eof=([0-9.]+) ]] || fail "the slow connection was not closed: $out"
awk -v t="${BASH_REMATCH[1]}" 'BEGIN { exit !(t >= 0.9 && t < 3) }' || fail "408 came after ${BASH_REMATCH[1]} s, not ~1 s"
[[ $out == *"silent_got=b''"* ]] || fail "the silent connection got an answer: $(head -n1 <<<"$out")"
[[ $(heads_count) == 0 ]] || fail "the slow head reached a worker: $(last_head)"
wait_log 'HTTP/1.1 client 127.0.0.1:[0-9]+: 408 Request Timeout: request head not complete within header_timeout'
[[ $("${CURL[@]}" -o /dev/null -w '%{http_code}' "$EP_URL/") == 200 ]] || fail "the commander no longer serves"
fe_stop
