#!/bin/bash
# SPDX-License-Identifier: MIT
# Spawn -> routable latency of the demo worker under the commander, for the cgroup backend (the commander
# in a fresh cgroup v2 parent of this run) and the scope backend (inside the shared systemd user sandbox),
# beside `systemd-run --user --scope true` measured in the same rounds and sandbox. A benchmark, never a
# test: the figures are for people.
#
#   sudo bench/spawn-latency.sh [BUILD_DIR]        (default: the tree scripts/build.sh builds)
#
# Rows, each over BENCH_SPAWNS (30) spawns:
#   <backend> respawn, spawn->routable   the commander's own figure from its log line "Worker wN is routable
#                                        Xms after its spawn" (whole milliseconds, truncated), for workers
#                                        spawned one at a time: min_workers = max_workers = 1, the routable
#                                        worker is SIGKILLed (through a pidfd) and the commander replaces it
#   <backend> respawn, kill->routable    the same spawns seen from outside with a microsecond clock: kill ->
#                                        a status.json naming the replacement routable (adds the death
#                                        notification, the respawn decision and the status write)
#   <backend> burst of N, spawn->routable   min_workers = max_workers = N started at once: overlapping spawns
#   systemd-run --user --scope true      a whole transient scope round trip (client start, bus, job, exec)
#   posix_spawn /bin/true                the floor: one process start and exit
# Rounds: each of BENCH_ROUNDS (3) rounds runs every case once (cgroup respawn, cgroup burst, posix_spawn,
# then the sandbox: scope respawn, scope burst, systemd-run), in an order that turns by one case each
# round, and prints its rows as they are measured, each with its other% and steal% and '!' when disturbed
# (the sandbox's rows share one span). After the rounds: per case the median of its undisturbed rounds'
# medians; per round the cgroup and the scope spawn->routable median over that round's systemd-run median,
# '!' when a row of the pair was disturbed, and the median of the undisturbed rounds' ratios.
# Goal (issue 3): cgroup spawn->routable median <= 30 ms.
# Environment: BENCH_ROUNDS (3), BENCH_SPAWNS (30), BENCH_BURST (30), BENCH_DISTURBED (5: other% + steal% over
# it marks a row), EP_SANDBOX (the systemd user sandbox, default tests/system/systemd-user-sandbox, the
# repository's own), BENCH_KEEP=DIR (keep the logs, one directory per round).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${BENCH_ROUNDS:-3}
spawns=${BENCH_SPAWNS:-30}
burst=${BENCH_BURST:-30}
sandbox=${EP_SANDBOX:-$top/tests/system/systemd-user-sandbox}

