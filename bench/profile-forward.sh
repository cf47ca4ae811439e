#!/bin/bash
# SPDX-License-Identifier: MIT
# Where elastic-pool's forwarding time goes, under the same wrk (or h2load) load as bench/proxy-compare.sh,
# with nginx, HAProxy and nghttpx in front of the same worker as the yardstick. Prints:
#   1. system calls per request of each proxy (perf stat on the syscalls:sys_enter_* tracepoints; strace -c
#      where perf has no tracepoints, which slows the proxy but keeps the counts per request);
#   2. epoll: waits per request and the mean number of events one wait returns (perf record on
#      sys_exit_epoll_wait; skipped without perf), and waits per request at a fixed rate below every
#      proxy's capacity (BENCH_PROFILE_RATE, 20000 requests/s; h2load --rps), where none is saturated;
#   3. elastic-pool's CPU profile: perf record -g on cpu-clock (the software clock also works where the PMU
#      is not exposed), top symbols by self time and the system calls by inclusive time; where perf cannot
#      record, callgrind on a short run (instructions, user space only) with BENCH_PROFILE_TOOL=callgrind.
# A diagnosis tool for the code owners, never a test.
#
#   sudo bench/profile-forward.sh [BUILD_DIR]
#   4. CPU per request and req/s of each proxy against the number of wrk connections (BENCH_PROFILE_SWEEP,
#      "4 16 64 256"; empty to skip): a cost per wake-up that grows with the ready descriptors shows here.
# Environment: BENCH_PROFILE_PROTO (h1 | h2), BENCH_PROFILE_DURATION (5 s), BENCH_PROFILE_TOOL (perf |
# callgrind; default perf when `perf record -e cpu-clock` works), BENCH_PROFILE_CALLGRAPH (fp | dwarf: whole
# user-space stacks and an inclusive list of elastic-pool's functions), BENCH_PROFILE_SWEEP,
# BENCH_PROFILE_RATE, plus proxy-lib.sh's BENCH_PIN, BENCH_CONNS, BENCH_PORT_BASE, BENCH_KEEP.
set -euo pipefail

proto=${BENCH_PROFILE_PROTO:-h1}
secs=${BENCH_PROFILE_DURATION:-5}
sweep=${BENCH_PROFILE_SWEEP-4 16 64 256}
sweep_secs=${BENCH_PROFILE_SWEEP_DURATION:-3}
# epoll waits per request once more at this fixed rate (requests/s, all connections together; 0 skips)
rate=${BENCH_PROFILE_RATE:-20000}
[[ $rate =~ ^[0-9]+$ ]] || { echo "BENCH_PROFILE_RATE: requests per second, not '$rate'" >&2; exit 1; }
# fp: frame pointers, cheap, but the user-space stacks of our -O2 build (no frame pointers) are cut short;
# dwarf: whole stacks from copies of the stack (bigger files), and the inclusive list below has meaning.
callgraph=${BENCH_PROFILE_CALLGRAPH:-fp}
[[ $callgraph == fp || $callgraph == dwarf ]] || { echo "BENCH_PROFILE_CALLGRAPH: fp or dwarf, not '$callgraph'" >&2; exit 1; }
[[ $callgraph == dwarf ]] && callgraph=dwarf,16384
# shellcheck source=bench/proxy-lib.sh
. "$(dirname "$0")/proxy-lib.sh"
bench_build "${1:-}"

perf_ok=0
perf_tp=0
if command -v perf >/dev/null; then
        perf record -q -e cpu-clock -o "$work/probe.data" true >/dev/null 2>&1 && perf_ok=1
        perf stat -e raw_syscalls:sys_enter true >/dev/null 2>&1 && perf_tp=1
fi
tool=${BENCH_PROFILE_TOOL:-$( ((perf_ok)) && echo perf || echo callgrind)}

# load PORT SECONDS OUT: the protocol's load generator on the load CPU; prints the requests completed.
load() { # (conns_now, proto_now: the sweep's connections and protocol instead of the run's)
        if [[ ${proto_now:-$proto} == h1 ]]; then
                "${on_load[@]}" wrk -t"$threads" -c"${conns_now:-$conns}" -d"$2s" "http://127.0.0.1:$1/" >"$3"
                awk '/requests in/ { print $1 }' "$3"
        else
                "${on_load[@]}" h2load -c"$h2_clients" -m"$h2_streams" -t"$threads" -D"$2" "http://127.0.0.1:$1/" >"$3"
                awk '/^requests:/ { print $8 }' "$3"
        fi
}

