#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""An HTTP/1.1 worker whose slow requests end when the test says so, for the front end's end-to-end
tests; run by the commander under the sensor wrapper (`elastic-pool-sensor -- /usr/bin/python3
frontend-e2e-gate-worker.py --log FILE`). It serves the listening socket handed over on fd 3
(LISTEN_FDS=1), one thread per connection, keep-alive, requests without bodies.

  /gate             parks until /release, then answers 200 "gate passed"
  /gate?head=1      answers its head and a first chunk at once, parks, then ends the chunked body
  /parked?n=K       waits until K requests have parked so far (or 20 s), answers {"parked", "ended"}
  /ended?n=K        waits until K parked requests have ended (their answer written whole, or 20 s)
  /release          lets every parked request, and every later one, through; answers {"released"}
  anything else     answers 200 {"path", "parked", "ended"} at once

So a test learns from the worker itself, through the commander, that its requests really run there, and
decides when they end. Every request head is appended to --log as one JSON line {"worker", "head"} before
it is answered."""

import argparse
import json
import os
import socket
import sys
import threading
import urllib.parse

COND = threading.Condition()
STATE = {"parked": 0, "ended": 0, "released": False}
LOG_LOCK = threading.Lock()


def log_head(path, head):
    if not path:
        return
    line = json.dumps({"worker": os.environ.get("ELASTIC_POOL_WORKER", "-"), "head": head}) + "\n"
    with LOG_LOCK:
        with open(path, "a") as f:
            f.write(line)


def answer(sock, status, body):
    body = body.encode()
    sock.sendall(b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                 % (status.encode(), len(body), body))


def wait_for(key, n):
    with COND:
        COND.wait_for(lambda: STATE[key] >= n, timeout=20)
        return {"parked": STATE["parked"], "ended": STATE["ended"]}


def gate(sock, head_first):
    if head_first:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"6\r\nparked\r\n")
    with COND:
        STATE["parked"] += 1
        COND.notify_all()
        COND.wait_for(lambda: STATE["released"], timeout=60)
    try:
        if head_first:
            sock.sendall(b"7\r\n passed\r\n0\r\n\r\n")
        else:
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\ngate passed")
    finally:
        with COND:
            STATE["ended"] += 1
            COND.notify_all()


def serve(sock, args):
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                data = sock.recv(65536)
                if not data:
                    return
                buf += data
            head, _, buf = buf.partition(b"\r\n\r\n")
            head = head.decode("latin-1")
            log_head(args.log, head + "\r\n\r\n")
            url = urllib.parse.urlsplit(head.split(" ")[1])
            query = urllib.parse.parse_qs(url.query)
            n = int(query.get("n", ["0"])[0])
            if url.path == "/gate":
                gate(sock, query.get("head", ["0"])[0] == "1")
            elif url.path in ("/parked", "/ended"):
                answer(sock, "200 OK", json.dumps(wait_for(url.path[1:], n)))
            elif url.path == "/release":
                with COND:
                    STATE["released"] = True
                    COND.notify_all()
                    released = STATE["parked"] - STATE["ended"]
                answer(sock, "200 OK", json.dumps({"released": released}))
            else:
                with COND:
                    body = json.dumps({"path": url.path, "parked": STATE["parked"], "ended": STATE["ended"]})
                answer(sock, "200 OK", body)
    except OSError:
        pass
    finally:
        sock.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log", default="")
    args = ap.parse_args()
    if os.environ.get("LISTEN_FDS") != "1":
        print("frontend-e2e-gate-worker.py: needs the listening socket on fd 3 (LISTEN_FDS=1)", file=sys.stderr)
        return 1
    listener = socket.socket(fileno=3)
    listener.setblocking(True)
    while True:
        s, _ = listener.accept()
        threading.Thread(target=serve, args=(s, args), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