BENCH_NAME=spawn-latency
# shellcheck source=bench/bench-lib.sh
. "$top/bench/bench-lib.sh" # fail, wait_log, the disturbance of each row (span_begin, span_end), pairs_median
for v in BENCH_ROUNDS="$rounds" BENCH_SPAWNS="$spawns" BENCH_BURST="$burst"; do
        [[ ${v#*=} =~ ^[1-9][0-9]*$ ]] || fail "${v%%=*} must be a positive integer, not '${v#*=}'"
done
[[ $(id -u) -eq 0 ]] || fail "run as root (cgroups, the sandbox)"

# stats LABEL UNIT_DIVISOR: "label n median p95 min max" (in ms) of the numbers on stdin; p95 nearest rank.
stats() {
        sort -n | awk -v label="$1" -v div="$2" '{ v[NR] = $1 / div } END {
                if (NR == 0) { printf "%-40s %4d %8s %8s %8s %8s\n", label, 0, "-", "-", "-", "-"; exit }
                m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                p = int(NR * 0.95 + 0.999999); if (p > NR) p = NR
                printf "%-40s %4d %8.2f %8.2f %8.2f %8.2f\n", label, NR, m, v[p], v[1], v[NR] }'
}

# The spawn->routable figures (ms) of the log's "is routable" lines, skipping the first SKIP workers.
routable_ms() {
        grep -oE 'Worker w[0-9]+ is routable [0-9.]+(us|ms|s) after its spawn' "$1" |
                awk -v skip="$2" '{ n++; if (n <= skip) next; v = $5
                        if (v ~ /us$/) print v / 1000; else if (v ~ /ms$/) print v + 0; else print v * 1000 }'
}

write_conf() { # write_conf FILE BACKEND MIN_MAX
        cat >"$1" <<EOF
[worker]
exec = $worker
[pool]
backend = $2
min_workers = $3
max_workers = $3
spawn_timeout = 20s
stop_timeout = 3s
EOF
}

# ---- inside the sandbox: the scope backend and systemd-run, lines for the table on stdout ----
scope_warnings() { # the commander's warnings other than the benchmark's own SIGKILLs, as "# " lines
        { grep -E 'WARNING: |ERROR: ' "$1" | grep -v 'killed by signal SIGKILL' | head -n 3 | sed 's/^/# scope: /'; } || true
}
scope_part() {
        local log unit
        for c in systemctl systemd-run; do command -v "$c" >/dev/null || fail "the sandbox needs $c"; done
        # respawn, one at a time
        log=$work/scope-respawn.log
        unit=ep-bench-spawn-$$
        write_conf "$work/scope-1.conf" scope 1
        systemd-run --user --quiet --unit="$unit" -p StandardOutput="append:$log" -p StandardError="append:$log" \
                -E EP_LOG_TARGET=stderr "$commander" --group benchs --config "$work/scope-1.conf" --state-dir "$work/state-s1" \
                --runtime-dir "$work/run-scope-1" --no-frontend
        wait_log 60 "$log" "Ready: 1 workers routable" || { tail "$log" >&2; fail "scope: the commander did not get ready"; }
        grep -q "Placement backend: scope" "$log" || fail "scope: the commander did not pick the scope backend"
        "$helper" respawn "$work/run-scope-1" "$spawns" >"$work/scope-kill.txt" || fail "scope: respawn loop failed"
        systemctl --user stop "$unit.service"
        routable_ms "$log" 1 | stats "scope respawn, spawn->routable" 1
        scope_warnings "$log"
        awk '{ print $3 }' "$work/scope-kill.txt" | stats "scope respawn, kill->routable" 1000
        # burst
        log=$work/scope-burst.log
        unit=ep-bench-spawn-burst-$$
        write_conf "$work/scope-burst.conf" scope "$burst"
        systemd-run --user --quiet --unit="$unit" -p StandardOutput="append:$log" -p StandardError="append:$log" \
                -E EP_LOG_TARGET=stderr "$commander" --group benchs --config "$work/scope-burst.conf" --state-dir "$work/state-sb" \
                --runtime-dir "$work/run-scope-burst" --no-frontend
        wait_log 120 "$log" "Ready: $burst workers routable" || { tail "$log" >&2; fail "scope: burst did not get ready"; }
        systemctl --user stop "$unit.service"
        routable_ms "$log" 0 | stats "scope burst of $burst, spawn->routable" 1
        scope_warnings "$log"
        # the peer
        "$helper" exec "$spawns" "$(command -v systemd-run)" --user --scope --quiet /bin/true | \
                stats "systemd-run --user --scope true" 1000
}

if [[ ${1:-} == --scope-part ]]; then
        work=$2 build=$3
        commander=$build/daemon/elastic-pool worker=$build/demo/elastic-pool-demo-worker
        helper=$build/bench/bench-spawn-latency
        scope_part
        exit 0
fi

# ---- outside: the cgroup backend ----
"$top/scripts/bootstrap.sh" >/dev/null
build=$(cd "${1:-$("$top/scripts/build.sh")}" && pwd) # absolute: it goes into configuration files
commander=$build/daemon/elastic-pool
worker=$build/demo/elastic-pool-demo-worker
helper=$build/bench/bench-spawn-latency
for b in "$commander" "$worker" "$helper"; do [[ -x $b ]] || fail "no $b: build the tree first"; done

work=$(mktemp -d /tmp/ep-bench-spawn.XXXXXX)
cgroot=""
for d in /sys/fs/cgroup/unified /sys/fs/cgroup; do
        [[ $(stat -fc %T "$d" 2>/dev/null) == cgroup2fs ]] && { cgroot=$d; break; }
done
[[ -n $cgroot ]] || fail "no cgroup v2 hierarchy"
cg=$cgroot/ep-bench-spawn-$$
cpid=""

cleanup() {
        local rc=$?
        set +e
        if [[ -n $cpid ]]; then
                kill -TERM "$cpid" 2>/dev/null
                for _ in $(seq 100); do kill -0 "$cpid" 2>/dev/null || break; sleep 0.05; done
                kill -KILL "$cpid" 2>/dev/null
                wait "$cpid" 2>/dev/null
        fi
        if [[ -d $cg ]]; then
                echo 1 >"$cg/cgroup.kill" 2>/dev/null
                for _ in $(seq 100); do grep -qs '^populated 0' "$cg/cgroup.events" && break; sleep 0.05; done
                find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null
                [[ -d $cg ]] && echo "spawn-latency: warning: could not remove $cg" >&2
        fi
        if [[ -n ${BENCH_KEEP:-} ]]; then
                mkdir -p "$BENCH_KEEP" && cp -r "$work/." "$BENCH_KEEP/" 2>/dev/null
                echo "# logs kept in $BENCH_KEEP"
        fi
        rm -rf "$work"
        exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# start_cgroup_commander CONF LOG RUNTIME_DIR: the commander inside the run's fresh cgroup parent.
start_cgroup_commander() {
        make_cgroup "$cg" # bench-lib.sh: with every controller the root hands down
        bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$commander" --group benchc --config "$1" \
                --runtime-dir "$3" --state-dir "$3.state" --no-frontend >"$2" 2>&1 &
        cpid=$!
}
stop_cgroup_commander() {
        kill -TERM "$cpid"
        wait "$cpid" || fail "the commander exited with status $? on SIGTERM"
        cpid=""
        find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
        [[ ! -d $cg ]] || fail "the commander left cgroups behind under $cg"
}

# A row's disturbance: row_begin before it, row_note after; sets $note ("other% steal%", '!' on other%
# when disturbed) and $note_fields ("other steal mark", mark '!' or '-'). The row's own CPU is everything
# it ran: the commander and its workers (children of this script's children, reaped by them), the helper,
# the sandbox and what ran in it, once they ended.
row_span="" row_c0=0
row_begin() { row_span=$(span_begin); children_usec row_c0; }
row_note() {
        local c1 o st m
        children_usec c1
        read -r o st m _ < <(span_end "$row_span" $((c1 - row_c0)))
        note_fields="$o $st $m"
        [[ $m == '!' ]] || m=""
        note=$(printf '%7s %6s' "$o$m" "$st")
}

# emit_row "LINE OF stats": prints it as a row of round $round with $note, and keeps it for the summary in
# $work/rows.txt as "ROUND<tab>LABEL<tab>N MEDIAN P95 MIN MAX OTHER STEAL MARK".
emit_row() {
        printf '%-5s %s %s\n' "$round" "$1" "$note"
        awk -v r="$round" -v d="$note_fields" '{ l = $1; for (i = 2; i <= NF - 5; i++) l = l " " $i
                printf "%s\t%s\t%s %s %s %s %s %s\n", r, l, $(NF - 4), $(NF - 3), $(NF - 2), $(NF - 1), $NF, d }' \
                <<<"$1" >>"$work/rows.txt"
}

# The cases of a round, each measured into the round's own directory $rw.
cgroup_respawn() {
        local log=$rw/cgroup-respawn.log
        row_begin
        write_conf "$rw/cgroup-1.conf" cgroup 1
        start_cgroup_commander "$rw/cgroup-1.conf" "$log" "$rw/run-cgroup-1"
        wait_log 30 "$log" "Ready: 1 workers routable" || { tail "$log" >&2; fail "cgroup: the commander did not get ready"; }
        "$helper" respawn "$rw/run-cgroup-1" "$spawns" >"$rw/cgroup-kill.txt" || fail "cgroup: respawn loop failed"
        stop_cgroup_commander
        row_note
        emit_row "$(routable_ms "$log" 1 | stats "cgroup respawn, spawn->routable" 1)"
        emit_row "$(awk '{ print $3 }' "$rw/cgroup-kill.txt" | stats "cgroup respawn, kill->routable" 1000)"
        # the SIGKILL deaths are the benchmark's own doing; anything else is worth a look
        { grep -E 'WARNING: |ERROR: ' "$log" | grep -v 'killed by signal SIGKILL' | sed "s/^/round $round: /"; } \
                >>"$work/cgroup-warnings.txt" || true
}
cgroup_burst() {
        local log=$rw/cgroup-burst.log
        row_begin
        write_conf "$rw/cgroup-burst.conf" cgroup "$burst"
        start_cgroup_commander "$rw/cgroup-burst.conf" "$log" "$rw/run-cgroup-burst"
        wait_log 60 "$log" "Ready: $burst workers routable" || { tail "$log" >&2; fail "cgroup: burst did not get ready"; }
        stop_cgroup_commander
        row_note
        emit_row "$(routable_ms "$log" 0 | stats "cgroup burst of $burst, spawn->routable" 1)"
        { grep -E 'WARNING: |ERROR: ' "$log" | grep -v 'killed by signal SIGKILL' | sed "s/^/round $round: /"; } \
                >>"$work/cgroup-warnings.txt" || true
}
spawn_true() {
        row_begin
        "$helper" exec "$spawns" /bin/true >"$rw/posix-spawn.txt"
        row_note
        emit_row "$(stats "posix_spawn /bin/true" 1000 <"$rw/posix-spawn.txt")"
}
scope_skip="" # why the sandbox's rows are not measured: set once, no later round tries again
sandbox_part() {
        local rc=0 line
        [[ -z $scope_skip ]] || return 0
        row_begin
        "$sandbox" bash "$0" --scope-part "$rw" "$build" >"$rw/scope-rows.txt" 2>"$rw/scope-err.txt" || rc=$?
        # one span for the whole sandbox part: its rows share other% and steal%
        row_note
        if ((rc == 0)); then
                while IFS= read -r line; do emit_row "$line"; done < <(grep -v '^#' "$rw/scope-rows.txt" || true)
                grep '^#' "$rw/scope-rows.txt" || true
        elif ((rc == 77)); then # the sandbox cannot run on this machine: its reason is on stdout
                scope_skip="scope part skipped: $(grep -m 1 SKIP "$rw/scope-rows.txt" || echo "status 77")"
                echo "# $scope_skip"
        else
                echo "# round $round: scope part failed (status $rc): $(tail -n 3 "$rw/scope-err.txt" | tr '\n' ' ')"
        fi
}
run_case() {
        case $1 in
        cgroup_respawn) cgroup_respawn ;;
        cgroup_burst) cgroup_burst ;;
        spawn_true) spawn_true ;;
        sandbox) sandbox_part ;;
        esac
}

