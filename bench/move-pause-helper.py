#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Helpers of bench/move-pause.sh (never a test):

  move-pause-helper.py sink SOCKET RAW
      A stand-in for journald's native socket: binds SOCKET (a datagram socket, where sd_journal_send()
      writes) and appends every entry it gets to RAW as it came, with the time it arrived
      (CLOCK_REALTIME). It does nothing else, so that the sender never waits for it. Runs until killed.
      bench/move-pause.sh starts it inside a private mount namespace with a tmpfs on /run/systemd, so
      the host's /run is never touched.

  move-pause-helper.py convert RAW JSONL TEXT
      Follows RAW and writes each entry as one JSON line to JSONL (its fields, plus "t": when it
      arrived) and as one line to TEXT in the form the commander writes to stderr ("HH:MM:SS.mmm
      elastic-pool@GROUP: [event wN] message"), so the same greps work on both. Runs until killed.

  move-pause-helper.py users HOST:PORT PREFIX N [--concurrency C] [--state]
      Logs N new users PREFIX1..PREFIXN in through the front end (each login of a new user on a busy
      reception is one live move), C at a time, each on its own keep-alive connection. With --state
      every login is followed at once by a /state of that user (held by the commander until the move
      ends). Prints one line per user: "name login_status state_status state_ms worker counter", and
      exits 1 when any answer was not 200.

  move-pause-helper.py moves journal|log FILE [USER_REGEX]
      The moves that ended, from the sink's JSONL (EP_MOVE_PAUSE_USEC, exact) or from the commander's
      stderr log (the line "Move N of user U from wA to wB done after 1ms (...; B package bytes; ...)",
      whose pause is in whole ms from 1 ms on): one line per move, "t id user from to outcome pause_us
      bytes why", t the end's wall-clock time in seconds (to the ms from a log line). USER_REGEX (a full
      match) keeps only those users."""

import argparse
import http.client
import json
import os
import re
import select
import socket
import struct
import sys
import threading
import time


def parse_entry(data):
    """The journal's native protocol: KEY=VALUE\\n, or KEY\\n<le64 size><value>\\n for binary values."""
    fields = {}
    i = 0
    while i < len(data):
        nl = data.find(b"\n", i)
        if nl < 0:
            break
        line = data[i:nl]
        eq = line.find(b"=")
        if eq >= 0:
            fields[line[:eq].decode("latin-1")] = line[eq + 1:].decode("utf-8", "replace")
            i = nl + 1
        else:
            (size,) = struct.unpack_from("<Q", data, nl + 1)
            start = nl + 9
            fields[line.decode("latin-1")] = data[start:start + size].decode("utf-8", "replace")
            i = start + size + 1
    return fields


RECORD = struct.Struct("<dI")  # arrival time (CLOCK_REALTIME), length of the entry that follows


