#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""HTTP/1.1 load through a commander that gets SIGTERM, for frontend-sigterm-h1.sh (asyncio).

  frontend-sigterm-h1.py HOST:PORT MARKER READY [--connections 50] [--slow-every 5] [--per-connection 5]
                         [--churn 4] [--ready-after 1000] [--kill PID [--burst 400]] [--timeout 60]

Each of --connections loops: connect, then keep-alive requests one after the other (every
--slow-every-th is /work?sleep_ms=200, the others /), reading each answer whole; the --per-connection-th
request says Connection: close itself (so new connections keep arriving); when an answer says
Connection: close it connects again; when the connect is refused (the listener is closed) it stops.
Besides, --churn clients make connections one after the other as fast as they go, one request each,
until one is refused. READY is created once every connection had an answer and --ready-after answers
came in all. Then, with --kill, the client makes --burst connections back to back, a request sent on
each at once, and a quarter of the way through creates MARKER and sends SIGTERM to PID: those
connections race the closing listener, and each must be answered or refused (without --kill the test
creates MARKER and sends the signal). Prints one JSON object:
  ok                 complete answers
  failed             requests sent on an open connection that got no complete answer (must be 0)
  refused            connects refused by the kernel once the listener was closed (fine)
  churn_ok           answers to the churn clients
  churn_refused      their connects refused (the listener was closed: fine)
  burst_ok           answers to the burst around SIGTERM
  burst_refused      1 when the burst ended on a refused connect (the listener was closed: fine)
  announced_close    answers with Connection: close the client did not ask for
  keepalive_late     answers without Connection: close to requests sent 0.5 s or more after MARKER
  errors             the first few failures, explained
Exits 0 when failed and keepalive_late are 0."""

import argparse
import asyncio
import json
import os
import signal
import socket
import sys
import time


class Stats:
    def __init__(self):
        self.ok = self.failed = self.refused = self.churn_ok = self.churn_refused = self.burst_ok = self.burst_refused = 0
        self.announced_close = self.keepalive_late = 0
        self.errors = []
        self.first_answers = 0


def marker_age(marker):
    try:
        return time.time() - os.stat(marker).st_mtime
    except FileNotFoundError:
        return None


async def read_answer(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip().lower()
    await reader.readexactly(int(fields.get("content-length", "0")))
    return int(lines[0].split(" ")[1]), fields.get("connection") == "close"


async def connection_loop(i, args, host, port, st, ready):
    first = True
    k = 0
    while True:
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except ConnectionRefusedError:
            st.refused += 1
            return
        answered = False
        n = 0
        try:
            while True:
                path = "/work?sleep_ms=200" if (i + k) % args.slow_every == 0 else "/"
                k += 1
                age = marker_age(args.marker)
                n += 1
                last = "Connection: close\r\n" if n == args.per_connection else ""
                writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{last}\r\n".encode())
                try:
                    await writer.drain()
                    status, close = await read_answer(reader)
                except (asyncio.IncompleteReadError, ConnectionError) as e:
                    st.failed += 1
                    st.errors.append(f"conn {i} {path}: {type(e).__name__} (sent {age} s after SIGTERM, "
                                     f"{'after' if answered else 'before'} an answer on this connection)")
                    return
                answered = True
                if status != 200:
                    st.failed += 1
                    st.errors.append(f"conn {i} {path}: status {status}")
                else:
                    st.ok += 1
                if first:
                    first = False
                    st.first_answers += 1
                if st.first_answers == args.connections and st.ok >= args.ready_after:
                    st.first_answers += 1  # once
                    open(ready, "w").close()
                if close:
                    if not last:
                        st.announced_close += 1
                    break
                if age is not None and age >= 0.5:
                    st.keepalive_late += 1
                    st.errors.append(f"conn {i} {path}: keep-alive answer {age:.2f} s after SIGTERM")
        finally:
            writer.close()


async def churn(i, args, host, port, st):
    while True:
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except ConnectionRefusedError:
            st.churn_refused += 1
            return
        try:
            writer.write(f"GET /?churn HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            await writer.drain()
            status, _ = await read_answer(reader)
            if status == 200:
                st.churn_ok += 1
            else:
                st.failed += 1
                st.errors.append(f"churn {i}: status {status}")
        except (asyncio.IncompleteReadError, ConnectionError) as e:
            st.failed += 1
            st.errors.append(f"churn {i}: {type(e).__name__}: connected, then no answer "
                             f"({marker_age(args.marker)} s after SIGTERM)")
            return
        finally:
            writer.close()


def burst_and_kill(args, host, port, st):
    """Connections made back to back, a request sent on each at once; SIGTERM goes to --kill in the middle
    of them, so that some sit in the listener's queue when it closes. Each must be answered or refused."""
    socks = []
    for i in range(args.burst):
        if i == args.burst // 4:
            open(args.marker, "w").close()
            os.kill(args.kill, signal.SIGTERM)
        try:
            s = socket.create_connection((host, port), timeout=10)
        except ConnectionRefusedError:
            st.burst_refused += 1
            break
        except OSError as e:
            st.failed += 1
            st.errors.append(f"burst {i}: connect failed: {type(e).__name__}: {e}")
            break
        try:
            s.sendall(f"GET /?burst HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        except ConnectionError:
            pass  # the answer (or its absence) tells
        socks.append(s)
    return socks


async def burst_answers(socks, st):
    for i, s in enumerate(socks):
        s.setblocking(False)
        reader, writer = await asyncio.open_connection(sock=s)
        try:
            status, _ = await read_answer(reader)
            if status == 200:
                st.burst_ok += 1
            else:
                st.failed += 1
                st.errors.append(f"burst {i}: status {status}")
        except (asyncio.IncompleteReadError, ConnectionError) as e:
            st.failed += 1
            st.errors.append(f"burst {i} of {len(socks)}: {type(e).__name__}: connected and sent, no answer")
        finally:
            writer.close()


async def main_async(args):
    host, port = args.address.rsplit(":", 1)
    st = Stats()
    tasks = [asyncio.ensure_future(churn(i, args, host, int(port), st)) for i in range(args.churn)]
    tasks += [asyncio.ensure_future(connection_loop(i, args, host, int(port), st, args.ready))
              for i in range(args.connections)]
    if args.kill:
        while not os.path.exists(args.ready):
            await asyncio.sleep(0.01)
        # in a thread: a connect that meets the closing listener may wait for a SYN retransmit, and the
        # keep-alive connections must go on being read meanwhile
        socks = await asyncio.get_running_loop().run_in_executor(None, burst_and_kill, args, host, int(port), st)
        tasks.append(asyncio.ensure_future(burst_answers(socks, st)))
    await asyncio.wait_for(asyncio.gather(*tasks), args.timeout)
    return st


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("address")
    ap.add_argument("marker")
    ap.add_argument("ready")
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--slow-every", type=int, default=5)
    ap.add_argument("--per-connection", type=int, default=5)
    ap.add_argument("--churn", type=int, default=4)
    ap.add_argument("--ready-after", type=int, default=1000)
    ap.add_argument("--kill", type=int, default=0)
    ap.add_argument("--burst", type=int, default=400)
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    st = asyncio.run(main_async(args))
    out = {k: v for k, v in vars(st).items() if k != "first_answers"}
    out["errors"] = st.errors[:10]
    print(json.dumps(out))
    return 0 if st.failed == 0 and st.keepalive_late == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
