#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The load and the fault schedule of bench/fault-soak.sh (run it through that script, which makes the
cgroup parent, the configuration and the launcher of the commander, and removes everything afterwards).

Load (asyncio, loopback only, stops by itself): logged-in users over HTTP/1.1 keep-alive and over h2c
(several users multiplexed on one connection, each with its own cookie), each checking on every /state
that its counter rose by exactly one; uploads (POST /work with a body whose size the worker echoes);
guests; slow clients (a head sent in pieces, a body at a few KiB/s, a 256 KiB answer read 8 KiB at a
time). Two load levels, "low" (users idle, a /state every few seconds) and "high" (users busy), so that
the pool grows and compacts.

Faults, one after the other with a clean gap between them, each inside an announced window that starts
just before it is injected and ends when the pool has recovered plus a settle time. A request is counted
in a clean window only when no window was open at any time between its start and its end.

Memory and logs stay bounded however long it runs: counters, bounded deques of the latest errors and
samples (halved when full), the commander's log cut back when it passes --log-max-bytes."""

import argparse
import asyncio
import collections
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fault_soak_load import REQUEST_TIMEOUT, H1Transport, H2Transport, Ledger, LoadMixin, Users, guest, now, slow_client  # noqa: E402

SAMPLES_MAX = 2000


