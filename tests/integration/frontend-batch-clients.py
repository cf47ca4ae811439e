#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""N keep-alive HTTP/1.1 clients whose requests all reach a stopped commander, for frontend-batch.sh.

  frontend-batch-clients.py HOST:PORT COMMANDER_PID [--connections 32]

Every connection sends one request and reads its answer (so all are accepted and kept alive); then the
commander is stopped (SIGSTOP, waited for in /proc), each connection sends one more request, and the
commander continues (SIGCONT): when it wakes up, all N sockets are ready at once. Every answer must be a
complete 200. Prints one JSON line; exits 0 when every request succeeded, 1 otherwise."""

import argparse
import json
import os
import signal
import socket
import sys
import time


def read_answer(sock):
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before a head")
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed inside a body")
        rest += chunk
    return int(lines[0].split(" ")[1])


def proc_state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def wait_state(pid, states):
    deadline = time.monotonic() + 10
    while proc_state(pid) not in states:
        if time.monotonic() > deadline:
            raise TimeoutError(f"process {pid} did not reach state {states}")
        time.sleep(0.001)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("addr")
    p.add_argument("pid", type=int)
    p.add_argument("--connections", type=int, default=32)
    args = p.parse_args()
    host, port = args.addr.rsplit(":", 1)
    request = f"GET / HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    socks = [socket.create_connection((host, int(port)), timeout=30) for _ in range(args.connections)]
    statuses = []
    for s in socks:
        s.sendall(request)
        statuses.append(read_answer(s))
    os.kill(args.pid, signal.SIGSTOP)
    try:
        wait_state(args.pid, ("T", "t"))
        for s in socks:
            s.sendall(request)  # into the socket buffers: the commander reads nothing while stopped
    finally:
        os.kill(args.pid, signal.SIGCONT)
    for s in socks:
        statuses.append(read_answer(s))
        s.close()
    ok = sum(1 for st in statuses if st == 200)
    print(json.dumps({"requests": len(statuses), "ok": ok}))
    return 0 if ok == 2 * args.connections else 1


if __name__ == "__main__":
    sys.exit(main())
