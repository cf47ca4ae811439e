#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Logged-in WebSocket users of a demo-worker pool, through the commander, while the operator moves them
and gives workers back (tests/integration/websocket-moves.sh).

  websocket-clients.py HOST:PORT STATUS_JSON CTL... [--h1 20] [--h2 5] [--cycles 10] [--timeout 60]

CTL is the elastic-poolctl command line that reaches the group (e.g. "elastic-poolctl --user"); the
script adds "scale N", "move USER wN", "compact" and "retire wN".

Each user logs in (GET /login?user=U, its sticky cookie kept), then keeps one WebSocket to /ws open:
--h1 users with python3-websockets over HTTP/1.1 (Upgrade: websocket), --h2 users over HTTP/2 with
extended CONNECT (RFC 8441), spoken with python3-h2 for the stream and python3-websockets' sans-I/O
protocol for the frames (python3-websockets 10.4 has no HTTP/2 client). A user sends "U-S" messages, S
counting from 1, one at a time: the demo worker's echo answers "N W U-S" with N its counter (one more per
message it took, carried by live moves) and W the worker. So N == S for every answer proves that no
message was lost (N would lag) or taken twice (N would run ahead) across the ends of tunnels; a user
whose tunnel ends sends its unanswered message again on the next one.

Every end of a tunnel must be a close frame 1001 from the commander; anything else (1006: the connection
ended without a close frame; another code) is a failure. After each end the user reconnects with its
cookie and lands on its worker of the moment.

