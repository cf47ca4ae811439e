#!/bin/bash
# SPDX-License-Identifier: MIT
# Fault soak: a demo pool under mixed load while faults are injected on a schedule; what users see in
# the clean windows and in the faults' own windows, and whether the commander's memory and descriptors
# stay flat. A benchmark for people: it prints a verdict but fails on none (the short CTest run,
# tests/integration/fault-soak-short.sh, asserts).
#
#   sudo bench/fault-soak.sh [BUILD_DIR]        (default: the tree scripts/build.sh builds)
#
# The commander (backend cgroup, in a fresh cgroup v2 parent removed afterwards; occupancy_interval
# 200ms, smoothing_rows 3, cpu_wall_cores 0.1 so that a tenth of a core fills a worker, min 1 and
# max SOAK_MAX_WORKERS workers) runs the demo worker. bench/fault-soak.py drives the load (logged-in users
# over HTTP/1.1 and h2c whose /state counters must go on by exactly one, uploads, guests, slow clients)
# and, one after the other with SOAK_GAP seconds of clean load between them, in a cycle, the faults:
# commander-kill (SIGKILL, restart, re-adoption), compaction (load low, until min_workers), growth (load
# high, until max_workers), worker-kill (SIGKILL), worker-stop (SIGSTOP for SOAK_STOP_SECONDS, SIGCONT),
# channel-garbage (a process in a worker's cgroup writes junk to channel.sock), reload (SIGHUP with a
# changed [worker] environment: a rolling reload), memory (a worker over memory_limit: skipped where
# cgroup v2 has no memory controller, as on a hybrid host). Each fault has a window: from just before it is injected to recovery plus SOAK_SETTLE
# seconds. Every SOAK_SAMPLE seconds a line with the commander's RSS and descriptors, the pool, the rate.
#
# Environment: SOAK_DURATION (600 s), SOAK_ONCE=1 (every fault once, then stop: the short run),
# SOAK_FAULTS (comma list, in order; default all), SOAK_COMMANDER_KILLS (1: only in the first cycle, so that
# one commander lives long enough to judge its resources; 0: every cycle), SOAK_PHASE_TIMEOUT (90: growth
# and compaction wait this long for max_workers / min_workers), SOAK_GAP (20), SOAK_SETTLE (3), SOAK_STOP_SECONDS (4),
# SOAK_WARMUP (10), SOAK_SAMPLE (10), SOAK_USERS (24, HTTP/1.1), SOAK_H2_USERS (12), SOAK_MAX_WORKERS (4),
# SOAK_LOST_LEAVE (0.5: the share of users lost with a killed worker that leave without logging out),
# SOAK_PORT (18295), SOAK_RESULT=FILE (the summary as JSON), SOAK_LOG_MAX (64 MiB: the commander's log is
# cut back past it), BENCH_KEEP=DIR (keep logs and configuration). Stops by itself; everything it started
# is gone when it exits.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
port=${SOAK_PORT:-18295}
py=/usr/bin/python3

BENCH_NAME=fault-soak
fail() { echo "$BENCH_NAME: $*" >&2; exit 1; } # bench-lib.sh defines it again, the same
[[ $(id -u) -eq 0 ]] || fail "run as root (cgroups)"
"$top/scripts/bootstrap.sh" >/dev/null
build=${1:-$("$top/scripts/build.sh")}
build=$(cd "$build" && pwd)
commander=$build/daemon/elastic-pool
worker=$build/demo/elastic-pool-demo-worker
for b in "$commander" "$worker"; do [[ -x $b ]] || fail "no $b: build the tree first"; done
! ss -Hltn "sport = :$port" | grep -q . || fail "port $port is taken (set SOAK_PORT)"

. "$top/bench/bench-lib.sh"
bench_setup

conf=$work/pool.conf
log=$work/commander.log
make_cgroup "$cg/pool"
memory_limit=""
max_workers=${SOAK_MAX_WORKERS:-4}
grep -qw memory "$cg/pool/cgroup.controllers" && memory_limit="memory_limit = 128M"
cat >"$conf" <<CONF
[worker]
exec = $worker --threads 2
environment = SOAK_GEN=1
cpu_wall_cores = 0.1
$memory_limit

[pool]
backend = cgroup
min_workers = 1
max_workers = $max_workers
spawn_timeout = 10s
stop_timeout = 3s
adopt_timeout = 10s

[policy]
occupancy_interval = 200ms
smoothing_rows = 3

[frontend]
listen = 127.0.0.1:$port
# the users who leave without logging out leave the commander's table too (a user left is idle, the
# others make a request every few seconds): over hours they would pile up, and the resource verdict
# would measure them
user_expiry = 30s
CONF
# the driver restarts the commander after killing it: the same command, in the same cgroup, the log
# appended to (O_APPEND, so that the driver can cut it back while it runs)
cat >"$work/start-commander" <<SH
#!/bin/bash
echo \$\$ >"$cg/pool/cgroup.procs" || exit 1
exec "$commander" --group "soak$$" --config "$conf" --runtime-dir "$work/run" --state-dir "$work/state" >>"$log" 2>&1
SH
chmod +x "$work/start-commander"

echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); build $build"
span=$(span_begin); c0=$(cg_usec)
rc=0
nice -n 5 "$py" "$top/bench/fault-soak.py" --port "$port" --launcher "$work/start-commander" --config "$conf" \
        --runtime-dir "$work/run" --log "$log" --max-workers "$max_workers" --cgroup-root "$cgroot" --pool-cgroup "${cg#"$cgroot"}/pool" --bench-cgroup "${cg#"$cgroot"}" \
        --duration "${SOAK_DURATION:-600}" ${SOAK_ONCE:+--once} \
        --faults "${SOAK_FAULTS:-commander-kill,compaction,growth,worker-kill,worker-stop,channel-garbage,reload,memory}" \
        --commander-kills "${SOAK_COMMANDER_KILLS:-1}" --phase-timeout "${SOAK_PHASE_TIMEOUT:-90}" \
        --gap "${SOAK_GAP:-20}" --settle "${SOAK_SETTLE:-3}" --stop-seconds "${SOAK_STOP_SECONDS:-4}" \
        --warmup "${SOAK_WARMUP:-10}" --sample-every "${SOAK_SAMPLE:-10}" --users "${SOAK_USERS:-24}" \
        --h2-users "${SOAK_H2_USERS:-12}" --lost-leave "${SOAK_LOST_LEAVE:-0.5}" \
        --log-max-bytes "${SOAK_LOG_MAX:-67108864}" \
        ${SOAK_RESULT:+--result "$SOAK_RESULT"} || rc=$?
read -r other steal mark _ <<<"$(span_end "$span" $(($(cg_usec) - c0)))"
printf '# over the run: steal %s%%, other %s%% of one CPU%s\n' "$steal" "$other" "$([[ $mark == '!' ]] && echo ' !: disturbed')"
exit $rc
