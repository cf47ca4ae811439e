#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a request body that trickles (a byte every half second) is answered 408 once a window of
# header_timeout brought less than min_body_rate, over HTTP/1.1 and HTTP/2, and the worker connection its
# head went to is released; a body at an ordinary rate over several windows is served (issue 16,
# defect 2).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)" frontend.header_timeout=1s frontend.idle_timeout=20s frontend.min_body_rate=512 \
        frontend.upstream_connections=1
fe_start

cat >"$EP_TMP/body.py" <<'PY'
import json, socket, struct, sys, time
import hpack
port, proto, chunk, pause, total = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
s = socket.create_connection(("127.0.0.1", port))
t0 = time.monotonic()
def frame(t, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([t, flags]) + struct.pack(">I", sid) + payload
st = {"buf": b"", "status": None, "closed": False}
dec = hpack.Decoder()
def pump(wait):
    """Reads what comes within wait seconds; h2 frames are taken apart (our SETTINGS acknowledged)."""
    s.settimeout(wait)
    try:
        b = s.recv(65536)
    except socket.timeout:
        return
    except OSError:
        b = b""
    if not b:
        st["closed"] = True
        return
    st["buf"] += b
    if proto == "h1":
        if st["buf"].startswith(b"HTTP/1.1 ") and b"\r\n" in st["buf"]:
            st["status"] = st["buf"].split(b" ")[1].decode()
        return
    while len(st["buf"]) >= 9:
        buf = st["buf"]
        ln = int.from_bytes(buf[:3], "big")
        if len(buf) < 9 + ln:
            break
        if buf[3] == 1:
            st["status"] = dict(dec.decode(buf[9:9 + ln])).get(":status")
        elif buf[3] == 4 and not buf[4] & 1:
            s.sendall(frame(4, 1, 0))
        st["buf"] = buf[9 + ln:]
if proto == "h1":
    s.sendall(b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n" % total)
else:
    block = hpack.Encoder().encode([(":method", "POST"), (":scheme", "http"), (":path", "/upload"),
                                    (":authority", "a"), ("content-length", str(total))])
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0) + frame(1, 0x4, 1, block))
sent = 0
while sent < total and st["status"] is None and not st["closed"] and time.monotonic() - t0 < 15:
    n = min(chunk, total - sent)
    try:
        if proto == "h1":
            s.sendall(b"x" * n)
        else:
            s.sendall(frame(0, 0x1 if sent + n == total else 0, 1, b"x" * n))
    except OSError:
        break
    sent += n
    end = time.monotonic() + pause
    while time.monotonic() < end and st["status"] is None and not st["closed"]:
        pump(max(0.001, end - time.monotonic()))
end = time.monotonic() + 5
while st["status"] is None and not st["closed"] and time.monotonic() < end:
    pump(0.1)
print(json.dumps({"status": st["status"], "sent": sent, "after": round(time.monotonic() - t0, 1)}))
PY

# body PROTO CHUNK PAUSE TOTAL
body() {
        "$EP_PYTHON" "$EP_TMP/body.py" "$EP_PORT" "$@"
}

for proto in h1 h2; do
        out=$(body $proto 1 0.5 100000)
        note "$proto trickle: $out"
        [[ $out == *'"status": "408"'* ]] || fail "$proto: a trickling body was not answered 408: $out"
        [[ $out =~ \"after\":\ ([0-9.]+) ]] && awk -v t="${BASH_REMATCH[1]}" 'BEGIN { exit !(t >= 0.9 && t < 5) }' ||
                fail "$proto: answered after ${BASH_REMATCH[1]:-?} s, not at the first window (1 s)"
        # the one worker connection is free again
        code=$("${CURL[@]}" --max-time 5 -o /dev/null -w '%{http_code}' "$EP_URL/after-$proto")
        [[ $code == 200 ]] || fail "$proto: the next request got $code"
done
wait_log 'request body slower than min_body_rate'

# 2 KiB every 0.2 s (10 KiB/s) for three windows: served
for proto in h1 h2; do
        out=$(body $proto 2048 0.2 30720)
        note "$proto steady: $out"
        [[ $out == *'"status": "200"'* ]] || fail "$proto: a body at 10 KiB/s was not served: $out"
done
fe_stop
