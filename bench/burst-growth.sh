#!/bin/bash
# SPDX-License-Identifier: MIT
# Growth under real overload, and none for a spike: elastic-pool (default policy, its burst path on)
# beside uWSGI's cheaper mode with the busyness algorithm, same load, same run. A benchmark, never a
# test: the figures are for people.
#
#   sudo bench/burst-growth.sh [BUILD_DIR]        (default: the tree scripts/build.sh builds)
#
# The load is the issue's: elastic-pool-loadgen, BENCH_USERS (48) logged-in users, /work?cpu_ms=5 only
# (--mix 0:1), no think time, profile BENCH_PROFILE (constant: every user from the first moment; ramp:
# 0 -> BENCH_USERS over a third of the run). Each round has four rows, each on a fresh server:
#   elastic-pool  overload   the commander (cgroup backend, [policy] defaults: 5 s reports, 6 averaged,
#                            burst_window 1.5 s, burst_queue 8), min_workers 1, max_workers 4, demo
#                            workers with one executor thread each (a worker = one request at a time,
#                            as a uWSGI worker process is)
#   uwsgi         overload   uwsgi --master --processes 4 --cheaper 1 --cheaper-initial 1
#                            --cheaper-algo busyness (its other cheaper settings at their defaults;
#                            BENCH_UWSGI_EXTRA adds options), bench/burst-growth-app.py doing the same
#                            5 ms of CPU per request
#   elastic-pool  spike      the same users for BENCH_SPIKE (loadgen --duration 1s), then nothing
#   uwsgi         spike      the same
# Overload rows print when the 2nd, 3rd and 4th worker arrived, in seconds after the load began
# (elastic-pool: its "Worker wN is routable" line; uWSGI: the master's children, polled every 20 ms),
# "-" when not within BENCH_WINDOW (45) seconds. Spike rows print the workers spawned within BENCH_AFTER
# (15) seconds after the spike began, how long the load generator ran (logins and the last answers
# included: the queue a spike leaves takes time to drain) and, for elastic-pool, how long its workers
# stayed saturated as its journal says (">=" when the burst path spawned). Each row also prints steal% (CPU the hypervisor took, /proc/stat
# steal) and other% (CPU of processes outside the benchmark's cgroup), in % of one CPU; '!' marks a row
# where they add up past 5: disturbed, its figures not to be trusted. The closing lines give the
# medians over the undisturbed rows and, per round where both rows are undisturbed, elastic-pool's time
# of the 2nd worker over uWSGI's. Goal (issue 14): 2nd <= 2 s, 4th <= 6 s, 0 workers for a 1-s spike.
# Environment: BENCH_ROUNDS (3), BENCH_USERS (48), BENCH_PROFILE (constant), BENCH_SPIKE (1s), BENCH_WINDOW (45),
# BENCH_AFTER (15), BENCH_PORT (18390), BENCH_UWSGI_EXTRA, BENCH_KEEP=DIR. Stops by itself; everything
# it started is gone when it exits.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${BENCH_ROUNDS:-3}
users=${BENCH_USERS:-48}
profile=${BENCH_PROFILE:-constant}
spike_len=${BENCH_SPIKE:-1s}
window=${BENCH_WINDOW:-45}
after=${BENCH_AFTER:-15}
port=${BENCH_PORT:-18390}
app=$top/bench/burst-growth-app.py

BENCH_NAME=burst-growth
fail() { echo "$BENCH_NAME: $*" >&2; exit 1; } # bench-lib.sh defines it again, the same
[[ $(id -u) -eq 0 ]] || fail "run as root (cgroups)"
"$top/scripts/bootstrap.sh" --bench >/dev/null
build=${1:-$("$top/scripts/build.sh")}
build=$(cd "$build" && pwd)
commander=$build/daemon/elastic-pool
worker=$build/demo/elastic-pool-demo-worker
loadgen=$build/demo/elastic-pool-loadgen
for b in "$commander" "$worker" "$loadgen" /usr/bin/uwsgi; do [[ -x $b ]] || fail "no $b"; done
[[ -e /usr/lib/uwsgi/plugins/python3_plugin.so ]] || fail "no uWSGI python3 plugin (uwsgi-plugin-python3)"
[[ -e /usr/lib/uwsgi/plugins/cheaper_busyness_plugin.so ]] || fail "no uWSGI cheaper_busyness plugin (uwsgi-core)"
! ss -Hltn "sport = :$port" | grep -q . || fail "port $port is taken (set BENCH_PORT)"

. "$top/bench/bench-lib.sh"

bench_setup

