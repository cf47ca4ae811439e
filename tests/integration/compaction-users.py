#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Logged-in users of a demo-worker pool, each a thread with its own keep-alive connection and cookie,
driven through growth under load and compaction after it (tests/integration/compaction-40-users.sh).

  compaction-users.py HOST:PORT STATUS_JSON [--users 40] [--think-ms 100] [--timeout 60]

Phases, each waiting on status.json (never on a bare sleep):
  1. a first third of the users log in on the idle reception and stay there;
  2. two guest loops (/work?sleep_ms) fill the reception's executor: the pool grows to 2 workers;
  3. the second third log in on the busy reception and are passed on to w2; two of them ("loaders") put
     /work?sleep_ms before each /state, filling w2: the pool grows to 3;
  4. the last third log in and are passed on to the third worker;
  5. the load stops (guests end, loaders go quiet); compaction must bring the pool back to 1 worker while
     every user goes on with its requests.
Every user's requests are sequential: login, then /state (plus /work for a loader) in a loop with
--think-ms between them. Each /state answer must carry counter = previous + 1 (1 after the login) and the
blob_crc of the user's first answer. Every answer of the run (users and guests) must be 2xx; a request
that gets no answer counts as an error too. Prints "# ..." progress lines with the time since the start,
then one JSON line with the figures; exits 0 when everything held, 1 otherwise (the reasons on stderr)."""

import argparse
import http.client
import json
import random
import sys
import threading
import time

T0 = time.monotonic()


def note(msg):
    print(f"# t={time.monotonic() - T0:6.2f}s {msg}", flush=True)


def read_status(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def routable(status):
    return [w for w in status["workers"] if w["state"] == "routable"] if status else []


def wait_status(path, what, pred, timeout):
    """Polls status.json every 50 ms until pred(status) holds; returns the status, or None on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = read_status(path)
        if s and pred(s):
            return s
        time.sleep(0.05)
    note(f"timed out after {timeout:.0f}s waiting for {what}")
    return None


class Run:
    def __init__(self, args):
        self.host, port = args.addr.rsplit(":", 1)
        self.port = int(port)
        self.args = args
        self.lock = threading.Lock()
        self.requests = 0
        self.non_2xx = 0
        self.no_answer = 0
        self.violations = []
        self.stop = threading.Event()
        self.load = threading.Event()  # set: guests and loaders put load on the pool

    def failure(self, msg):
        with self.lock:
            if len(self.violations) < 50:
                self.violations.append(msg)

    def count(self, status):
        with self.lock:
            self.requests += 1
            if status is None:
                self.no_answer += 1
            elif not 200 <= status < 300:
                self.non_2xx += 1


class Client:
    """One keep-alive connection; request() returns (status, headers, body) or None when no answer came."""

    def __init__(self, run, who):
        self.run = run
        self.who = who
        self.conn = None

    def request(self, path, cookie=None):
        run = self.run
        if self.conn is None:
            self.conn = http.client.HTTPConnection(run.host, run.port, timeout=30)
        headers = {"Cookie": cookie} if cookie else {}
        try:
            self.conn.request("GET", path, headers=headers)
            r = self.conn.getresponse()
            body = r.read()
        except (OSError, http.client.HTTPException) as e:
            # whether the request reached a worker is unknown: it counts as an error, never retried
            run.count(None)
            run.failure(f"{self.who}: GET {path}: no answer: {type(e).__name__}: {e}")
            self.conn.close()
            self.conn = None
            return None
        run.count(r.status)
        if not 200 <= r.status < 300:
            run.failure(f"{self.who}: GET {path}: {r.status} {body[:200]!r}")
        if (r.getheader("Connection") or "").lower() == "close":
            self.conn.close()
            self.conn = None
        return r.status, r, body