# noted_load NAME PORT SECONDS OUT: load() against NAME, measured as a row: sets n (requests) and
# note[NAME] ("other%[!]/steal%": what processes outside the benchmark and the hypervisor took meanwhile,
# bench-lib.sh). The row's own CPU: NAME's processes, the worker, and this script's children (the load
# generator, perf) that ended in it.
declare -A note
noted_load() {
        local span b a c0 c1 o st m
        # shellcheck disable=SC2086
        b=$(cpu_ticks ${ppids[$1]} "${worker_pids[@]}") span=$(span_begin)
        children_usec c0
        load "$2" "$3" "$4" >"$work/n"
        n=$(<"$work/n")
        # shellcheck disable=SC2086
        a=$(cpu_ticks ${ppids[$1]} "${worker_pids[@]}")
        wait_bg
        children_usec c1
        read -r o st m _ < <(span_end "$span" "$(awk -v b="$b" -v a="$a" -v c=$((c1 - c0)) -v hz="$hz" 'BEGIN {
                split(b, B, " "); split(a, A, " "); printf "%.0f", (A[1] + A[2] - B[1] - B[2]) / hz * 1e6 + c }')")
        [[ $m == '!' ]] || m=""
        note[$1]="$o$m/$st"
}
wait_bg() { [[ -z ${st_pid:-} ]] || wait "$st_pid" || true; st_pid=""; }

# syscalls NAME PORT "PIDS": per-request counts of each system call into $work/sc-NAME.txt ("name count").
syscalls() {
        local name=$1 port=$2 pids=$3 n p list
        list=$(echo "$pids" | tr ' ' ',')
        if ((perf_tp)); then
                perf stat -x, -e 'syscalls:sys_enter_*' -p "$list" -o "$work/sc-$name.raw" -- sleep $((secs + 1)) &
                local st=$!
                sleep 0.3
                n=$(load "$port" "$secs" "$work/sc-$name.load")
                wait "$st" || true
                awk -F, -v n="$n" '$1 ~ /^[0-9]+$/ && $1 > 0 { sub("syscalls:sys_enter_", "", $3); printf "%s %.3f\n", $3, $1 / n }' \
                        "$work/sc-$name.raw" >"$work/sc-$name.txt"
        else
                local args=()
                for p in $pids; do args+=(-p "$p"); done
                strace -c -f -qq -o "$work/sc-$name.raw" "${args[@]}" &
                local st=$!
                sleep 0.5
                n=$(load "$port" "$secs" "$work/sc-$name.load")
                kill -INT "$st"
                wait "$st" || true
                awk -v n="$n" '$1 ~ /^[0-9.]+$/ && NF >= 5 { c = $4; s = $NF; printf "%s %.3f\n", s, c / n }' \
                        "$work/sc-$name.raw" >"$work/sc-$name.txt"
        fi
        echo "$n" >"$work/sc-$name.n"
}

# epoll_waits "PIDS" RAW CMD...: CMD (a load that prints the requests it completed) with only the epoll
# wait tracepoints counted (perf stat into RAW); prints "waits/request requests". With every
# syscalls:sys_enter_* tracepoint on (syscalls()), each system call is slowed enough that a proxy's batches
# grow and its waits per request read low: elastic-pool's h1 read 0.33 there against 0.80 here, with the
# front end's own counters (/metrics frontend_wakeups_total) agreeing with the latter.
epoll_waits() {
        local list st n raw=$2
        list=$(echo "$1" | tr ' ' ',')
        shift 2
        perf stat -x, -e 'syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_epoll_pwait2' \
                -p "$list" -o "$raw" -- sleep $((secs + 1)) &
        st=$!
        sleep 0.3
        n=$("$@")
        wait "$st" || true
        awk -F, -v n="$n" '$1 ~ /^[0-9]+$/ { c += $1 } END { printf "%.3f %d\n", c / n, n }' "$raw"
}

# rate_load PORT OUT: h2load at $rate requests/s over the run's connections (--h1 for HTTP/1.1), below every
# proxy's capacity: no proxy is saturated, so none has its ready sockets pile up while it works. Prints
# the requests completed.
rate_load() {
        h2load_shape "$proto" "$rate"
        "${on_load[@]}" h2load "${h2load_args[@]}" -t"$threads" -D"$secs" "http://127.0.0.1:$1/" >"$2"
        awk '/^requests:/ { print $8 }' "$2"
}

