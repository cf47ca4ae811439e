#!/bin/bash
# SPDX-License-Identifier: MIT
# elastic-pool's front end beside nginx, HAProxy and nghttpx, in one run, in front of the SAME demo worker:
# requests/s, p50/p99 and the proxy's CPU time per request, for HTTP/1.1 (wrk) and h2c with prior
# knowledge (h2load), every row of every round printed, then elastic-pool / best peer ratios from
# same-round pairs of undisturbed rows. A benchmark, never a test: the figures are
# for people, and only the ratios between peers measured in the same run mean anything.
#
#   sudo bench/proxy-compare.sh [BUILD_DIR]        (default: the tree scripts/build.sh builds)
#   sudo BENCH_BASELINE=OTHER_BUILD_DIR bench/proxy-compare.sh [BUILD_DIR]
#                                                  also elastic-pool of another build, side by side
#
# What is compared:
#   * elastic-pool spawns the worker itself (backend=cgroup, in a fresh cgroup v2 parent of this run,
#     min_workers = max_workers = BENCH_WORKERS, default 1). nginx, HAProxy and nghttpx forward to the very
#     same Unix socket <runtime dir>/wN.sock over keep-alive HTTP/1.1 upstream connections.
#   * elastic-pool sends logged-out traffic (all of this benchmark's) to its reception only, so nginx and
#     the peers are pointed at the reception's socket only: every proxy forwards to the same ONE worker.
#   * The peers do the per-request work elastic-pool does (it re-serialises every request and adds
#     X-Forwarded-For, X-Forwarded-Proto and X-Request-Id): nginx sets the same three headers ($request_id),
#     HAProxy adds them (option forwardfor, set-header, a unique-id), nghttpx adds the first two and a fixed
#     X-Request-Id (it has no per-request id without mruby; see proxy-lib.sh). No access log anywhere; keep-alive
#     request limits lifted on both sides (nginx's default of 1000 would make it reconnect; the others never
#     do); up to BENCH_CONNS keep-alive upstream connections each, as elastic-pool's upstream_connections.
#   * CPUs on this 2-core machine (BENCH_PIN=1, the default): each proxy runs alone on CPU 0 (one event
#     loop, like the commander's one sd-event loop: nginx worker_processes 1, HAProxy nbthread 1, nghttpx
#     --single-thread); the load generator and the worker share CPU 1. The
#     "direct" row is wrk against a second demo worker on TCP with the same CPU 1 layout and no proxy:
#     the ceiling of the CPU-1 side. "nginx-auto" is nginx with worker_processes auto and "haproxy-2t"
#     HAProxy with nbthread 2, both unpinned (both cores): never counted as the best peer, but compared
#     with elastic-pool's one loop for req/s on 2 cores (the question behind a [frontend] threads option:
#     does a second loop pay on this machine, where the load generator and the worker need CPU too?).
#   * cpu us/req: utime + stime of every process of the proxy (/proc/PID/stat), read right before and
#     after the measured run, over the requests completed in it; "worker" is the same for the worker
#     and "load" for wrk/h2load. "other%" is CPU time that processes outside the benchmark took during
#     the run, in % of one CPU (a build or a test suite running beside it), and "steal%" the time the
#     hypervisor took from this virtual machine's CPUs (/proc/stat): above 5 together the row was
#     disturbed, and the script marks it with '!' (bench-lib.sh's span_begin/span_end).
#   * Every row of every round is printed as it is measured, in an order that turns by one proxy each
#     round (a drift within a round then falls on a different proxy each time); the table after them has
#     each row's medians over the rounds (with how many of its rounds were disturbed), and the ratios are
#     taken per round from that round's rows (elastic-pool / the best undisturbed peer of the round) and
#     summed up as the median over the rounds where elastic-pool's row and at least one peer's were quiet.
#
# Environment: BENCH_DURATION (10 s), BENCH_WARMUP (2 s), BENCH_ROUNDS (1; rounds run interleaved), BENCH_CONNS (64, wrk), BENCH_THREADS (2), BENCH_H2_CLIENTS
# (16) x BENCH_H2_STREAMS (4) for h2load, BENCH_WORKERS (1), BENCH_PIN (1), BENCH_NGINX_AUTO (1), BENCH_HAPROXY_2T (1),
# BENCH_PORT_BASE (18180; twelve ports from it), BENCH_DISTURBED (5: other% + steal% over it marks a row), BENCH_KEEP=DIR (keep logs and configurations),
# BENCH_PEERS ("nginx haproxy nghttpx": the single-loop peers measured and compared with, at least one),
# BENCH_PROTOS ("h1 h2"; the "direct" row comes with h1) -- fewer of them make a quick A/B of two builds,
# BENCH_BASELINE=BUILD_DIR: a second commander, of that build, measured in every round beside this one
# ("elastic-pool@base", its own worker of this build's demo worker binary, the same CPUs), with the CPU
# per request of the two compared round by round (same-round pairs) and as a median of those ratios.
# BENCH_BASELINE_FRONTEND="KEY = VALUE": more keys for the baseline's [frontend] section (one line each);
# with BENCH_BASELINE set to this very build, an A/B of one setting, e.g. "io_uring = yes".
# BENCH_RATE=N: every row at a fixed N requests/s in all (h2load --rps per connection, --h1 for HTTP/1.1,
# wrk's connections), below every proxy's capacity, instead of as fast as each proxy goes. Under wrk the
# proxies run at about the same req/s (the worker and the load generator on CPU 1 set it), so a cheaper
# proxy is idle more of the time, sleeps and wakes more often and finds fewer ready sockets a wake-up,
# and its CPU per request may carry more of that cost than a busier peer's. At a fixed rate every proxy
# is well under its capacity, and CPU per request compares the work per request at the same load. req/s
# then only says that every proxy kept up; nginx-auto and haproxy-2t are left out unless asked for.
set -euo pipefail