def sink(args):
    try:
        os.unlink(args.socket)
    except FileNotFoundError:
        pass
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(args.socket)
    os.chmod(args.socket, 0o666)
    raw = os.open(args.raw, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    fd_size = struct.calcsize("i")
    # The commander waits in sendmsg() once 10 datagrams are queued here (net.unix.max_dgram_qlen): this
    # process only takes them off the socket and appends them, as they came, to RAW, one write() for all
    # that were waiting; decoding them is the converter's work, in a process of its own.
    while True:
        select.select([s], [], [])
        batch = bytearray()
        while True:
            try:
                data, anc, _, _ = s.recvmsg(1 << 20, socket.CMSG_SPACE(4 * fd_size), socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            for level, kind, payload in anc:
                # a message too large for one datagram comes as a sealed memfd
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    for (fd,) in struct.iter_unpack("i", payload[:len(payload) - len(payload) % fd_size]):
                        with os.fdopen(fd, "rb") as f:
                            data = f.read()
            batch += RECORD.pack(time.time(), len(data)) + data
        if batch:
            os.write(raw, batch)


def convert(args):
    """Follows RAW as the sink appends to it; writes JSONL and TEXT, flushed whenever RAW has no more."""
    out = open(args.jsonl, "a")
    text = open(args.text, "a")
    with open(args.raw, "rb") as f:
        buf = b""
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                out.flush()
                text.flush()
                time.sleep(0.01)
                continue
            buf += chunk
            while len(buf) >= RECORD.size:
                now, size = RECORD.unpack_from(buf)
                if len(buf) < RECORD.size + size:
                    break
                write_entry(now, buf[RECORD.size:RECORD.size + size], out, text)
                buf = buf[RECORD.size + size:]


def write_entry(now, data, out, text):
    e = parse_entry(data)
    e["t"] = now
    out.write(json.dumps(e) + "\n")
    tag = ""
    if "EP_EVENT" in e:
        tag = f"[{e['EP_EVENT']}{' ' + e['EP_WORKER'] if 'EP_WORKER' in e else ''}] "
    prio = {"0": "EMERG: ", "1": "ALERT: ", "2": "CRIT: ", "3": "ERROR: ", "4": "WARNING: "}.get(
        e.get("PRIORITY", "6"), "")
    group = "@" + e["EP_GROUP"] if "EP_GROUP" in e else ""
    text.write(f"{time.strftime('%H:%M:%S', time.localtime(now))}.{int(now * 1000) % 1000:03d} "
               f"{e.get('SYSLOG_IDENTIFIER', '?')}{group}: {prio}{tag}{e.get('MESSAGE', '')}\n")


def users(args):
    host, port = args.addr.rsplit(":", 1)
    lock = threading.Lock()
    bad = []
    lines = [None] * args.n
    next_i = [0]

    def one(conn, name):
        conn.request("GET", f"/login?user={name}")
        r = conn.getresponse()
        r.read()
        cookie = None
        for v in r.headers.get_all("Set-Cookie") or []:
            if v.startswith("ep_user="):
                cookie = v.split(";", 1)[0]
        login = r.status
        state, ms, worker, counter = "-", 0.0, "-", "-"
        if args.state and cookie:
            t = time.monotonic()
            conn.request("GET", "/state", headers={"Cookie": cookie})
            r = conn.getresponse()
            body = r.read()
            ms = (time.monotonic() - t) * 1000
            state = r.status
            if r.status == 200:
                d = json.loads(body)
                worker, counter = d.get("worker"), d.get("counter")
        return f"{name} {login} {state} {ms:.3f} {worker} {counter}", login == 200 and (
            not args.state or state == 200)

    def run():
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        while True:
            with lock:
                i = next_i[0]
                next_i[0] += 1
            if i >= args.n:
                return
            name = f"{args.prefix}{i + 1}"
            try:
                line, ok = one(conn, name)
            except (OSError, http.client.HTTPException) as e:
                line, ok = f"{name} error {type(e).__name__}", False
                conn.close()
                conn = http.client.HTTPConnection(host, int(port), timeout=60)
            lines[i] = line
            if not ok:
                with lock:
                    bad.append(line)

    threads = [threading.Thread(target=run) for _ in range(args.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for line in lines:
        print(line)
    for line in bad[:5]:
        print(f"move-pause-helper: failed: {line}", file=sys.stderr)
    return 1 if bad else 0


MOVE_RE = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d{3}) .*Move (\d+) of user (\S+) from w(\d+) to w(\d+) "
                     r"(done|re-pointed|aborted.*?) after (\d+)(us|ms|s|\.\d+s) \((.*?); (\d+) package bytes; ")
UNIT_US = {"us": 1, "ms": 1000, "s": 1000000}


def moves(args):
    keep = re.compile(args.users) if args.users else None
    out = []
    if args.source == "journal":
        with open(args.file) as f:
            for line in f:
                e = json.loads(line)
                if e.get("EP_EVENT") != "move" or "EP_MOVE_PAUSE_USEC" not in e:
                    continue
                user = e.get("EP_USER", "?")
                if keep and not keep.fullmatch(user):
                    continue
                m = re.search(r"\((.*?); \d+ package bytes", e.get("MESSAGE", ""))
                outcome = e.get("EP_MOVE_OUTCOME", "?")
                out.append(f"{e['t']:.6f} {e.get('EP_MOVE_ID')} {user} {e.get('EP_MOVE_FROM')} "
                           f"{e.get('EP_MOVE_TO')} {outcome} {e['EP_MOVE_PAUSE_USEC']} {e.get('EP_MOVE_BYTES')} "
                           f"{(m.group(1) if m else '?').replace(' ', '_')}")
    else:
        day = time.mktime(time.localtime()[:3] + (0, 0, 0, 0, 0, -1))
        with open(args.file, errors="replace") as f:
            for line in f:
                m = MOVE_RE.search(line)
                if not m:
                    continue
                hh, mm, ss, ms, mid, user, a, b, outcome, num, unit, why, nbytes = m.groups()
                if keep and not keep.fullmatch(user):
                    continue
                if unit.startswith("."):  # "1.5s"
                    pause = int(num) * 1000000 + int(unit[1:-1]) * 100000
                else:
                    pause = int(num) * UNIT_US[unit]
                t = day + int(hh) * 3600 + int(mm) * 60 + int(ss) + int(ms) / 1000
                outcome = "done" if outcome == "done" else "re-pointed" if outcome == "re-pointed" else "aborted"
                out.append(f"{t:.3f} {mid} {user} w{a} w{b} {outcome} {pause} {nbytes} {why.replace(' ', '_')}")
    print("\n".join(out))
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sink")
    s.add_argument("socket")
    s.add_argument("raw")
    c = sub.add_parser("convert")
    c.add_argument("raw")
    c.add_argument("jsonl")
    c.add_argument("text")
    u = sub.add_parser("users")
    u.add_argument("addr")
    u.add_argument("prefix")
    u.add_argument("n", type=int)
    u.add_argument("--concurrency", type=int, default=1)
    u.add_argument("--state", action="store_true")
    m = sub.add_parser("moves")
    m.add_argument("source", choices=["journal", "log"])
    m.add_argument("file")
    m.add_argument("users", nargs="?")
    args = ap.parse_args()
    if args.cmd == "moves":
        return moves(args)
    if args.cmd == "sink":
        return sink(args)
    if args.cmd == "convert":
        return convert(args)
    return users(args)


if __name__ == "__main__":
    sys.exit(main())