# epoll_stats NAME PORT "PIDS": "waits/request mean-events-per-wait share-of-zero-timeout-waits" (perf
# record on four tracepoints: lighter than syscalls(), heavier than epoll_waits()).
epoll_stats() {
        local name=$1 port=$2 pids=$3 n list
        list=$(echo "$pids" | tr ' ' ',')
        perf record -q -e 'syscalls:sys_enter_epoll_wait' -e 'syscalls:sys_exit_epoll_wait' \
                -e 'syscalls:sys_enter_epoll_pwait' -e 'syscalls:sys_exit_epoll_pwait' \
                -p "$list" -o "$work/ew-$name.data" -- sleep 2.3 >/dev/null 2>&1 &
        local st=$!
        sleep 0.3
        n=$(load "$port" 2 "$work/ew-$name.load")
        wait "$st" || true
        perf script -i "$work/ew-$name.data" 2>/dev/null | awk -v n="$n" '
                function hex(s,   i, c, v) { v = 0; s = tolower(s); sub(/^0x/, "", s)
                        for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c }
                        return v }
                /sys_enter_epoll/ { calls++; if ($0 ~ /timeout: 0x0+( |,|$)/) zero++ }
                /sys_exit_epoll/ { r = $NF; if (r !~ /^0x/) next; ev += hex(r); exits++ }
                END { if (!exits) { print "- - -"; exit }
                      printf "%.2f %.1f %.0f%%\n", calls / n, ev / exits, 100 * zero / calls }'
}

start_elastic_pool
start_nginx nginx-1 1 "$port_ngx_h1" "$port_ngx_h2"
ngx1_pid=$ngx_pid
start_haproxy "$port_hap_h1" "$port_hap_h2"
start_nghttpx "$port_ngh"
check_get "$port_ep"
check_get "$port_ngx_h1"
check_get "$port_hap_h1"
check_get "$port_ngh"
names=(elastic-pool nginx haproxy nghttpx)
if [[ $proto == h1 ]]; then
        declare -A proto_port=([elastic-pool]=$port_ep [nginx]=$port_ngx_h1 [haproxy]=$port_hap_h1 [nghttpx]=$port_ngh)
else
        declare -A proto_port=([elastic-pool]=$port_ep [nginx]=$port_ngx_h2 [haproxy]=$port_hap_h2 [nghttpx]=$port_ngh)
fi
declare -A port_h1=([elastic-pool]=$port_ep [nginx]=$port_ngx_h1 [haproxy]=$port_hap_h1 [nghttpx]=$port_ngh)
declare -A ppids=([elastic-pool]=$ep_pid [nginx]="$(proc_tree "$ngx1_pid")" [haproxy]=$hap_pid
        [nghttpx]="$(proc_tree "$ngh_pid")")

echo "# profile-forward: $(uname -r), $(nproc) cpus, $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# elastic-pool $(git -C "$bench_top" rev-parse --short HEAD 2>/dev/null || echo '?') ($build); $proto load as in proxy-compare.sh, ${secs}s per step"
echo "# same worker behind every proxy; proxies on CPU 0, load and worker on CPU 1 (BENCH_PIN=$pin)"

# ---- 1. system calls per request ----
for name in "${names[@]}"; do
        load "${proto_port[$name]}" 1 /dev/null >/dev/null # warm-up
        syscalls "$name" "${proto_port[$name]}" "${ppids[$name]}"
done
echo
echo "## system calls per request ($( ((perf_tp)) && echo 'perf stat, syscalls:sys_enter_*' || echo 'strace -c'))"
echo "#  every call traced slows each one: the proxies batch more than untraced, and their epoll waits per"
echo "#  request read low here (section 2 counts them with only the epoll tracepoints on)"
printf '%-22s' syscall
for name in "${names[@]}"; do printf ' %12s' "$name"; done
echo
cat "$work"/sc-*.txt | awk '{ print $1 }' | sort -u | while read -r sc; do
        printf '%-22s' "$sc"
        for name in "${names[@]}"; do
                v=$(awk -v s="$sc" '$1 == s { print $2 }' "$work/sc-$name.txt")
                printf ' %12s' "${v:--}"
        done
        echo
done | awk '{ for (i = 2; i <= NF; i++) if ($i != "-" && $i >= 0.01) { print; next } }' | sort -k2 -rn
printf '%-22s' total
for name in "${names[@]}"; do printf ' %12.2f' "$(awk '{ s += $2 } END { print s }' "$work/sc-$name.txt")"; done
echo

