# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# Helpers of the shell benchmarks in bench/. Sourcing defines functions (and $hz) only:
#
#   * Disturbance, for every benchmark: a row is measured between span_begin and span_end, which say how
#     much CPU processes outside the benchmark took meanwhile (other%) and how much the hypervisor took
#     from this virtual machine (steal%, /proc/stat), and mark the row disturbed ('!') when the two
#     together pass BENCH_DISTURBED (5, in % of one CPU). Ratios between two things measured are taken
#     from same-round pairs of undisturbed rows (pairs_median), never from medians over rounds, where a
#     disturbed round would hide.
#   * bench_setup, for the benchmarks that run real pools (bench/move-pause.sh, bench/rolling-reload.sh):
#     one fresh cgroup v2 parent for everything a run starts (its cpu.stat is the benchmark's own CPU
#     time), a leaf for the clients and the script itself, background processes remembered for the
#     cleanup. Set BENCH_NAME (used in paths and messages) first; it sets work, cg, cgroot. Everything
#     started is gone when the script exits; BENCH_KEEP=DIR keeps the work directory's files.

hz=$(getconf CLK_TCK)
BENCH_DISTURBED=${BENCH_DISTURBED:-5}

# "busy steal" of the whole machine in clock ticks (/proc/stat: user + nice + system, steal). Softirq and
# irq are left out: they are charged to no process, so they cannot be told apart from the benchmark's.
machine_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4, $9 + 0 }' /proc/stat; }

# span_begin: the start of a measured row ("busy steal nanoseconds"), for span_end.
span_begin() { echo "$(machine_ticks) $(date +%s%N)"; }

# span_end BEGIN OWN_USEC: "other% steal% mark seconds" of the row since BEGIN (span_begin's): other% is
# the CPU time the machine's processes took beside the benchmark's own OWN_USEC (microseconds of CPU of
# everything the benchmark ran in the row), steal% the time the hypervisor took, both in % of one CPU;
# mark is '!' when the two together pass BENCH_DISTURBED, '-' when the row is quiet.
span_end() {
        awk -v begin="$1" -v own="$2" -v now="$(span_begin)" -v hz="$hz" -v limit="$BENCH_DISTURBED" 'BEGIN {
                split(begin, B, " "); split(now, N, " "); el = (N[3] - B[3]) / 1000
                if (el <= 0) el = 1
                steal = (N[2] - B[2]) / hz * 1e8 / el
                other = ((N[1] - B[1]) / hz * 1e6 - own) * 100 / el; if (other < 0) other = 0
                printf "%.1f %.1f %s %.3f\n", other, steal, (other + steal > limit) ? "!" : "-", el / 1e6 }'
}

# children_usec VAR: sets VAR to the CPU time (user + system) of this shell's children that ended and were
# waited for, in microseconds (bash's `times`): a row's own CPU when everything it ran is a child that
# ended in it. A variable, not output: in $(...) or a pipe, `times` would be a subshell's, which has none.
children_usec() {
        local f=${TMPDIR:-/tmp}/ep-bench-times.$$ v
        times >"$f"
        v=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }
                printf "%.0f\n", t * 1e6 }' "$f")
        rm -f "$f"
        printf -v "$1" '%s' "$v"
}

# disturbed OTHER STEAL: true when a row with these figures counts as disturbed.
disturbed() { awk -v o="$1" -v s="$2" -v limit="$BENCH_DISTURBED" 'BEGIN { exit !(o + s > limit) }'; }

# pairs_median: reads "RATIO MARK" lines (one same-round pair each, MARK '!' when either row of the pair
# was disturbed) and prints "MEDIAN N ALL_MEDIAN ALL_N": the median of the quiet pairs and how many there
# were, then the same over every pair (what is left to quote when no pair was quiet). "nan" for none.
pairs_median() {
        awk 'function median(a, n,   i, k, x) {
                        if (n == 0) return "nan"
                        for (i = 2; i <= n; i++) { x = a[i]; for (k = i - 1; k >= 1 && a[k] > x; k--) a[k + 1] = a[k]; a[k + 1] = x }
                        return sprintf("%.3f", n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) }
                $1 != "nan" { all[++na] = $1; if ($2 != "!") quiet[++nq] = $1 }
                END { print median(quiet, nq), nq + 0, median(all, na), na + 0 }'
}