# ---- the row's clock and its disturbance (bench-lib.sh's span: the run's cgroup is the row's own CPU) ----
row_start() { span=$(span_begin); c0=$(cg_usec); }
# sets steal, other, flag ('!' or empty) for the time since row_start
row_end() {
        read -r other steal flag _ <<<"$(span_end "$span" $(($(cg_usec) - c0)))"
        [[ $flag == '!' ]] || flag=""
}

# ---- the servers ----
ep_start() { # a fresh commander; sets ep_pid, ep_log
        local n=$1 conf=$work/ep$1.conf
        ep_log=$work/ep$n.log
        cat >"$conf" <<CONF
[worker]
exec = $worker --threads 1

[pool]
backend = cgroup
min_workers = 1
max_workers = 4
spawn_timeout = 10s

[frontend]
listen = 127.0.0.1:$port
CONF
        make_cgroup "$cg/ep$n"
        bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg/ep$n" "$commander" --group "bench$$x$n" \
                --config "$conf" --runtime-dir "$work/run$n" --state-dir "$work/state$n" >"$ep_log" 2>&1 &
        ep_pid=$!
        pids+=("$ep_pid")
        wait_log 30 "$ep_log" 'Ready: 1 workers routable' || fail "elastic-pool did not start: $(tail -n 5 "$ep_log")"
        sleep 2 # its first reports: the row starts from a pool at rest
}
uw_start() { # a fresh uWSGI; sets uw_pid, uw_log
        local n=$1
        uw_log=$work/uw$n.log
        # shellcheck disable=SC2086
        bg "$uw_log" /usr/bin/uwsgi --plugins python3,cheaper_busyness --http-socket "127.0.0.1:$port" --wsgi-file "$app" --master \
                --processes 4 --cheaper 1 --cheaper-initial 1 --cheaper-algo busyness --die-on-term --disable-logging \
                ${BENCH_UWSGI_EXTRA:-}
        uw_pid=$last_pid
        local deadline=$((SECONDS + 30))
        until curl -s --max-time 1 -o /dev/null "http://127.0.0.1:$port/login?user=probe"; do
                ((SECONDS < deadline)) || fail "uWSGI did not start: $(tail -n 5 "$uw_log")"
                sleep 0.1
        done
        ! grep -q 'unable to find requested cheaper algorithm' "$uw_log" || fail "uWSGI lacks the busyness algorithm"
        sleep 2
}
uw_workers() { # the master's children now
        local c=""
        # the file has no newline at its end: read fails at EOF with the line read
        read -r c <"/proc/$uw_pid/task/$uw_pid/children" 2>/dev/null || :
        wc -w <<<"$c"
}

# seconds since the load began of a log line's "HH:MM:SS.mmm" stamp
since_t0() { awk -v t="$1" -v z="$2" 'BEGIN { split(t, a, ":"); s = a[1] * 3600 + a[2] * 60 + a[3]; d = s - z; if (d < -43200) d += 86400; printf "%.2f", d }'; }
t0_of_day() { date +%H:%M:%S.%N | awk -F: '{ printf "%.3f", $1 * 3600 + $2 * 60 + $3 }'; }

ran() { sed -nE 's/^summary: ([0-9.]+s),.*/\1/p' "$1" 2>/dev/null || true; } # loadgen's run time
load() { # load NAME DURATION
        bg "$work/$1.out" "$loadgen" --url "http://127.0.0.1:$port" --users "$users" --profile "$profile" \
                --duration "$2" --think 0 --mix 0:1 --cpu-ms 5 --max-errors 1000000000 --max-sticky-errors 1000000000 \
                --summary-file "$work/$1.summary" --quiet
        lg=$last_pid
}

declare -A results
printf '# %s CPUs, load average %s; %s users, profile %s, /work?cpu_ms=5, no think time\n' "$(nproc)" \
        "$(cut -d' ' -f1-3 /proc/loadavg)" "$users" "$profile"
printf '%-6s %-13s %-9s %7s %7s %7s %8s %8s %s\n' round server row 2nd_s 3rd_s 4th_s steal% other% ""
rows=$work/rows.txt
: >"$rows"