# ---- 2. epoll ----
if ((perf_tp)); then
        echo
        echo "## epoll: waits per request (perf stat on the epoll tracepoints alone), then per wait the events"
        echo "##   returned (mean) and the share with timeout 0 (perf record, which counts fewer waits per request)"
        for name in "${names[@]}"; do
                read -r c _ < <(epoll_waits "${ppids[$name]}" "$work/ec-$name.raw" \
                        load "${proto_port[$name]}" "$secs" "$work/ec-$name.load")
                read -r w e z < <(epoll_stats "$name" "${proto_port[$name]}" "${ppids[$name]}")
                printf '%-13s %6s waits/req   (record: %6s waits/req %7s events/wait %6s zero-timeout)\n' \
                        "$name" "$c" "$w" "$e" "$z"
        done
        if ((rate > 0)); then
                echo "## epoll waits per request at a fixed rate, $rate requests/s asked (BENCH_PROFILE_RATE), the same connections"
                for name in "${names[@]}"; do
                        read -r c got < <(epoll_waits "${ppids[$name]}" "$work/er-$name.raw" \
                                rate_load "${proto_port[$name]}" "$work/er-$name.load")
                        printf '%-13s %6s waits/req at %s requests/s\n' "$name" "$c" "$((got / secs))"
                done
        fi
fi

# ---- 3. CPU per request by where it is spent, and elastic-pool's hot symbols ----
# breakdown DATA REQUESTS: "category microseconds-per-request" lines. A sample's category is the system
# call it sits in (the frame below do_syscall_64), else "user" or "kernel, no syscall" (interrupts).
breakdown() {
        perf script -i "$1" 2>/dev/null | awk -v n="$2" '
                function flush(   k) {
                        if (sc != "") { k = sc; sub(/\+0x.*/, "", k); sub(/^(__x64_sys_|__se_sys_|__do_sys_|__sys_|ksys_)/, "", k)
                                if (k ~ /^(x64_sys_call|exit_to_user_mode_loop|syscall_exit_to_user_mode)/) k = "kernel, other"
                                else k = "sys " k }
                        else if (leaf ~ /kernel\.kallsyms/) k = "kernel, no syscall"
                        else k = "user"
                        t[k] += period }
                / cpu-clock:/ { if (inrec) flush(); inrec = 1; period = $(NF - 1); leaf = ""; prev = ""; sc = ""; next }
                /^[ \t]+[0-9a-f]+ / { if (leaf == "") leaf = $0; if ($2 ~ /^do_syscall_64/) sc = prev; prev = $2; next }
                /^$/ { if (inrec) flush(); inrec = 0 }
                END { if (inrec) flush(); for (k in t) printf "%s\t%.2f\n", k, t[k] / 1000 / n }'
}
echo
if [[ $tool == perf ]]; then
        echo "## CPU per request by where it is spent (perf record --call-graph ${callgraph%%,*} -e cpu-clock; microseconds per request)"
        for name in "${names[@]}"; do
                load "${proto_port[$name]}" 1 /dev/null >/dev/null
                perf record -q --call-graph "$callgraph" -e cpu-clock -F 2000 -p "$(echo "${ppids[$name]}" | tr ' ' ',')" \
                        -o "$work/prof-$name.data" -- sleep $((secs + 1)) >/dev/null 2>&1 &
                st_pid=$!
                sleep 0.3
                noted_load "$name" "${proto_port[$name]}" "$secs" "$work/prof-$name.load"
                breakdown "$work/prof-$name.data" "$n" >"$work/bd-$name.txt"
        done
        printf '%-24s' "where"
        for name in "${names[@]}"; do printf ' %12s' "$name"; done
        echo
        cut -f1 "$work"/bd-*.txt | sort -u | while read -r cat; do
                printf '%-24s' "$cat"
                for name in "${names[@]}"; do
                        v=$(awk -F'\t' -v c="$cat" '$1 == c { print $2 }' "$work/bd-$name.txt")
                        printf ' %12s' "${v:--}"
                done
                echo
        done | awk -v k="${#names[@]}" '{ for (i = NF - k + 1; i <= NF; i++) if ($i != "-" && $i >= 0.1) { print; next } }' |
                sort -t' ' -k1,1
        printf '%-24s' total
        for name in "${names[@]}"; do printf ' %12.2f' "$(awk -F'\t' '{ s += $2 } END { print s }' "$work/bd-$name.txt")"; done
        echo
        printf '%-24s' "other%/steal%"
        for name in "${names[@]}"; do printf ' %12s' "${note[$name]}"; done
        echo
        echo "# other%: CPU of processes outside the benchmark during the row, steal%: the hypervisor's (/proc/stat),"
        echo "#   in % of one CPU; '!': the two passed $BENCH_DISTURBED together, the row was disturbed"
        echo
        echo "## elastic-pool's hot symbols (self time, share of its CPU)"
        perf report -i "$work/prof-elastic-pool.data" --no-children --stdio --sort dso 2>/dev/null |
                awk '$1 ~ /%$/ { printf "  %8s  %s\n", $1, $2 }' | head -n 8 || true
        echo "  ---"
        perf report -i "$work/prof-elastic-pool.data" --no-children --stdio --sort dso,sym 2>/dev/null |
                awk '$1 ~ /%$/ { $2 = ""; printf "  %s\n", $0 }' | head -n 30 || true
        if [[ $callgraph == dwarf* ]]; then
                echo
                echo "## elastic-pool's functions by inclusive time (their callees counted in), user space, >= 1 %"
                perf report -i "$work/prof-elastic-pool.data" --children --stdio -g none --sort sym 2>/dev/null |
                        awk '$1 ~ /%$/ && $3 == "[.]" && $1 + 0 >= 1 { printf "  %8s %8s  %s\n", $1, $2, $4 }' |
                        head -n 60 || true
        fi
