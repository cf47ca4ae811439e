#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Logged-in users of a demo-worker pool under steady load through a rolling reload
(tests/integration/rolling-reload.sh).

  rolling-users.py HOST:PORT STATUS_JSON RELOAD_CMD [--users 60] [--workers 3] [--resets 0] [--timeout 120]

Every user logs in, then sends /state in a loop on its own keep-alive connection (think time 30 ms);
guests send /hello. Once every user answered, RELOAD_CMD runs (a shell command: the test's edit of the
configuration and its SIGHUP); the run then waits on status.json until the rolling reload ended and
every worker runs the current definition, and lets every user answer twice more. status.json is sampled
every 50 ms throughout: never more than one worker draining (evacuating, or state draining), never fewer
than --workers - 1 routable workers that take users or serve them.
The checks of compaction-users.py hold for every user (counter = previous + 1, the same blob, every
answer 2xx), except that --resets lets each user's state start over that many times (re-pointed across
package formats): then each user must have started over exactly that many times. Prints "# ..." lines,
then one JSON line; exits 0 when everything held, 1 otherwise (the reasons on stderr)."""

import argparse
import importlib.util
import os
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
_spec = importlib.util.spec_from_file_location(
    "compaction_users", os.path.join(os.path.dirname(os.path.abspath(__file__)), "compaction-users.py"))
cu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cu)
note, read_status, routable, wait_status = cu.note, cu.read_status, cu.routable, cu.wait_status


class Sampler(threading.Thread):
    """Watches status.json: the most workers draining at once, the fewest routable."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path = path
        self.stop = threading.Event()
        self.max_draining = 0
        self.min_routable = None
        self.samples = 0
        self.worst = None

    def run(self):
        while not self.stop.is_set():
            s = read_status(self.path)
            if s:
                draining = [w["name"] for w in s["workers"] if w["evacuating"] or w["state"] == "draining"]
                up = len(routable(s))
                self.samples += 1
                if len(draining) > self.max_draining:
                    self.max_draining = len(draining)
                    self.worst = draining
                if self.min_routable is None or up < self.min_routable:
                    self.min_routable = up
            time.sleep(0.05)


def all_current(s):
    return (s.get("rolling_reload") is None and s.get("last_rolling_reload") is not None and
            all(w.get("exec_current") for w in s["workers"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("addr")
    ap.add_argument("status")
    ap.add_argument("reload_cmd")
    ap.add_argument("--users", type=int, default=60)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--resets", type=int, default=0)
    ap.add_argument("--prefix", default="u", help="user names are PREFIX00, PREFIX01, ...")
    ap.add_argument("--think-ms", type=float, default=30)
    ap.add_argument("--load-ms", type=int, default=200, help="sleep_ms of a guest's request")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    run = cu.Run(args)
    deadline = cu.T0 + args.timeout
    left = lambda: max(1.0, deadline - time.monotonic())  # noqa: E731
    users = [cu.User(run, f"{args.prefix}{i:02d}") for i in range(args.users)]
    for u in users:
        u.resets_allowed = args.resets
    sampler = Sampler(args.status)
    result = {"ok": False}
    try:
        if not wait_status(args.status, f"{args.workers} routable workers",
                           lambda s: len(routable(s)) >= args.workers, left()):
            return finish(run, users, sampler, result)
        # guests keep the reception busy first: logins are then passed on to the other workers
        run.load.set()
        guests = [cu.Guest(run, i) for i in range(2)]
        for g in guests:
            g.start()
        wait_status(args.status, "a busy reception",
                    lambda s: any(w["reception"] and w["occupancy"] > 0.05 for w in s["workers"]), left())
        for u in users:
            u.start()
            time.sleep(0.02)
        for u in users:
            if not u.logged_in.wait(left()):
                run.failure(f"{u.name_}: not logged in within the bound")
                return finish(run, users, sampler, result)
        result["spread_before"] = cu.users_per_worker(users)
        before = read_status(args.status) or {}
        ended_before = before.get("rolling_reloads_done", 0) + before.get("rolling_reloads_stopped", 0)
        note(f"{len(users)} users logged in; users per worker {result['spread_before']}")
        sampler.start()
        t = time.monotonic()
        rc = subprocess.call(args.reload_cmd, shell=True)
        if rc != 0:
            run.failure(f"the reload command exited with {rc}")
            return finish(run, users, sampler, result)
        s = wait_status(args.status, "the rolling reload to end with every worker current",
                        lambda s: all_current(s) and
                        s.get("rolling_reloads_done", 0) + s.get("rolling_reloads_stopped", 0) > ended_before, left())
        if s is None:
            s = read_status(args.status) or {}
            note(f"rolling_reload: {s.get('rolling_reload')}; last: {s.get('last_rolling_reload')}")
            note(f"workers: {[(w['name'], w['state'], w.get('exec_current'), w['users']) for w in s.get('workers', [])]}")
            run.failure("the rolling reload did not end within the bound")
            return finish(run, users, sampler, result)
        result["reload_s"] = round(time.monotonic() - t, 2)
        result["last_rolling_reload"] = s.get("last_rolling_reload")
        note(f"rolling reload ended after {result['reload_s']}s: {s.get('last_rolling_reload')}")
        marks = [u.states for u in users]
        while any(u.states < m + 2 for u, m in zip(users, marks)) and time.monotonic() < deadline:
            time.sleep(0.05)
        result["ok"] = True
        return finish(run, users, sampler, result)
    finally:
        run.stop.set()
        run.load.clear()


def finish(run, users, sampler, result):
    run.stop.set()
    run.load.clear()
    sampler.stop.set()
    for u in users:
        if u.is_alive():
            u.join(35)
    result.update({
        "max_draining": sampler.max_draining,
        "min_routable": sampler.min_routable,
        "status_samples": sampler.samples,
        "spread_after": cu.users_per_worker(users),
        "resets": sum(u.resets for u in users),
    })
    if result["ok"]:
        if sampler.max_draining > 1:
            run.failure(f"{sampler.max_draining} workers draining at once: {sampler.worst}")
        if sampler.min_routable is not None and sampler.min_routable < run.args.workers - 1:
            run.failure(f"only {sampler.min_routable} routable workers at one point (of {run.args.workers})")
        for u in users:
            if u.resets != run.args.resets:
                run.failure(f"{u.name_}: its state started over {u.resets} times, want {run.args.resets}")
    return cu.conclude(run, users, result)


if __name__ == "__main__":
    sys.exit(main())
