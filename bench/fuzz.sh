#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs every libFuzzer target of fuzz/ for a while, one at a time under nice -n 19, each on a corpus kept
# outside the repository (it grows from run to run; the repository's seeds are read, never written), and
# prints per target a row every FUZZ_REPORT_EVERY seconds and a final one: the fuzzer's CPU seconds,
# executions, executions per wall second, coverage (libFuzzer's cov: edges, ft: features), corpus size,
# and any crash with the command that reproduces it. Beside each row: steal% (/proc/stat) and other% (CPU of every other process, as a share
# of the machine); a row either is over FUZZ_DISTURBED (default 25) is marked "disturbed": its exec/s says
# more about the neighbours than about the target.
#   bench/fuzz.sh [BUILD_DIR]      default: ${EP_BUILD_ROOT:-./build}/fuzz, configured and built if absent
# FUZZ_SECONDS (3600 per target), FUZZ_TARGETS ("channel-frame config h1-request h2-session
# forward-response"), FUZZ_CORPUS (~/.cache/elastic-pool-fuzz), FUZZ_REPORT_EVERY (300).
# Exit status: 0, or 1 when a target crashed (its artifact is kept in $FUZZ_CORPUS/artifacts).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-${EP_BUILD_ROOT:-$top/build}/fuzz}
seconds=${FUZZ_SECONDS:-3600}
targets=${FUZZ_TARGETS:-channel-frame config h1-request h2-session forward-response}
corpus=${FUZZ_CORPUS:-${XDG_CACHE_HOME:-$HOME/.cache}/elastic-pool-fuzz}
every=${FUZZ_REPORT_EVERY:-300}
disturbed_at=${FUZZ_DISTURBED:-25}
hz=$(getconf CLK_TCK)
ncpu=$(nproc)
crashed=0

if [[ ! -x $build/fuzz/fuzz-channel-frame ]]; then
        echo "# configuring and building $build (CC=clang, -DEP_FUZZ=ON)"
        cmake -S "$top" -B "$build" -DCMAKE_C_COMPILER=clang -DEP_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
                >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 2; }
        cmake --build "$build" -j 2 >"$build.build.log" 2>&1 || { tail -n 40 "$build.build.log"; exit 2; }
fi
mkdir -p "$corpus/artifacts" || exit 2

# busy, steal and total ticks of the machine; CPU ticks of one process (utime + stime)
machine_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8, $9 + 0, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }
pid_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# "steal% other%" over an interval: machine ticks before/after, the fuzzer's own ticks before/after
interval_load() {
        local b0=$1 s0=$2 t0=$3 b1=$4 s1=$5 t1=$6 own=$7
        awk -v b="$((b1 - b0))" -v s="$((s1 - s0))" -v t="$((t1 - t0))" -v own="$own" \
                'BEGIN { if (t <= 0) t = 1; o = (b - own) / t * 100; if (o < 0) o = 0; printf "%.1f %.1f", s / t * 100, o }'
}

row() { # row TARGET ELAPSED CPU_SECONDS STATUSLINE STEAL OTHER
        local mark=""
        awk -v s="$5" -v o="$6" -v d="$disturbed_at" 'BEGIN { exit !(s > d || o > d) }' && mark="disturbed"
        local execs cov ft corp eps
        execs=$(sed -nE 's/^#([0-9]+).*/\1/p' <<<"$4")
        cov=$(sed -nE 's/.*cov: ([0-9]+).*/\1/p' <<<"$4")
        ft=$(sed -nE 's/.*ft: ([0-9]+).*/\1/p' <<<"$4")
        corp=$(sed -nE 's/.*corp: ([0-9]+)\/.*/\1/p' <<<"$4")
        eps=$(awk -v n="${execs:-0}" -v t="$2" 'BEGIN { printf "%.0f", (t > 0 ? n / t : 0) }')
        printf '%-17s %7ss %7ss %11s %8s %6s %7s %7s %7s%% %7s%% %s\n' "$1" "$2" "$3" "${execs:-0}" "$eps" \
                "${cov:--}" "${ft:--}" "${corp:--}" "$5" "$6" "$mark"
}

echo "# $(date -u '+%F %T') UTC, load average $(cut -d' ' -f1-3 /proc/loadavg), $ncpu CPUs"
echo "# $seconds s per target, corpus in $corpus, build $build"
printf '%-17s %8s %8s %11s %8s %6s %7s %7s %8s %8s\n' target elapsed cpu execs exec/s cov ft corpus steal other

for t in $targets; do
        bin=$build/fuzz/fuzz-$t
        [[ -x $bin ]] || { echo "$t: no $bin" >&2; exit 2; }
        mkdir -p "$corpus/$t"
        log=$corpus/$t.log
        rm -f "$corpus/artifacts/$t-"*
        read -r b0 s0 t0 < <(machine_ticks)
        start=$SECONDS
        # in a subshell whose `times` reports the fuzzer's own CPU time once it exited
        (
                nice -n 19 "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                        -artifact_prefix="$corpus/artifacts/$t-" "$corpus/$t" "$top/fuzz/corpus/$t" >"$log" 2>&1 &
                echo $! >"$corpus/$t.pid"
                wait $!
                rc=$?
                times >"$corpus/$t.times" # not in a pipeline: that would be a subshell without children
                exit $rc
        ) &
        sub=$!
        until [[ -s $corpus/$t.pid ]]; do sleep 0.1; done
        pid=$(<"$corpus/$t.pid")
        rm -f "$corpus/$t.pid"
        own0=0
        ib0=$b0 is0=$s0 it0=$t0
        while kill -0 "$pid" 2>/dev/null; do
                for _ in $(seq "$every"); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
                kill -0 "$pid" 2>/dev/null || break
                own1=$(pid_ticks "$pid")
                read -r ib1 is1 it1 < <(machine_ticks)
                read -r steal other < <(interval_load "$ib0" "$is0" "$it0" "$ib1" "$is1" "$it1" "$((own1 - own0))")
                row "$t" "$((SECONDS - start))" "$(awk -v t="$own1" -v hz="$hz" 'BEGIN { printf "%.1f", t / hz }')" "$(grep -aE '^#[0-9]+' "$log" | tail -n 1)" \
                        "$steal" "$other"
                own0=$own1 ib0=$ib1 is0=$is1 it0=$it1
        done
        wait "$sub"
        rc=$?
        read -r b1 s1 t1 < <(machine_ticks)
        # `times`, second line: "0m12.340s 0m1.230s" (user, system) of the subshell's children: the fuzzer
        cpu=$(awk 'NR == 2 { s = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] }
                     printf "%.1f", s }' "$corpus/$t.times")
        read -r steal other < <(interval_load "$b0" "$s0" "$t0" "$b1" "$s1" "$t1" \
                "$(awk -v c="$cpu" -v hz="$hz" 'BEGIN { printf "%.0f", c * hz }')")
        elapsed=$((SECONDS - start))
        final=$(grep -aE '^#[0-9]+' "$log" | tail -n 1)
        execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log")
        [[ -n $execs ]] && final="#$execs ${final#\#* }"
        row "$t" "$elapsed" "$cpu" "$final" "$steal" "$other"
        artifact=$(ls "$corpus/artifacts/$t-"* 2>/dev/null | head -n 1)
        if ((rc != 0)) || [[ -n $artifact ]]; then
                crashed=1
                echo "  CRASH in $t (exit $rc): $(grep -aE '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -n 2 | tr '\n' ' ')"
                echo "  reproduce: $bin ${artifact:-<no artifact: see $log>}"
                echo "  log: $log"
        fi
done
exit $crashed