class User(threading.Thread):
    def __init__(self, run, name, loader=False):
        super().__init__(daemon=True)
        self.run_ = run
        self.name_ = name
        self.loader = loader
        self.client = Client(run, name)
        self.cookie = None
        self.counter = 0
        self.crc = None
        self.worker = None
        self.workers = []  # the workers its /state answers named, in order, without repeats
        self.logged_in = threading.Event()
        self.max_state_ms = 0.0
        self.states = 0
        self.resets_allowed = 0  # re-points that may start its state over (counter 1 again)
        self.resets = 0

    def login(self):
        res = self.client.request(f"/login?user={self.name_}")
        if res is None or res[0] != 200:
            return False
        for value in res[1].headers.get_all("Set-Cookie") or []:
            if value.startswith("ep_user="):
                self.cookie = value.split(";", 1)[0]
        if not self.cookie:
            self.run_.failure(f"{self.name_}: the login answer set no ep_user cookie")
            return False
        return True

    def state(self):
        t = time.monotonic()
        res = self.client.request("/state", self.cookie)
        ms = (time.monotonic() - t) * 1000
        self.max_state_ms = max(self.max_state_ms, ms)
        if res is None or res[0] != 200:
            return
        try:
            d = json.loads(res[2])
        except ValueError:
            self.run_.failure(f"{self.name_}: /state answered {res[2][:200]!r}")
            return
        self.states += 1
        if d.get("user") != self.name_:
            self.run_.failure(f"{self.name_}: /state answered for {d.get('user')!r}: {d}")
        if d.get("counter") == 1 and self.counter > 0 and self.resets < self.resets_allowed:
            # re-pointed across package formats: it starts over, once, with a new blob
            self.resets += 1
            self.counter = 0
            self.crc = None
        if d.get("counter") != self.counter + 1:
            self.run_.failure(f"{self.name_}: counter {d.get('counter')} after {self.counter} (want "
                              f"{self.counter + 1}) on w{d.get('worker')}, earlier on {self.workers}")
        self.counter = d.get("counter", self.counter)
        if self.crc is None:
            self.crc = d.get("blob_crc")
        elif d.get("blob_crc") != self.crc:
            self.run_.failure(f"{self.name_}: blob_crc {d.get('blob_crc')} on w{d.get('worker')}, "
                              f"was {self.crc} on {self.workers}")
        self.worker = d.get("worker")
        if not self.workers or self.workers[-1] != self.worker:
            self.workers.append(self.worker)

    def run(self):
        if not self.login():
            self.run_.failure(f"{self.name_}: login failed")
            return
        self.state()
        self.logged_in.set()
        think = self.run_.args.think_ms / 1000
        while not self.run_.stop.is_set():
            if self.loader and self.run_.load.is_set():
                # back to back: the executor of its worker stays full
                self.client.request(f"/work?sleep_ms={self.run_.args.load_ms}", self.cookie)
                self.state()
                continue
            self.state()
            time.sleep(think * random.uniform(0.5, 1.5))


class Guest(threading.Thread):
    def __init__(self, run, i):
        super().__init__(daemon=True)
        self.run_ = run
        self.client = Client(run, f"guest{i}")

    def run(self):
        while self.run_.load.is_set() and not self.run_.stop.is_set():
            self.client.request(f"/work?sleep_ms={self.run_.args.load_ms}")


