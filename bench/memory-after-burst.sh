#!/bin/bash
# SPDX-License-Identifier: MIT
# What a proxy keeps after a burst: elastic-pool beside nginx, HAProxy and nghttpx, in one run, in front of
# the SAME demo worker (bench/proxy-lib.sh sets them up as bench/proxy-compare.sh does). A benchmark, never
# a test: the figures are for people, and only figures from the same run compare.
#
#   sudo bench/memory-after-burst.sh [BUILD_DIR]      (default: the tree scripts/build.sh builds)
#
# Per round and per proxy, one after the other (the others idle meanwhile): the resident set (VmRSS) of
# each of its processes idle, the peak during one burst (VmHWM, reset right before it through
# /proc/PID/clear_refs), then 1, 5, 10 and 30 s after the burst's connections closed (h2load exits once
# they are closed). The burst: h2load -c64 -m32 -t2 for BENCH_BURST seconds, h2c with prior knowledge
# (BENCH_PROTOS="h2 h1" adds one of HTTP/1.1: h2load --h1 -c64). nginx and nghttpx are a master and a
# worker process: the worker (which holds the connections) is the figure, the master is printed apart.
# Each row also has other% and steal% over the whole row, burst and tail (bench-lib.sh: CPU of processes
# outside the benchmark, and what the hypervisor took, in % of one CPU; '!' when the two pass 5).
#
# "10s-start" is the RSS 10 s after the burst minus the process's idle RSS at the start of the run, before
# any burst (a later round's "idle" is what the earlier bursts left).
# The closing lines: per round, elastic-pool's RSS 10 s after the burst minus its idle RSS at the start
# (the goal of issue 14: within 2 MB in 10 s), and elastic-pool's RSS 10 s after over the best peer's (the smallest
# worker process of nginx, HAProxy and nghttpx in the same round: same-round pairs); then the medians over
# the rounds where elastic-pool's row and the best peer's were quiet.
#
# Environment: BENCH_ROUNDS (3), BENCH_BURST (5 s), BENCH_TAIL (30: the last sample, in seconds),
# BENCH_PROTOS (h2), BENCH_PIN (1: proxies on CPU 0, worker and h2load on CPU 1), BENCH_PORT_BASE (18180),
# BENCH_KEEP=DIR. About 40 s per proxy, round and protocol: 3 rounds of h2 take 8 minutes.
set -euo pipefail

rounds=${BENCH_ROUNDS:-3}
burst=${BENCH_BURST:-5}
tail_s=${BENCH_TAIL:-30}
protos=${BENCH_PROTOS:-h2}
samples=(1 5 10 "$tail_s")
goal_kib=2048
# shellcheck source=bench/proxy-lib.sh
. "$(dirname "$0")/proxy-lib.sh"
bench_build "${1:-}"

start_elastic_pool
start_nginx nginx-1 1 "$port_ngx_h1" "$port_ngx_h2"
start_haproxy "$port_hap_h1" "$port_hap_h2"
start_nghttpx "$port_ngh"
names=(elastic-pool nginx haproxy nghttpx)
declare -A port_h1=([elastic-pool]=$port_ep [nginx]=$port_ngx_h1 [haproxy]=$port_hap_h1 [nghttpx]=$port_ngh)
declare -A port_h2=([elastic-pool]=$port_ep [nginx]=$port_ngx_h2 [haproxy]=$port_hap_h2 [nghttpx]=$port_ngh)
for name in "${names[@]}"; do
        check_get "${port_h1[$name]}"
        check_get "${port_h2[$name]}" --http2-prior-knowledge
done
# the processes measured, "role:pid": nginx and nghttpx fork their workers after they listen
declare -A procs=([elastic-pool]="commander:$ep_pid" [haproxy]="process:$hap_pid"
        [nginx]="worker:$(pgrep -P "$ngx_pid" | head -n 1) master:$ngx_pid"
        [nghttpx]="worker:$(pgrep -P "$ngh_pid" | head -n 1) master:$ngh_pid")
for name in nginx nghttpx; do
        [[ ${procs[$name]} != "worker: "* ]] || bench_fail "no worker process of $name"
done

rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
declare -A start_idle # by pid: the RSS before the run's first burst
hwm() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
pids_of() { local p; for p in ${procs[$1]}; do echo -n "${p#*:} "; done; }

