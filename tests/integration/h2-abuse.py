#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Hand-made HTTP/2 (h2c, prior knowledge) abuse against a listener, for the end-to-end tests.

Frames are written raw (python3-h2's state machine would refuse to send most of them); the server's
answer is read back frame by frame and its HEADERS decoded with hpack (python3-h2's dependency). Prints
one JSON object: what came back (status per stream, RST_STREAM codes, GOAWAY error/last stream/debug
data, whether the server closed). Exits 0 when --expect holds, 1 when it does not, 2 on usage errors.

  h2-abuse.py HOST:PORT flood --kind empty-data|priority|window-update|ping|settings|unknown [--count N]
  h2-abuse.py HOST:PORT rapid-reset [--count N]
  h2-abuse.py HOST:PORT headers [--fields N] [--size BYTES]       one GET with N fields of BYTES each
  h2-abuse.py HOST:PORT slow-headers                              HEADERS without END_HEADERS, then wait
  h2-abuse.py HOST:PORT short-body                                content-length 100, 50 bytes sent
  --expect goaway=ENHANCE_YOUR_CALM | status=431 | rst=PROTOCOL_ERROR | closed
"""

import argparse
import json
import socket
import struct
import sys
import time

import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE = 0, 1, 2, 3, 4, 6, 7, 8
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1
ERRORS = ["NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT",
          "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR",
          "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"]


def error_name(code):
    return ERRORS[code] if code < len(ERRORS) else str(code)


def frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload


def literal(name, value):
    """HPACK literal field without indexing, new name, no Huffman (RFC 7541 6.2.2)."""
    out = b"\x00"
    for s in (name.encode(), value.encode()):
        n = len(s)
        if n < 127:
            out += bytes([n])
        else:
            out += b"\x7f"
            n -= 127
            while n >= 128:
                out += bytes([n % 128 + 128])
                n //= 128
            out += bytes([n])
        out += s
    return out


def request_block(method, path, authority, extra=()):
    block = literal(":method", method) + literal(":scheme", "http") + literal(":path", path)
    block += literal(":authority", authority)
    for name, value in extra:
        block += literal(name, value)
    return block


def headers_frames(stream, block, end_stream, max_frame=16384):
    """HEADERS plus CONTINUATIONs for a block of any size."""
    chunks = [block[i:i + max_frame] for i in range(0, len(block), max_frame)] or [b""]
    out = b""
    for i, chunk in enumerate(chunks):
        last = i == len(chunks) - 1
        flags = (END_HEADERS if last else 0) | (END_STREAM if end_stream and i == 0 else 0)
        out += frame(HEADERS if i == 0 else 9, flags, stream, chunk)
    return out


class Peer:
    def __init__(self, address, timeout):
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.decoder = hpack.Decoder()
        self.result = {"status": {}, "rst": {}, "goaway": None, "closed": False, "frames": 0}
        self.quiet = False  # mid header block: nothing else may be sent (RFC 9113 6.10)
        self.send(PREFACE + frame(SETTINGS, 0, 0))

    def send(self, data):
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            self.result["closed"] = True

    def pump(self, seconds):
        """Reads the server's frames for up to seconds, or until it closes."""
        deadline = time.monotonic() + seconds
        while not self.result["closed"] and time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                data = b""
            if not data:
                self.result["closed"] = True
                break
            self.buf += data
            self.parse()
        return self.result

    def parse(self):
        while len(self.buf) >= 9:
            length = int.from_bytes(self.buf[:3], "big")
            if len(self.buf) < 9 + length:
                return
            ftype, flags = self.buf[3], self.buf[4]
            stream = int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
            payload, self.buf = self.buf[9:9 + length], self.buf[9 + length:]
            self.result["frames"] += 1
            if ftype == SETTINGS and not flags & ACK and not self.quiet:
                self.send(frame(SETTINGS, ACK, 0))
            elif ftype == HEADERS:
                fields = dict(self.decoder.decode(payload))  # we send no padding/priority requests
                if ":status" in fields:
                    self.result["status"][str(stream)] = int(fields[":status"])
            elif ftype == RST_STREAM:
                code = error_name(int.from_bytes(payload[:4], "big"))
                self.result["rst"][code] = self.result["rst"].get(code, 0) + 1
            elif ftype == GOAWAY:
                self.result["goaway"] = {
                    "last_stream_id": int.from_bytes(payload[:4], "big") & 0x7FFFFFFF,
                    "error": error_name(int.from_bytes(payload[4:8], "big")),
                    "debug": payload[8:].decode(errors="replace"),
                }


def flood_frames(kind, count):
    one = {
        "empty-data": frame(DATA, 0, 1),
        "priority": frame(PRIORITY, 0, 1, b"\x00\x00\x00\x00\x0f"),
        "window-update": frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 1)),
        "ping": frame(PING, 0, 0, b"12345678"),
        "settings": frame(SETTINGS, 0, 0),
        "unknown": frame(0x42, 0, 0, b"x"),
    }[kind]
    return one * count


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("address")
    ap.add_argument("mode", choices=["flood", "rapid-reset", "headers", "slow-headers", "short-body"])
    ap.add_argument("--kind", default="empty-data")
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--fields", type=int, default=101)
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--path", default="/")
    ap.add_argument("--authority", default="localhost")
    ap.add_argument("--wait", type=float, default=5.0, help="seconds to wait for the answer")
    ap.add_argument("--expect", action="append", default=[])
    args = ap.parse_args()

    p = Peer(args.address, args.wait)
    if args.mode == "flood":
        p.send(headers_frames(1, request_block("POST", args.path, args.authority), end_stream=False))
        p.pump(0.2)
        p.send(flood_frames(args.kind, args.count))
    elif args.mode == "rapid-reset":
        out = b""
        for i in range(args.count):
            sid = 1 + 2 * i
            out += headers_frames(sid, request_block("GET", args.path, args.authority), end_stream=True)
            out += frame(RST_STREAM, 0, sid, struct.pack(">I", 8))  # CANCEL
        p.send(out)
    elif args.mode == "headers":
        extra = [("x-f-%d" % i, "v" * args.size) for i in range(args.fields)]
        p.send(headers_frames(1, request_block("GET", args.path, args.authority, extra), end_stream=True))
    elif args.mode == "slow-headers":
        block = request_block("GET", args.path, args.authority)
        p.pump(0.2)  # the server's SETTINGS, acknowledged before the block starts
        p.quiet = True
        p.send(frame(HEADERS, END_STREAM, 1, block[: len(block) // 2]))
    elif args.mode == "short-body":
        block = request_block("POST", args.path, args.authority, [("content-length", "100")])
        p.send(headers_frames(1, block, end_stream=False) + frame(DATA, END_STREAM, 1, b"x" * 50))
    result = p.pump(args.wait)
    print(json.dumps(result, sort_keys=True))

    ok = True
    for e in args.expect:
        key, _, want = e.partition("=")
        if key == "goaway":
            ok &= bool(result["goaway"]) and result["goaway"]["error"] == want
        elif key == "status":
            ok &= int(want) in result["status"].values()
        elif key == "rst":
            ok &= result["rst"].get(want, 0) > 0
        elif key == "closed":
            ok &= result["closed"]
        else:
            print("unknown --expect %r" % e, file=sys.stderr)
            return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
