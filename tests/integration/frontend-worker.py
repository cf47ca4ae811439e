#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A tiny HTTP/1.1 worker for the front end's end-to-end tests, run by the commander under the sensor
wrapper (`elastic-pool-sensor -- /usr/bin/python3 frontend-worker.py --log FILE`). It serves the
listening socket handed over on fd 3 (LISTEN_FDS=1), one thread per connection, keep-alive.

Every request head it receives is appended to --log as one JSON line {"worker", "conn", "head"} (conn:
the connection's number in this worker, from 1), before it answers, so a test can tell exactly what
reached a worker (and that nothing did) and on which connection. A connection that ends inside a request
body adds {"worker", "conn", "event": "eof-in-body", "body_bytes"}.

It answers 200 with the raw request head as the body (Content-Length), the request body read and
counted (X-Body-Bytes in the answer), except:
  /sleep?ms=N      waits N ms first
  /login?user=U    answers with Elastic-Pool-User: U; /logout with Elastic-Pool-User: -
  /garbage         answers with bytes that are no HTTP response, and keeps the connection open
  /badhead         answers with a header field containing a bare CR, and keeps the connection open
  /te-gzip         answers "Transfer-Encoding: chunked, gzip" (a coding after chunked), keeps the connection
  /te-two          answers "Transfer-Encoding: gzip" and "Transfer-Encoding: chunked", keeps the connection
  /te-chunked      answers a plain chunked body ("hello")
  /drop            closes the connection without an answer (the request read whole)
"""

import argparse
import json
import os
import socket
import sys
import threading
import time
import urllib.parse

LOCK = threading.Lock()


def log_line(path, **kv):
    if not path:
        return
    line = json.dumps(dict(worker=os.environ.get("ELASTIC_POOL_WORKER", "-"), **kv)) + "\n"
    with LOCK:
        with open(path, "a") as f:
            f.write(line)
            f.flush()


class Conn:
    serial = 0

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.in_body = False
        self.body_bytes = 0
        with LOCK:
            Conn.serial += 1
            self.number = Conn.serial

    def fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError
        self.buf += data

    def read_until(self, sep):
        while sep not in self.buf:
            self.fill()
        i = self.buf.index(sep) + len(sep)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def read_exact(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def skip(self, n):
        while n > 0:
            if not self.buf:
                self.fill()
            k = min(n, len(self.buf))
            self.buf = self.buf[k:]
            self.body_bytes += k
            n -= k


def fields_of(head):
    lines = head.decode("latin-1").split("\r\n")
    out = []
    for line in lines[1:]:
        if not line:
            continue
        name, _, value = line.partition(":")
        out.append((name.strip().lower(), value.strip()))
    return lines[0], out


def read_body(conn, fields):
    names = dict(fields)
    if "transfer-encoding" in names:
        total = 0
        while True:
            size_line = conn.read_until(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                conn.read_until(b"\r\n")  # no trailers from the commander
                return total
            conn.skip(size)
            conn.read_exact(2)
            total += size
    n = int(names.get("content-length", "0"))
    conn.skip(n)
    return n


def serve(sock, args):
    conn = Conn(sock)
    try:
        while True:
            head = conn.read_until(b"\r\n\r\n")
            log_line(args.log, conn=conn.number, head=head.decode("latin-1"))
            request_line, fields = fields_of(head)
            conn.in_body, conn.body_bytes = True, 0
            body_bytes = read_body(conn, fields)
            conn.in_body = False
            target = request_line.split(" ")[1]
            url = urllib.parse.urlsplit(target)
            if url.path == "/garbage":
                sock.sendall(b"this is not HTTP at all\r\n\r\n")
                continue
            if url.path == "/drop":
                return
            if url.path == "/badhead":
                sock.sendall(b"HTTP/1.1 200 OK\r\nX-Bad: a\rb\r\nContent-Length: 2\r\n\r\nok")
                continue
            if url.path in ("/te-gzip", "/te-two", "/te-chunked"):
                te = {"/te-gzip": b"Transfer-Encoding: chunked, gzip\r\n",
                      "/te-two": b"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
                      "/te-chunked": b"Transfer-Encoding: chunked\r\n"}[url.path]
                sock.sendall(b"HTTP/1.1 200 OK\r\n" + te + b"\r\n5\r\nhello\r\n0\r\n\r\n")
                continue
            query = urllib.parse.parse_qs(url.query)
            extra = b""
            if url.path == "/sleep":
                time.sleep(int(query.get("ms", ["0"])[0]) / 1000)
            elif url.path == "/login":
                extra = b"Elastic-Pool-User: %s\r\n" % query["user"][0].encode()
            elif url.path == "/logout":
                extra = b"Elastic-Pool-User: -\r\n"
            answer = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Body-Bytes: %d\r\n%s"
                      b"Content-Length: %d\r\n\r\n" % (body_bytes, extra, len(head))) + head
            sock.sendall(answer)
    except (EOFError, ConnectionError, OSError):
        if conn.in_body:
            log_line(args.log, conn=conn.number, event="eof-in-body", body_bytes=conn.body_bytes)
    finally:
        sock.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log", default="")
    args = ap.parse_args()
    if os.environ.get("LISTEN_FDS") != "1":
        print("frontend-worker.py: needs the listening socket on fd 3 (LISTEN_FDS=1)", file=sys.stderr)
        return 1
    listener = socket.socket(fileno=3)
    listener.setblocking(True)
    while True:
        s, _ = listener.accept()
        threading.Thread(target=serve, args=(s, args), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
