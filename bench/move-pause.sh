#!/bin/bash
# SPDX-License-Identifier: MIT
# The pause of a live move (the user flagged moving -> its held requests released: what a user with a
# request in flight waits), for 1 KiB and 1 MiB user packages, idle and under load; then compaction of a
# worker holding 1 000 users onto the reception. A benchmark, never a test: the figures are for people.
#
#   sudo bench/move-pause.sh [BUILD_DIR]        (default: the tree scripts/build.sh builds)
#
# How moves are made: a pool of two demo workers (min_workers = max_workers = 2, --threads 4) with
# reception_threshold = 0.01 and the reception kept busy by two guest loops of /work?sleep_ms (two of
# its four executor threads asleep, no CPU): every login of a new user on the reception is passed on to
# w2 by one live move (snapshot on w1, install on w2, switch). Each login is followed at once by a
# /state of that user, which the commander holds until the move ends; the next login comes after it, so
# moves never overlap. One pool per package size (--user-blob-size 1K / 1M), both started at the outset;
# every round measures each size idle and under load, interleaved.
#   * pause: the commander's own figure, flag -> release. Read from the journal field
#     EP_MOVE_PAUSE_USEC (exact): the commander logs with EP_LOG_TARGET=journal to a stand-in for
#     journald (move-pause-helper.py sink) on a tmpfs at /run/systemd inside a private mount namespace,
#     so the host's /run is untouched. Where that cannot be set up, or with BENCH_PAUSE_SOURCE=log, it is
#     parsed from the commander's log line "Move N of user U from wA to wB done after X (...)", which
#     prints X in whole milliseconds from 1 ms on (truncated): the script says which source it used.
#   * held /state: the client's view, the latency of the /state sent right after the login answer (held
#     during the rest of the move, then forwarded to w2).
#   * under load: elastic-pool-loadgen on the same pool, BENCH_LOAD_USERS (20) virtual users logged in
#     (so living on w2) looping over /state and /work?cpu_ms=BENCH_LOAD_CPU_MS (2) with
#     BENCH_LOAD_THINK (20ms) think time, started before the round's moves and stopped after them.
#   * steal%: CPU the hypervisor took from this virtual machine during the round (/proc/stat steal), in %
#     of one CPU; other%: CPU taken by processes outside the benchmark (the machine's user + nice +
#     system time minus the benchmark's cgroup), in % of one CPU. Above ~5 together the round was
#     disturbed: marked '!'.
#   * occ r/o: the occupancy of the reception / the other worker in status.json (written once a second)
#     as the round's moves end.
# Per case: the median and p99 (nearest rank) of all its rounds' moves, and whether the goal of the issue
# holds: p99 pause <= 20 ms for a 1 MiB package on this 2-core machine.
#
# Compaction of 1 000 users: a pool of min_workers = 1, max_workers = 2 (reception_threshold 0.5, the
# default) grows to two workers while three guest loops keep the reception over 0.5; BENCH_DRAIN_USERS
# (1000) users log in (two at a time, each waiting for its move) and are passed on to w2. The guests
# stop, the pool goes idle, and compaction drains w2 onto the reception by live moves, one user at a
# time. Printed: the total drain time (from the first "draining w2" to "w2 drained", drains stopped and
# begun again included) and how much of it the moves took, why drains stopped, the pause of the drain's
# moves (median, p99, the worst any user saw), steal% and other% from idle to drained.
#
# Fast test settings throughout (occupancy_interval = 200ms, smoothing_rows = 2, as the integration
# tests use): the pools react in a second instead of 30 s; moves themselves do not depend on them.
# Environment: BENCH_ROUNDS (5), BENCH_MOVES (40, moves per case and round), BENCH_SIZES ("1K 1M"),
# BENCH_LOAD_USERS (20), BENCH_LOAD_THINK (20ms), BENCH_LOAD_CPU_MS (2), BENCH_DRAIN_USERS (1000; 0 skips
# the part), BENCH_DRAIN_SIZE (1K), BENCH_PAUSE_SOURCE (journal|log), BENCH_PORT_BASE (18280; three
# ports from it), BENCH_KEEP=DIR (keep logs and configurations). Stops by itself; everything it started
# (cgroups, processes, the namespace's mounts) is gone when it exits.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${BENCH_ROUNDS:-5}
moves=${BENCH_MOVES:-40}
sizes=${BENCH_SIZES:-1K 1M}
load_users=${BENCH_LOAD_USERS:-20}
load_think=${BENCH_LOAD_THINK:-20ms}
load_cpu_ms=${BENCH_LOAD_CPU_MS:-2}
drain_users=${BENCH_DRAIN_USERS:-1000}
drain_size=${BENCH_DRAIN_SIZE:-1K}
source=${BENCH_PAUSE_SOURCE:-journal}
port_base=${BENCH_PORT_BASE:-18280}
goal_ms=20
py=/usr/bin/python3
helper=$top/bench/move-pause-helper.py