else
        echo "## elastic-pool under callgrind (instructions in user space; the kernel is not seen)"
        kill -TERM "$ep_pid"
        wait "$ep_pid" 2>/dev/null || true
        sleep 0.5
        bg "$work/elastic-pool.log" "${on_proxy[@]}" bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" \
                valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" "$commander" --group bench \
                --config "$work/bench.conf" --runtime-dir "$work/run-cg" --state-dir "$work/state"
        ep_pid=$last_pid
        if ! wait_for 120 grep -q "Ready: 1 workers routable" "$work/elastic-pool.log"; then
                tail -n 5 "$work/elastic-pool.log" >&2
                # valgrind answers clone3 with ENOSYS (so that glibc falls back to clone); the commander
                # spawns with clone3 only, so under valgrind it cannot start a worker at all
                grep -q "Failed to start worker.*Function not implemented" "$work/elastic-pool.log" &&
                        bench_fail "under valgrind the commander cannot spawn: clone3 is ENOSYS there and daemon/spawn.c has no clone/fork fallback"
                bench_fail "elastic-pool under callgrind did not get ready"
        fi
        n=$(load "$port_ep" "$secs" "$work/prof.load")
        kill -TERM "$ep_pid"
        wait "$ep_pid" 2>/dev/null || true
        echo "# $n requests (the whole run, start and stop included)"
        callgrind_annotate --inclusive=no "$work/callgrind.out" 2>/dev/null | sed -n '/^Ir/,$p' | head -n 35 | sed 's/^/  /' || true
        awk -v n="$n" '/^summary:/ { printf "# %.0f instructions per request (user space, start-up included)\n", $2 / n }' \
                "$work/callgrind.out"
fi
# ---- 4. CPU per request against concurrency (HTTP/1.1) ----
# A loop whose cost per wake-up grows with the number of ready descriptors shows it here: its CPU per
# request climbs with the connections while the peers' stays flat or falls (they batch more).
if [[ -n $sweep ]]; then
        echo
        echo "## CPU per request (us) and req/s against wrk connections (HTTP/1.1, ${sweep_secs}s each)"
        printf '%-8s' conns
        for name in "${names[@]}"; do printf ' %23s' "$name"; done
        echo
        for c in $sweep; do
                printf '%-8s' "$c"
                for name in "${names[@]}"; do
                        "${on_load[@]}" wrk -t"$threads" -c"$c" -d1s "http://127.0.0.1:${port_h1[$name]}/" >/dev/null
                        # shellcheck disable=SC2086
                        b=$(cpu_ticks ${ppids[$name]})
                        conns_now=$c proto_now=h1 noted_load "$name" "${port_h1[$name]}" "$sweep_secs" "$work/sw.out"
                        # shellcheck disable=SC2086
                        a=$(cpu_ticks ${ppids[$name]})
                        awk -v b="$b" -v a="$a" -v hz="$hz" -v d="${note[$name]}" '/requests in/ { n = $1 } /^Requests\/sec:/ { r = $2 }
                                END { split(b, B, " "); split(a, A, " ")
                                      printf " %10.2f us %7d/s%s", (A[1] + A[2] - B[1] - B[2]) / hz * 1e6 / n, r, d ~ /!/ ? "!" : " " }' "$work/sw.out"
                done
                echo
        done
        echo "# '!': the cell was disturbed (other% + steal% over $BENCH_DISTURBED, bench-lib.sh)"
fi

echo
report_commander_log
