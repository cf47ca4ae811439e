# SPDX-License-Identifier: MIT
# Helpers of the benchmarks that run real pools (bench/move-pause.sh, bench/rolling-reload.sh): one fresh
# cgroup v2 parent for everything a run starts (its cpu.stat is the benchmark's own CPU time), a leaf for
# the clients and this script, background processes remembered for the cleanup, the machine's busy and
# steal ticks. Source after setting BENCH_NAME (used in paths and messages); sets work, cg, cgroot, hz.
# Everything started is gone when the script exits; BENCH_KEEP=DIR keeps the work directory's files.

fail() {
        echo "$BENCH_NAME: $*" >&2
        exit 1
}

work=$(mktemp -d "/tmp/ep-bench-$BENCH_NAME.XXXXXX")
cgroot=""
for d in /sys/fs/cgroup/unified /sys/fs/cgroup; do
        [[ $(stat -fc %T "$d" 2>/dev/null) == cgroup2fs ]] && { cgroot=$d; break; }
done
[[ -n $cgroot ]] || fail "no cgroup v2 hierarchy"
cg=$cgroot/ep-bench-$BENCH_NAME-$$
pids=()

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
trap cleanup EXIT
trap 'exit 1' INT TERM

make_cgroup() { # make_cgroup DIR: with every controller its parent hands down
        mkdir "$1"
        local c
        for c in $(cat "$(dirname "$1")/cgroup.subtree_control" 2>/dev/null); do
                echo "+$c" >"$1/cgroup.subtree_control" 2>/dev/null || true
        done
}
make_cgroup "$cg"
mkdir "$cg/clients"
# this script too, so that its own helpers count as the benchmark's CPU; it goes back before cleaning up
orig_cg=$cgroot$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
echo $$ >"$cg/clients/cgroup.procs"

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
# "busy steal" of the whole machine in clock ticks (/proc/stat: user + nice + system, steal)
machine_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4, $9 + 0 }' /proc/stat; }
cg_usec() { awk '$1 == "usage_usec" { print $2 }' "$cg/cpu.stat"; }
hz=$(getconf CLK_TCK)