BENCH_NAME=move-pause
fail() { echo "$BENCH_NAME: $*" >&2; exit 1; } # bench-lib.sh defines it again, the same
[[ $(id -u) -eq 0 ]] || fail "run as root (cgroups, a private mount namespace)"
[[ $source == journal || $source == log ]] || fail "BENCH_PAUSE_SOURCE is journal or log, not '$source'"
"$top/scripts/bootstrap.sh" >/dev/null
build=${1:-$("$top/scripts/build.sh")}
build=$(cd "$build" && pwd)
commander=$build/daemon/elastic-pool
worker=$build/demo/elastic-pool-demo-worker
loadgen=$build/demo/elastic-pool-loadgen
for b in "$commander" "$worker" "$loadgen"; do [[ -x $b ]] || fail "no $b: build the tree first"; done
for c in curl ss unshare; do command -v "$c" >/dev/null || fail "$c is missing"; done
for p in $(seq "$port_base" $((port_base + 2))); do
        ! ss -Hltn "sport = :$p" | grep -q . || fail "port $p is taken (set BENCH_PORT_BASE)"
done

. "$top/bench/bench-lib.sh"
bench_setup

# Whether the journal stand-in can run: a private mount namespace with a tmpfs over /run/systemd (or
# /run where that does not exist).
journal_dir=/run/systemd
[[ -d $journal_dir ]] || journal_dir=/run
if [[ $source == journal ]] &&
        ! unshare --mount --propagation private -- mount -t tmpfs tmpfs "$journal_dir" 2>"$work/unshare.err"; then
        echo "# no private mount namespace ($(head -n1 "$work/unshare.err")): pauses from the log lines"
        source=log
fi

