#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Logged-in users of a demo-worker pool that fill w1 and w2 until a third worker spawns, then watch relief
move some of w2's users onto it (tests/integration/relief-growth.sh). The users, their connection and their
checks are those of compaction-users.py (imported from beside this file).

  relief-users.py HOST:PORT STATUS_JSON COMMANDER_LOG --interval-ms 200 --smoothing-rows 3
                  [--load-ms 50] [--think-ms 100] [--timeout 30]

Phases, each waiting on status.json or on the commander's log (never on a bare sleep):
  1. group a (6 users, 3 of them loaders: /work?sleep_ms then /state, back to back) logs in on the idle
     reception w1; the loaders fill its executor and the pool grows to 2 workers (then w1 reads 0.75 or
     more in status.json);
  2. group b (8 users, 4 loaders) logs in on the busy reception and is passed on to w2; its loaders fill
     w2 (4 back-to-back requests on 2 executor threads) and the pool grows to 3 workers;
  3. from "Worker w3 is routable" in the log (T), relief must move some of w2's users to w3: the log's
     "Move N of user U from w2 to w3 done|re-pointed" by T + 2 smoothing periods + 1 interval (D), U
     listed in w3's own /_monitor/state and U's /state answered by worker 3. Nobody logs in after w3 came,
     so every user w3 serves is a pre-existing one.
Throughout, every user's /state counter rises by exactly one per request and its blob_crc never changes,
and every answer is 2xx (compaction-users.py's checks). Prints "# ..." progress lines, then one JSON
line with the figures and times (seconds from T); exits 0 when everything held, 1 otherwise (the reasons
on stderr, with the commander's "relief" and "holds" from status.json when relief did not come)."""

import argparse
import http.client
import importlib.util
import json
import os
import re
import socket
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
_spec = importlib.util.spec_from_file_location(
    "compaction_users", os.path.join(os.path.dirname(os.path.abspath(__file__)), "compaction-users.py"))
cu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cu)
note, read_status, routable, wait_status = cu.note, cu.read_status, cu.routable, cu.wait_status

# "06:37:43.943 elastic-pool@t29805: [ready w3] Worker w3 is routable 52ms after its spawn ..."
LOG_TIME = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d{3}) ")
MOVE_TO_W3 = re.compile(r"Move (\d+) of user (\S+) from w(\d+) to w3 (done|re-pointed) after")


def log_epoch(line, now):
    """The wall-clock time (epoch seconds) of a commander log line, whose stamp is the local time of day
    (shared/log.c); a stamp later than now belongs to yesterday."""
    m = LOG_TIME.match(line)
    if not m:
        return None
    lt = time.localtime(now)
    t = time.mktime((lt.tm_year, lt.tm_mon, lt.tm_mday, int(m[1]), int(m[2]), int(m[3]), 0, 0, -1))
    t += int(m[4]) / 1000
    return t - 86400 if t > now + 60 else t


def log_lines(path):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


def first_line(path, regex):
    """(epoch, line, match) of the first log line matching regex, or None."""
    now = time.time()
    for line in log_lines(path):
        m = regex.search(line)
        if m:
            return log_epoch(line, now), line, m
    return None


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=2):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        s.settimeout(self.timeout)
        s.connect(self.path)
        self.sock = s


def monitor_state(sock_path):
    """A worker's own /_monitor/state, on its socket around the commander (None when it does not answer)."""
    conn = UnixHTTPConnection(sock_path)
    try:
        conn.request("GET", "/_monitor/state")
        r = conn.getresponse()
        body = r.read()
        return json.loads(body) if r.status == 200 else None
    except (OSError, http.client.HTTPException, ValueError):
        return None
    finally:
        conn.close()


class ReliefUser(cu.User):
    """compaction-users.py's user, which also notes when (wall clock) it was first answered by each worker."""

    def __init__(self, run, name, loader=False):
        super().__init__(run, name, loader)
        self.first_seen = {}  # worker ("3") -> epoch of its first /state answer from there

    def state(self):
        super().state()
        if self.worker is not None and self.worker not in self.first_seen:
            self.first_seen[self.worker] = time.time()


