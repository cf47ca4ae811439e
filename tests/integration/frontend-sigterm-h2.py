#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""HTTP/2 load on one h2c connection through a commander that gets SIGTERM, for frontend-sigterm-h2.sh.
Frames are handled raw (h2-abuse.py's helpers, hpack): python3-h2 refuses the frames of streams that
finish after a GOAWAY, which is exactly what a graceful shutdown sends.

  frontend-sigterm-h2.py HOST:PORT MARKER PID [--streams 20] [--slow-every 4] [--ready-after 500]

Keeps --streams requests open at once (every --slow-every-th /work?sleep_ms=200, the others /), a new
one as each ends. After --ready-after answers it creates MARKER and sends SIGTERM to PID; after the
first GOAWAY it opens no more streams, and reads until the server closes. Prints JSON:
  ok          streams answered 200 completely
  failed      streams the server took (id <= the last GOAWAY's last stream id) left unanswered, or not
              200 (must be 0)
  unprocessed streams above the last stream id, never answered: refused by the GOAWAY, retryable (fine)
  goaways     [{"last_stream_id", "error", "debug"}...] in order
  max_answered the highest stream id answered
Exits 0 when failed is 0, a GOAWAY came and the server closed the connection."""

import argparse
import importlib.util
import json
import os
import signal
import socket
import struct
import sys
import time

import hpack

spec = importlib.util.spec_from_file_location("h2abuse", os.path.join(os.path.dirname(__file__), "h2-abuse.py"))
h2 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(h2)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("address")
    ap.add_argument("marker")
    ap.add_argument("pid", type=int)
    ap.add_argument("--streams", type=int, default=20)
    ap.add_argument("--slow-every", type=int, default=4)
    ap.add_argument("--ready-after", type=int, default=500)
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    host, port = args.address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=args.timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    # SETTINGS_INITIAL_WINDOW_SIZE 16 MiB, and as much for the connection
    sock.sendall(h2.PREFACE + h2.frame(h2.SETTINGS, 0, 0, struct.pack(">HI", 4, 1 << 24)) +
                 h2.frame(h2.WINDOW_UPDATE, 0, 0, struct.pack(">I", 1 << 24)))
    decoder = hpack.Decoder()
    streams = {}  # id -> {"status", "done"}
    next_id, answered, killed, goaways, closed = 1, 0, False, [], False
    buf = b""

    def open_stream():
        nonlocal next_id
        sid = next_id
        next_id += 2
        path = "/work?sleep_ms=200" if (sid // 2) % args.slow_every == 0 else "/"
        streams[sid] = {"status": None, "done": False}
        return h2.headers_frames(sid, h2.request_block("GET", path, args.address), end_stream=True)

    sock.sendall(b"".join(open_stream() for _ in range(args.streams)))
    deadline = time.monotonic() + args.timeout
    while not closed and time.monotonic() < deadline:
        try:
            data = sock.recv(1 << 16)
        except ConnectionResetError:
            data = b""
        if not data:
            closed = True
            break
        buf += data
        out = b""
        while len(buf) >= 9:
            length = int.from_bytes(buf[:3], "big")
            if len(buf) < 9 + length:
                break
            ftype, flags = buf[3], buf[4]
            sid = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
            payload, buf = buf[9:9 + length], buf[9 + length:]
            ended = False
            if ftype == h2.SETTINGS and not flags & h2.ACK:
                out += h2.frame(h2.SETTINGS, h2.ACK, 0)
            elif ftype == h2.PING and not flags & h2.ACK:
                out += h2.frame(h2.PING, h2.ACK, 0, payload)
            elif ftype == h2.HEADERS:
                fields = dict(decoder.decode(payload))
                if ":status" in fields and sid in streams:
                    streams[sid]["status"] = int(fields[":status"])
                ended = flags & h2.END_STREAM
            elif ftype == h2.DATA:
                ended = flags & h2.END_STREAM
                if length:
                    out += h2.frame(h2.WINDOW_UPDATE, 0, 0, struct.pack(">I", length))
            elif ftype == h2.RST_STREAM and sid in streams:
                streams[sid]["reset"] = h2.error_name(int.from_bytes(payload[:4], "big"))
                streams[sid]["done"] = True
            elif ftype == h2.GOAWAY:
                goaways.append({"last_stream_id": int.from_bytes(payload[:4], "big") & 0x7FFFFFFF,
                                "error": h2.error_name(int.from_bytes(payload[4:8], "big")),
                                "debug": payload[8:].decode(errors="replace")})
            if ended and sid in streams:
                streams[sid]["done"] = True
                if streams[sid]["status"] == 200:
                    answered += 1
                if not goaways:
                    out += open_stream()
        if answered >= args.ready_after and not killed:
            killed = True
            open(args.marker, "w").close()
            os.kill(args.pid, signal.SIGTERM)
        if out:
            try:
                sock.sendall(out)
            except (BrokenPipeError, ConnectionResetError):
                pass

    last = goaways[-1]["last_stream_id"] if goaways else 0
    failed = [s for s, st in streams.items() if s <= last and not (st["done"] and st["status"] == 200)]
    result = {
        "ok": answered,
        "failed": len(failed),
        "failed_streams": failed[:10],
        "unprocessed": len([s for s in streams if s > last]),
        "goaways": goaways,
        "max_answered": max([s for s, st in streams.items() if st["done"] and st["status"] == 200] or [0]),
        "closed": closed,
    }
    print(json.dumps(result))
    return 0 if not failed and goaways and closed else 1


if __name__ == "__main__":
    sys.exit(main())
