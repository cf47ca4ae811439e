#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Steady keep-alive load on a worker that is retired under it (tests/integration/drain-under-load.sh).

  drain-load.py HOST:PORT STATUS_JSON CTL... [--h1 6] [--h2 3] [--depth 4] [--timeout 30]

Logged-in users, each on one keep-alive connection to the commander for the whole run: --h1 users over
HTTP/1.1 send --depth pipelined GET /state at a time and read the answers in order; --h2 users over
HTTP/2 (python3-h2) keep --depth streams open at a time. Every user is moved to the second worker
("move U w2"), then, while they go on, w2 is retired ("retire 2": its users move back live, then it
drains and stops). Every answer must be 200 with the user's counter exactly one more than the answer
before (an h2 batch: the next --depth numbers, in any order), no connection may be reset or closed by
the commander, and after the retire every user must answer on w1 again. Prints "# ..." progress lines and
one JSON line of figures; exits 0 when everything held, 1 otherwise (the reasons on stderr)."""

import argparse
import json
import re
import socket
import subprocess
import sys
import threading
import time

import h2.config
import h2.connection
import h2.events

T0 = time.monotonic()
STATE = re.compile(rb'"counter":(\d+),"worker":"(\d+)"')


def note(msg):
    print(f"# t={time.monotonic() - T0:6.2f}s {msg}", flush=True)


class Run:
    def __init__(self, a):
        self.a = a
        self.host, port = a.addr.rsplit(":", 1)
        self.port = int(port)
        self.lock = threading.Lock()
        self.violations = []
        self.requests = 0
        self.stop = threading.Event()

    def failure(self, msg):
        with self.lock:
            if len(self.violations) < 50:
                self.violations.append(msg)


class User(threading.Thread):
    def __init__(self, run, name, proto):
        super().__init__(daemon=True)
        self.ctx, self.name, self.proto = run, name, proto
        self.counter = 0
        self.worker = None
        self.answered_at = 0.0
        self.cookie = None

    def login(self):
        s = socket.create_connection((self.ctx.host, self.ctx.port), timeout=20)
        s.sendall(f"GET /login?user={self.name} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        s.close()
        m = re.search(rb"(?i)set-cookie: (ep_user=[^;]+)", data)
        if not m:
            raise RuntimeError(f"login of {self.name}: {data[:200]!r}")
        self.cookie = m.group(1).decode()

    def answered(self, counters, worker):
        want = list(range(self.counter + 1, self.counter + 1 + len(counters)))
        if sorted(counters) != want:
            self.ctx.failure(f"{self.name}: counters {sorted(counters)}, want {want}")
        self.counter += len(counters)
        self.worker = worker
        self.answered_at = time.monotonic()
        with self.ctx.lock:
            self.ctx.requests += len(counters)

    def run(self):
        try:
            (self.loop_h1 if self.proto == "h1" else self.loop_h2)()
        except Exception as e:  # a reset, an EOF, a timeout: each one is a failure of the drain
            self.ctx.failure(f"{self.name}: {e!r}")

    def loop_h1(self):
        s = socket.create_connection((self.ctx.host, self.ctx.port), timeout=20)
        f = s.makefile("rb")
        req = f"GET /state HTTP/1.1\r\nHost: t\r\nCookie: {self.cookie}\r\n\r\n".encode()
        while not self.ctx.stop.is_set():
            s.sendall(req * self.ctx.a.depth)
            counters, worker = [], None
            for _ in range(self.ctx.a.depth):
                status = f.readline()
                if not status:
                    raise ConnectionError("the commander closed the connection")
                length = None
                while (line := f.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                    if line.lower().startswith(b"connection: close"):
                        raise ConnectionError("the commander said Connection: close")
                body = f.read(length or 0)
                if not status.startswith(b"HTTP/1.1 200"):
                    self.ctx.failure(f"{self.name}: {status.strip()!r} {body[:100]!r}")
                    continue
                m = STATE.search(body)
                counters.append(int(m.group(1)))
                worker = m.group(2).decode()
            self.answered(counters, worker)
        s.close()

    def loop_h2(self):
        s = socket.create_connection((self.ctx.host, self.ctx.port), timeout=20)
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
        conn.initiate_connection()
        s.sendall(conn.data_to_send())
        while not self.ctx.stop.is_set():
            bodies, statuses, ended = {}, {}, set()
            for _ in range(self.ctx.a.depth):
                sid = conn.get_next_available_stream_id()
                conn.send_headers(sid, [(":method", "GET"), (":scheme", "http"), (":path", "/state"),
                                        (":authority", "t"), ("cookie", self.cookie)], end_stream=True)
                bodies[sid] = b""
            s.sendall(conn.data_to_send())
            while len(ended) < len(bodies):
                data = s.recv(65536)
                if not data:
                    raise ConnectionError("the commander closed the connection")
                for e in conn.receive_data(data):
                    if isinstance(e, h2.events.ResponseReceived):
                        statuses[e.stream_id] = dict(e.headers)[b":status"]
                    elif isinstance(e, h2.events.DataReceived):
                        conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                        bodies[e.stream_id] += e.data
                    elif isinstance(e, h2.events.StreamEnded):
                        ended.add(e.stream_id)
                    elif isinstance(e, (h2.events.StreamReset, h2.events.ConnectionTerminated)):
                        raise ConnectionError(f"{type(e).__name__}")
                s.sendall(conn.data_to_send())
            counters, worker = [], None
            for sid, body in bodies.items():
                if statuses.get(sid) != b"200":
                    self.ctx.failure(f"{self.name}: stream {sid}: {statuses.get(sid)!r} {body[:100]!r}")
                    continue
                m = STATE.search(body)
                counters.append(int(m.group(1)))
                worker = m.group(2).decode()
            self.answered(counters, worker)
        s.close()


def ctl(a, *words):
    r = subprocess.run(a.ctl.split() + list(words), capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip()


def wait_for(what, pred, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    note(f"timed out after {timeout:.0f}s waiting for {what}")
    return False


def workers(a):
    try:
        with open(a.status) as f:
            return [w["name"] for w in json.load(f)["workers"]]
    except (OSError, ValueError):
        return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("addr")
    p.add_argument("status")
    p.add_argument("ctl")
    p.add_argument("--h1", type=int, default=6)
    p.add_argument("--h2", type=int, default=3)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--timeout", type=float, default=30)
    a = p.parse_args()
    run = Run(a)
    users = [User(run, f"l1u{i}", "h1") for i in range(a.h1)] + [User(run, f"l2u{i}", "h2") for i in range(a.h2)]
    for u in users:
        u.login()
        rc, out = ctl(a, "move", u.name, "w2")
        if rc != 0:
            run.failure(f"move {u.name} w2: {out}")
    for u in users:
        u.start()
    ok = wait_for("every user answering on w2", lambda: all(u.worker == "2" for u in users), a.timeout)
    if ok:
        note(f"{len(users)} users answer on w2, {run.requests} requests so far; retiring w2")
        rc, out = ctl(a, "retire", "2")
        if rc != 0:
            run.failure(f"retire 2: {out}")
        ok = wait_for("w2 gone", lambda: workers(a) == ["w1"], a.timeout)
        mark = time.monotonic()
        ok = ok and wait_for("every user answering on w1 after",
                             lambda: all(u.worker == "1" and u.answered_at > mark + 0.5 for u in users), a.timeout)
        note(f"w2 retired; every user answers on w1; {run.requests} requests")
    if not ok:
        run.failure("the run did not get through: " + " ".join(f"{u.name}:w{u.worker}" for u in users))
    run.stop.set()
    for u in users:
        u.join(10)
    print(json.dumps({"users": len(users), "requests": run.requests, "violations": len(run.violations)}))
    for v in run.violations:
        print(v, file=sys.stderr)
    sys.exit(0 if not run.violations else 1)


if __name__ == "__main__":
    main()
