#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The per-connection cap on requests that reset HTTP/2 streams leave running on workers, driven with
python3-h2 against a commander whose worker is frontend-e2e-gate-worker.py (its /gate requests run until
/release) and whose h2_max_concurrent_streams is --streams (the cap is twice that).

Connection A opens /gate streams and resets each once the worker reports it parked (some after their
response head came back), until cap - 1 such requests run: a new stream is still served. One more, and
A's next stream is refused (RST_STREAM REFUSED_STREAM) although no stream of A is open, while
connection B is served and the worker still holds every request; A is refused again. B releases the gate;
once the worker says every request ended, A is served again (a few refusals while the commander takes in
the worker's last answers are allowed). A never gets GOAWAY.

  frontend-e2e-h2-orphan-cap.py HOST:PORT --streams N

Prints one JSON object of what happened; exits 0 when all of it held, 1 (the reason on stderr) when not."""

import argparse
import json
import socket
import sys
import time

import h2.config
import h2.connection
import h2.errors
import h2.events

REFUSED = h2.errors.ErrorCodes.REFUSED_STREAM


class Failed(Exception):
    pass


class Client:
    """One h2c (prior knowledge) connection and what came back on each of its streams."""

    def __init__(self, address, name):
        host, port = address.rsplit(":", 1)
        self.name = name
        self.sock = socket.create_connection((host, int(port)), timeout=20)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.streams = {}
        self.terminated = None
        self.settings = False
        self.flush()
        self.wait(lambda: self.settings, "the server's SETTINGS")

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def pump(self, deadline):
        self.sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return
        if not data:
            raise Failed(f"{self.name}: the server closed the connection")
        for ev in self.conn.receive_data(data):
            st = self.streams.get(getattr(ev, "stream_id", None))
            if isinstance(ev, h2.events.RemoteSettingsChanged):
                self.settings = True
            elif isinstance(ev, h2.events.ResponseReceived) and st is not None:
                st["status"] = int(dict(ev.headers)[b":status"])
            elif isinstance(ev, h2.events.DataReceived):
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                if st is not None:
                    st["body"] += ev.data
            elif isinstance(ev, h2.events.StreamEnded) and st is not None:
                st["ended"] = True
            elif isinstance(ev, h2.events.StreamReset) and st is not None:
                st["reset"] = ev.error_code
            elif isinstance(ev, h2.events.ConnectionTerminated):
                self.terminated = {"error": str(ev.error_code), "debug": (ev.additional_data or b"").decode()}
                raise Failed(f"{self.name}: GOAWAY {self.terminated}")
        self.flush()

    def wait(self, done, what, seconds=20):
        deadline = time.monotonic() + seconds
        while not done():
            if time.monotonic() >= deadline:
                raise Failed(f"{self.name}: no {what} within {seconds} s")
            self.pump(deadline)

    def open(self, path):
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, [(":method", "GET"), (":scheme", "http"), (":path", path),
                                     (":authority", "orphan.test")], end_stream=True)
        self.streams[sid] = {"path": path, "status": None, "body": b"", "ended": False, "reset": None}
        self.flush()
        return sid

    def reset(self, sid):
        self.conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
        self.flush()

    def get(self, path):
        """One request; its stream's record once it ended or was reset."""
        sid = self.open(path)
        st = self.streams[sid]
        self.wait(lambda: st["ended"] or st["reset"] is not None, f"answer to {path}")
        return st

    def get_json(self, path):
        st = self.get(path)
        if st["status"] != 200:
            raise Failed(f"{self.name}: {path} answered {st['status']} (reset {st['reset']})")
        return json.loads(st["body"])


def describe(st):
    if st["reset"] is not None:
        return f"RST_STREAM {h2.errors.ErrorCodes(st['reset']).name}"
    return f"{st['status']}"


def run(args, out):
    a = Client(args.address, "A")
    b = Client(args.address, "B")
    advertised = a.conn.remote_settings.max_concurrent_streams
    out["max_concurrent_streams"] = advertised
    if advertised != args.streams:
        raise Failed(f"the commander advertises MAX_CONCURRENT_STREAMS {advertised}, not {args.streams}")
    cap = 2 * args.streams
    parked = 0

    def park(n, head_first=0):
        """n /gate streams on A, the first head_first of them answering their head at once; each reset once
        the worker holds it (and its head came back)."""
        nonlocal parked
        sids = [a.open("/gate?head=1" if i < head_first else "/gate") for i in range(n)]
        parked += n
        got = b.get_json(f"/parked?n={parked}")
        if got["parked"] < parked:
            raise Failed(f"the worker holds {got['parked']} requests, not {parked}")
        a.wait(lambda: all(a.streams[s]["status"] == 200 for s in sids[:head_first]), "response heads")
        for s in sids:
            a.reset(s)

    # up to cap - 1 requests of reset streams running on the worker: still served
    park(args.streams, head_first=args.streams // 2)
    park(args.streams - 1)
    st = a.get("/below-cap")
    out["below_cap"] = describe(st)
    if st["status"] != 200:
        raise Failed(f"with {parked} (< cap {cap}) requests of reset streams running, A's stream got {describe(st)}")

    # at the cap: refused, with no stream of A open
    park(1)
    out["orphans"] = parked
    st = a.get("/probe-1")
    out["at_cap"] = describe(st)
    if st["reset"] != REFUSED:
        raise Failed(f"with {parked} requests of reset streams running (cap {cap}), A's stream got {describe(st)}")
    got = b.get_json(f"/parked?n={parked}")
    out["other_connection_meanwhile"] = got
    if got != {"parked": parked, "ended": 0}:
        raise Failed(f"the worker says {got}: its {parked} requests should all still run")
    st = a.get("/probe-2")
    out["at_cap_again"] = describe(st)
    if st["reset"] != REFUSED:
        raise Failed(f"A's second stream at the cap got {describe(st)}")

    # the worker ends them: A is served again
    out["released"] = b.get_json("/release")["released"]
    got = b.get_json(f"/ended?n={parked}")
    if got["ended"] < parked:
        raise Failed(f"the worker says {got} after /release")
    refusals = 0
    while True:
        st = a.get("/after-release")
        if st["status"] == 200:
            break
        if st["reset"] != REFUSED or refusals >= 50:
            raise Failed(f"after the worker ended its requests, A's stream got {describe(st)} "
                         f"({refusals} refusals before)")
        refusals += 1
        time.sleep(0.1)  # the commander takes the worker's last answers in: nothing to wait on from here
    out["after_release"] = describe(st)
    out["refusals_after_release"] = refusals


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("address")
    ap.add_argument("--streams", type=int, required=True)
    args = ap.parse_args()
    out = {}
    try:
        run(args, out)
    except (Failed, OSError) as e:
        print(json.dumps(out, sort_keys=True))
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