class Soak(LoadMixin):
    def __init__(self, a):
        self.a = a
        self.ledger = Ledger()
        self.users = Users()
        self.phase = "high"
        self.stopping = False
        self.t0 = now()
        self.rng = random.Random(a.seed)
        self.run_id = f"{os.getpid()}x{int(time.time()) % 100000}"
        self.session_seq = 0
        self.commander = None
        self.incarnations = []      # [pid, start time, samples]
        self.samples_every = a.sample_every
        self.log_offset = 0
        self.log_notes = collections.deque(maxlen=20)
        self.sanitizer = 0
        self.faults_done = collections.Counter()
        self.fault_notes = []
        self.skipped = {}
        self.unrecovered = collections.Counter()  # fault kind -> waits for recovery that timed out
        self.reload_gen = 1
        self.last_progress = (now(), 0)
        self.hz = os.sysconf("SC_CLK_TCK")
        self.cpu_last = None

    # ---- the commander and its status

    def status(self):
        try:
            with open(os.path.join(self.a.runtime_dir, "status.json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def workers(self):
        s = self.status()
        return s["workers"] if s else []

    def routable(self):
        return [w for w in self.workers() if w["state"] == "routable"]

    def start_commander(self):
        self.commander = subprocess.Popen([self.a.launcher], stdin=subprocess.DEVNULL)
        self.incarnations.append([self.commander.pid, now(), []])

    async def wait_for(self, what, cond, timeout):
        deadline = now() + timeout
        while now() < deadline:
            if cond():
                return True
            await asyncio.sleep(0.05)
        self.note(f"{what}: not within {timeout:.0f} s")
        # growth to max_workers is the load's business as much as the pool's (a busy machine slows it)
        if self.ledger.active and what != "growth to max_workers":
            self.unrecovered[self.ledger.active] += 1
        return False

    def note(self, text):
        line = f"{now() - self.t0:8.1f}s {text}"
        print(f"# {line}", flush=True)
        self.fault_notes.append(line)
        del self.fault_notes[:-200]

    def read_log(self):
        """New lines of the commander's log since the last call (it may have been cut back)."""
        try:
            with open(self.a.log, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < self.log_offset:
                    self.log_offset = 0
                f.seek(self.log_offset)
                data = f.read(min(size - self.log_offset, 16 << 20))
        except OSError:
            return []
        cut = data.rfind(b"\n") + 1
        self.log_offset += cut
        lines = data[:cut].decode("utf-8", "replace").splitlines()
        for line in lines:
            if "AddressSanitizer" in line or "runtime error:" in line or "LeakSanitizer" in line:
                self.sanitizer += 1
                self.log_notes.append(line[:300])
        return lines

    async def wait_log(self, what, pattern, timeout):
        deadline = now() + timeout
        while now() < deadline:
            if any(pattern in line for line in self.read_log()):
                return True
            await asyncio.sleep(0.05)
        self.note(f"{what}: no log line with '{pattern}' within {timeout:.0f} s")
        if self.ledger.active:
            self.unrecovered[self.ledger.active] += 1
        return False

    def bound_log(self):
        try:
            if os.path.getsize(self.a.log) <= self.a.log_max_bytes:
                return
            self.read_log()
            with open(self.a.log, "rb") as f:
                f.seek(-(1 << 20), os.SEEK_END)
                tail = f.read()
            with open(self.a.log + ".1", "wb") as f:
                f.write(tail)
            os.truncate(self.a.log, 0)  # the commander appends (O_APPEND): it goes on at 0
            self.log_offset = 0
        except OSError:
            pass

    # ---- sampling

    async def sampler(self):
        while not self.stopping:
            await asyncio.sleep(self.samples_every)
            self.bound_log()
            self.read_log()
            inc = self.incarnations[-1]
            disturbance = self.disturbance()
            try:
                if not os.readlink(f"/proc/{inc[0]}/exe").endswith("/elastic-pool"):
                    continue  # still its launcher, or gone
                with open(f"/proc/{inc[0]}/status") as f:
                    rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
                fds = len(os.listdir(f"/proc/{inc[0]}/fd"))
            except (OSError, StopIteration):
                continue
            ws = self.workers()
            req, err = self.ledger.totals()
            t, r0 = self.last_progress
            rps = (req - r0) / max(now() - t, 1e-3)
            self.last_progress = (now(), req)
            users = sum(w.get("users", 0) for w in ws)
            inc[2].append((now() - self.t0, rss, fds, f"{self.phase} load, {len(ws)} workers"))
            if len(inc[2]) > SAMPLES_MAX:
                del inc[2][1::2]
            print(f"sample {now() - self.t0:8.1f}s rss {rss:7d} kB fds {fds:4d} workers {len(ws)} users {users:4d} "
                  f"phase {self.phase:4s} window {self.ledger.active or '-':16s} req/s {rps:6.0f} "
                  f"requests {req} errors {err} lost {self.users.lost_unexpected}+{self.users.lost_expected} "
                  f"{disturbance}", flush=True)

    def disturbance(self):
        """steal% and other% (CPU outside the soak's cgroup) of one CPU since the last call; '!' past 5."""
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        busy, steal = (v[0] + v[1] + v[2]) / self.hz, v[7] / self.hz
        try:
            with open(os.path.join(self.a.cgroup_root, self.a.bench_cgroup.lstrip("/"), "cpu.stat")) as f:
                mine = next(int(l.split()[1]) for l in f if l.startswith("usage_usec")) / 1e6
        except (OSError, StopIteration):
            mine = 0.0
        t = now()
        last, self.cpu_last = self.cpu_last, (t, busy, steal, mine)
        if not last:
            return ""
        dt = max(t - last[0], 1e-3)
        st = (steal - last[2]) / dt * 100
        other = max(0.0, (busy - last[1]) - (mine - last[3])) / dt * 100
        return f"steal% {st:5.1f} other% {other:5.1f}{' !' if st + other > 5 else ''}"

    # ---- faults

    def pick_worker(self, prefer_users=True):
        """The worker with the most users (the reception only when it has more than any other: a fault
        on a worker without users tells nothing about them), or any but the reception."""
        ws = self.routable()
        if not ws:
            return None
        if prefer_users:
            return min(ws, key=lambda w: (-w.get("users", 0), w["reception"]))
        others = [w for w in ws if not w["reception"]]
        return self.rng.choice(others or ws)

    async def recovered(self, timeout):
        """min_workers routable and every routable worker fresh."""
        return await self.wait_for("recovery", lambda: len(self.routable()) >= self.a.min_workers and all(
            w["freshness"] == "fresh" for w in self.routable()), timeout)

    async def fault_worker_kill(self):
        w = self.pick_worker()
        if not w:
            return "no routable worker"
        self.users.killed[w["id"]] = now()
        os.kill(w["pid"], signal.SIGKILL)
        await self.wait_for("the killed worker's death", lambda: all(x["pid"] != w["pid"] for x in self.workers()), 20)
        await self.recovered(30)
        return f"SIGKILL w{w['id']} (pid {w['pid']}, {w.get('users', 0)} users)"

    async def fault_worker_stop(self):
        w = self.pick_worker()
        if not w:
            return "no routable worker"
        os.kill(w["pid"], signal.SIGSTOP)
        await asyncio.sleep(self.a.stop_seconds)
        os.kill(w["pid"], signal.SIGCONT)
        await self.recovered(30)
        return f"SIGSTOP w{w['id']} for {self.a.stop_seconds:.0f} s, then SIGCONT"

    async def fault_channel_garbage(self):
        w = self.pick_worker(prefer_users=False)
        if not w:
            return "no routable worker"
        leaf = os.path.join(self.a.cgroup_root, w["cgroup"].lstrip("/"))
        junk = ("import socket, sys\n"
                "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
                "s.connect(sys.argv[1])\n"
                "s.settimeout(10)\n"
                "try:\n"
                "    s.sendall(b'\\x00\\x00\\x00\\x40' + bytes(range(7, 71)) + b'\\xff' * 64)\n"
                "    while s.recv(4096): pass\n"
                "except OSError: pass\n")
        self.read_log()
        proc = await asyncio.create_subprocess_exec(
            "bash", "-c", 'echo $$ >"$0/cgroup.procs" && exec "$@"', leaf, sys.executable, "-c", junk,
            os.path.join(self.a.runtime_dir, "channel.sock"))
        await asyncio.wait_for(proc.wait(), 15)
        ok = await self.wait_log("the sensor's reconnection", "Reconnected to channel", 15)
        await self.recovered(30)
        return f"junk on channel.sock from a process in w{w['id']}'s cgroup" + ("" if ok else "; sensor did not reconnect")

    def memory_supported(self):
        with open(os.path.join(self.a.cgroup_root, self.a.pool_cgroup.lstrip("/"), "cgroup.controllers")) as f:
            return "memory" in f.read().split()

    async def fault_memory(self):
        w = next((x for x in self.routable() if x["reception"]), None)
        if not w:
            return "no reception"
        self.users.killed[w["id"]] = now()
        # a guest's request lands on the reception: it allocates past memory_limit and is OOM-killed
        asyncio.ensure_future(self.h1_once("GET", f"/work?alloc_kb={self.a.memory_limit_kb * 2}", "oom"))
        await self.wait_for("the OOM kill", lambda: all(x["pid"] != w["pid"] for x in self.workers()), 30)
        await self.recovered(30)
        return f"w{w['id']} (reception) pushed over memory_limit"

    async def fault_commander_kill(self):
        old = self.commander
        old.send_signal(signal.SIGKILL)
        await asyncio.get_running_loop().run_in_executor(None, old.wait)
        self.read_log()
        self.start_commander()
        await self.wait_log("the restarted commander", "Ready:", 60)
        await self.recovered(30)
        return f"SIGKILL commander (pid {old.pid}), restarted as pid {self.commander.pid}"

    async def fault_reload(self):
        before = self.status() or {}
        ended = lambda s: s.get("rolling_reloads_done", 0) + s.get("rolling_reloads_stopped", 0)
        self.reload_gen += 1
        with open(self.a.config) as f:
            text = f.read()
        with open(self.a.config, "w") as f:
            f.write(text.replace(f"SOAK_GEN={self.reload_gen - 1}", f"SOAK_GEN={self.reload_gen}"))
        self.commander.send_signal(signal.SIGHUP)
        await self.wait_for("the rolling reload", lambda: ended(self.status() or before) > ended(before),
                            self.a.phase_timeout + 30)
        await self.recovered(30)
        s = self.status() or {}
        return f"rolling reload to SOAK_GEN={self.reload_gen}: {json.dumps(s.get('last_rolling_reload'))[:200]}"

    async def fault_growth(self):
        n = len(self.routable())
        self.phase = "high"
        grew = await self.wait_for("growth to max_workers", lambda: len(self.routable()) >= self.a.max_workers,
                                   self.a.phase_timeout)
        return f"load high: {n} -> {len(self.routable())} workers" + ("" if grew else " (not to max_workers)")

    async def fault_compaction(self):
        n = len(self.routable())
        self.phase = "low"
        shrank = await self.wait_for("compaction to min_workers", lambda: len(self.workers()) <= self.a.min_workers,
                                     self.a.phase_timeout)
        return f"load low: {n} -> {len(self.workers())} workers" + ("" if shrank else " (not to min_workers)")

    async def run_fault(self, kind):
        fn = getattr(self, "fault_" + kind.replace("-", "_"))
        self.ledger.open(kind)
        t = now()
        try:
            what = await fn()
        except Exception as e:  # a fault that could not be injected is reported, the soak goes on
            what = f"failed to inject: {e!r}"
        await asyncio.sleep(self.a.settle)
        self.ledger.close()
        self.faults_done[kind] += 1
        self.note(f"window {kind} {t - self.t0:.1f}..{now() - self.t0:.1f}s: {what}")

    def memory_skip_reason(self):
        return ("the cgroup v2 hierarchy has no memory controller here (hybrid host: memory is on cgroup v1), "
                "so the cgroup backend cannot write memory.max and memory_limit is only the evaluator's "
                "denominator; no worker can go over a limit")

    async def schedule(self):
        await asyncio.sleep(self.a.warmup)
        end = self.t0 + self.a.duration
        kinds = list(self.a.faults)
        if "memory" in kinds and not self.memory_supported():
            kinds.remove("memory")
            self.skipped["memory"] = self.memory_skip_reason()
            self.note(f"skipped memory: {self.skipped['memory']}")
        i = 0
        while now() + self.a.gap < end and not self.stopping:
            kind = kinds[i % len(kinds)]
            i += 1
            if kind == "commander-kill" and 0 < self.a.commander_kills <= self.faults_done[kind]:
                continue  # one long-lived commander is what shows whether its resources stay flat
            await asyncio.sleep(self.a.gap)
            await self.run_fault(kind)
            if self.a.once and i >= len(kinds):
                break
        while now() < end and not (self.a.once and i >= len(kinds)):
            await asyncio.sleep(0.2)
        if self.a.once:
            await asyncio.sleep(self.a.gap)
        self.stopping = True

def verdict(samples):
    """flat / NOT flat / too short, from one commander's samples after its first fifth (warm-up). The
    commander's descriptors and memory follow the pool's size and the load (connections, workers), so the
    early and the late samples are compared within the state (load level, workers) they share most."""
    body = samples[len(samples) // 5:]
    half = len(body) // 2
    early, late = body[:half], body[half:]
    states = collections.Counter(x[3] for x in early) & collections.Counter(x[3] for x in late)
    if not states or min(states.most_common(1)[0][1], 3) < 3:
        return "too short to judge", None
    state = states.most_common(1)[0][0]
    early = [x for x in early if x[3] == state]
    late = [x for x in late if x[3] == state]
    rss0, rss1 = statistics.median(x[1] for x in early), statistics.median(x[1] for x in late)
    fd0, fd1 = statistics.median(x[2] for x in early), statistics.median(x[2] for x in late)
    flat = rss1 <= rss0 * 1.10 + 1024 and fd1 <= fd0 + max(8, fd0 * 0.1)
    return ("flat" if flat else "NOT flat"), (rss0, rss1, fd0, fd1, late[-1][0] - early[0][0], state)


def report(s):
    L, U = s.ledger, s.users
    req, err = L.totals()
    out = {"duration_s": round(now() - s.t0, 1), "requests": req, "errors": err,
           "clean": {"requests": L.clean[0], "errors": L.clean[1]},
           "faults": {k: {"windows": s.faults_done[k], "requests": v[0], "errors": v[1]} for k, v in L.fault.items()},
           "faults_done": dict(s.faults_done), "skipped": s.skipped,
           "lost_users": U.lost_unexpected, "lost_with_killed_worker": U.lost_expected, "sticky_errors": U.sticky,
           "sessions": U.sessions, "sanitizer_lines": s.sanitizer, "unrecovered": dict(s.unrecovered)}
    ppm = lambda e, r: e * 1e6 / r if r else 0.0
    print("\n# ---- fault soak summary")
    print(f"# {out['duration_s']} s, {req} requests ({', '.join(f'{k} {v}' for k, v in sorted(L.kinds.items()))})")
    print(f"# clean windows: {L.clean[0]} requests, {L.clean[1]} errors = "
          f"{ppm(L.clean[1], L.clean[0]):.1f} per million (goal 0)")
    for k in sorted(L.fault):
        v = L.fault[k]
        print(f"# in {k} windows (x{s.faults_done[k]}): {v[0]} requests, {v[1]} errors = {ppm(v[1], v[0]):.1f} per million")
    for k, why in s.skipped.items():
        print(f"# {k}: skipped: {why}")
    print(f"# faults the pool did not recover from in time: "
          f"{', '.join(f'{k} (x{n})' for k, n in sorted(s.unrecovered.items())) or 'none'}")
    print(f"# users: {U.sessions} sessions; lost {U.lost_unexpected} (goal 0), {U.lost_expected} more with the "
          f"worker the soak killed under them (their state lived there); {U.sticky} counters that jumped")
    for line in U.unexpected:
        print(f"#   {line}")
    print("# commander resources (per commander process: the soak restarts it):")
    for pid, t, samples in s.incarnations:
        v, d = verdict(samples)
        out.setdefault("resources", []).append({"pid": pid, "samples": len(samples), "verdict": v, "detail": d})
        if d:
            print(f"#   pid {pid}: {len(samples)} samples, RSS {d[0]:.0f} -> {d[1]:.0f} kB, descriptors {d[2]:.0f} -> "
                  f"{d[3]:.0f} over {d[4]:.0f} s (medians of the early and late half at {d[5]}): {v}")
        else:
            print(f"#   pid {pid}: {len(samples)} samples: {v}")
    out["resources_verdict"] = out["resources"][-1]["verdict"] if out.get("resources") else "no samples"
    if s.sanitizer:
        print(f"# sanitizer reports in the commander's log: {s.sanitizer}")
        for l in s.log_notes:
            print(f"#   {l}")
    if L.reasons:
        print("# errors by window, load and reason:")
        for k, n in L.reasons.most_common(25):
            print(f"#   {n:6d}  {k}")
    if L.first_clean_errors:
        print("# first errors in clean windows:")
        for l in L.first_clean_errors:
            print(f"#   {l}")
    goal = L.clean[1] == 0 and U.lost_unexpected == 0 and U.sticky == 0 and s.sanitizer == 0 and not s.unrecovered
    print(f"# goal (0 errors in clean windows, 0 lost users, flat resources, every fault recovered): "
          f"{'met' if goal and out['resources_verdict'] == 'flat' else 'NOT met'}"
          f"{'' if out['resources_verdict'] == 'flat' else ' (resources: ' + out['resources_verdict'] + ')'}")
    if s.a.result:
        with open(s.a.result, "w") as f:
            json.dump(out, f, indent=1)


async def main(a):
    s = Soak(a)
    s.start_commander()
    if not await s.wait_log("the first commander", "Ready:", 60):
        print("fault-soak: the commander did not become ready", file=sys.stderr)
        return 1
    tasks = [asyncio.ensure_future(s.sampler()), asyncio.ensure_future(s.schedule())]
    tasks += [asyncio.ensure_future(guest(s)) for _ in range(a.guests)]
    h2s = [H2Transport(s) for _ in range(max(1, a.h2_users // 4))]
    # users arrive over the warm-up, under load, so that placement spreads them over the pool
    step = a.warmup * 0.8 / max(1, a.users + a.h2_users)
    for i in range(a.users + a.h2_users):
        t = H1Transport(s) if i % 3 != 2 or i // 3 >= a.h2_users else h2s[(i // 3) % len(h2s)]
        tasks.append(asyncio.ensure_future(s.user(t)))
        await asyncio.sleep(step)
    tasks += [asyncio.ensure_future(slow_client(s)) for _ in range(a.slow)]
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, lambda: setattr(s, "stopping", True))
    loop.add_signal_handler(signal.SIGTERM, lambda: setattr(s, "stopping", True))
    while not s.stopping:
        await asyncio.sleep(0.2)
    await asyncio.wait(tasks, timeout=REQUEST_TIMEOUT + 5)
    # stopped before the summary, so that what it says at exit (the sanitizers' reports) is counted
    s.commander.send_signal(signal.SIGTERM)
    try:
        await loop.run_in_executor(None, s.commander.wait, 60)
    except subprocess.TimeoutExpired:
        s.note("the commander did not stop within 60 s of SIGTERM; killing it")
        s.commander.kill()
    s.read_log()
    report(s)
    return 0


def parse():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--launcher", required=True, help="starts the commander in its cgroup (exec)")
    ap.add_argument("--config", required=True)
    ap.add_argument("--runtime-dir", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--cgroup-root", required=True, help="the cgroup v2 mount")
    ap.add_argument("--pool-cgroup", required=True, help="the commander's cgroup, below --cgroup-root")
    ap.add_argument("--bench-cgroup", required=True, help="the soak's parent cgroup (its CPU is not other%%)")
    ap.add_argument("--min-workers", type=int, default=1)
    ap.add_argument("--max-workers", type=int, default=4)
    ap.add_argument("--duration", type=float, default=600)
    ap.add_argument("--once", action="store_true", help="every fault once, then stop")
    ap.add_argument("--warmup", type=float, default=10)
    ap.add_argument("--gap", type=float, default=20, help="clean seconds between two fault windows")
    ap.add_argument("--settle", type=float, default=3, help="seconds a window stays open after recovery")
    ap.add_argument("--stop-seconds", type=float, default=4)
    ap.add_argument("--commander-kills", type=int, default=1, help="at most this many (0: every cycle)")
    ap.add_argument("--phase-timeout", type=float, default=90)
    ap.add_argument("--faults", default="commander-kill,compaction,growth,worker-kill,worker-stop,channel-garbage,"
                    "reload,memory")
    ap.add_argument("--users", type=int, default=24)
    ap.add_argument("--h2-users", type=int, default=12)
    ap.add_argument("--guests", type=int, default=2)
    ap.add_argument("--slow", type=int, default=2)
    ap.add_argument("--lost-leave", type=float, default=0.5, help="share of lost users that leave instead of "
                    "logging in again")
    ap.add_argument("--think-high", type=float, default=0.15)
    ap.add_argument("--think-low", type=float, default=2.0)
    ap.add_argument("--cpu-ms", type=int, default=5)
    ap.add_argument("--memory-limit-kb", type=int, default=131072)
    ap.add_argument("--sample-every", type=float, default=10)
    ap.add_argument("--log-max-bytes", type=int, default=64 << 20)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--result", default="")
    a = ap.parse_args()
    a.faults = [f for f in a.faults.split(",") if f]
    for f in a.faults:
        if not hasattr(Soak, "fault_" + f.replace("-", "_")):
            ap.error(f"unknown fault '{f}'")
    return a


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse())))
