#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""One WebSocket client of tests/integration/websocket-ends.sh, over HTTP/1.1 (python3-websockets).

  websocket-ends.py MODE URL [--cookie C] [--seconds S]

Modes (each prints one JSON line, then exits 0; 1 with the reason on stderr when the tunnel misbehaved):
  busy     sends 256 KiB messages one after the other, each checked against its echo, until the tunnel
           is closed: {"close": CODE, "messages": N, "t": SECONDS}. Big frames are always under way in one
           direction or the other when the end comes, so a frame cut in half shows (as 1006 or a protocol
           error, never 1001).
  wait     sends one message, then nothing until the tunnel is closed: {"close": CODE, "t": SECONDS}.
  ping     pings every 0.2 s for --seconds without sending a message; each pong must come back and the
           tunnel stay open: {"pongs": N}.
Once connected it writes "open" to stdout (flushed), so the caller can wait for it."""

import argparse
import asyncio
import json
import sys
import time

import websockets


async def main(a):
    headers = [("Cookie", a.cookie)] if a.cookie else []
    t0 = time.monotonic()
    async with websockets.connect(a.url, extra_headers=headers, max_size=None, ping_interval=None,
                                  close_timeout=10) as ws:
        print("open", flush=True)
        n = 0
        try:
            if a.mode == "ping":
                pongs = 0
                while time.monotonic() - t0 < a.seconds:
                    await asyncio.wait_for(await ws.ping(), 5)
                    pongs += 1
                    await asyncio.sleep(0.2)
                print(json.dumps({"pongs": pongs}))
                return 0
            if a.mode == "wait":
                await ws.send("hello")
                await ws.recv()
                await ws.recv()  # nothing comes: the close ends it
            while True:
                n += 1
                msg = (f"m{n} " * 40000)[: 256 * 1024]
                await ws.send(msg)
                echo = await ws.recv()
                if not echo.endswith(msg):
                    print(f"message {n}: the echo differs", file=sys.stderr)
                    return 1
        except websockets.ConnectionClosed:
            pass
    print(json.dumps({"close": ws.close_code, "messages": n, "t": round(time.monotonic() - t0, 3)}))
    return 0


p = argparse.ArgumentParser()
p.add_argument("mode", choices=["busy", "wait", "ping"])
p.add_argument("url")
p.add_argument("--cookie")
p.add_argument("--seconds", type=float, default=2)
sys.exit(asyncio.run(main(p.parse_args())))