# launch_pool NAME PORT SIZE [section.key=value...]: a commander (cgroup backend, its own leaf, logging to
# the journal stand-in or to a file) on 127.0.0.1:PORT with demo workers of --user-blob-size SIZE; ready.
# Sets pool_pid; its text log is $work/NAME.log, the JSONL of the journal $work/NAME.jsonl.
launch_pool() {
        local name=$1 port=$2 size=$3 kv section key
        shift 3
        local -A conf=(
                [worker]="exec = $worker --threads 4 --user-blob-size $size"
                [pool]="backend = cgroup
min_workers = 2
max_workers = 2
spawn_timeout = 10s
stop_timeout = 3s"
                [policy]="occupancy_interval = 200ms
smoothing_rows = 2
reception_threshold = 0.01"
                [frontend]="listen = 127.0.0.1:$port"
        )
        for kv in "$@"; do
                section=${kv%%.*} key=${kv#*.}
                conf[$section]+=$'\n'"${key%%=*} = ${key#*=}"
        done
        : >"$work/$name.conf"
        for section in worker pool policy frontend; do
                printf '[%s]\n%s\n\n' "$section" "${conf[$section]}" >>"$work/$name.conf"
        done
        make_cgroup "$cg/$name"
        local cmd=("$commander" --group "bench-$name" --config "$work/$name.conf" --runtime-dir "$work/run-$name"
                --state-dir "$work/state-$name")
        if [[ $source == journal ]]; then
                # the sink (and its converter) in the clients' leaf, the commander in the pool's; all in the namespace
                unshare --mount --propagation private -- bash -c '
                        set -e
                        clients=$1 pool=$2 dir=$3 helper=$4 jsonl=$5 text=$6
                        shift 6
                        mount -t tmpfs -o mode=755 tmpfs "$dir"
                        mkdir -p /run/systemd/journal
                        echo $$ >"$clients/cgroup.procs"
                        : >"$jsonl.raw"
                        /usr/bin/python3 "$helper" sink /run/systemd/journal/socket "$jsonl.raw" &
                        echo $! >"$jsonl.sink-pid"
                        /usr/bin/python3 "$helper" convert "$jsonl.raw" "$jsonl" "$text" &
                        echo $! >"$jsonl.convert-pid"
                        for _ in $(seq 200); do [[ -S /run/systemd/journal/socket ]] && break; sleep 0.01; done
                        echo $$ >"$pool/cgroup.procs"
                        EP_LOG_TARGET=journal exec "$@"' \
                        mp "$cg/clients" "$cg/$name" "$journal_dir" "$helper" "$work/$name.jsonl" "$work/$name.log" \
                        "${cmd[@]}" >"$work/$name.stderr" 2>&1 &
        else
                bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg/$name" "${cmd[@]}" >"$work/$name.log" 2>&1 &
        fi
        pool_pid=$!
        pids+=("$pool_pid")
        wait_log 30 "$work/$name.log" 'Ready: [0-9]+ workers routable' ||
                { tail -n 20 "$work/$name.log" "$work/$name.stderr" 2>/dev/null >&2; fail "$name did not become ready"; }
}

# guests NAME PORT N SLEEP_MS: N guest loops of /work?sleep_ms=SLEEP_MS on the reception (executor threads
# asleep: occupancy without CPU); their pids in guest_pids
guests() {
        local i
        guest_pids=()
        for ((i = 0; i < $3; i++)); do
                bg "$work/$1-guest$i.log" bash -c 'while :; do curl -s --noproxy "*" --max-time 60 -o /dev/null \
                        "http://127.0.0.1:$0/work?sleep_ms=$1" || sleep 0.1; done' "$2" "$4"
                guest_pids+=("$last_pid")
        done
}

status_py() { # status_py NAME EXPR: EXPR evaluated on status.json as d
        "$py" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
                "$work/run-$1/status.json" "$2"
}
reception_busy() { # the reception reads over 0.1 (its guests show)
        [[ $(status_py "$1" '[w for w in d["workers"] if w["reception"]][0]["occupancy"] > 0.1') == True ]]
}

pauses() { # pauses NAME USER_REGEX: the moves of those users, from the configured source
        if [[ $source == journal ]]; then
                "$py" "$helper" moves journal "$work/$1.jsonl" "$2"
        else
                "$py" "$helper" moves log "$work/$1.log" "$2"
        fi
}

# stats: "n median p99 max" in ms of the microsecond figures on stdin (nearest rank)
stats() {
        sort -n | awk '{ v[NR] = $1 / 1000 } END {
                if (NR == 0) { print 0, "-", "-", "-"; exit }
                m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                p = int(NR * 0.99 + 0.999999); if (p > NR) p = NR
                printf "%d %.3f %.3f %.3f\n", NR, m, v[p], v[NR] }'
}

# ---- the pause of one move, per package size, idle and under load ----

echo "# move-pause: $(uname -r), $(nproc) cpus, $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# elastic-pool $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$top" diff --quiet HEAD -- daemon 2>/dev/null || echo ' +local changes') ($build)"
if [[ $source == journal ]]; then
        echo "# pause source: the journal field EP_MOVE_PAUSE_USEC (a journald stand-in in a private mount namespace)"
else
        echo "# pause source: the commander's log line (whole milliseconds from 1 ms on, truncated)"
fi
echo "# pools: 2 demo workers (--threads 4), reception_threshold=0.01, reception busy with 2 guest sleeps;"
echo "#   occupancy_interval=200ms smoothing_rows=2; $moves moves per case and round, one at a time, $rounds rounds"
echo "# load: elastic-pool-loadgen --users $load_users --think $load_think --cpu-ms $load_cpu_ms --mix 1:1 on the same pool"