# row ROUND NAME PROTO: one burst against NAME, then the samples; prints a line per process and appends
# "round name role idle peak s1 s5 s10 stail other steal requests" to $work/rows.
row() {
        local round=$1 name=$2 proto=$3 port out=$work/$2-$3-$1.out p pid role span t_end lt own before after mb
        local -A idle
        [[ $proto == h1 ]] && port=${port_h1[$name]} || port=${port_h2[$name]}
        for p in ${procs[$name]}; do
                pid=${p#*:}
                idle[$pid]=$(rss "$pid")
                [[ -n ${start_idle[$pid]:-} ]] || start_idle[$pid]=${idle[$pid]}
                echo 5 >"/proc/$pid/clear_refs" # VmHWM from here on
        done
        # shellcheck disable=SC2046
        before=$(cpu_ticks $(pids_of "$name") "${worker_pids[@]}") span=$(span_begin)
        local args=(-c64 -m32 -t2)
        [[ $proto == h1 ]] && args=(--h1 -c64 -m1 -t2)
        lt=$({ TIMEFORMAT='%3U %3S'; time "${on_load[@]}" h2load "${args[@]}" -D"$burst" "http://127.0.0.1:$port/" >"$out"; } 2>&1)
        t_end=$(date +%s%N)
        local -A peak sampled
        for p in ${procs[$name]}; do pid=${p#*:}; peak[$pid]=$(hwm "$pid"); done
        for s in "${samples[@]}"; do
                local wait_ns=$((t_end + s * 1000000000 - $(date +%s%N)))
                ((wait_ns <= 0)) || sleep "$(awk -v n="$wait_ns" 'BEGIN { printf "%.3f", n / 1e9 }')"
                for p in ${procs[$name]}; do pid=${p#*:}; sampled[$pid]+="$(rss "$pid") "; done
        done
        # shellcheck disable=SC2046
        after=$(cpu_ticks $(pids_of "$name") "${worker_pids[@]}")
        own=$(awk -v b="$before" -v a="$after" -v lt="$lt" -v hz="$hz" 'BEGIN { split(b, B, " "); split(a, A, " ")
                split(lt, L, " "); printf "%.0f", ((A[1] + A[2] - B[1] - B[2]) / hz + L[1] + L[2]) * 1e6 }')
        read -r other steal mark _ < <(span_end "$span" "$own")
        [[ $mark == '!' ]] || mark=""
        local n
        n=$(awk '/^requests:/ { print $8 }' "$out")
        for p in ${procs[$name]}; do
                role=${p%%:*} pid=${p#*:}
                echo "$round $name $role ${start_idle[$pid]} ${peak[$pid]} ${sampled[$pid]}$other $steal $n" >>"$work/rows"
                # idle peak s1 s5 s10 stail 10s-start, in MB
                read -ra mb < <(awk -v k="${idle[$pid]} ${peak[$pid]} ${sampled[$pid]}" -v start="${start_idle[$pid]}" 'BEGIN {
                        n = split(k, v, " ")
                        for (i = 1; i <= n; i++) printf "%.1f ", v[i] / 1024
                        printf "%+.1f\n", (v[5] - start) / 1024 }')
                printf '%-5s %-13s %-9s %-5s %7s %7s %7s %7s %7s %7s %8s %7s%-1s %6s %9s\n' "$round" "$name" "$role" "$proto" \
                        "${mb[@]}" "$other" "$mark" "$steal" "$n"
        done
}

echo "# memory-after-burst: $(uname -r), $(nproc) cpus, $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
src=$(awk -F= '/^CMAKE_HOME_DIRECTORY:/ { print $2 }' "$build/CMakeCache.txt" 2>/dev/null || true) # the build's own tree
src=${src:-$bench_top}
rev=$(git -C "$src" rev-parse --short HEAD 2>/dev/null) && { git -C "$src" diff --quiet HEAD -- daemon || rev+=" +local changes"; }
echo "# elastic-pool ${rev:-?} ($build, from $src), $(nginx -v 2>&1 | sed 's/^nginx version: //'), HAProxy $(haproxy -v | awk 'NR == 1 { print $3 }'), $(nghttpx --version | awk '{ print $2 }')"
echo "# behind every proxy: the same demo worker $sock (--threads 2); burst: h2load -c64 -m32 -t2 -D$burst (h2c),"
echo "#   h2load --h1 -c64 -t2 -D$burst (HTTP/1.1); RSS in MB (MiB): idle, peak during the burst, then s seconds after it"
echo
for proto in $protos; do
        : >"$work/rows"
        printf '%-5s %-13s %-9s %-5s %7s %7s %7s %7s %7s %7s %8s %8s %6s %9s\n' round proxy process proto idle peak \
                "${samples[@]/%/s}" "10s-start" other% steal% requests
        for ((round = 1; round <= rounds; round++)); do
                for name in "${names[@]}"; do row "$round" "$name" "$proto"; done
        done
        echo
        echo "# $proto: elastic-pool's RSS 10 s after the burst: over its idle RSS at the start (goal: <= 2 MB), and over the best"
        echo "#   peer's (the smallest worker process of nginx, HAProxy, nghttpx) in the same round"
        awk -v limit="$BENCH_DISTURBED" -v goal="$goal_kib" -v proto="$proto" '
                $3 == "master" { next }
                { q = ($10 + $11 <= limit) }
                $2 == "elastic-pool" { e[$1] = $8; ei[$1] = $4; eq[$1] = q; next }
                { if (!($1 in b) || $8 < b[$1]) { b[$1] = $8; bn[$1] = $2; bq[$1] = q } }
                END { for (r = 1; r in e; r++) {
                        d = (eq[r] && bq[r]) ? "-" : "!"
                        printf "%.4f %.1f %s %-3s round %d: %+.1f MB over idle (%s)   %.1f MB / %s %.1f MB = %.2fx%s\n",
                                e[r] / b[r], (e[r] - ei[r]) / 1024, d, proto, r, (e[r] - ei[r]) / 1024,
                                e[r] - ei[r] <= goal ? "goal met" : "goal MISSED", e[r] / 1024, bn[r], b[r] / 1024,
                                e[r] / b[r], d == "!" ? "   ! disturbed" : "" } }' "$work/rows" >"$work/pairs-$proto"
        cut -d' ' -f4- "$work/pairs-$proto"
        read -r m n am an < <(awk '{ print $1, $3 }' "$work/pairs-$proto" | pairs_median)
        read -r g _ ga _ < <(awk '{ print $2, $3 }' "$work/pairs-$proto" | pairs_median)
        if ((n > 0)); then
                echo "$proto median of $n undisturbed round(s): $g MB over idle; ${m}x the best peer"
        else
                echo "$proto: no undisturbed round; median of all $an: $ga MB over idle; ${am}x the best peer (disturbed, rerun)"
        fi
        echo
done
report_commander_log