for r in $(seq "$rounds"); do
        # -- elastic-pool, overload
        ep_start "o$r"
        row_start
        z=$(t0_of_day)
        load "epo$r" "$((window + 5))s"
        wait_log "$window" "$ep_log" 'Worker w4 is routable' || true
        stop_pid "$lg" INT
        row_end
        t=()
        for k in 2 3 4; do
                stamp=$(grep -m1 -E "Worker w$k is routable" "$ep_log" | cut -d' ' -f1 || true)
                t+=("$([[ -n $stamp ]] && since_t0 "$stamp" "$z" || echo -)")
        done
        printf '%-6s %-13s %-9s %7s %7s %7s %8s %8s %s\n' "$r" elastic-pool overload "${t[@]}" "$steal" "$other" "$flag"
        results[ep,$r]="${t[0]} $flag"
        echo "elastic-pool ${t[*]} $flag" >>"$rows"
        stop_pid "$ep_pid" TERM

        # -- uWSGI, overload
        uw_start "o$r"
        row_start
        load "uwo$r" "$((window + 5))s"
        start=$(date +%s%N)
        t=(- - -)
        while (($(date +%s%N) - start < window * 1000000000)); do
                n=$(uw_workers)
                for k in 2 3 4; do
                        if ((n >= k)) && [[ ${t[k - 2]} == - ]]; then
                                t[k - 2]=$(awk -v d=$(($(date +%s%N) - start)) 'BEGIN { printf "%.2f", d / 1e9 }')
                        fi
                done
                [[ ${t[2]} != - ]] && break
                sleep 0.02
        done
        stop_pid "$lg" INT
        row_end
        printf '%-6s %-13s %-9s %7s %7s %7s %8s %8s %s\n' "$r" uwsgi overload "${t[@]}" "$steal" "$other" "$flag"
        results[uw,$r]="${t[0]} $flag"
        echo "uwsgi ${t[*]} $flag" >>"$rows"
        stop_pid "$uw_pid" TERM

        # -- elastic-pool, a 1-s spike
        ep_start "s$r"
        row_start
        load "eps$r" "$spike_len"
        wait_log 10 "$work/eps$r.summary" '^summary:' || true
        sleep "$after" # the spike is over: what matters is what happens in the seconds after it
        row_end
        spawned=$(count_log "$ep_log" 'Worker w[2-9][0-9]* is routable')
        streak=$(sed -nE 's/.*Burst over after ([0-9.]+[a-z]+),.*/\1/p' "$ep_log" | tail -n 1)
        grep -q 'sustained, a worker is wanted' "$ep_log" && streak=">=$(sed -nE 's/.*Scale-up \(burst path\).* for ([0-9.]+[a-z]+) \|.*/\1/p' "$ep_log" | head -n 1)"
        printf '%-6s %-13s %-9s %7s %7s %7s %8s %8s %s  (load ran %s, saturated %s)\n' "$r" elastic-pool "spike" "$spawned" "" "" \
                "$steal" "$other" "$flag" "$(ran "$work/eps$r.summary")" "${streak:-never}"
        stop_pid "$ep_pid" TERM

        # -- uWSGI, a 1-s spike
        uw_start "s$r"
        row_start
        load "uws$r" "$spike_len"
        most=1
        start=$SECONDS
        while ((SECONDS - start < after)); do
                n=$(uw_workers)
                ((n > most)) && most=$n
                sleep 0.02
        done
        row_end
        printf '%-6s %-13s %-9s %7s %7s %7s %8s %8s %s  (load ran %s)\n' "$r" uwsgi "spike" "$((most - 1))" "" "" "$steal" \
                "$other" "$flag" "$(ran "$work/uws$r.summary")"
        stop_pid "$uw_pid" TERM
done

# medians of each column over the undisturbed overload rows ("-" counts as later than any time); n is set
# before the first row, which an unset n (mawk: "" in a subscript) would file where med() never looks
for server in elastic-pool uwsgi; do
        awk -v s="$server" 'BEGIN { n = 0 } $1 == s && NF == 4 { for (k = 2; k <= 4; k++) v[k, n] = ($k == "-" ? 1e9 : $k); n++ }
                function med(k,   i, j, a, t) { for (i = 0; i < n; i++) a[i] = v[k, i]
                        for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                        return n == 0 ? "n/a" : (a[int((n - 1) / 2)] >= 1e9 ? "-" : a[int((n - 1) / 2)]) }
                END { printf "# median of %d undisturbed overload rows, %s: 2nd %s s, 3rd %s s, 4th %s s\n", n, s, med(2), med(3), med(4) }' "$rows"
done
echo "# spike rows: workers spawned within ${after}s of a 1-s spike (goal 0); overload: seconds after the load began"
for r in $(seq "$rounds"); do
        read -r e ef <<<"${results[ep,$r]}"
        read -r u uf <<<"${results[uw,$r]}"
        if [[ -z ${ef:-} && -z ${uf:-} && $e != - && $u != - ]]; then
                echo "# round $r: 2nd worker elastic-pool / uwsgi = $(awk -v a="$e" -v b="$u" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }') ($e s / $u s)"
        else
                echo "# round $r: no ratio (a row disturbed or a worker missing)"
        fi
done
echo "# elastic-pool's growth decisions (every row):"
{ grep -hE 'Scale-up \(burst path\)|Scale-up: spawning' "$work"/ep*.log 2>/dev/null || true; } | grep -v 'under min_workers' |
        cut -c1-160 | sed 's/^/#   /' | head -n 12 || true