fail() {
        echo "$BENCH_NAME: $*" >&2
        exit 1
}

cleanup() {
        local rc=$? p
        set +e
        for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
        for p in "${pids[@]}"; do
                for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
                kill -KILL "$p" 2>/dev/null
                wait "$p" 2>/dev/null
        done
        if [[ -d $cg ]]; then
                echo $$ >"$orig_cg/cgroup.procs" 2>/dev/null || echo $$ >"$cgroot/cgroup.procs"
                echo 1 >"$cg/cgroup.kill" 2>/dev/null
                for _ in $(seq 100); do grep -qs '^populated 0' "$cg/cgroup.events" && break; sleep 0.05; done
                find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null
                [[ -d $cg ]] && echo "$BENCH_NAME: warning: could not remove $cg" >&2
        fi
        if [[ -n ${BENCH_KEEP:-} ]]; then
                mkdir -p "$BENCH_KEEP" && cp -r "$work/." "$BENCH_KEEP/" 2>/dev/null
                echo "# logs and configurations kept in $BENCH_KEEP"
        fi
        rm -rf "$work"
        exit $rc
}

make_cgroup() { # make_cgroup DIR: with every controller its parent hands down
        mkdir "$1"
        local c
        for c in $(cat "$(dirname "$1")/cgroup.subtree_control" 2>/dev/null); do
                echo "+$c" >"$1/cgroup.subtree_control" 2>/dev/null || true
        done
}

# The work directory and the run's cgroup parent, this script in its clients' leaf; cleaned up at exit.
bench_setup() {
        local d
        work=$(mktemp -d "/tmp/ep-bench-$BENCH_NAME.XXXXXX")
        cgroot=""
        for d in /sys/fs/cgroup/unified /sys/fs/cgroup; do
                [[ $(stat -fc %T "$d" 2>/dev/null) == cgroup2fs ]] && { cgroot=$d; break; }
        done
        [[ -n $cgroot ]] || fail "no cgroup v2 hierarchy"
        cg=$cgroot/ep-bench-$BENCH_NAME-$$
        pids=()
        trap cleanup EXIT
        trap 'exit 1' INT TERM
        make_cgroup "$cg"
        mkdir "$cg/clients"
        # this script too, so that its own helpers count as the benchmark's CPU; it goes back before cleaning up
        orig_cg=$cgroot$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
        echo $$ >"$cg/clients/cgroup.procs"
}

bg() { # bg LOG COMMAND...: in the clients' leaf; sets $last_pid, remembered for cleanup
        local log=$1
        shift
        bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg/clients" "$@" >"$log" 2>&1 &
        last_pid=$!
        pids+=("$last_pid")
}
stop_pid() { # stop_pid PID [SIGNAL]: signal, then wait up to 10 s, then SIGKILL
        kill "-${2:-TERM}" "$1" 2>/dev/null || true
        for _ in $(seq 200); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
        kill -KILL "$1" 2>/dev/null || true
        wait "$1" 2>/dev/null || true
}
wait_log() { # wait_log SECONDS FILE REGEX
        local deadline=$((SECONDS + $1))
        until grep -qE -- "$3" "$2" 2>/dev/null; do
                ((SECONDS < deadline)) || return 1
                sleep 0.05
        done
}
count_log() { grep -cE -- "$2" "$1" 2>/dev/null || true; }
# the CPU time of everything in the run's cgroup, in microseconds
cg_usec() { awk '$1 == "usage_usec" { print $2 }' "$cg/cpu.stat"; }
