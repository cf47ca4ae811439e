#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the hand-made seed corpora of fuzz/corpus/<target>/ (small, readable, reproducible): requests and
frames of the shapes the unit and integration tests use, good ones and the broken ones those tests refuse.
Inputs of the socket-fed targets start with an options byte (see the comment atop each fuzz/*.c).
Crash reproducers are not made here: they are committed as found, named crash-<what>.
  fuzz/make-seeds.py            rewrites the seeds (files not named seed-* are left alone)"""
import os
import struct

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    d = os.path.join(TOP, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


# ---- protobuf wire format, enough for our messages ----

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def vint(field, n):
    return key(field, 0) + varint(n)


def dbl(field, x):
    return key(field, 1) + struct.pack("<d", x)


def ld(field, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return key(field, 2) + varint(len(payload)) + payload


def frame(body_case, body):
    f = ld(body_case, body)
    return struct.pack(">I", len(f)) + f


def channel_seeds():
    hello = (ld(1, "web") + vint(2, 3) + vint(3, 4242) + vint(4, 1) + ld(5, "0.1.0") + vint(6, 1) +
             vint(6, 2) + vint(6, 5) + vint(7, 200000) + ld(8, "/elastic-pool-web/w3") + ld(9, "shop-v3"))
    report = (vint(1, 7) + vint(2, 123456789) + vint(3, 12) + vint(4, 30) + vint(5, 4) + vint(6, 2) +
              ld(7, vint(1, 3) + vint(2, 8) + vint(3, 1)) + dbl(8, 0.42) + vint(9, 1) + vint(10, 52428800) +
              vint(11, 1) + ld(12, dbl(1, 1.5) + dbl(2, 0.0)) + ld(13, vint(1, 2) + vint(2, 0)) +
              ld(14, dbl(1, 0.5) + dbl(2, 0.4) + dbl(3, 0.3)) + vint(15, 200000))
    users = ld(1, "alice") + ld(1, "bob") + ld(1, "carol") + vint(2, 0)
    package = vint(1, 9) + ld(2, "alice") + ld(3, b"\x00\x01state-bytes\xff") + b""
    install_result = vint(1, 9) + ld(2, "alice") + vint(3, 1)
    goodbye = ld(1, "shutting down")
    o = b"\x00"  # options: one write, the worker limits, 16 MiB maximum
    write("channel-frame", "hello", o + frame(1, hello))
    write("channel-frame", "hello-report", o + frame(1, hello) + frame(2, report))
    write("channel-frame", "report-bytewise", b"\x01" + frame(2, report))
    write("channel-frame", "users", o + frame(1, hello) + frame(10, users) + frame(10, ld(1, "dave")))
    write("channel-frame", "package", b"\x05" + frame(4, package))
    write("channel-frame", "install-result", o + frame(6, install_result))
    write("channel-frame", "goodbye", o + frame(9, goodbye))
    write("channel-frame", "report-flood", o + frame(2, report) * 48)  # past the rate: dropped unread
    write("channel-frame", "unknown-fields", o + frame(2, report + ld(100, "x") * 70))
    write("channel-frame", "too-many-users", o + frame(10, ld(1, "u") * 300))
    write("channel-frame", "drain-refused", o + frame(8, vint(1, 5) + ld(2, "retire")))
    write("channel-frame", "no-limits-drain", b"\x08" + frame(8, vint(1, 5)))
    write("channel-frame", "oversize-announced", o + b"\x7f\xff\xff\xff" + ld(2, b""))
    write("channel-frame", "small-max", b"\x10" + struct.pack(">I", 70000) + b"\x22\xea\xa2\x04" + vint(1, 1))  # announced only
    write("channel-frame", "truncated", o + frame(2, report)[:-5])
    write("channel-frame", "nested-deep", o + frame(2, ld(7, ld(7, ld(7, vint(1, 1))))))
    write("channel-frame", "empty-body", o + struct.pack(">I", 0))
    write("channel-frame", "packed-repeated", o + frame(1, ld(6, bytes([1, 2, 5, 4, 3]))))


# ---- HTTP/1.1 ----

def h1_seeds():
    def w(name, options, text):
        write("h1-request", name, bytes([options]) + (text.encode() if isinstance(text, str) else text))

    w("get", 0x00, "GET / HTTP/1.1\r\nHost: app.test\r\n\r\n")
    w("get-bytewise", 0x01, "GET /a?b=1 HTTP/1.1\r\nHost: app.test\r\nUser-Agent: curl/8.1\r\nAccept: */*\r\n\r\n")
    w("pipelined", 0x00, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n"
      "HEAD /3 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    w("post-length", 0x04, "POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world")
    w("post-chunked", 0x03, "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 1\r\n\r\n")
    w("expect-continue", 0x08, "PUT /e HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nbody")
    w("http10", 0x10, "GET / HTTP/1.0\r\n\r\n")
    w("absolute-form", 0x00, "GET http://app.test:8080/p?q HTTP/1.1\r\nHost: app.test:8080\r\n\r\n")
    w("options-star", 0x00, "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n")
    w("connect", 0x00, "CONNECT app.test:443 HTTP/1.1\r\nHost: app.test:443\r\n\r\n")
    w("h2c-upgrade", 0x00, "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\n"
      "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n")
    w("prior-knowledge", 0x00, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
    w("websocket", 0x00, "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    w("cookies-and-spoof", 0x00, "GET / HTTP/1.1\r\nHost: a\r\nCookie: ep_session=abc; theme=dark\r\n"
      "X_Elastic_Pool_User: admin\r\nForwarded: for=1.2.3.4\r\nX-Forwarded-For: 1.2.3.4\r\n\r\n")
    w("smuggle-te-cl", 0x00, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
      "0\r\n\r\nGET /admin HTTP/1.1\r\nHost: a\r\n\r\n")
    w("obs-fold", 0x00, "GET / HTTP/1.1\r\nHost: a\r\nX-Long: a\r\n b\r\n\r\n")
    w("bare-lf", 0x00, "GET / HTTP/1.1\nHost: a\n\n")
    w("leading-crlf", 0x80, "\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n")
    w("bad-chunk", 0x20, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXY0\r\n\r\n")
    w("two-hosts", 0x00, "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
    w("shutdown-midway", 0x46, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n")
    w("many-fields", 0x07, "GET / HTTP/1.1\r\nHost: a\r\n" + "".join("X-F%d: %d\r\n" % (i, i) for i in range(120)) + "\r\n")


# ---- HTTP/2: frames after the preface (the harness sends it) ----

def h2frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload


def hpack_literal(name, value):
    # literal header field without indexing, new name, no Huffman (lengths < 127)
    n, v = name.encode(), value.encode()
    return b"\x00" + bytes([len(n)]) + n + bytes([len(v)]) + v


def hpack_request(method="GET", path="/", extra=()):
    block = hpack_literal(":method", method) + hpack_literal(":scheme", "http")
    block += hpack_literal(":path", path) + hpack_literal(":authority", "app.test")
    for k, v in extra:
        block += hpack_literal(k, v)
    return block


SETTINGS = h2frame(4, 0, 0, struct.pack(">HI", 3, 100) + struct.pack(">HI", 4, 65535))
SETTINGS_ACK = h2frame(4, 1, 0)
END_STREAM, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x4, 0x8, 0x20


def h2_seeds():
    def w(name, options, frames):
        write("h2-session", name, bytes([options]) + frames)

    get1 = h2frame(1, END_STREAM | END_HEADERS, 1, hpack_request())
    w("get", 0x00, SETTINGS + SETTINGS_ACK + get1)
    w("get-bytewise", 0x01, SETTINGS + get1)
    w("two-streams", 0x08, SETTINGS + get1 + h2frame(1, END_STREAM | END_HEADERS, 3, hpack_request("GET", "/b")))
    w("post-data", 0x04, SETTINGS + h2frame(1, END_HEADERS, 1, hpack_request("POST", "/u", [("content-length", "5")]))
      + h2frame(0, 0, 1, b"hel") + h2frame(0, END_STREAM, 1, b"lo"))
    w("big-response-window", 0x10, SETTINGS + get1 + h2frame(8, 0, 0, struct.pack(">I", 1 << 20))
      + h2frame(8, 0, 1, struct.pack(">I", 1 << 20)))
    w("continuation", 0x00, SETTINGS + h2frame(1, END_STREAM, 1, hpack_request()[:20])
      + h2frame(9, END_HEADERS, 1, hpack_request()[20:]))
    w("ping-priority", 0x00, SETTINGS + h2frame(6, 0, 0, b"12345678")
      + h2frame(2, 0, 1, struct.pack(">IB", 0, 15)) + get1)
    w("rst-after-headers", 0x00, SETTINGS + h2frame(1, END_HEADERS, 1, hpack_request("POST", "/x"))
      + h2frame(3, 0, 1, struct.pack(">I", 8)))
    w("goaway", 0x80, SETTINGS + get1 + h2frame(7, 0, 0, struct.pack(">II", 1, 0) + b"bye"))
    w("padded-priority-headers", 0x00, SETTINGS + h2frame(1, END_STREAM | END_HEADERS | PADDED | PRIORITY_FLAG, 1,
                                                         b"\x02" + struct.pack(">IB", 0, 16) + hpack_request() + b"\x00\x00"))
    w("upgrade", 0x40, SETTINGS + SETTINGS_ACK)
    w("error-answer", 0x20, SETTINGS + get1)
    w("extended-connect", 0x00, SETTINGS + h2frame(1, END_HEADERS, 1,
                                                   hpack_literal(":method", "CONNECT") + hpack_literal(":protocol", "websocket")
                                                   + hpack_literal(":scheme", "http") + hpack_literal(":path", "/ws")
                                                   + hpack_literal(":authority", "app.test")))
    w("bad-authority", 0x00, SETTINGS + h2frame(1, END_STREAM | END_HEADERS, 1,
                                                hpack_literal(":method", "GET") + hpack_literal(":scheme", "http")
                                                + hpack_literal(":path", "/a b") + hpack_literal(":authority", "a@b\x7f")))
    w("spoofed-user", 0x00, SETTINGS + h2frame(1, END_STREAM | END_HEADERS, 1,
                                               hpack_request("GET", "/", [("x_elastic_pool_user", "admin"), ("cookie", "a=1"), ("cookie", "ep_session=x")])))
    w("indexed-hpack", 0x00, SETTINGS + h2frame(1, END_STREAM | END_HEADERS, 1, b"\x82\x86\x84\x41\x08app.test"))
    w("rapid-reset", 0x00, SETTINGS + b"".join(
        h2frame(1, END_HEADERS, i, hpack_request()) + h2frame(3, 0, i, struct.pack(">I", 8)) for i in range(1, 40, 2)))


# ---- a worker's response (after the request the harness sends) ----

def forward_seeds():
    def w(name, options, text):
        write("forward-response", name, bytes([options]) + (text.encode() if isinstance(text, str) else text))

    w("ok", 0x00, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    w("ok-keepalive", 0x08, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok")
    w("bytewise", 0x01, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello")
    w("chunked", 0x03, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n")
    w("chunked-gzip", 0x00, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n")
    w("close-delimited", 0x00, "HTTP/1.1 200 OK\r\n\r\nuntil the end")
    w("http10", 0x00, "HTTP/1.0 200 OK\r\n\r\nold")
    w("login", 0x00, "HTTP/1.1 200 OK\r\nElastic-Pool-User: alice\r\nContent-Length: 0\r\n\r\n")
    w("logout", 0x00, "HTTP/1.1 200 OK\r\nElastic-Pool-User: -\r\nSet-Cookie: a=b\r\nContent-Length: 0\r\n\r\n")
    w("interim-100", 0x80, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx")
    w("interim-103", 0x00, "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    w("head", 0x10, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
    w("no-content", 0x00, "HTTP/1.1 204 No Content\r\n\r\n")
    w("not-modified", 0x00, "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n")
    w("websocket-101", 0x20, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n\x81\x05hello")
    w("unexpected-101", 0x00, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n")
    w("slow-client", 0x44, "HTTP/1.1 200 OK\r\nContent-Length: 26\r\n\r\nabcdefghijklmnopqrstuvwxyz")
    w("short-body", 0x00, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
    w("extra-bytes", 0x08, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n\r\n")
    w("two-lengths", 0x00, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok")
    w("garbage", 0x00, "NOT HTTP AT ALL\r\n\r\n")
    w("bad-status", 0x00, "HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n")
    w("hop-by-hop", 0x00, "HTTP/1.1 200 OK\r\nConnection: close, X-Drop\r\nX-Drop: 1\r\nKeep-Alive: 5\r\n"
      "Content-Length: 0\r\n\r\n")


# ---- configuration files ----

def config_seeds():
    def w(name, text):
        write("config", name, text.encode() if isinstance(text, str) else text)

    w("empty", "")
    w("minimal", "[pool]\nmin_workers = 1\nmax_workers = 4\n")
    w("worker", "[worker]\nexec = /bin/sh -c 'exec sleep 1; echo \"a b\"'\nmemory_limit = 256M\n"
      "environment = A=1 \"B=two words\" C='x y'\nworking_directory = /\nconcurrency = 8\n")
    w("frontend", "[frontend]\nlisten = 127.0.0.1:8080\nlisten = [::1]:8080\nadmin_listen = unix:/run/ep.sock\n"
      "trusted_proxies = 10.0.0.0/8 ::1 unix\nheader_timeout = 10s\nidle_timeout = 1min\nmax_header_size = 64K\n")
    w("policy", "[policy]\nreception_threshold = 0.5\nadmission_threshold = 0.8\nsmoothing_rows = 6\n"
      "window_rows = 60\ncompaction_margin = 1.5\nrps_target = 50\nrps_up_window = 30s\n"
      "occupancy_interval = 5s\nstale_after = 3\nrelief_moves = yes\n")
    w("pool", "[pool]\nbackend = cgroup\nmin_free_memory = 1G\nspawn_timeout = 10s\ndrain_timeout = 30s\n"
      "readopt = no\nhung_timeout = 20s\nreload_state = repoint\nmove_timeout = 5s\n")
    with open(os.path.join(os.path.dirname(TOP), "..", "units", "example.conf"), "rb") as f:
        w("example-conf", f.read())
    w("env-file", "[worker]\nenvironment_file = -/nonexistent/env\n")
    w("comments", "# a comment\n; another\n\n[pool]\n  min_workers = 2  \n")
    w("bad-section", "[nope]\nkey = value\n")
    w("no-equals", "[pool]\nmin_workers\n")
    w("unterminated-quote", "[worker]\nexec = sh -c 'oops\n")
    w("min-over-max", "[pool]\nmin_workers = 5\nmax_workers = 2\n")
    w("long-line", "[worker]\nexec = " + "a" * 5000 + "\n")
    w("env-lines", "A=1\nB = 'quoted value'\nC=\"esc \\\" \\$ \\\\\"\n# comment\n;x\nD=trailing   \n")
    w("crlf", "[pool]\r\nmin_workers = 1\r\n")
    w("nul", b"[pool]\nmin_workers = 1\x00\n")
    w("user-group", "[worker]\nuser = nobody\ngroup = nogroup\n")


if __name__ == "__main__":
    channel_seeds()
    h1_seeds()
    h2_seeds()
    forward_seeds()
    config_seeds()
