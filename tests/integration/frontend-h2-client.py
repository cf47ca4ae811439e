#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A small HTTP/2 (h2c, prior knowledge) client on python3-h2 for the front end's end-to-end tests: it
sends header lists exactly as given (several cookie crumbs, any order) and prints what came back as
JSON: [{"stream", "status", "headers": [[name, value]...], "body", "reset"}...], then
{"goaway": {...} or null} as the last element.

  frontend-h2-client.py HOST:PORT [--source IP] [--method GET] [--path /] [--authority A]
                        [-H 'name: value']... [--body-bytes N [--no-length]] [--trailer-fields N]
                        [--count N]

--count N sends N such requests concurrently on the one connection. --body-bytes sends a body of N
bytes (with content-length unless --no-length); --trailer-fields ends it with a trailer section of N
fields instead of END_STREAM on the last DATA."""

import argparse
import json
import socket
import sys

import h2.config
import h2.connection
import h2.events
import h2.settings


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("address")
    ap.add_argument("--source", default="")
    ap.add_argument("--method", default="GET")
    ap.add_argument("--path", default="/")
    ap.add_argument("--authority", default="")
    ap.add_argument("--scheme", default="http")
    ap.add_argument("-H", dest="headers", action="append", default=[])
    ap.add_argument("--body-bytes", type=int, default=-1)
    ap.add_argument("--no-length", action="store_true")
    ap.add_argument("--trailer-fields", type=int, default=0)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20)
    args = ap.parse_args()

    host, port = args.address.rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(args.timeout)
    if args.source:
        sock.bind((args.source, 0))
    sock.connect((host, int(port)))
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True,
                                                                        header_encoding="latin-1",
                                                                        validate_outbound_headers=False,
                                                                        normalize_outbound_headers=False))
    conn.initiate_connection()
    conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1 << 24})
    conn.increment_flow_control_window(1 << 24)

    fields = [(":method", args.method), (":scheme", args.scheme), (":path", args.path),
              (":authority", args.authority or args.address)]
    for h in args.headers:
        name, _, value = h.partition(":")
        fields.append((name.strip(), value.strip()))
    has_body = args.body_bytes >= 0
    if has_body and not args.no_length:
        fields.append(("content-length", str(args.body_bytes)))

    results, pending = {}, {}
    for _ in range(args.count):
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, fields, end_stream=not has_body)
        results[sid] = {"stream": sid, "status": None, "headers": [], "body": "", "reset": None}
        if has_body:
            pending[sid] = args.body_bytes
    sock.sendall(conn.data_to_send())

    goaway, open_streams = None, set(results)

    def push_bodies():
        for sid, left in list(pending.items()):
            while left > 0:
                n = min(left, 16384, conn.local_flow_control_window(sid), conn.max_outbound_frame_size)
                if n <= 0:
                    break
                conn.send_data(sid, b"x" * n)
                left -= n
            pending[sid] = left
            if left == 0:
                if args.trailer_fields:
                    conn.send_headers(sid, [("x-t-%d" % i, "v") for i in range(args.trailer_fields)],
                                      end_stream=True)
                else:
                    conn.end_stream(sid)
                del pending[sid]

    push_bodies()
    sock.sendall(conn.data_to_send())
    while open_streams:
        data = sock.recv(1 << 20)
        if not data:
            break
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.ResponseReceived):
                r = results[ev.stream_id]
                for name, value in ev.headers:
                    if name == ":status":
                        r["status"] = int(value)
                    else:
                        r["headers"].append([name, value])
            elif isinstance(ev, h2.events.DataReceived):
                results[ev.stream_id]["body"] += ev.data.decode("latin-1")
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                open_streams.discard(ev.stream_id)
            elif isinstance(ev, h2.events.StreamReset):
                results[ev.stream_id]["reset"] = ev.error_code.name
                open_streams.discard(ev.stream_id)
                pending.pop(ev.stream_id, None)
            elif isinstance(ev, h2.events.ConnectionTerminated):
                goaway = {"error": ev.error_code.name, "last_stream_id": ev.last_stream_id,
                          "debug": (ev.additional_data or b"").decode(errors="replace")}
                open_streams = {s for s in open_streams if s <= ev.last_stream_id}
            elif isinstance(ev, h2.events.WindowUpdated):
                pass
        push_bodies()
        out = conn.data_to_send()
        if out:
            sock.sendall(out)
    conn.close_connection()
    try:
        sock.sendall(conn.data_to_send())
    except OSError:
        pass
    sock.close()
    print(json.dumps([results[s] for s in sorted(results)] + [{"goaway": goaway}]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