def users_per_worker(users):
    out = {}
    for u in users:
        out[u.worker] = out.get(u.worker, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: str(kv[0])))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("addr")
    ap.add_argument("status")
    ap.add_argument("--users", type=int, default=40)
    ap.add_argument("--think-ms", type=float, default=100)
    ap.add_argument("--load-ms", type=int, default=300, help="sleep_ms of a load request")
    ap.add_argument("--timeout", type=float, default=60, help="bound of the whole run, in seconds")
    args = ap.parse_args()
    run = Run(args)
    deadline = T0 + args.timeout
    left = lambda: max(1.0, deadline - time.monotonic())  # noqa: E731
    third = args.users // 3
    groups = [[User(run, f"u{i:02d}") for i in range(third)],
              [User(run, f"u{i:02d}", loader=(i - third) < 2) for i in range(third, 2 * third)],
              [User(run, f"u{i:02d}") for i in range(2 * third, args.users)]]
    users = [u for g in groups for u in g]
    result = {"ok": False}

    def login_group(g, label):
        for u in g:
            u.start()
        for u in g:
            if not u.logged_in.wait(left()):
                run.failure(f"{u.name_}: not logged in within the bound")
                return False
        note(f"{label}: {len(g)} users logged in; users per worker now {users_per_worker(users[:users.index(g[-1]) + 1])}")
        return True

    try:
        if not wait_status(args.status, "1 routable worker", lambda s: len(routable(s)) >= 1, left()):
            return finish(run, users, result)
        if not login_group(groups[0], "idle reception"):
            return finish(run, users, result)

        run.load.set()
        guests = [Guest(run, i) for i in range(2)]
        for g in guests:
            g.start()
        note("guest load on the reception started")
        if not wait_status(args.status, "2 routable workers", lambda s: len(routable(s)) >= 2, left()):
            return finish(run, users, result)
        note("the pool grew to 2 workers")
        if not login_group(groups[1], "busy reception, 2 workers"):
            return finish(run, users, result)
        if not wait_status(args.status, "3 routable workers", lambda s: len(routable(s)) >= 3, left()):
            return finish(run, users, result)
        note("the pool grew to 3 workers")
        if not login_group(groups[2], "busy reception, 3 workers"):
            return finish(run, users, result)
        # every user answered once more: the distribution below is where they live now
        marks = [u.states for u in users]
        while any(u.states <= m for u, m in zip(users, marks)) and time.monotonic() < deadline:
            time.sleep(0.05)
        spread = users_per_worker(users)
        result["spread_under_load"] = spread
        s = read_status(args.status)
        note(f"under load: {len(routable(s))} workers; users per worker (by /state) {spread}")
        if len([w for w in spread if w is not None]) < 3:
            run.failure(f"the users did not spread over 3 workers under load: {spread}")

        run.load.clear()
        t_idle = time.monotonic()
        note("load stopped: waiting for compaction down to 1 worker")
        for g in guests:
            g.join(left())
        s = wait_status(args.status, "1 worker and no drain",
                        lambda s: len(s["workers"]) == 1 and s.get("drain") is None, left())
        if s is None:
            s = read_status(args.status) or {}
            hold = (s.get("holds") or {}).get("compaction")
            note(f"workers: {[(w['name'], w['state'], w['occupancy'], w['users']) for w in s.get('workers', [])]}")
            note(f"ledger: {s.get('ledger')}")
            note(f"holds.compaction: {hold}")
            note(f"drain: {s.get('drain')}")
            note(f"last_drain: {s.get('last_drain')}; drains_done {s.get('drains_done')}, "
                 f"drains_stopped {s.get('drains_stopped')}")
            run.failure("the pool did not compact to 1 worker within the bound")
            return finish(run, users, result)
        result["compaction_s"] = round(time.monotonic() - t_idle, 2)
        result["drains_done"] = s.get("drains_done")
        result["survivor"] = s["workers"][0]["name"]
        note(f"1 worker left {result['compaction_s']}s after the load stopped ({s.get('drains_done')} drains); "
             f"last_drain: {s.get('last_drain')}")
        # every user answers twice more on the survivor
        marks = [u.states for u in users]
        while any(u.states < m + 2 for u, m in zip(users, marks)) and time.monotonic() < deadline:
            time.sleep(0.05)
        result["ok"] = True
        return finish(run, users, result)
    finally:
        run.stop.set()
        run.load.clear()


def finish(run, users, result):
    run.stop.set()
    for u in users:
        if u.is_alive():
            u.join(35)
    spread = users_per_worker(users)
    result.update({
        "users": len(users),
        "requests": run.requests,
        "non_2xx": run.non_2xx,
        "no_answer": run.no_answer,
        "state_answers": sum(u.states for u in users),
        "moved_users": sum(1 for u in users if len(u.workers) > 1),
        "max_state_ms": round(max((u.max_state_ms for u in users), default=0), 1),
        "spread_at_end": spread,
    })
    names = [w["name"] for w in (read_status(run.args.status) or {}).get("workers", [])]
    if result["ok"]:
        # The users keep working on the survivor, and a worker its own reading shows busy enough (on a
        # loaded machine, the moved users' installs and requests together) may have a newcomer spawned
        # beside it: that is growth, right on a reading. What compaction must have done stays checked:
        # one worker left, and every user on it still.
        survivor = result["survivor"]
        if survivor not in names:
            run.failure(f"status.json at the end names {names}, not the survivor {survivor}")
        elif list(spread) != [survivor[1:]]:
            run.failure(f"users at the end live on {spread}, want all on {survivor}")
        elif len(names) > 1:
            note(f"workers at the end: {names}; spawned after the compaction, on a reading of {survivor}")
    return conclude(run, users, result)



def conclude(run, users, result):
    """The checks every run ends with (every request answered 2xx, every user answered at least once),
    then the result as one JSON line and the violations; the exit status."""
    if run.non_2xx or run.no_answer:
        run.failure(f"{run.non_2xx} non-2xx answers and {run.no_answer} requests without an answer "
                    f"among {run.requests}")
    for u in users:
        if u.crc is None:
            run.failure(f"{u.name_}: no /state answer at all")
    result["violations"] = len(run.violations)
    print(json.dumps(result), flush=True)
    for v in run.violations:
        print(f"FAIL: {v}", file=sys.stderr)
    return 0 if result["ok"] and not run.violations else 1

if __name__ == "__main__":
    sys.exit(main())
