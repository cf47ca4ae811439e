#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The load of bench/fault-soak.py: its clients (HTTP/1.1 keep-alive, h2c with several users on one
connection, uploads, guests, slow clients), the users whose /state counters must go on, and the ledger
that counts each request in the clean windows or in one fault's window. Imported by fault-soak.py."""

import asyncio
import collections
import json
import socket
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions

REQUEST_TIMEOUT = 30.0
REASONS_MAX = 200


def now():
    return time.monotonic()


class Ledger:
    """Requests and errors, each counted in the clean windows or in the window of one fault kind."""

    def __init__(self):
        self.active = None          # the open fault window's kind
        self.gen = 0                # bumped at every window start and end
        self.last_kind = None
        self.started = now()
        self.clean = [0, 0]         # requests, errors
        self.fault = collections.defaultdict(lambda: [0, 0])
        self.reasons = collections.Counter()
        self.recent = collections.deque(maxlen=30)
        self.first_clean_errors = []
        self.kinds = collections.Counter()  # requests per kind of load

    def open(self, kind):
        self.active, self.last_kind = kind, kind
        self.gen += 1

    def close(self):
        self.active = None
        self.gen += 1

    def mark(self):
        return (self.gen, self.active)

    def count(self, mark, load_kind, error=None):
        gen, active = mark
        self.kinds[load_kind] += 1
        if active is None and self.active is None and gen == self.gen:
            window, slot = "clean", self.clean
        else:
            window = active or self.active or self.last_kind
            slot = self.fault[window]
        slot[0] += 1
        if error is None:
            return
        slot[1] += 1
        key = f"{window}: {load_kind}: {error[:80]}"
        if key in self.reasons or len(self.reasons) < REASONS_MAX:
            self.reasons[key] += 1
        else:
            self.reasons[f"{window}: (other reasons)"] += 1
        line = f"{now() - self.started:8.1f}s [{window}] {load_kind}: {error[:160]}"
        self.recent.append(line)
        if window == "clean" and len(self.first_clean_errors) < 20:
            self.first_clean_errors.append(line)

    def totals(self):
        req = self.clean[0] + sum(v[0] for v in self.fault.values())
        err = self.clean[1] + sum(v[1] for v in self.fault.values())
        return req, err


class Users:
    """Lost users: a /state that says the worker does not know the user, or a counter that restarted.
    Expected when the user's last worker was killed by the soak after its last good check was sent."""

    def __init__(self):
        self.killed = {}            # worker number -> when the soak killed it
        self.lost_expected = 0
        self.lost_unexpected = 0
        self.sticky = 0
        self.unexpected = collections.deque(maxlen=20)
        self.sessions = 0

    def lost(self, name, worker, last_ok, what, t0):
        t = self.killed.get(worker)
        if t is not None and t >= last_ok:
            self.lost_expected += 1
            return
        self.lost_unexpected += 1
        self.unexpected.append(f"{now() - t0:8.1f}s user {name} (last on w{worker}, last good check "
                               f"{now() - last_ok:.1f}s before): {what}")