class Monitor(threading.Thread):
    """Polls w3's /_monitor/state every 50 ms once its socket is there: when each user first appears."""

    def __init__(self, run, sock_path):
        super().__init__(daemon=True)
        self.run_ = run
        self.sock_path = sock_path
        self.first_listed = {}  # user -> (epoch, counter, blob_crc)
        self.last = None

    def run(self):
        while not self.run_.stop.is_set():
            d = monitor_state(self.sock_path)
            if d is not None:
                self.last = d
                t = time.time()
                for u in d.get("users", []):
                    self.first_listed.setdefault(u["user"], (t, u["counter"], u["blob_crc"]))
            time.sleep(0.05)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("addr")
    ap.add_argument("status")
    ap.add_argument("log")
    ap.add_argument("--interval-ms", type=float, required=True, help="occupancy_interval of the config")
    ap.add_argument("--smoothing-rows", type=int, required=True, help="smoothing_rows of the config")
    ap.add_argument("--think-ms", type=float, default=100)
    ap.add_argument("--load-ms", type=int, default=50, help="sleep_ms of a loader's /work")
    ap.add_argument("--timeout", type=float, default=30,
                    help="bound of the run, in seconds (then up to 5 s for the users' last requests)")
    args = ap.parse_args()
    run = cu.Run(args)
    deadline = cu.T0 + args.timeout
    left = lambda: max(1.0, deadline - time.monotonic())  # noqa: E731
    interval = args.interval_ms / 1000
    period = interval * args.smoothing_rows
    # Relief begins on a report of w2 once w2 has been over the threshold for a smoothing period and w3 is
    # there to take users: w2 crossed the threshold before w3 spawned, so by T + 1 period at the latest,
    # seen on w2's next report (+ 1 interval, the allowance for report timing), plus one period of slack
    # for the move itself (quiesce, snapshot, install of a 64 KiB user).
    bound = 2 * period + interval
    # A client sees the move later than the log: the moved loader may first have a /work answered on w3
    # (load_ms) before its next /state; the monitor poll adds up to 50 ms. 200 ms covers both with room.
    client_bound = bound + args.load_ms / 1000 + 0.2
    groups = {"a": [ReliefUser(run, f"a{i}", loader=i < 3) for i in range(6)],
              "b": [ReliefUser(run, f"b{i}", loader=i < 4) for i in range(8)]}
    users = groups["a"] + groups["b"]
    result = {"ok": False, "bound_s": round(bound, 3), "client_bound_s": round(client_bound, 3)}

    def login_group(g, want_worker):
        for u in g:
            u.start()
        for u in g:
            if not u.logged_in.wait(left()):
                run.failure(f"{u.name_}: not logged in within the bound")
                return False
        where = cu.users_per_worker(g)
        note(f"{len(g)} users logged in: {where}")
        if list(where) != [want_worker]:
            run.failure(f"the users {[u.name_ for u in g]} landed on {where}, want all on w{want_worker}")
            return False
        return True

    monitor = None
    try:
        if not wait_status(args.status, "1 routable worker", lambda s: len(routable(s)) >= 1, left()):
            return finish(run, users, result)
        if not login_group(groups["a"], "1"):
            return finish(run, users, result)
        run.load.set()
        note("group a's loaders fill the reception")
        if not wait_status(args.status, "2 routable workers", lambda s: len(routable(s)) >= 2, left()):
            return finish(run, users, result)
        note("the pool grew to 2 workers")
        # w2 came when w1's smoothed reading reached reception_threshold (0.5); group b is passed on to w2
        # only while w1 stays at or over it: wait for the loaders to have it well over
        if not wait_status(args.status, "w1 at 0.75 or more",
                           lambda s: any(w["name"] == "w1" and w["occupancy"] >= 0.75 for w in s["workers"]),
                           left()):
            return finish(run, users, result)
        if not login_group(groups["b"], "2"):
            return finish(run, users, result)
        note("group b's loaders fill w2")

        routable_re = re.compile(r"Worker w3 is routable ")
        while time.monotonic() < deadline and not first_line(args.log, routable_re):
            time.sleep(0.02)
        got = first_line(args.log, routable_re)
        if not got:
            s = read_status(args.status) or {}
            note(f"workers: {[(w['name'], w['state'], w['occupancy'], w['users']) for w in s.get('workers', [])]}")
            note(f"holds: {s.get('holds')}")
            run.failure("w3 did not become routable within the bound: w2 was not full, or the spawn failed")
            return finish(run, users, result)
        t_routable = got[0]
        note(f"w3 routable: {got[1][:160]}")
        s = read_status(args.status) or {}
        sock = next((w.get("socket") for w in s.get("workers", []) if w["name"] == "w3"), None)
        sock = sock or os.path.join(os.path.dirname(args.status), "w3.sock")
        monitor = Monitor(run, sock)
        monitor.start()

        def moved_user_seen():
            m = first_line(args.log, MOVE_TO_W3)
            if not m:
                return None
            u = next((u for u in users if u.name_ == m[2][2]), None)
            if u and "3" in u.first_seen and m[2][2] in monitor.first_listed:
                return m
            return None

        # watch well past the bound, so that a late relief is measured and told apart from none at all
        watch_until = time.time() + max(4 * client_bound, 5.0)
        while time.time() < watch_until and time.monotonic() < deadline and not moved_user_seen():
            time.sleep(0.02)
        m = first_line(args.log, MOVE_TO_W3)
        relief = first_line(args.log, re.compile(r"Relief: w2 at "))
        if relief:
            result["relief_began_s"] = round(relief[0] - t_routable, 3)
        if not m:
            # status.json is rewritten every second: after the watch above it tells the state of affairs
            s = read_status(args.status) or {}
            note(f"relief: {s.get('relief')}; relief_rounds {s.get('relief_rounds')}, relief_moves "
                 f"{s.get('relief_moves')}")
            note(f"holds: {s.get('holds')}")
            workers = [(w["name"], w["occupancy"], w["freshness"], w["users"]) for w in s.get("workers", [])]
            note(f"workers: {workers}")
            run.failure(f"no move of a user from w2 to w3 in the log {time.time() - t_routable:.2f}s after w3 "
                        f"became routable (relief line: {relief[1][:300] if relief else None})")
            return finish(run, users, result)
        t_move, move_line, mm = m
        name = mm[2]
        moved = next((u for u in users if u.name_ == name), None)
        result["moved_user"] = name
        result["move_done_s"] = round(t_move - t_routable, 3)
        note(f"{move_line[:200]}")
        if mm[3] != "2":
            run.failure(f"the first user w3 got came from w{mm[3]}, not from w2: {move_line}")
        if moved is None:
            run.failure(f"the log moved {name}, a user this run does not have: {move_line}")
            return finish(run, users, result)
        if t_move - t_routable > bound:
            run.failure(f"the move of {name} to w3 was done {t_move - t_routable:.3f}s after w3 became routable, "
                        f"over the bound of {bound:.3f}s (2 smoothing periods + 1 interval)")
        if "3" in moved.first_seen:
            result["state_on_w3_s"] = round(moved.first_seen["3"] - t_routable, 3)
            if moved.first_seen["3"] - t_routable > client_bound:
                run.failure(f"{name}'s first /state answer from worker 3 came "
                            f"{moved.first_seen['3'] - t_routable:.3f}s after w3 became routable, over "
                            f"{client_bound:.3f}s")
        else:
            run.failure(f"{name} was moved to w3 by the log, but no /state answer of it named worker 3")
        if name in monitor.first_listed:
            t, _, crc = monitor.first_listed[name]
            result["listed_on_w3_s"] = round(t - t_routable, 3)
            if t - t_routable > client_bound:
                run.failure(f"w3's /_monitor/state first listed {name} {t - t_routable:.3f}s after w3 became "
                            f"routable, over {client_bound:.3f}s")
            if crc != moved.crc:
                run.failure(f"w3's /_monitor/state lists {name} with blob_crc {crc}, its /state said {moved.crc}")
        else:
            run.failure(f"{name} was moved to w3 by the log, but w3's /_monitor/state never listed it")

        # every user answers twice more, the moved ones on w3: their counters go on there
        marks = [u.states for u in users]
        while any(u.states < mk + 2 for u, mk in zip(users, marks)) and time.monotonic() < deadline:
            time.sleep(0.05)
        result["ok"] = True
        return finish(run, users, result)
    finally:
        run.stop.set()
        run.load.clear()


