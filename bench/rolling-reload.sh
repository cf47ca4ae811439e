#!/bin/bash
# SPDX-License-Identifier: MIT
# Rolling reloads under load: what users see while every worker of a pool is replaced, again and again.
# A benchmark, never a test: the figures are for people.
#
#   sudo bench/rolling-reload.sh [BUILD_DIR]        (default: the tree scripts/build.sh builds)
#
# A pool of BENCH_WORKERS (3) demo workers (cgroup backend, fast test settings: occupancy_interval =
# 200ms, smoothing_rows = 2) carries elastic-pool-loadgen: BENCH_USERS (60) virtual users logged in for
# the whole run (constant profile), each looping over /state (its counter must rise by exactly one per
# call: stickiness and state) and /work?cpu_ms=1, BENCH_THINK (50ms) think time. Meanwhile the script
# makes BENCH_RELOADS (20) rolling reloads, one after the other: it changes [worker] exec (--threads 4 and
# --threads 3 in turn), sends SIGHUP and waits on status.json until the rolling reload ended. One row per
# reload: how long it took, the workers and users moved, steal% (CPU the hypervisor took from this
# virtual machine, /proc/stat steal, in % of one CPU) and other% (CPU of processes outside the benchmark's
# cgroup, in % of one CPU); a row above ~5 of the two together was disturbed and is marked '!'.
# At the end: loadgen's summary (requests, errors, sticky errors, lost states, latency percentiles and the
# longest request), errors per million requests, and the longest move pause of the reloads' live moves
# from the commander's log ("Move N ... done after X": whole milliseconds from 1 ms on).
# Goal (issue 13): 0 errors per million; the reference this is compared with (the seed's per-instance
# queues) saw 1 connection reset per 40 reloads.
# Environment: BENCH_RELOADS (20), BENCH_GAP (2: seconds of plain load between two reloads, so that
# requests outside reloads are counted too), BENCH_USERS (60), BENCH_WORKERS (3), BENCH_THINK (50ms), BENCH_PORT
# (18290), BENCH_KEEP=DIR (keep logs and configurations). Stops by itself; everything it started is gone
# when it exits.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
reloads=${BENCH_RELOADS:-20}
users=${BENCH_USERS:-60}
workers=${BENCH_WORKERS:-3}
think=${BENCH_THINK:-50ms}
port=${BENCH_PORT:-18290}
gap=${BENCH_GAP:-2}
py=/usr/bin/python3

BENCH_NAME=rolling-reload
fail() { echo "$BENCH_NAME: $*" >&2; exit 1; } # bench-lib.sh defines it again, the same
[[ $(id -u) -eq 0 ]] || fail "run as root (cgroups)"
"$top/scripts/bootstrap.sh" >/dev/null
build=${1:-$("$top/scripts/build.sh")}
build=$(cd "$build" && pwd)
commander=$build/daemon/elastic-pool
worker=$build/demo/elastic-pool-demo-worker
loadgen=$build/demo/elastic-pool-loadgen
for b in "$commander" "$worker" "$loadgen"; do [[ -x $b ]] || fail "no $b: build the tree first"; done
! ss -Hltn "sport = :$port" | grep -q . || fail "port $port is taken (set BENCH_PORT)"

. "$top/bench/bench-lib.sh"
bench_setup

conf=$work/pool.conf
status=$work/run/status.json
log=$work/commander.log
write_conf() { # write_conf THREADS
        cat >"$conf" <<CONF
[worker]
exec = $worker --threads $1

[pool]
backend = cgroup
min_workers = $workers
max_workers = $workers
spawn_timeout = 10s

[policy]
occupancy_interval = 200ms
smoothing_rows = 2

[frontend]
listen = 127.0.0.1:$port
CONF
}
ended() { # rolling reloads ended so far, done or stopped
        "$py" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d.get("rolling_reloads_done", 0) + d.get("rolling_reloads_stopped", 0))' "$status" 2>/dev/null || echo -1
}

write_conf 4
make_cgroup "$cg/pool"
bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg/pool" "$commander" --group "bench$$" --config "$conf" \
        --runtime-dir "$work/run" --state-dir "$work/state" >"$log" 2>&1 &
pids+=("$!")
wait_log 30 "$log" "Ready: $workers workers routable" || fail "the pool did not become ready: $(tail -n 5 "$log")"

echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $workers workers, $users users, think $think"
bg "$work/loadgen.out" "$loadgen" --url "http://127.0.0.1:$port" --users "$users" --profile constant \
        --duration 3600s --think "$think" --mix 3:1 --cpu-ms 1 --max-errors 1000000000 \
        --max-sticky-errors 1000000000 --summary-file "$work/summary.txt" --quiet
lg=$last_pid
sleep 3 # the users log in and settle

printf '%-8s %10s %9s %8s %8s %s\n' reload ms replaced steal% other% ""
threads=4
moved_before=0
for i in $(seq "$reloads"); do
        threads=$((threads == 4 ? 3 : 4))
        before=$(ended)
        span=$(span_begin); c0=$(cg_usec)
        write_conf "$threads"
        kill -HUP "${pids[0]}"
        deadline=$((SECONDS + 120))
        until (($(ended) > before)); do
                ((SECONDS < deadline)) || fail "reload $i did not end within 120 s: $(grep 'Rolling reload' "$log" | tail -n 3)"
                sleep 0.02
        done
        read -r other steal flag secs < <(span_end "$span" $(($(cg_usec) - c0)))
        last=$(grep -E 'Rolling reload (done|stopped)' "$log" | tail -n 1 | sed 's/.*Rolling reload //')
        moved=$(count_log "$log" 'done after .*\(rolling reload')
        [[ $flag == '!' ]] || flag=""
        printf '%-8s %10.1f %9s %8s %8s %s  (%s; %d users moved)\n' "$i" "$(awk -v s="$secs" 'BEGIN { print s * 1000 }')" \
                "$(sed -n 's/.*: \([0-9]*\) workers replaced.*/\1/p' <<<"$last")" "$steal" "$other" "$flag" "$last" \
                $((moved - moved_before))
        moved_before=$moved
        sleep "$gap" # plain load between two reloads: the run's requests are not all reload-time ones
done
stop_pid "$lg" INT
echo "# loadgen:"
sed 's/^/#   /' "$work/summary.txt"
requests=$(sed -n 's/^summary: [0-9.]*s, \([0-9]*\) requests.*/\1/p' "$work/summary.txt")
errors=$(sed -n 's/^summary: .* requests ([0-9.]*\/s), \([0-9]*\) errors.*/\1/p' "$work/summary.txt")
if [[ -n $requests && -n $errors && $requests -gt 0 ]]; then
        echo "# errors per million requests during $reloads rolling reloads: $(awk -v e="$errors" -v r="$requests" 'BEGIN { printf "%.1f", e * 1e6 / r }') (goal 0)"
fi
longest=$(grep -oE 'done after [0-9.]+(us|ms|s) \(rolling reload' "$log" | sed -E 's/done after ([0-9.]+)(us|ms|s).*/\1 \2/' |
        awk '{ v = $1; if ($2 == "ms") v *= 1000; if ($2 == "s") v *= 1000000; if (v > m) m = v } END { printf "%.1f", m / 1000 }')
echo "# longest live-move pause of the reloads: $longest ms (the commander's log); the longest request is loadgen's max above"
