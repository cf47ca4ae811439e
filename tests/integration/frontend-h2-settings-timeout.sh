#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: an HTTP/2 connection that sent the preface but no SETTINGS, or never acknowledges ours, is
# closed at header_timeout with GOAWAY SETTINGS_TIMEOUT (issue 16, defect 9); one that completed the
# exchange stays until idle_timeout, which idle h2 connections follow as h1 ones do.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)" frontend.header_timeout=1s frontend.idle_timeout=3s
fe_start

# raw_h2 MODE: speaks h2c with raw frames; prints the GOAWAY it got (error code and debug data) and when
# the connection closed. MODE: preface (the magic only), no-ack (magic and SETTINGS, ours never
# acknowledged), polite (both, and our SETTINGS acknowledged).
raw_h2() {
        "$EP_PYTHON" - "$EP_PORT" "$1" <<'PY'
import socket, struct, sys, time
port, mode = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(10)
t0 = time.monotonic()
out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
if mode != "preface":
    out += struct.pack(">I", 0)[1:] + bytes([4, 0]) + struct.pack(">I", 0)  # empty SETTINGS
s.sendall(out)
buf, goaway, acked = b"", None, False
while True:
    try:
        b = s.recv(65536)
    except (ConnectionResetError, socket.timeout) as e:
        print(f"error={type(e).__name__}")
        break
    if not b:
        break
    buf += b
    while len(buf) >= 9:
        n = int.from_bytes(buf[:3], "big")
        if len(buf) < 9 + n:
            break
        typ, flags, payload = buf[3], buf[4], buf[9:9 + n]
        buf = buf[9 + n:]
        if typ == 4 and not flags & 1 and mode == "polite" and not acked:
            s.sendall(struct.pack(">I", 0)[1:] + bytes([4, 1]) + struct.pack(">I", 0))
            acked = True
        if typ == 7:
            code = int.from_bytes(payload[4:8], "big")
            goaway = f"{code}:{payload[8:].decode()}"
print(f"goaway={goaway} closed_after={time.monotonic() - t0:.1f}")
PY
}

for mode in preface no-ack; do
        out=$(raw_h2 $mode)
        note "$mode: $out"
        # SETTINGS_TIMEOUT is 0x4
        [[ $out == *"goaway=4:settings timeout"* ]] || fail "$mode: no GOAWAY SETTINGS_TIMEOUT: $out"
        [[ $out =~ closed_after=([0-9.]+) ]] && awk -v t="${BASH_REMATCH[1]}" 'BEGIN { exit !(t >= 0.9 && t < 3.5) }' ||
                fail "$mode: closed after ${BASH_REMATCH[1]:-?} s, not at header_timeout (1 s)"
done
wait_log 'settings timeout: no SETTINGS from the client within 1s'
wait_log 'settings timeout: our SETTINGS not acknowledged within 1s'

out=$(raw_h2 polite)
note "polite: $out"
[[ $out == *"goaway=0:idle timeout"* ]] || fail "polite: not closed for idleness: $out"
[[ $out =~ closed_after=([0-9.]+) ]] && awk -v t="${BASH_REMATCH[1]}" 'BEGIN { exit !(t >= 2.9 && t < 6) }' ||
        fail "polite: closed after ${BASH_REMATCH[1]:-?} s, not at idle_timeout (3 s)"
fe_stop
