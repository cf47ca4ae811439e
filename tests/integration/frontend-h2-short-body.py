#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""HTTP/2 request whose body ends short of its content-length, in two steps, for frontend-short-body.sh:
HEADERS (POST PATH, content-length 100000) and 50000 bytes of DATA (more than the 16 KiB the forward
side holds back to send with its head); then, once the file WAIT_FILE holds a line with PATH (the worker
got the head), an empty DATA with END_STREAM. Prints the RST_STREAM/GOAWAY seen as
JSON (h2-abuse.py's frame helpers)."""

import importlib.util
import json
import os
import sys
import time

spec = importlib.util.spec_from_file_location("h2abuse", os.path.join(os.path.dirname(__file__), "h2-abuse.py"))
h2abuse = importlib.util.module_from_spec(spec)
spec.loader.exec_module(h2abuse)


def main():
    address, path, wait_file = sys.argv[1:4]
    p = h2abuse.Peer(address, 10)
    block = h2abuse.request_block("POST", path, "localhost", [("content-length", "100000")])
    p.send(h2abuse.headers_frames(1, block, end_stream=False) +
           b"".join(h2abuse.frame(h2abuse.DATA, 0, 1, b"x" * 10000) for _ in range(5)))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        p.pump(0.05)
        if os.path.exists(wait_file) and path in open(wait_file).read():
            break
    else:
        print(json.dumps({"error": "the worker never got the head"}))
        return 1
    p.send(h2abuse.frame(h2abuse.DATA, h2abuse.END_STREAM, 1))
    print(json.dumps(p.pump(1), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