class LoadMixin:
    """The Soak's clients: needs self.a (options), ledger, users, phase, stopping, rng, t0, run_id,
    session_seq."""

    # ---- load: HTTP/1.1

    async def h1_open(self, rcvbuf=0):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.setblocking(False)
        await asyncio.get_running_loop().sock_connect(s, ("127.0.0.1", self.a.port))
        return await asyncio.open_connection(sock=s, limit=1 << 16)

    @staticmethod
    async def h1_read(reader, slow=False):
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = collections.defaultdict(list)
        for l in lines[1:]:
            if ":" in l:
                k, v = l.split(":", 1)
                hdrs[k.strip().lower()].append(v.strip())
        body = bytearray()
        if "content-length" in hdrs:
            left = int(hdrs["content-length"][0])
            while left:
                chunk = await reader.read(min(left, 8192 if slow else 1 << 16))
                if not chunk:
                    raise ConnectionError("EOF inside the body")
                body += chunk
                left -= len(chunk)
                if slow:
                    await asyncio.sleep(0.05)
        elif "chunked" in ",".join(hdrs.get("transfer-encoding", [])):
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                body += await reader.readexactly(size + 2)
                if size == 0:
                    break
        return status, hdrs, bytes(body)

    @staticmethod
    def h1_head(method, path, cookie="", length=None):
        h = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if cookie:
            h += f"Cookie: {cookie}\r\n"
        if length is not None:
            h += f"Content-Length: {length}\r\n"
        return (h + "\r\n").encode()

    async def h1_once(self, method, path, kind):
        mark = self.ledger.mark()
        try:
            r, w = await self.h1_open()
            w.write(self.h1_head(method, path))
            st, _, _ = await asyncio.wait_for(self.h1_read(r), REQUEST_TIMEOUT)
            w.close()
            self.ledger.count(mark, kind, None if st < 500 else f"HTTP {st}")
        except Exception as e:
            self.ledger.count(mark, kind, f"{type(e).__name__}: {e}")

    # ---- load: users (HTTP/1.1 or h2c)

    def think(self):
        base = self.a.think_high if self.phase == "high" else self.a.think_low
        return base * self.rng.uniform(0.5, 1.5)

    def choose(self):
        if self.phase == "low":
            return "state"
        x = self.rng.random()
        return "state" if x < 0.45 else "upload" if x < 0.50 else "work"

    async def user(self, transport):
        """One user after another on this transport: log in, use, sometimes log out (churn)."""
        while not self.stopping:
            self.session_seq += 1
            name = f"s{self.run_id}u{self.session_seq}"
            await self.session(transport, name)

    async def session(self, t, name):
        cookie, counter, ambiguous, worker, last_ok = "", 0, 0, None, now()
        length = self.rng.randint(200, 2000)  # requests before a logout, so that users come and go
        self.users.sessions += 1
        for i in range(length + 1):
            if self.stopping:
                return
            if not cookie:
                sent = now()
                st, hdrs, body, err = await t.request("GET", f"/login?user={name}", "", None, "login")
                if err or st != 200:
                    await asyncio.sleep(0.2)
                    continue
                cookie = "; ".join(c.split(";", 1)[0] for c in hdrs.get("set-cookie", []))
                counter, ambiguous, last_ok = 0, 0, sent
                continue
            if i == length:
                await t.request("GET", "/logout", cookie, None, "logout")
                return
            await asyncio.sleep(self.think())
            what = self.choose()
            if what == "state":
                # A good answer proves the state lived until the request was sent, no later: the answer
                # may sit in the socket while the soak kills the worker that wrote it.
                sent = now()
                st, hdrs, body, err = await t.request("GET", "/state", cookie, None, "state",
                                                      check=lambda st, b: st == 200)
                if err:
                    ambiguous += 1  # it may have counted on the worker: the next one may be one more
                    continue
                if st == 404:
                    self.users.lost(name, worker, last_ok, "the worker does not know the user", self.t0)
                    if self.rng.random() < self.a.lost_leave:
                        return  # as many would: the tab closed, the cookie left behind with the commander
                    cookie = ""
                    continue
                d = json.loads(body)
                n, was_on, worker = d["counter"], worker, int(str(d["worker"]).lstrip("w") or 0)
                if not counter + 1 <= n <= counter + 1 + ambiguous:
                    if n == 1:
                        self.users.lost(name, was_on, last_ok, f"counter restarted at 1 after {counter} (on w{worker} now)",
                                        self.t0)
                    else:
                        self.users.sticky += 1
                        self.users.unexpected.append(f"{now() - self.t0:8.1f}s user {name}: counter {n} after "
                                                     f"{counter} (+{ambiguous} unanswered)")
                counter, ambiguous, last_ok = n, 0, sent
            elif what == "upload":
                size = self.rng.choice((4096, 65536, 262144, 1 << 20))
                await t.request("POST", "/work?cpu_ms=1", cookie, size, "upload",
                                check=lambda st, b: st == 200 and json.loads(b)["body_bytes"] == size)
            else:
                await t.request("GET", f"/work?cpu_ms={self.a.cpu_ms}", cookie, None, "work")


class H1Transport:
    """A user's own keep-alive connection, opened again after an error or a close."""

    def __init__(self, soak):
        self.soak, self.conn = soak, None

    async def request(self, method, path, cookie, body_len, kind, check=None):
        s = self.soak
        mark = s.ledger.mark()
        try:
            if self.conn is None:
                self.conn = await asyncio.wait_for(s.h1_open(), REQUEST_TIMEOUT)
            r, w = self.conn
            w.write(s.h1_head(method, path, cookie, body_len))
            if body_len:
                w.write(b"x" * body_len)
            st, hdrs, body = await asyncio.wait_for(s.h1_read(r), REQUEST_TIMEOUT)
            if "close" in ",".join(hdrs.get("connection", [])).lower():
                self.close()
        except Exception as e:
            self.close()
            s.ledger.count(mark, kind, f"{type(e).__name__}: {e}")
            return None, {}, b"", e
        err = None
        if st >= 500 or (check and st != 404 and not check(st, body)):
            err = f"HTTP {st} {body[:80]!r}"
        s.ledger.count(mark, kind, err)
        return st, hdrs, body, err

    def close(self):
        if self.conn:
            self.conn[1].close()
        self.conn = None