Cycles, each waiting on status.json or on the users (never on a bare sleep): "scale 2"; half of the users
are moved to the new worker ("move U wN": their tunnels end, they reconnect there); then the new worker
goes, by "compact" on odd cycles and by "retire wN" on even ones: its users move back to the reception
(their tunnels end again) and it is retired. Then every user must have answered on the reception again.
Prints "# ..." progress lines, then one JSON line with the figures; exits 0 when everything held, 1
otherwise (the reasons on stderr)."""

import argparse
import asyncio
import http.client
import json
import subprocess
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import websockets
from websockets.connection import Connection, Side, State
from websockets.frames import Opcode

T0 = time.monotonic()


def note(msg):
    print(f"# t={time.monotonic() - T0:6.2f}s {msg}", flush=True)


class Run:
    def __init__(self, args):
        self.args = args
        self.host, port = args.addr.rsplit(":", 1)
        self.port = int(port)
        self.violations = []
        self.closes = {}
        self.stop = False
        self.users = []

    def failure(self, msg):
        if len(self.violations) < 50:
            self.violations.append(msg)
        note("FAIL " + msg)

    def closed(self, code):
        self.closes[str(code)] = self.closes.get(str(code), 0) + 1
        if code != 1001:
            self.failure(f"a tunnel ended with {code}, not 1001")


class User:
    def __init__(self, run, name, proto):
        self.run, self.name, self.proto = run, name, proto
        self.cookie = None
        self.seq = 0          # the last message answered
        self.worker = None    # the worker of the last answer
        self.answers = 0
        self.connections = 0
        self.answered_at = 0.0

    def login(self):
        c = http.client.HTTPConnection(self.run.host, self.run.port, timeout=20)
        c.request("GET", f"/login?user={self.name}")
        r = c.getresponse()
        r.read()
        if r.status != 200:
            raise RuntimeError(f"login of {self.name}: {r.status}")
        for k, v in r.getheaders():
            if k.lower() == "set-cookie" and v.startswith("ep_user="):
                self.cookie = v.split(";", 1)[0]
        c.close()
        if not self.cookie:
            raise RuntimeError(f"login of {self.name}: no sticky cookie")

    def answer(self, text):
        want = f"{self.name}-{self.seq + 1}"
        parts = text.split(" ", 2)
        if len(parts) != 3 or parts[2] != want:
            self.run.failure(f"{self.name}: answer {text!r} to {want}")
            return False
        n = int(parts[0])
        if n != self.seq + 1:
            self.run.failure(f"{self.name}: counter {n} for message {self.seq + 1} "
                             f"({'lost' if n < self.seq + 1 else 'taken twice'})")
        self.seq += 1
        self.worker = parts[1]
        self.answers += 1
        self.answered_at = time.monotonic()
        return True

    async def loop(self):
        while not self.run.stop:
            self.connections += 1
            try:
                if self.proto == "h1":
                    code = await self.session_h1()
                else:
                    code = await self.session_h2()
            except (OSError, asyncio.TimeoutError) as e:
                self.run.failure(f"{self.name}: {e!r}")
                code = None
                await asyncio.sleep(0.2)
            if code is not None:
                self.run.closed(code)

    async def session_h1(self):
        """One tunnel; the close code it ended with (None: we stopped it)."""
        url = f"ws://{self.run.host}:{self.run.port}/ws"
        async with websockets.connect(url, extra_headers=[("Cookie", self.cookie)], open_timeout=20,
                                      close_timeout=5, ping_interval=None) as ws:
            try:
                while not self.run.stop:
                    await ws.send(f"{self.name}-{self.seq + 1}")
                    text = await asyncio.wait_for(ws.recv(), 20)
                    self.answer(text)
                    await asyncio.sleep(0.02)
            except websockets.ConnectionClosed:
                return ws.close_code
        return None

    async def session_h2(self):
        reader, writer = await asyncio.open_connection(self.run.host, self.run.port)
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
        conn.initiate_connection()
        writer.write(conn.data_to_send())
        ws = Connection(Side.CLIENT, State.OPEN)
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "http"),
                                (":path", "/ws"), (":authority", f"{self.run.host}:{self.run.port}"),
                                ("sec-websocket-version", "13"), ("cookie", self.cookie)])
        writer.write(conn.data_to_send())
        opened, waiting, code = False, False, 1006
        try:
            while True:
                if opened and not waiting and not self.run.stop:
                    ws.send_text(f"{self.name}-{self.seq + 1}".encode())
                    conn.send_data(sid, b"".join(ws.data_to_send()))
                    writer.write(conn.data_to_send())
                    waiting = True
                if self.run.stop and opened:
                    return None
                data = await asyncio.wait_for(reader.read(65536), 20)
                if not data:
                    return code
                for e in conn.receive_data(data):
                    if isinstance(e, h2.events.ResponseReceived):
                        status = dict(e.headers).get(b":status")
                        if status != b"200":
                            self.run.failure(f"{self.name}: extended CONNECT answered {status}")
                            return None
                        opened = True
                    elif isinstance(e, h2.events.DataReceived):
                        conn.acknowledge_received_data(e.flow_controlled_length, sid)
                        ws.receive_data(e.data)
                        for f in ws.events_received():
                            if f.opcode == Opcode.TEXT:
                                self.answer(f.data.decode())
                                waiting = False
                                await asyncio.sleep(0.02)
                            elif f.opcode == Opcode.CLOSE:
                                code = int.from_bytes(f.data[:2], "big") if len(f.data) >= 2 else 1005
                                # the closing handshake, as a client does it, unless the server's END_STREAM
                                # and reset came with the close frame
                                try:
                                    conn.send_data(sid, b"".join(ws.data_to_send()), end_stream=True)
                                except h2.exceptions.StreamClosedError:
                                    return code
                    elif isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset)):
                        if code != 1006:
                            return code
                    elif isinstance(e, h2.events.ConnectionTerminated):
                        return code
                writer.write(conn.data_to_send())
        finally:
            writer.close()


def read_status(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def routable(status):
    return [w for w in status["workers"] if w["state"] == "routable"] if status else []


async def wait_for(what, pred, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        await asyncio.sleep(0.05)
    note(f"timed out after {timeout:.0f}s waiting for {what}")
    return False


def ctl(args, *words):
    cmd = args.ctl.split() + list(words)
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip()


async def cycle(run, k):
    args = run.args
    s = read_status(args.status)
    before = {w["name"] for w in routable(s)}
    rc, out = ctl(args, "scale", "2")
    if rc != 0:
        run.failure(f"cycle {k}: scale 2: {out}")
        return False
    if not await wait_for("a second routable worker",
                          lambda: len(routable(read_status(args.status))) == 2, args.timeout):
        run.failure(f"cycle {k}: no second worker")
        return False
    new = next(w["name"] for w in routable(read_status(args.status)) if w["name"] not in before)
    moved = run.users[::2]
    for u in moved:
        rc, out = ctl(args, "move", u.name, new)
        if rc != 0:
            run.failure(f"cycle {k}: move {u.name} {new}: {out}")
    if not await wait_for(f"the moved users answering on {new}",
                          lambda: all(u.worker == new[1:] for u in moved), args.timeout):
        run.failure(f"cycle {k}: users not on {new}: " +
                    " ".join(f"{u.name}:w{u.worker}" for u in moved if u.worker != new[1:]))
        return False
    note(f"cycle {k}: {len(moved)} users moved to {new}, each reconnected there")
    how = "compact" if k % 2 == 1 else "retire"
    deadline = time.monotonic() + args.timeout
    while True:
        rc, out = ctl(args, "compact") if how == "compact" else ctl(args, "retire", new)
        if rc == 0:
            break
        # a worker too new to be judged yet: compaction waits for its readings
        if time.monotonic() > deadline or "may not shrink now" not in out:
            run.failure(f"cycle {k}: {how}: {out}")
            return False
        await asyncio.sleep(0.2)
    if not await wait_for(f"{new} gone", lambda: len(read_status(args.status)["workers"]) == 1, args.timeout):
        run.failure(f"cycle {k}: {new} did not leave after {how}")
        return False
    rec = routable(read_status(args.status))[0]["name"][1:]
    mark = time.monotonic()
    if not await wait_for("every user answering on the reception again",
                          lambda: all(u.worker == rec and u.answered_at > mark for u in run.users),
                          args.timeout):
        run.failure(f"cycle {k}: users not back on w{rec}: " +
                    " ".join(f"{u.name}:w{u.worker}" for u in run.users if u.worker != rec))
        return False
    note(f"cycle {k}: {new} given back by {how}; every user answers on w{rec}; closes so far {run.closes}")
    return True


async def rolling_reload(run):
    """The reload command, then: the rolling reload ended (status.json), every user answers again."""
    args = run.args
    s = read_status(args.status) or {}
    ended = s.get("rolling_reloads_done", 0) + s.get("rolling_reloads_stopped", 0)
    if subprocess.call(args.reload_cmd, shell=True) != 0:
        run.failure("the reload command failed")
        return False
    def over():
        d = read_status(args.status) or {}
        return (d.get("rolling_reloads_done", 0) > ended and d.get("rolling_reload") is None and
                all(w.get("exec_current") for w in d.get("workers", [])))
    if not await wait_for("the rolling reload to end", over, args.timeout):
        run.failure("the rolling reload did not end")
        return False
    mark = time.monotonic()
    if not await wait_for("every user answering after the rolling reload",
                          lambda: all(u.answered_at > mark for u in run.users), args.timeout):
        run.failure("not every user answers after the rolling reload")
        return False
    note(f"rolling reload: every worker replaced, every user answers again; closes so far {run.closes}")
    return True


async def main_async(args):
    run = Run(args)
    run.users = [User(run, f"h1u{i}", "h1") for i in range(args.h1)] + \
                [User(run, f"h2u{i}", "h2") for i in range(args.h2)]
    for u in run.users:
        u.login()
    tasks = [asyncio.create_task(u.loop()) for u in run.users]
    if await wait_for("every user answered once", lambda: all(u.answers > 0 for u in run.users), args.timeout):
        note(f"{args.h1} users over HTTP/1.1 and {args.h2} over HTTP/2 answered")
        ok = True
        for k in range(1, args.cycles + 1):
            ok = await cycle(run, k)
            if not ok:
                break
        if ok and args.reload_cmd:
            await rolling_reload(run)
    else:
        run.failure("not every user got an answer")
    run.stop = True
    await asyncio.wait(tasks, timeout=10)
    figures = {
        "users": len(run.users),
        "messages": sum(u.seq for u in run.users),
        "connections": sum(u.connections for u in run.users),
        "closes": run.closes,
        "violations": len(run.violations),
    }
    print(json.dumps(figures), flush=True)
    for v in run.violations:
        print(v, file=sys.stderr)
    return 0 if not run.violations else 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("addr")
    p.add_argument("status")
    p.add_argument("ctl")
    p.add_argument("--h1", type=int, default=20)
    p.add_argument("--h2", type=int, default=5)
    p.add_argument("--cycles", type=int, default=10)
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--reload-cmd", help="after the cycles: a shell command that makes a rolling reload")
    sys.exit(asyncio.run(main_async(p.parse_args())))


if __name__ == "__main__":
    main()
