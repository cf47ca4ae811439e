#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""HTTP/2 flow control against the commander, for frontend-h2-flow-control.sh (raw frames, hpack).

  frontend-h2-flow-control.py HOST:PORT PID BYTES

Stream 1 downloads BYTES (/work?bytes=BYTES) from a client that gives back the connection window as
data arrives but never stream 1's own window (65535 bytes): stream 1 stalls after its first window. Once
it has, stream 3 asks for /work?sleep_ms=1500 (a slow worker) and stream 5 for /hello: /hello must be
answered before the slow one, both while stream 1 still stalls. The commander's VmRSS (PID) is sampled
over a second of the stall. Then stream 1 is reset. Prints JSON: stream1_bytes (what it got), order
(streams in the order they ended), rss_start_kib, rss_peak_kib."""

import importlib.util
import json
import os
import socket
import struct
import sys
import time

import hpack

spec = importlib.util.spec_from_file_location("h2abuse", os.path.join(os.path.dirname(__file__), "h2-abuse.py"))
h2 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(h2)


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main():
    address, pid, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=20)
    sock.sendall(h2.PREFACE + h2.frame(h2.SETTINGS, 0, 0))
    sock.sendall(h2.headers_frames(1, h2.request_block("GET", f"/work?bytes={size}", address), True))
    decoder = hpack.Decoder()
    got = {1: 0, 3: 0, 5: 0}
    order, buf = [], b""
    rss_start, rss_peak, stall_since, opened = rss_kib(pid), 0, None, False
    deadline = time.monotonic() + 20
    sock.settimeout(0.1)
    while time.monotonic() < deadline and len(order) < 2:
        try:
            data = sock.recv(1 << 16)
            if not data:
                break
            buf += data
        except socket.timeout:
            pass
        out = b""
        while len(buf) >= 9:
            length = int.from_bytes(buf[:3], "big")
            if len(buf) < 9 + length:
                break
            ftype, flags, sid = buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
            payload, buf = buf[9:9 + length], buf[9 + length:]
            if ftype == h2.SETTINGS and not flags & h2.ACK:
                out += h2.frame(h2.SETTINGS, h2.ACK, 0)
            elif ftype == h2.PING and not flags & h2.ACK:
                out += h2.frame(h2.PING, h2.ACK, 0, payload)
            elif ftype == h2.HEADERS:
                decoder.decode(payload)
                if flags & h2.END_STREAM:
                    order.append(sid)
            elif ftype == h2.DATA:
                got[sid] = got.get(sid, 0) + length
                if length:  # the connection's window back, never stream 1's
                    out += h2.frame(h2.WINDOW_UPDATE, 0, 0, struct.pack(">I", length))
                    if sid != 1:
                        out += h2.frame(h2.WINDOW_UPDATE, 0, sid, struct.pack(">I", length))
                if flags & h2.END_STREAM:
                    order.append(sid)
            elif ftype == h2.GOAWAY:
                order.append("goaway")
        if got[1] >= 65535 and not opened:
            opened = True
            stall_since = time.monotonic()
            out += h2.headers_frames(3, h2.request_block("GET", "/work?sleep_ms=1500", address), True)
            out += h2.headers_frames(5, h2.request_block("GET", "/hello", address), True)
        if stall_since:
            rss_peak = max(rss_peak, rss_kib(pid))
        if out:
            sock.sendall(out)
    stalled_for = time.monotonic() - stall_since if stall_since else 0
    sock.sendall(h2.frame(h2.RST_STREAM, 0, 1, struct.pack(">I", 8)))
    print(json.dumps({"stream1_bytes": got[1], "order": order, "stalled_for": round(stalled_for, 2),
                      "rss_start_kib": rss_start, "rss_peak_kib": rss_peak}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