# round SIZE LOAD ROUND: one case's moves; appends the pauses (us) to $work/SIZE-LOAD.pauses and the
# client's held /state latencies (ms) to $work/SIZE-LOAD.held, prints the round's row
round() {
        local size=$1 load=$2 r=$3 name=p$1 addr prefix lg="" held moved n occ p50 p99 max
        addr=127.0.0.1:$(awk -F'= *' '/^listen/ { print $2 }' "$work/$name.conf" | cut -d: -f2)
        prefix="r${r}${load:0:1}u"
        if [[ $load == load ]]; then
                bg "$work/$name-loadgen-$r.log" "$loadgen" --url "http://$addr" --users "$load_users" --profile constant \
                        --duration 1h --think "$load_think" --cpu-ms "$load_cpu_ms" --mix 1:1 --user-prefix "lg${r}u" \
                        --max-errors 1000000 --quiet
                lg=$last_pid
                # its users are logged in and their moves (to the other worker) over before the moves are
                # measured
                local deadline=$((SECONDS + 30)) failed_moves
                until (($(pauses "$name" "lg${r}u[0-9]+" | wc -l) >= load_users)); do
                        if ((SECONDS >= deadline)); then
                                tail -n 5 "$work/$name-loadgen-$r.log" >&2
                                fail "$size round $r: $(grep -cE "User lg${r}u[0-9]+ logged in" "$work/$name.log") of the" \
                                        "load generator's $load_users users logged in, $(pauses "$name" "lg${r}u[0-9]+" | wc -l)" \
                                        "of their moves ended within 30 s"
                        fi
                        sleep 0.1
                done
                failed_moves=$(pauses "$name" "lg${r}u[0-9]+" | awk '$6 != "done"' | wc -l)
                ((failed_moves == 0)) || echo "# $size round $r: $failed_moves of the load generator's moves failed (those users stay on" \
                        "the reception)"
                # and the readings show their load: three more reports of each worker (smoothing_rows = 2)
                local reports
                reports=$(status_py "$name" 'd["counters"]["reports"]')
                until (($(status_py "$name" 'd["counters"]["reports"]') >= reports + 6)); do
                        ((SECONDS < deadline)) || fail "no reports from $name"
                        sleep 0.1
                done
        fi
        local span c0 c1
        span=$(span_begin); c0=$(cg_usec)
        "$py" "$helper" users "$addr" "$prefix" "$moves" --state >"$work/$name-$load-$r.users" ||
                echo "# $size $load round $r: some logins or /state answers failed (see BENCH_KEEP)"
        c1=$(cg_usec)
        local other steal mark
        read -r other steal mark _ < <(span_end "$span" $((c1 - c0)))
        occ=$(status_py "$name" '"%.2f/%.2f" % tuple(w["occupancy"] for w in sorted(d["workers"], key=lambda w: not w["reception"]))')
        [[ -n $lg ]] && stop_pid "$lg" INT
        # every move of the round has its end journaled before its held /state is released
        local deadline=$((SECONDS + 10))
        until (($(pauses "$name" "${prefix}[0-9]+" | wc -l) >= moves)); do
                ((SECONDS < deadline)) || break
                sleep 0.05
        done
        pauses "$name" "${prefix}[0-9]+" >"$work/$name-$load-$r.moves"
        awk '$6 == "done" { print $7 }' "$work/$name-$load-$r.moves" >>"$work/$size-$load.pauses"
        awk '$3 == 200 { print $4 }' "$work/$name-$load-$r.users" >>"$work/$size-$load.held"
        if [[ $mark == - ]]; then
                mark=""
                awk '$6 == "done" { print $7 }' "$work/$name-$load-$r.moves" >>"$work/$size-$load.quiet"
        fi
        n=$(wc -l <"$work/$name-$load-$r.moves")
        moved=$(awk '$6 == "done"' "$work/$name-$load-$r.moves" | wc -l)
        held=$(awk '$3 == 200 { print $4 * 1000 }' "$work/$name-$load-$r.users" | stats | awk '{ print $2 }')
        read -r _ p50 p99 max <<<"$(awk '$6 == "done" { print $7 }' "$work/$name-$load-$r.moves" | stats)"
        printf '%5d  %-4s %-5s %5d/%-4d %9s %9s %9s %10s %10s %7s%-1s %6s\n' "$r" "$size" "$load" "$moved" "$n" "$p50" \
                "$p99" "$max" "$held" "$occ" "$other" "$mark" "$steal"
}