def finish(run, users, result):
    run.stop.set()
    # a user ends after its request in progress (at most load_ms plus a /state); 5 s keeps the run bounded
    # when the commander stops answering (the client's own timeout is 30 s)
    join_until = time.monotonic() + 5
    for u in users:
        u.join(max(0.0, join_until - time.monotonic()))
        if u.is_alive():
            run.failure(f"{u.name_}: still waiting for an answer 5 s after the run ended")
    on_w3 = sorted(u.name_ for u in users if "3" in u.first_seen)
    result.update({
        "users": len(users),
        "requests": run.requests,
        "non_2xx": run.non_2xx,
        "no_answer": run.no_answer,
        "state_answers": sum(u.states for u in users),
        "served_by_w3": on_w3,
        "spread_at_end": cu.users_per_worker(users),
        "max_state_ms": round(max((u.max_state_ms for u in users), default=0), 1),
    })
    if result["ok"]:
        # the users are still now: the state of each that ended on w3 is there, with the counter of its
        # last /state answer, and no longer on w2 (the move dropped it there)
        run_dir = os.path.dirname(run.args.status)
        w3 = monitor_state(os.path.join(run_dir, "w3.sock")) or {}
        w2 = monitor_state(os.path.join(run_dir, "w2.sock")) or {}
        listed3 = {u["user"]: u for u in w3.get("users", [])}
        listed2 = {u["user"] for u in w2.get("users", [])}
        result["listed_on_w3_at_end"] = sorted(listed3)
        for u in users:
            if u.worker != "3":
                continue
            got = listed3.get(u.name_)
            if got is None:
                run.failure(f"{u.name_}: its last /state came from worker 3, whose /_monitor/state lacks it")
            elif got["counter"] != u.counter or got["blob_crc"] != u.crc:
                run.failure(f"{u.name_}: w3 holds counter {got['counter']} blob_crc {got['blob_crc']}, its last "
                            f"/state said {u.counter} and {u.crc}")
            if u.name_ in listed2:
                run.failure(f"{u.name_}: moved to w3, but w2 still holds its state")
    if result["ok"] and not on_w3:
        run.failure("no user was ever answered by worker 3")
    return cu.conclude(run, users, result)


if __name__ == "__main__":
    sys.exit(main())
