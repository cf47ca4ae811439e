#!/bin/bash
# SPDX-License-Identifier: MIT
# SIGTERM stops accepting, lets the in-flight request finish and answer, closes idle keep-alive
# connections at once (without waiting for the idle timeout), and exits 0. A request that outlives
# --shutdown-timeout is cut short and the worker still exits 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/demo-worker-lib.sh"

busy() { # busy N: at least N executor threads are working (the monitor request itself is one)
        local b
        b=$(curl -sf "${DEMO_CURL[@]}" http://demo/_monitor/state | grep -o '"busy":[0-9]*' | cut -d: -f2)
        ((b >= $1))
}

demo_start --threads 3 --idle-timeout 60s

# An idle keep-alive connection, held by a reader that reports when the worker closes it.
"$EP_PYTHON" - "$DEMO_SOCK" >"$EP_TMP/idle.out" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.settimeout(30)
s.sendall(b"GET / HTTP/1.1\r\n\r\n")
data = b""
while not data.endswith(b"worker\n"):
    data += s.recv(4096)
print("answered", flush=True)
t = time.monotonic()
while s.recv(4096):
    pass
print("closed after %.2f" % (time.monotonic() - t), flush=True)
PY
idle_pid=$!
wait_for_line "$EP_TMP/idle.out" '^answered' >/dev/null || fail "the idle connection got no answer"

curl -sf "${DEMO_CURL[@]}" -o "$EP_TMP/slow.out" 'http://demo/work?sleep_ms=1500' &
slow_pid=$!
wait_until busy 2 || fail "the slow request never ran"

start=$SECONDS
kill -TERM "$DEMO_PID"
wait "$slow_pid" || fail "the in-flight request failed after SIGTERM"
grep -q '"slept_ms":1[5-9][0-9][0-9]' "$EP_TMP/slow.out" || fail "the in-flight request was cut: $(cat "$EP_TMP/slow.out")"
wait "$idle_pid" || fail "the idle connection reader failed"
grep -q '^closed' "$EP_TMP/idle.out" || fail "the idle keep-alive connection was not closed"
rc=0
wait "$DEMO_PID" || rc=$?
((rc == 0)) || fail "the worker exited $rc"
((SECONDS - start < 8)) || fail "stopping took $((SECONDS - start)) s"
[[ -e $DEMO_SOCK ]] && fail "the worker left its socket $DEMO_SOCK behind"
EP_PIDS=()

# Past the shutdown timeout a request is cut short; the worker still exits 0, promptly.
demo_start --threads 2 --shutdown-timeout 500ms
curl -s "${DEMO_CURL[@]}" -o /dev/null 'http://demo/work?sleep_ms=60000' &
long_pid=$!
wait_until busy 2 || fail "the long request never ran"
start=$SECONDS
demo_stop
((SECONDS - start < 5)) || fail "the hard stop took $((SECONDS - start)) s"
wait "$long_pid" || true
grep -q 'Shutdown timeout' "$DEMO_LOG" || fail "the hard stop was not logged"
echo "OK"