if ((rounds > 0)); then
        port=$port_base
        for size in $sizes; do
                launch_pool "p$size" "$port" "$size"
                guests "p$size" "$port" 2 5000
                port=$((port + 1))
        done
        for size in $sizes; do
                wait_for_busy=$((SECONDS + 20))
                until reception_busy "p$size" 2>/dev/null; do
                        ((SECONDS < wait_for_busy)) || fail "the reception of p$size never read busy: $(cat "$work/run-p$size/status.json")"
                        sleep 0.05
                done
        done

        printf '\n%5s  %-4s %-5s %10s %9s %9s %9s %10s %10s %8s %6s\n' round size load "moved/all" "p50 ms" "p99 ms" "max ms" \
                "held p50" "occ r/o" other% steal%
        for ((r = 1; r <= rounds; r++)); do
                for size in $sizes; do
                        for load in idle load; do
                                round "$size" "$load" "$r"
                        done
                done
        done

        echo
        echo "# per case, the moves of all rounds, then of the quiet rounds only (no '!'): the pause flag -> release"
        echo "# and the held /state (the client's latency), in ms"
        printf '%-4s %-5s %-6s %6s %9s %9s %9s %10s %10s\n' size load rounds moves "p50 ms" "p99 ms" "max ms" "held p50" \
                "held p99"
        declare -A p99_of
        for size in $sizes; do
                for load in idle load; do
                        read -r n p50 p99 max <<<"$(stats <"$work/$size-$load.pauses")"
                        read -r _ h50 h99 _ <<<"$(awk '{ print $1 * 1000 }' "$work/$size-$load.held" | stats)"
                        printf '%-4s %-5s %-6s %6s %9s %9s %9s %10s %10s\n' "$size" "$load" all "$n" "$p50" "$p99" "$max" \
                                "$h50" "$h99"
                        p99_of[$size/$load]="$p99 (all rounds)"
                        [[ -s $work/$size-$load.quiet ]] || continue
                        read -r n p50 p99 max <<<"$(stats <"$work/$size-$load.quiet")"
                        printf '%-4s %-5s %-6s %6s %9s %9s %9s\n' "$size" "$load" quiet "$n" "$p50" "$p99" "$max"
                        p99_of[$size/$load]="$p99 ($((n / moves)) quiet rounds)"
                done
        done
        echo
        echo "# goal (issue): p99 pause <= $goal_ms ms for a 1 MiB package on this $(nproc)-core machine (judged on the quiet"
        echo "#   rounds when there are any)"
        for load in idle load; do
                read -r p rest <<<"${p99_of[1M/$load]:--}"
                if [[ $p == - ]]; then
                        echo "1M $load: not measured (BENCH_SIZES=\"$sizes\")"
                elif awk -v p="$p" -v g="$goal_ms" 'BEGIN { exit !(p <= g) }'; then
                        echo "1M $load: p99 $p ms <= $goal_ms ms $rest: met"
                else
                        echo "1M $load: p99 $p ms > $goal_ms ms $rest: NOT met"
                fi
        done

        # what the pools warned of while measuring (their shutdown below is the benchmark's doing); under load the
        # pool is full and cannot grow (max_workers=2): those warnings are expected, and only counted
        for size in $sizes; do
                expected='Every worker is over admission_threshold|scale-up refused: max_workers=2 reached'
                echo "# p$size: $(grep -E 'WARNING: ' "$work/p$size.log" | grep -cE "$expected" || true) warnings that the pool is full under load"
                grep -E 'WARNING: |ERROR: ' "$work/p$size.log" | grep -vE "$expected" | head -n 5 | cut -c1-400 |
                        sed "s/^/# p$size: /" || true
        done
        # the measuring pools go (and their journal stand-ins); the drain gets the machine to itself
        for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
        for p in "${pids[@]}"; do stop_pid "$p"; done
        pids=()
        for f in "$work"/*-pid; do [[ -f $f ]] && kill -TERM "$(cat "$f")" 2>/dev/null; rm -f "$f"; done
fi

# ---- compaction of a worker holding many users ----

((drain_users > 0)) || exit 0
echo
echo "# compaction: $drain_users users ($drain_size packages) on w2, the pool goes idle, w2 is drained onto the reception"
name=pdrain
port=$((port_base + 2))
launch_pool "$name" "$port" "$drain_size" pool.min_workers=1 policy.reception_threshold=0.5
# three of the reception's four threads asleep: 0.75 > reception_threshold, the pool grows to two
guests "$name" "$port" 3 300
wait_log 30 "$work/$name.log" 'Worker w2 is routable' || fail "the drain pool did not grow to two workers"
t0=$(date +%s%N)
# two at a time, each waiting for its move (its /state is held until the move ends): logins that do not
# wait can start moves faster than the workers take 1 MiB packages, and those moves then fail
"$py" "$helper" users "127.0.0.1:$port" d "$drain_users" --concurrency 2 --state >"$work/$name.users" ||
        echo "# some of the $drain_users logins failed"
deadline=$((SECONDS + 120))
until (($(status_py "$name" '[w for w in d["workers"] if w["name"] == "w2"][0]["users"]') >= drain_users)); do
        ((SECONDS < deadline)) || fail "w2 never held $drain_users users: $(status_py "$name" 'd["workers"]')"
        sleep 0.1
done
echo "# $drain_users users logged in and passed on to w2 in $((($(date +%s%N) - t0) / 1000000))ms"
for p in "${guest_pids[@]}"; do stop_pid "$p"; done
span=$(span_begin); c0=$(cg_usec)
if ! wait_log 120 "$work/$name.log" 'Compaction: w2 drained'; then
        echo "# w2 was not drained within 120 s; status.json says:"
        status_py "$name" '"holds.compaction: %s\n# drain: %s\n# last_drain: %s" % (d["holds"]["compaction"], d["drain"], d["last_drain"])' |
                sed 's/^/# /'
        grep -E 'Compaction' "$work/$name.log" | tail -n 5 | cut -c1-300 | sed 's/^/# /'
        exit 1
fi
read -r other steal mark secs < <(span_end "$span" $(($(cg_usec) - c0)))
first=$(grep -m1 -E 'Compaction: draining w2 by live moves' "$work/$name.log" | cut -d' ' -f1)
last=$(grep -m1 -E 'Compaction: w2 drained' "$work/$name.log")
stopped=$(count_log "$work/$name.log" 'Compaction: drain of w2 stopped')
drains=$(count_log "$work/$name.log" 'Compaction: draining w2 by live moves')
pauses "$name" 'd[0-9]+' | awk '$9 ~ /^compaction/' >"$work/$name.moves"
read -r n p50 p99 max <<<"$(awk '$6 == "done" { print $7 }' "$work/$name.moves" | stats)"
moving=$(awk '{ s += $7 } END { printf "%.3f", s / 1e6 }' "$work/$name.moves")
total=$(echo "$first $(cut -d' ' -f1 <<<"$last")" | awk '{ split($1, a, ":"); split($2, b, ":")
        printf "%.3f", (b[1] * 3600 + b[2] * 60 + b[3]) - (a[1] * 3600 + a[2] * 60 + a[3]) }')
echo "total drain time: $total s from the first \"draining w2\" to \"w2 drained\" (log clock); $moving s of it in moves"
echo "drains begun $drains, stopped $stopped; the last one: $(sed -E 's/.*Compaction: (w2 drained: [^;]*);.*/\1/' <<<"$last")"
if ((stopped > 0)); then
        echo "why the drains stopped (each time the next one waits until the ledger allows compaction again):"
        grep -E 'Compaction: drain of w2 stopped' "$work/$name.log" |
                sed -E 's/.*users moved: ([^(]*[^ (]).*/\1/; s/H=[0-9.]+ <= [0-9.]+/H <= promise/' | sort | uniq -c |
                sed 's/^/#   /'
        grep -m1 -E 'Compaction: drain of w2 stopped' "$work/$name.log" | cut -c1-300 | sed 's/^/#   first: /'
fi
echo "moves of the drain: $n done, $(awk '$6 != "done"' "$work/$name.moves" | wc -l) not; pause p50 $p50 ms, p99 $p99 ms," \
        "worst $max ms (the longest any user's requests were held)"
printf 'from idle to drained (%.1f s): steal%% %s, other%% %s%s\n' "$secs" "$steal" "$other" "$([[ $mark == '!' ]] && echo ' (disturbed)')"
expected='Every worker is over admission_threshold|scale-up refused: max_workers=2 reached|Compaction: drain of w2 stopped'
grep -E 'WARNING: |ERROR: ' "$work/$name.log" | grep -vE "$expected" | head -n 5 | cut -c1-400 | sed "s/^/# $name: /" || true
