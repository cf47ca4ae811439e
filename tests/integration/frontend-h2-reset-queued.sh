#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: HTTP/2 requests that wait in the commander for a worker connection and are reset by their
# client are dropped, never forwarded (issue 16, defect 3, the queued requests); a request already on a
# worker when reset still runs to its end there (kept as an orphan, as before).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)" frontend.upstream_connections=1
fe_start

out=$("$EP_PYTHON" - "$EP_PORT" "$FE_HEADS" <<'PY'
import json, os, socket, struct, sys, time
import hpack
port, heads = int(sys.argv[1]), sys.argv[2]
def frame(t, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([t, flags]) + struct.pack(">I", sid) + payload
enc = hpack.Encoder()
def get(sid, path):
    return frame(1, 0x5, sid, enc.encode([(":method", "GET"), (":scheme", "http"), (":path", path),
                                          (":authority", "a")]))
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(10)
# the one worker connection goes to stream 1 (1.5 s on the worker); 3, 5, 7 queue behind it
s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0) + get(1, "/sleep?ms=1500"))
# stream 1 is on the worker once the worker logged its head
deadline = time.monotonic() + 10
while time.monotonic() < deadline and not (os.path.exists(heads) and "/sleep" in open(heads).read()):
    time.sleep(0.02)
s.sendall(get(3, "/queued-3") + get(5, "/queued-5") + get(7, "/queued-7"))
# in a later read than their HEADERS, so they were begun and queued (resets in the same read never begin)
time.sleep(0.2)
s.sendall(frame(3, 0, 3, struct.pack(">I", 8)) + frame(3, 0, 5, struct.pack(">I", 8)) +
          frame(3, 0, 7, struct.pack(">I", 8)))
buf, dec, status, t0 = b"", hpack.Decoder(), None, time.monotonic()
while status is None and time.monotonic() - t0 < 8:
    b = s.recv(65536)
    if not b:
        break
    buf += b
    while len(buf) >= 9:
        ln = int.from_bytes(buf[:3], "big")
        if len(buf) < 9 + ln:
            break
        sid = int.from_bytes(buf[5:9], "big") & 0x7fffffff
        if buf[3] == 4 and not buf[4] & 1:
            s.sendall(frame(4, 1, 0))
        if buf[3] == 1 and sid == 1:
            status = dict(dec.decode(buf[9:9 + ln])).get(":status")
        buf = buf[9 + ln:]
print(json.dumps({"status1": status}))
PY
)
note "client: $out"
[[ $out == *'"status1": "200"'* ]] || fail "stream 1 was not answered: $out"
# the one connection is free again: a new request goes through, after anything queued would have
code=$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$EP_URL/after")
[[ $code == 200 ]] || fail "the request after got $code"
grep -q '/queued-' "$FE_HEADS" && fail "a reset queued request reached the worker: $(grep -c '/queued-' "$FE_HEADS")"
grep -q '/sleep' "$FE_HEADS" || fail "stream 1 never reached the worker"
fe_stop
