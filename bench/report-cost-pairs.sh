#!/bin/bash
# SPDX-License-Identifier: MIT
# The commander's CPU per report of two builds in the same minutes: bench-commander-report-cost of
# BASE_BUILD and of BUILD run by turns, one round each per pair, each row with the other% and steal% of its
# own span (bench-lib.sh; an old build's binary may not measure them itself), and the median of the
# undisturbed pairs' ratios. Runs from this tree; the baseline needs only its bench binary
# (`cmake --build DIR --target bench-commander-report-cost`).
#
#   bench/report-cost-pairs.sh BASE_BUILD [BUILD]
# Environment: BENCH_PAIRS (3), BENCH_WORKERS ("1000 9900"), BENCH_REPORTS (1000000), BENCH_STATES
# ("steady held"), BENCH_DISTURBED.
set -euo pipefail
# shellcheck source=bench/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -ge 1 ]] || { echo "usage: $0 BASE_BUILD [BUILD]" >&2; exit 2; }
base=$1/bench/bench-commander-report-cost
this=${2:-$top/build/plain}/bench/bench-commander-report-cost
for b in "$base" "$this"; do [[ -x $b ]] || { echo "no $b: build it first" >&2; exit 2; }; done
pairs=${BENCH_PAIRS:-3}
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "BENCH_PAIRS: a count of pairs, not '$pairs'" >&2; exit 2; }
read -r -a workers <<<"${BENCH_WORKERS:-1000 9900}"
read -r -a states <<<"${BENCH_STATES:-steady held}"
reports=${BENCH_REPORTS:-1000000}

# row BINARY WORKERS STATE: "us-per-report other% steal% mark" of one round of BINARY.
row() {
        local span c0 c1 us o s m
        span=$(span_begin)
        children_usec c0
        BENCH_ROUNDS=1 "$1" "$2" "$reports" "$([[ $3 == held ]] && echo held)" >"$work_out" 2>&1 ||
                { echo "$1 $2 $3 failed: $(tail -n 1 "$work_out")" >&2; exit 1; }
        children_usec c1
        us=$(grep -o 'commander CPU per report: [0-9.]*' "$work_out" | awk '{ print $NF }')
        read -r o s m _ < <(span_end "$span" $((c1 - c0)))
        echo "$us $o $s $m"
}

work_out=$(mktemp)
trap 'rm -f "$work_out"' EXIT
echo "# report-cost-pairs: $(uname -r), $(nproc) cpus, $(date -u +%FT%TZ); $reports reports a row"
echo "# base: $base"
echo "# this: $this"
printf '%-7s %-7s %-5s %10s %7s %7s %10s %7s %7s %7s\n' workers state pair base_us other% steal% this_us other% steal% ratio
for n in "${workers[@]}"; do
        for st in "${states[@]}"; do
                ratios=()
                for p in $(seq "$pairs"); do
                        read -r bu bo bs bm < <(row "$base" "$n" "$st")
                        read -r tu to ts tm < <(row "$this" "$n" "$st")
                        [[ -n $bu && -n $tu ]] || exit 1
                        r=$(awk -v a="$tu" -v b="$bu" 'BEGIN { printf "%.3f", a / b }')
                        mark=$([[ $bm == '!' || $tm == '!' ]] && echo '!' || echo '')
                        printf '%-7s %-7s %-5s %10s %7s %7s %10s %7s %7s %7s%s\n' "$n" "$st" "$p" "$bu" "$bo" "$bs" \
                                "$tu" "$to" "$ts" "$r" "$mark"
                        ratios+=("$r ${mark:--}")
                done
                read -r med nq all na < <(printf '%s\n' "${ratios[@]}" | pairs_median)
                echo "# $n workers, $st: this / base, median of $nq undisturbed pair(s): $med (of all $na: $all)"
        done
done