duration=${BENCH_DURATION:-10}
warmup=${BENCH_WARMUP:-2}
rounds=${BENCH_ROUNDS:-1}
read -r -a peers <<<"${BENCH_PEERS:-nginx haproxy nghttpx}" # the single-loop peers the ratios compare with
read -r -a protos <<<"${BENCH_PROTOS:-h1 h2}"
for x in "${peers[@]}"; do [[ $x =~ ^(nginx|haproxy|nghttpx)$ ]] || { echo "BENCH_PEERS: unknown peer '$x'" >&2; exit 2; }; done
for x in "${protos[@]}"; do [[ $x =~ ^(h1|h2)$ ]] || { echo "BENCH_PROTOS: h1 or h2, not '$x'" >&2; exit 2; }; done
((${#peers[@]} > 0 && ${#protos[@]} > 0)) || { echo "BENCH_PEERS and BENCH_PROTOS need one entry each" >&2; exit 2; }
baseline=${BENCH_BASELINE:-}
baseline_frontend=${BENCH_BASELINE_FRONTEND:-}
[[ -z $baseline_frontend || -n $baseline ]] || { echo "BENCH_BASELINE_FRONTEND needs BENCH_BASELINE" >&2; exit 2; }
rate=${BENCH_RATE:-0}
[[ $rate =~ ^[0-9]+$ ]] || { echo "BENCH_RATE: requests per second, not '$rate'" >&2; exit 2; }
multi_default=$((rate > 0 ? 0 : 1))
nginx_auto=${BENCH_NGINX_AUTO:-$multi_default}
haproxy_2t=${BENCH_HAPROXY_2T:-$multi_default}
# shellcheck source=bench/proxy-lib.sh
. "$(dirname "$0")/proxy-lib.sh"
bench_build "${1:-}"

start_elastic_pool
start_nginx nginx-1 1 "$port_ngx_h1" "$port_ngx_h2"
ngx1_pid=$ngx_pid
if [[ $nginx_auto == 1 ]]; then
        start_nginx nginx-auto auto "$port_ngxa_h1" "$port_ngxa_h2" float
        ngxa_pid=$ngx_pid
fi
start_haproxy "$port_hap_h1" "$port_hap_h2"
hap1_pid=$hap_pid
if [[ $haproxy_2t == 1 ]]; then
        start_haproxy "$port_hap2_h1" "$port_hap2_h2" haproxy-2t 2 float
        hap2_pid=$hap_pid
fi
start_nghttpx "$port_ngh"
start_direct
[[ -n $baseline ]] && start_baseline "$baseline" "$baseline_frontend"

names=(elastic-pool "${peers[@]}")
declare -A port_h1=([elastic-pool]=$port_ep [nginx]=$port_ngx_h1 [haproxy]=$port_hap_h1 [nghttpx]=$port_ngh
        [nginx-auto]=$port_ngxa_h1 [haproxy-2t]=$port_hap2_h1)
declare -A port_h2=([elastic-pool]=$port_ep [nginx]=$port_ngx_h2 [haproxy]=$port_hap_h2 [nghttpx]=$port_ngh
        [nginx-auto]=$port_ngxa_h2 [haproxy-2t]=$port_hap2_h2)
((nginx_auto)) && names+=(nginx-auto)
((haproxy_2t)) && names+=(haproxy-2t)
declare -A wpids
for name in "${names[@]}"; do wpids[$name]="${worker_pids[*]}"; done
if [[ -n $baseline ]]; then
        names+=(elastic-pool@base)
        port_h1[elastic-pool@base]=$port_base_ep port_h2[elastic-pool@base]=$port_base_ep
        wpids[elastic-pool@base]="${base_worker_pids[*]}"
fi
for name in "${names[@]}"; do
        check_get "${port_h1[$name]}"
        check_get "${port_h2[$name]}" --http2-prior-knowledge
done
check_get "$port_direct"
# nginx forks its workers after it listens: read its process tree only now that it has answered.
declare -A ppids=([elastic-pool]=$ep_pid [nginx]="$(proc_tree "$ngx1_pid")" [haproxy]=$hap1_pid
        [nghttpx]="$(proc_tree "$ngh_pid")")
((nginx_auto)) && ppids[nginx-auto]="$(proc_tree "$ngxa_pid")"
((haproxy_2t)) && ppids[haproxy-2t]=$hap2_pid
[[ -n $baseline ]] && ppids[elastic-pool@base]=$base_pid
declare -A res

# load PROTO PORT SECONDS OUT [extra args]: wrk for h1, h2load for h2 (and for h1 at a fixed rate, with
# --h1: wrk has none), on the load CPU.
load() {
        local proto=$1 port=$2 secs=$3 out=$4
        shift 4
        if [[ $proto == h1 && $rate -eq 0 ]]; then
                "${on_load[@]}" wrk -t"$threads" -c"$conns" -d"${secs}s" "$@" "http://127.0.0.1:$port/" >"$out"
                return
        fi
        h2load_shape "$proto" "$rate"
        "${on_load[@]}" h2load "${h2load_args[@]}" -t"$threads" -D"$secs" "$@" "http://127.0.0.1:$port/" >"$out"
}

# measure NAME PROTO PORT "PROXY PIDS" "WORKER PIDS": a warm-up, then the measured run with CPU time read
# around it; appends "rps p50 p99 cpu user sys worker load other requests errors" to res[NAME/PROTO].
measure() {
        local name=$1 proto=$2 port=$3 proxy_pids=$4 wpids=$5 out=$work/$1-$2.out
        local before after wbefore wafter span lt n rps p50 p99 errors row own
        load "$proto" "$port" "$warmup" /dev/null
        # shellcheck disable=SC2086
        before=$(cpu_ticks $proxy_pids) wbefore=$(cpu_ticks $wpids) span=$(span_begin)
        if [[ $proto == h1 && $rate -eq 0 ]]; then
                lt=$({ TIMEFORMAT='%3U %3S'; time load h1 "$port" "$duration" "$out" --latency; } 2>&1)
        else
                lt=$({ TIMEFORMAT='%3U %3S'; time load "$proto" "$port" "$duration" "$out" --log-file="$out.log"; } 2>&1)
        fi
        # shellcheck disable=SC2086
        after=$(cpu_ticks $proxy_pids) wafter=$(cpu_ticks $wpids)
        # the benchmark's own CPU in the row: the proxy, the worker and the load generator
        own=$(awk -v b="$before" -v a="$after" -v wb="$wbefore" -v wa="$wafter" -v lt="$lt" -v hz="$hz" 'BEGIN {
                split(b, B, " "); split(a, A, " "); split(wb, WB, " "); split(wa, WA, " "); split(lt, L, " ")
                printf "%.0f", ((A[1] + A[2] - B[1] - B[2] + WA[1] + WA[2] - WB[1] - WB[2]) / hz + L[1] + L[2]) * 1e6 }')
        read -r other steal _ < <(span_end "$span" "$own")
        if [[ $proto == h1 && $rate -eq 0 ]]; then
                n=$(awk '/requests in/ { print $1 }' "$out")
                rps=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
                read -r p50 p99 < <(awk 'function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0;
                        if (v ~ /s$/) return v * 1000; return v }
                        $1 == "50%" { a = ms($2) } $1 == "99%" { b = ms($2) } END { print a, b }' "$out")
                errors=$(awk '/Non-2xx/ { e += $NF } /Socket errors/ { gsub(",", ""); e += $4 + $6 + $8 + $10 }
                        END { print e + 0 }' "$out")
        else
                n=$(awk '/^requests:/ { print $8 }' "$out") # succeeded
                rps=$(awk '/^finished in/ { print $4 }' "$out")
                read -r p50 p99 < <(cut -f3 "$out.log" | sort -n | awk '{ v[NR] = $1 } END {
                        if (NR == 0) { print "nan nan"; exit }
                        i = int(NR * 0.50); if (i < 1) i = 1; j = int(NR * 0.99); if (j < 1) j = 1
                        printf "%.3f %.3f\n", v[i] / 1000, v[j] / 1000 }')
                errors=$(awk '/^requests:/ { print $10 + $12 + $14 }' "$out")
                rm -f "$out.log"
        fi
        cat "$out" >>"$work/raw-$name-$proto.txt"
        row=$(awk -v n="$n" -v rps="$rps" -v p50="$p50" -v p99="$p99" -v err="$errors" -v hz="$hz" \
                -v b="$before" -v a="$after" -v wb="$wbefore" -v wa="$wafter" -v lt="$lt" -v other="$other" \
                -v steal="$steal" 'BEGIN {
                split(b, B, " "); split(a, A, " "); split(wb, WB, " "); split(wa, WA, " "); split(lt, L, " ")
                pu = (A[1] - B[1]) / hz; ps = (A[2] - B[2]) / hz; w = (WA[1] + WA[2] - WB[1] - WB[2]) / hz
                l = L[1] + L[2]
                printf "%.0f %.3f %.3f %.2f %.2f %.2f %.2f %.2f %.1f %.1f %d %d\n", rps, p50, p99, (pu + ps) * 1e6 / n,
                        pu * 1e6 / n, ps * 1e6 / n, w * 1e6 / n, l * 1e6 / n, other, steal, n, err }')
        res[$name/$proto]+=$row$'\n'
        print_row "$round" "$name" "$proto" "$row"
}

# print_row ROUND NAME PROTO "ROW": one line of the table (ROUND "median" for the medians).
print_row() {
        local rps p50 p99 cpu u s w l o st n err mark=""
        read -r rps p50 p99 cpu u s w l o st n err <<<"$4"
        [[ $2 == direct ]] && cpu=- u=- s=-
        disturbed "$o" "$st" && mark="!"
        printf '%-6s %-17s %-5s %8s %7s %7s %10s %6s %6s %7s %6s %6s %6s %9s %6s\n' "$1" "$2" "$3" "$rps" "$p50" \
                "$p99" "$cpu" "$u" "$s" "$w" "$l" "$o$mark" "$st" "$n" "$err"
}
print_header() {
        printf '%-6s %-17s %-5s %8s %7s %7s %10s %6s %6s %7s %6s %6s %6s %9s %6s\n' round proxy proto "req/s" "p50 ms" \
                "p99 ms" "cpu us/req" user sys worker load other% steal% requests errors
}

median_row() { # the per-column median of the rows given on stdin (errors and requests: the sum)
        awk '{ for (i = 1; i <= NF; i++) v[i, NR] = $i; nf = NF } END {
                for (i = 1; i <= nf; i++) {
                        for (r = 1; r <= NR; r++) a[r] = v[i, r]
                        for (r = 2; r <= NR; r++) { x = a[r]; for (k = r - 1; k >= 1 && a[k] > x; k--) a[k + 1] = a[k]; a[k + 1] = x }
                        if (i >= 11) { s = 0; for (r = 1; r <= NR; r++) s += a[r]; m = s }
                        else m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
                        printf "%s%s", m, i < nf ? " " : "\n"
                } }'
}

echo "# proxy-compare: $(uname -r), $(nproc) cpus, $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# elastic-pool $(git -C "$bench_top" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$bench_top" diff --quiet HEAD -- daemon 2>/dev/null || echo ' +local changes') ($build), $(nginx -v 2>&1 | sed 's/^nginx version: //'), HAProxy $(haproxy -v | awk 'NR == 1 { print $3 }'), h2load $(h2load --version | awk '{ print $2 }')"
echo "# behind every proxy: the same demo worker $sock (--threads 2), elastic-pool's reception, which"
echo "#   takes all logged-out traffic ($n_workers worker(s) spawned); keep-alive HTTP/1.1 upstream over that Unix socket"
if [[ $pin == 1 ]]; then
        echo "# CPUs: proxy alone on CPU 0; load generator and worker on CPU 1 (taskset); nginx-auto and haproxy-2t unpinned"
else
        echo "# CPUs: nothing pinned (BENCH_PIN=0)"
fi
if ((rate > 0)); then
        h2load_shape h1 "$rate"
        echo "# load at a fixed $rate requests/s (BENCH_RATE): h2load ${h2load_args[*]} -t$threads -D$duration (HTTP/1.1);"
        h2load_shape h2 "$rate"
        echo "#   h2load ${h2load_args[*]} -t$threads -D$duration (h2c); p50/p99 from h2load's --log-file;"
        echo "#   ${warmup}s warm-up before each; GET / (36-byte body); $rounds round(s); req/s only says whether a proxy kept up"
else
        echo "# load: wrk -t$threads -c$conns -d${duration}s --latency (HTTP/1.1); h2load -c$h2_clients -m$h2_streams -t$threads -D$duration"
        echo "#   (h2c prior knowledge; p50/p99 from its --log-file); ${warmup}s warm-up before each; GET / (36-byte body); $rounds round(s)"
fi
if [[ -n $baseline ]]; then
        base_src=$(awk -F= '/^CMAKE_HOME_DIRECTORY:/ { print $2 }' "$base_build/CMakeCache.txt" 2>/dev/null || true)
        echo "# elastic-pool@base: $(git -C "${base_src:-/nonexistent}" rev-parse --short HEAD 2>/dev/null || echo '?') ($base_build), its own worker, the same CPUs${baseline_frontend:+; its [frontend] adds: $baseline_frontend}"
fi

echo
print_header
for ((round = 1; round <= rounds; round++)); do
        for proto in "${protos[@]}"; do
                # the order turns by one each round: no proxy is always the first of a round, or always
                # measured right after the same other one
                for ((i = 0; i < ${#names[@]}; i++)); do
                        name=${names[(i + round - 1) % ${#names[@]}]}
                        [[ $proto == h1 ]] && port=${port_h1[$name]} || port=${port_h2[$name]}
                        measure "$name" "$proto" "$port" "${ppids[$name]}" "${wpids[$name]}"
                done
        done
        [[ " ${protos[*]} " != *" h1 "* ]] || measure direct h1 "$port_direct" "" "$direct_pid"
done

echo
echo "# medians over the $rounds round(s) (errors and requests: sums); 'quiet' counts the undisturbed rounds"
print_header
declare -A med
for proto in "${protos[@]}"; do
        for name in "${names[@]}" direct; do
                [[ -n ${res[$name/$proto]:-} ]] || continue
                med[$name/$proto]=$(printf '%s' "${res[$name/$proto]}" | median_row)
                quiet=$(printf '%s' "${res[$name/$proto]}" | while read -r _ _ _ _ _ _ _ _ o st _; do
                        disturbed "$o" "$st" || echo; done | wc -l)
                print_row "quiet$quiet" "$name" "$proto" "${med[$name/$proto]}"
        done
done

echo
echo "# ratios: elastic-pool / the best single-loop peer of the same round (of ${peers[*]}: nginx worker_processes 1,"
echo "#   HAProxy nbthread 1, nghttpx --single-thread), among that round's undisturbed peer rows; a round where"
echo "#   elastic-pool's row or every peer's was disturbed is marked '!' and left out of the medians"
echo "#   goals: req/s >= 1.00x and p99 <= 1.20x (issue 4); CPU per request <= 0.80x (issue 14)"
for proto in "${protos[@]}"; do
        : >"$work/ratios-$proto"
        for ((round = 1; round <= rounds; round++)); do
                for name in elastic-pool "${peers[@]}"; do
                        echo "$name $(printf '%s' "${res[$name/$proto]}" | sed -n "${round}p")"
                done | awk -v proto="$proto" -v round="$round" -v limit="$BENCH_DISTURBED" '
                        { q = ($10 + $11 <= limit) }
                        $1 == "elastic-pool" { er = $2; ep = $4; ec = $5; eq = q; next }
                        { any = 1; if (q) quiet = 1
                          r[$1] = $2; p[$1] = $4; c[$1] = $5; qq[$1] = q }
                        END {
                                # the best among the quiet peers; among all of them when none was quiet
                                for (n in r) if (qq[n] || !quiet) {
                                        if (r[n] > br) { br = r[n]; brn = n }
                                        if (bp == "" || p[n] < bp) { bp = p[n]; bpn = n }
                                        if (bc == "" || c[n] < bc) { bc = c[n]; bcn = n } }
                                mark = (eq && quiet) ? "-" : "!"
                                printf "%.3f %.3f %.3f %s ", er / br, ep / bp, ec / bc, mark
                                printf "%-3s round %d: req/s %.2fx (best: %s %d)   p99 %.2fx (best: %s %.3f ms)   cpu/req %.2fx (best: %s %.2f us)%s\n",
                                        proto, round, er / br, brn, br, ep / bp, bpn, bp, ec / bc, bcn, bc,
                                        mark == "!" ? "   ! disturbed" : "" }' >>"$work/ratios-$proto"
        done
        cut -d' ' -f5- "$work/ratios-$proto"
        for col in 1:req/s 2:p99 3:cpu/req; do
                read -r m n am an < <(awk -v c="${col%%:*}" '{ print $c, $4 }' "$work/ratios-$proto" | pairs_median)
                if ((n > 0)); then
                        printf '%-3s %-7s median of %d undisturbed round(s): %.2fx\n' "$proto" "${col#*:}" "$n" "$m"
                else
                        printf '%-3s %-7s no undisturbed round; median of all %d: %.2fx (disturbed, rerun)\n' "$proto" \
                                "${col#*:}" "$an" "$am"
                fi
        done
done

multi=()
((nginx_auto)) && multi+=(nginx-auto)
((haproxy_2t)) && multi+=(haproxy-2t)
if ((${#multi[@]} > 0)); then
        echo
        echo "# req/s on 2 cores: elastic-pool's one loop (pinned to CPU 0) / ${multi[*]} (unpinned) of the same"
        echo "#   round; above 1.00x a second front-end loop has nothing to win here (the worker and the load"
        echo "#   generator need the other CPU)"
        for proto in "${protos[@]}"; do
                for name in "${multi[@]}"; do
                        paste -d' ' <(printf '%s' "${res[elastic-pool/$proto]}") <(printf '%s' "${res[$name/$proto]}") |
                                awk -v proto="$proto" -v name="$name" -v limit="$BENCH_DISTURBED" '{
                                        d = ($9 + $10 > limit || $21 + $22 > limit)
                                        printf "%.4f %s %-3s round %d: req/s %d / %s %d = %.2fx%s\n", $1 / $13, d ? "!" : "-",
                                                proto, NR, $1, name, $13, $1 / $13, d ? "   ! disturbed" : "" }' >"$work/multi-$name-$proto"
                        cut -d' ' -f3- "$work/multi-$name-$proto"
                        read -r m n am an < <(cut -d' ' -f1-2 "$work/multi-$name-$proto" | pairs_median)
                        if ((n > 0)); then
                                printf '%-3s / %-10s median of %d undisturbed round(s): %.2fx\n' "$proto" "$name" "$n" "$m"
                        else
                                printf '%-3s / %-10s no undisturbed round; median of all %d: %.2fx (disturbed, rerun)\n' \
                                        "$proto" "$name" "$an" "$am"
                        fi
                done
        done
fi

if [[ -n $baseline ]]; then
        echo
        echo "# this build / the baseline (elastic-pool / elastic-pool@base), CPU per request: each round's pair, then"
        echo "#   the median of those ratios (a disturbed round moves one ratio, not the median)"
        for proto in "${protos[@]}"; do
                paste -d' ' <(printf '%s' "${res[elastic-pool/$proto]}") <(printf '%s' "${res[elastic-pool@base/$proto]}") |
                        awk -v proto="$proto" -v limit="$BENCH_DISTURBED" '{ d = ($9 + $10 > limit || $21 + $22 > limit)
                                printf "%.4f %s %s round %d: %.2f / %.2f us = %.3f   (other%% %s / %s, steal%% %s / %s)%s\n",
                                        $4 / $16, d ? "!" : "-", proto, NR, $4, $16, $4 / $16, $9, $21, $10, $22,
                                        d ? "  ! disturbed" : "" }' >"$work/base-$proto"
                cut -d' ' -f3- "$work/base-$proto"
                read -r m n am an < <(cut -d' ' -f1-2 "$work/base-$proto" | pairs_median)
                if ((n > 0)); then
                        awk -v p="$proto" -v m="$m" -v n="$n" 'BEGIN { printf "%s median of %d undisturbed round(s): %.3f (%+.1f %%)\n", p, n, m, (m - 1) * 100 }'
                else
                        echo "$proto: no undisturbed round; median of all $an: $am (disturbed, rerun)"
                fi
        done
fi

echo
report_commander_log
grep -hvE '^\s*$' "$work"/nginx-*/error.log 2>/dev/null | head -n 5 | sed 's/^/# nginx: /' || true
grep -vE '^\s*$|^\[NOTICE\]' "$work/haproxy.out" | head -n 5 | sed 's/^/# haproxy: /' || true
