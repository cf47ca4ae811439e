#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: the fault soak (bench/fault-soak.sh) in short: a demo pool under mixed load (users over
# HTTP/1.1 and h2c whose counters must go on, uploads, guests, slow clients) goes through every fault once
# (commander SIGKILL and restart, compaction, growth, worker SIGKILL, worker SIGSTOP/SIGCONT, junk on
# channel.sock from a worker's cgroup, a rolling reload; a worker over its memory limit where cgroup v2
# has the memory controller). Outside the faults' announced windows no request fails, no user loses its
# state anywhere but on the worker the soak killed under it, no counter jumps, the pool recovers from
# every fault in time (a rolling reload ends even though the users lost with the killed worker left
# without logging out: SOAK_LOST_LEAVE=1), and the sanitizers (ASan build) report nothing. The soak
# makes and removes its own cgroup parent.
. "$(dirname "$0")/lib.sh"
need_root
cgroup2_root >/dev/null || skip "no cgroup v2 hierarchy on this host"
"$EP_PYTHON" -c 'import h2' 2>/dev/null || skip "needs python3-h2"

result=$EP_TMP/result.json
rc=0
SOAK_ONCE=1 SOAK_LOST_LEAVE=1 SOAK_GAP=3 SOAK_SETTLE=2 SOAK_WARMUP=8 SOAK_SAMPLE=2 SOAK_MAX_WORKERS=3 \
        SOAK_PHASE_TIMEOUT=20 SOAK_PORT=$(free_port) SOAK_RESULT=$result \
        "$EP_SOURCE_DIR/bench/fault-soak.sh" "$EP_BUILD_DIR" >"$EP_TMP/soak.log" 2>&1 || rc=$?
grep -v '^sample' "$EP_TMP/soak.log" | sed 's/^/  /'
((rc == 0)) || fail "the soak exited with $rc"
[[ -s $result ]] || fail "the soak wrote no result"
"$EP_PYTHON" - "$result" <<'PY' || fail "the soak missed its goal (summary above)"
import json, sys
r = json.load(open(sys.argv[1]))
want = {"commander-kill", "compaction", "growth", "worker-kill", "worker-stop", "channel-garbage", "reload",
        "memory"} - set(r["skipped"])
bad = []
missing = want - set(r["faults_done"])
if missing:
    bad.append(f"faults not run: {sorted(missing)}")
if r["clean"]["requests"] < 1000:
    bad.append(f"only {r['clean']['requests']} requests in clean windows")
if r["clean"]["errors"]:
    bad.append(f"{r['clean']['errors']} errors in clean windows")
if r["lost_users"] or r["sticky_errors"]:
    bad.append(f"{r['lost_users']} users lost, {r['sticky_errors']} counters jumped")
if r["unrecovered"]:
    bad.append(f"faults the pool did not recover from in time: {r['unrecovered']}")
if r["sanitizer_lines"]:
    bad.append(f"{r['sanitizer_lines']} sanitizer lines in the log")
for b in bad:
    print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
