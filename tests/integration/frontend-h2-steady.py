#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A well-behaved HTTP/2 client on one connection (python3-h2), for the tests that abuse the front end
on other connections: it sends GET PATH, waits for the complete answer, and again, until the file STOP
exists; then prints {"ok", "failed", "errors"} as JSON and exits 0 when every request got a 200.

  frontend-h2-steady.py HOST:PORT STOP [--path /] [--ready FILE]   (--ready: touched after the first answer)"""

import argparse
import json
import os
import socket
import sys

import h2.config
import h2.connection
import h2.events


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("address")
    ap.add_argument("stop")
    ap.add_argument("--path", default="/")
    ap.add_argument("--ready", default="")
    args = ap.parse_args()
    host, port = args.address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    ok, failed, errors = 0, 0, []
    try:
        while not os.path.exists(args.stop):
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, [(":method", "GET"), (":scheme", "http"), (":path", args.path),
                                    (":authority", args.address)], end_stream=True)
            sock.sendall(conn.data_to_send())
            status, done = None, False
            while not done:
                data = sock.recv(65536)
                if not data:
                    raise ConnectionError("the server closed the connection")
                for ev in conn.receive_data(data):
                    if isinstance(ev, h2.events.ResponseReceived):
                        status = dict(ev.headers).get(b":status")
                    elif isinstance(ev, h2.events.DataReceived):
                        conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                    elif isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)) and ev.stream_id == sid:
                        done = True
                    elif isinstance(ev, h2.events.ConnectionTerminated):
                        raise ConnectionError(f"GOAWAY {ev.error_code!r}")
                sock.sendall(conn.data_to_send())
            if status == b"200":
                ok += 1
            else:
                failed += 1
                errors.append(f"stream {sid}: status {status!r}")
            if args.ready and ok == 1:
                open(args.ready, "w").close()
    except (OSError, ConnectionError) as e:
        failed += 1
        errors.append(f"{type(e).__name__}: {e}")
    print(json.dumps({"ok": ok, "failed": failed, "errors": errors[:10]}))
    return 0 if failed == 0 and ok > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
