#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: an HTTP/2 client that never opens its flow-control window holds no worker connection past
# idle_timeout (issue 16, defect 1, the h2 streams): its stalled streams are reset (CANCEL), their
# worker connections released, and a request of another client that waited for one of them is served.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER" frontend.idle_timeout=2s frontend.upstream_connections=2
fe_start

cat >"$EP_TMP/stall.py" <<'PY'
import json, socket, struct, sys, time
import hpack
port, n = int(sys.argv[1]), int(sys.argv[2])
def frame(t, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([t, flags]) + struct.pack(">I", sid) + payload
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(15)
# INITIAL_WINDOW_SIZE 0: the server may send HEADERS, never DATA
out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, struct.pack(">HI", 4, 0))
enc = hpack.Encoder()
for i in range(n):
    block = enc.encode([(":method", "GET"), (":scheme", "http"), (":path", "/work?bytes=20000000"),
                        (":authority", "a")])
    out += frame(1, 0x5, 1 + 2 * i, block)
s.sendall(out)
print("sent", flush=True)
t0, buf, resets = time.monotonic(), b"", {}
while len(resets) < n:
    try:
        b = s.recv(65536)
    except socket.timeout:
        break
    if not b:
        break
    buf += b
    while len(buf) >= 9:
        ln = int.from_bytes(buf[:3], "big")
        if len(buf) < 9 + ln:
            break
        t, flags, sid, payload = buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7fffffff, buf[9:9 + ln]
        buf = buf[9 + ln:]
        if t == 4 and not flags & 1:
            s.sendall(frame(4, 1, 0))
        if t == 3:
            resets[sid] = (int.from_bytes(payload, "big"), round(time.monotonic() - t0, 1))
print(json.dumps({"resets": resets}), flush=True)
PY
mkfifo "$EP_TMP/stall.out"
spawn_bg bash -c 'exec "$0" -u "$1" "$2" 2 >"$3"' "$EP_PYTHON" "$EP_TMP/stall.py" "$EP_PORT" "$EP_TMP/stall.out"
exec 8<"$EP_TMP/stall.out"
read -r -t 20 line <&8
[[ $line == sent ]] || fail "the stalling client did not start: $line"
# both worker connections are the stalled client's now; this one waits for one of them
t0=$SECONDS
code=$("${CURL[@]}" --max-time 15 -o /dev/null -w '%{http_code}' "$EP_URL/")
note "another client waited $((SECONDS - t0)) s and got $code"
[[ $code == 200 ]] || fail "the other client got $code while the stalled streams held the worker"
read -r -t 20 line <&8
note "stalled client: $line"
# CANCEL is 8
[[ $line == *'"1": [8, '* && $line == *'"3": [8, '* ]] || fail "the stalled streams were not reset with CANCEL: $line"
wait_log 'response not read for 2s, resetting it \(CANCEL\)'
commander_alive || fail "the commander died"
fe_stop
