#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""N keep-alive HTTP/1.1 connections open at once (asyncio), for the front end's end-to-end tests.

  frontend-many-clients.py HOST:PORT [--connections 1000] [--requests 10] [--path /]

Every connection sends one request and waits for its answer; once all N answered (so N connections are
open together), each sends --requests - 1 more on the same connection. Every answer must be a complete
200 with its Content-Length body and no "Connection: close". Prints one JSON line with the counts;
exits 0 when every request succeeded, 1 otherwise."""

import argparse
import asyncio
import json
import sys


async def one_request(reader, writer, host, path):
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    fields = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(fields.get("content-length", "0")))
    return status, fields.get("connection", "").lower(), len(body)


async def client(i, args, host, port, barrier, stats):
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError as e:
        stats["connect_errors"] += 1
        stats["errors"].append(f"connect {i}: {e}")
        await barrier.wait_broken()
        return
    try:
        for k in range(args.requests):
            status, connection, _ = await one_request(reader, writer, f"{host}:{port}", args.path)
            if status == 200 and connection != "close":
                stats["ok"] += 1
            else:
                stats["bad"] += 1
                stats["errors"].append(f"conn {i} request {k}: status {status} connection {connection!r}")
            if k == 0:
                stats["open_max"] = max(stats["open_max"], stats["open"] + 1)
                stats["open"] += 1
                await barrier.wait()
    except Exception as e:  # noqa: BLE001 - every failure counts
        stats["bad"] += 1
        stats["errors"].append(f"conn {i}: {type(e).__name__}: {e}")
        await barrier.wait_broken()
    finally:
        writer.close()


class Barrier:
    """All N clients have their first answer (asyncio.Barrier needs python 3.11)."""

    def __init__(self, n):
        self.n, self.event = n, asyncio.Event()

    async def wait(self):
        self.n -= 1
        if self.n <= 0:
            self.event.set()
        await self.event.wait()

    async def wait_broken(self):
        self.n -= 1
        if self.n <= 0:
            self.event.set()


async def main_async(args):
    host, port = args.address.rsplit(":", 1)
    stats = {"ok": 0, "bad": 0, "connect_errors": 0, "open": 0, "open_max": 0, "errors": []}
    barrier = Barrier(args.connections)
    await asyncio.wait_for(asyncio.gather(*(client(i, args, host, int(port), barrier, stats)
                                            for i in range(args.connections))), args.timeout)
    return stats


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("address")
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=10)
    ap.add_argument("--path", default="/")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    stats = asyncio.run(main_async(args))
    stats["errors"] = stats["errors"][:20]
    print(json.dumps(stats))
    want = args.connections * args.requests
    return 0 if stats["ok"] == want and stats["open_max"] == args.connections else 1


if __name__ == "__main__":
    sys.exit(main())
