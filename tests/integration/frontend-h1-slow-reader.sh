#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: an HTTP/1.1 client that pipelines requests on a keep-alive connection and then stops reading
# holds no worker connection past idle_timeout (issue 16, defect 1, HTTP/1.1 slow readers): its
# connection is closed once its response made no progress for idle_timeout, the worker connection that
# response came from is released, and a request of another client that waited for it is served.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER" frontend.idle_timeout=2s frontend.upstream_connections=1
fe_start

cat >"$EP_TMP/reader.py" <<'PY'
import json, socket, sys, time
port = int(sys.argv[1])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", port))
req = b"GET /work?bytes=20000000 HTTP/1.1\r\nHost: a\r\n\r\n"
s.sendall(req * 3)
print("sent", flush=True)
# never read until told to: then drain and say whether the commander closed the connection
sys.stdin.readline()
s.settimeout(10)
got, t0 = 0, time.monotonic()
try:
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        got += len(b)
    closed = True
except (socket.timeout, ConnectionResetError):
    closed = False
print(json.dumps({"closed": closed, "bytes": got}), flush=True)
PY
mkfifo "$EP_TMP/reader.in" "$EP_TMP/reader.out"
spawn_bg bash -c 'exec "$0" -u "$1" "$2" <"$3" >"$4"' "$EP_PYTHON" "$EP_TMP/reader.py" "$EP_PORT" \
        "$EP_TMP/reader.in" "$EP_TMP/reader.out"
exec 7>"$EP_TMP/reader.in" 8<"$EP_TMP/reader.out"
read -r -t 20 line <&8
[[ $line == sent ]] || fail "the slow reader did not start: $line"
# the one worker connection streams the slow reader's first response; this request waits for it
t0=$(date +%s.%N)
code=$("${CURL[@]}" --max-time 15 -o /dev/null -w '%{http_code}' "$EP_URL/")
waited=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
note "another client waited $waited s and got $code"
[[ $code == 200 ]] || fail "the other client got $code while the slow reader held the worker connection"
awk -v w="$waited" 'BEGIN { exit !(w < 8) }' || fail "the worker connection was released only after $waited s"
wait_log 'client stopped reading its response for idle_timeout'
echo go >&7
read -r -t 20 line <&8
note "slow reader: $line"
[[ $line == *'"closed": true'* ]] || fail "the slow reader's connection was not closed: $line"
# far less than the three responses it asked for reached it
[[ $line =~ \"bytes\":\ ([0-9]+) ]] && ((BASH_REMATCH[1] < 60000000)) || fail "the slow reader got everything: $line"
commander_alive || fail "the commander died"
fe_stop