if ! [[ -x $sandbox ]] || ! command -v unshare >/dev/null || ! command -v dbus-daemon >/dev/null; then
        scope_skip="scope part skipped: no systemd user sandbox at $sandbox (or no unshare, dbus-daemon)"
fi
cases=(cgroup_respawn cgroup_burst spawn_true sandbox)
: >"$work/rows.txt"

echo "# spawn-latency: $(uname -r), $(nproc) cpus, $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# elastic-pool $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$top" diff --quiet HEAD -- daemon 2>/dev/null || echo ' +local changes') ($build), demo worker with default options, $spawns spawns a row, $rounds round(s)"
echo "# every round runs every case once, in an order that turns by one case each round; rows as they are measured"
echo "# spawn->routable: the commander's log figure (whole ms, truncated); kill->routable: outside, microsecond clock"
echo "# other%: CPU of processes outside the row, steal%: the hypervisor's (/proc/stat), in % of one CPU; '!': disturbed"
echo "#   (the sandbox's rows, scope and systemd-run, share one span)"
[[ -z $scope_skip ]] || echo "# $scope_skip"
echo
printf '%-5s %-40s %4s %8s %8s %8s %8s %7s %6s\n' round "what (ms)" n median p95 min max other% steal%
for ((round = 1; round <= rounds; round++)); do
        rw=$work/r$round
        mkdir "$rw"
        # the order turns by one each round: no case is always the first of a round, or always right after
        # the same other one
        for ((i = 0; i < ${#cases[@]}; i++)); do
                run_case "${cases[(i + round - 1) % ${#cases[@]}]}"
        done
done

echo
echo "# per case: the median of its undisturbed rounds' medians; 'quiet' counts its undisturbed rounds (a case"
echo "#   with none: the median over all its rounds, marked '!', to be rerun); the spread is in the rows above"
printf '%-40s %6s %8s\n' "what (ms)" quiet median
goal="NOT met (no cgroup spawn->routable figure)"
mapfile -t labels < <(cut -f2 "$work/rows.txt" | awk '!seen[$0]++')
for label in "${labels[@]}"; do
        # "MEDIAN MARK" per round of this case, as pairs_median (bench-lib.sh) reads them
        read -r m nq am na < <(awk -F'\t' -v l="$label" '$2 == l { split($3, f, " ")
                print f[2] == "-" ? "nan" : f[2], f[8] == "!" ? "!" : "-" }' "$work/rows.txt" | pairs_median)
        n=$(awk -F'\t' -v l="$label" '$2 == l' "$work/rows.txt" | wc -l)
        if ((nq > 0)); then
                printf '%-40s %6s %8.2f\n' "$label" "$nq/$n" "$m"
                how="median of $nq undisturbed round(s)"
        elif ((na > 0)); then
                printf '%-40s %6s %8.2f  ! no undisturbed round, rerun\n' "$label" "0/$n" "$am"
                m=$am how="median of all $na round(s)  ! every round was disturbed, rerun"
        else
                printf '%-40s %6s %8s\n' "$label" "0/$n" -
                continue
        fi
        [[ $label == "cgroup respawn, spawn->routable" ]] &&
                goal="$(awk -v m="$m" 'BEGIN { print m <= 30 ? "met" : "NOT met" }') ($m ms, $how)"
done
echo "# goal: cgroup spawn->routable median <= 30 ms: $goal"

echo
echo "# ratios to systemd-run --user --scope true: per round, that round's spawn->routable median over its"
echo "#   systemd-run median; a round where a row of the pair was disturbed is marked '!' and left out of the median"
if ! grep -q $'\tsystemd-run --user --scope true\t' "$work/rows.txt"; then
        echo "# no systemd-run row in any round: no ratio"
fi
for who in cgroup scope; do
        awk -F'\t' -v who="$who" -v rounds="$rounds" '{ split($3, f, " ") }
                $2 == who " respawn, spawn->routable" { a[$1] = f[2]; am[$1] = f[8] }
                $2 == "systemd-run --user --scope true" { b[$1] = f[2]; bm[$1] = f[8] }
                END { for (r = 1; r <= rounds; r++) {
                        if (!(r in a) || !(r in b)) continue
                        if (a[r] == "-" || b[r] == "-" || b[r] <= 0) {
                                printf "nan ! round %d: %s spawn->routable / systemd-run: no figure (%s / %s)\n", r, who, a[r], b[r]
                                continue }
                        d = am[r] == "!" || bm[r] == "!"
                        printf "%.4f %s round %d: %s spawn->routable / systemd-run: %.2f / %.2f ms = %.2fx%s\n", a[r] / b[r],
                                d ? "!" : "-", r, who, a[r], b[r], a[r] / b[r], d ? "   ! disturbed" : "" } }' \
                "$work/rows.txt" >"$work/ratios-$who"
        [[ -s $work/ratios-$who ]] || continue
        cut -d' ' -f3- "$work/ratios-$who"
        read -r m n am an < <(cut -d' ' -f1-2 "$work/ratios-$who" | pairs_median)
        if ((n > 0)); then
                printf '%s spawn->routable / systemd-run: median of %d undisturbed round(s): %.2fx\n' "$who" "$n" "$m"
        elif ((an > 0)); then
                printf '%s spawn->routable / systemd-run: no undisturbed round; median of all %d: %.2fx (disturbed, rerun)\n' \
                        "$who" "$an" "$am"
        fi
done
if [[ -s $work/cgroup-warnings.txt ]]; then
        echo "# commander warnings (cgroup runs):"
        head -n 5 "$work/cgroup-warnings.txt" | sed 's/^/#   /'
fi