class H2Conn:
    """One h2c connection (prior knowledge) shared by several users; streams resolve futures."""

    def __init__(self, soak):
        self.soak = soak
        self.streams = {}
        self.windows = asyncio.Event()
        self.dead = None

    async def open(self):
        self.reader, self.writer = await self.soak.h1_open()
        cfg = h2.config.H2Configuration(client_side=True, header_encoding="latin-1")
        self.c = h2.connection.H2Connection(config=cfg)
        self.c.initiate_connection()
        self.c.increment_flow_control_window(1 << 24)
        self.writer.write(self.c.data_to_send())
        self.task = asyncio.ensure_future(self.pump())

    async def pump(self):
        try:
            while True:
                data = await self.reader.read(1 << 16)
                if not data:
                    raise ConnectionError("EOF")
                for ev in self.c.receive_data(data):
                    self.event(ev)
                self.writer.write(self.c.data_to_send())
        except Exception as e:
            self.fail(e)

    def event(self, ev):
        st = self.streams.get(getattr(ev, "stream_id", None))
        if isinstance(ev, h2.events.ResponseReceived) and st:
            st["headers"] = ev.headers
        elif isinstance(ev, h2.events.DataReceived):
            self.c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            if st:
                st["body"] += ev.data
        elif isinstance(ev, h2.events.StreamEnded) and st:
            st["done"].set_result(True)
        elif isinstance(ev, h2.events.StreamReset) and st and not st["done"].done():
            st["done"].set_exception(ConnectionError(f"stream reset, error {ev.error_code}"))
        elif isinstance(ev, h2.events.WindowUpdated):
            self.windows.set()
        elif isinstance(ev, h2.events.ConnectionTerminated):
            self.fail(ConnectionError(f"GOAWAY {ev.error_code}"))

    def fail(self, e):
        if self.dead:
            return
        self.dead = e
        for st in self.streams.values():
            if not st["done"].done():
                st["done"].set_exception(ConnectionError(f"connection lost: {e}"))
        self.windows.set()
        self.writer.close()

    async def request(self, method, path, cookie, body_len):
        sid = self.c.get_next_available_stream_id()
        hdrs = [(":method", method), (":scheme", "http"), (":path", path), (":authority", "127.0.0.1")]
        if cookie:
            hdrs.append(("cookie", cookie))
        if body_len:
            hdrs.append(("content-length", str(body_len)))
        st = self.streams[sid] = {"headers": [], "body": b"", "done": asyncio.get_running_loop().create_future()}
        try:
            self.c.send_headers(sid, hdrs, end_stream=not body_len)
            self.writer.write(self.c.data_to_send())
            left = body_len or 0
            while left and not self.dead:
                n = min(left, self.c.local_flow_control_window(sid), self.c.max_outbound_frame_size)
                if n <= 0:
                    self.windows.clear()
                    await self.windows.wait()
                    continue
                self.c.send_data(sid, b"x" * n, end_stream=(n == left))
                left -= n
                self.writer.write(self.c.data_to_send())
            await st["done"]
        finally:
            del self.streams[sid]
        status = int(dict(st["headers"])[":status"])
        out = collections.defaultdict(list)
        for k, v in st["headers"]:
            out[k].append(v)
        return status, out, st["body"]


class H2Transport:
    """Users that share an h2c connection: the first to find it broken opens the next one."""

    def __init__(self, soak):
        self.soak, self.conn, self.lock = soak, None, asyncio.Lock()

    async def request(self, method, path, cookie, body_len, kind, check=None):
        s = self.soak
        mark = s.ledger.mark()
        try:
            async with self.lock:
                if self.conn is None or self.conn.dead:
                    conn = H2Conn(s)
                    await asyncio.wait_for(conn.open(), REQUEST_TIMEOUT)
                    self.conn = conn
            st, hdrs, body = await asyncio.wait_for(self.conn.request(method, path, cookie, body_len),
                                                    REQUEST_TIMEOUT)
        except (Exception, h2.exceptions.ProtocolError) as e:
            if self.conn and not self.conn.dead:
                self.conn.fail(e)
            s.ledger.count(mark, "h2 " + kind, f"{type(e).__name__}: {e}")
            return None, {}, b"", e
        err = None
        if st >= 500 or (check and st != 404 and not check(st, body)):
            err = f"HTTP {st} {body[:80]!r}"
        s.ledger.count(mark, "h2 " + kind, err)
        return st, hdrs, body, err


async def guest(s):
    t = H1Transport(s)
    while not s.stopping:
        await asyncio.sleep(s.a.think_high * s.rng.uniform(1, 3))
        await t.request("GET", "/hello", "", None, "guest", check=lambda st, b: st == 200)


async def slow_client(s):
    """A head in pieces over about a second, a body at ~4 KiB/s, a 256 KiB answer read 8 KiB a time."""
    while not s.stopping:
        await asyncio.sleep(s.rng.uniform(0.5, 2))
        mark = s.ledger.mark()
        try:
            r, w = await s.h1_open(rcvbuf=4096)
            head = s.h1_head("POST", "/work?bytes=262144", "", 2048)
            for i in range(0, len(head), 8):
                w.write(head[i:i + 8])
                await w.drain()
                await asyncio.sleep(0.08)
            for _ in range(4):
                w.write(b"y" * 512)
                await asyncio.sleep(0.12)
            st, _, body = await asyncio.wait_for(s.h1_read(r, slow=True), REQUEST_TIMEOUT * 2)
            w.close()
            ok = st == 200 and len(body) == 262144
            s.ledger.count(mark, "slow", None if ok else f"HTTP {st}, {len(body)} bytes")
        except Exception as e:
            s.ledger.count(mark, "slow", f"{type(e).__name__}: {e}")
