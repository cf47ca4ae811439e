#!/bin/bash
# SPDX-License-Identifier: MIT
# Spawn -> routable latency of the demo worker under the commander, for the cgroup backend (the commander
# in a fresh cgroup v2 parent of this run) and the scope backend (inside the shared systemd user sandbox),
# beside `systemd-run --user --scope true` measured in the same run and sandbox. A benchmark, never a
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
# Goal (issue 3): cgroup spawn->routable median <= 30 ms.
# Environment: BENCH_SPAWNS (30), BENCH_BURST (30), EP_SANDBOX (the systemd user sandbox, default
# tests/system/systemd-user-sandbox, the repository's own), BENCH_KEEP=DIR (keep the logs).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
spawns=${BENCH_SPAWNS:-30}
burst=${BENCH_BURST:-30}
sandbox=${EP_SANDBOX:-$top/tests/system/systemd-user-sandbox}

BENCH_NAME=spawn-latency
# shellcheck source=bench/bench-lib.sh
. "$top/bench/bench-lib.sh" # fail, wait_log, and the disturbance of each row (span_begin, span_end)
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
        mkdir "$cg"
        for c in $(cat "$cgroot/cgroup.subtree_control" 2>/dev/null); do
                echo "+$c" >"$cg/cgroup.subtree_control" 2>/dev/null || true
        done
        bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$commander" --group benchc --config "$1" \
                --runtime-dir "$3" --state-dir "$work/state" --no-frontend >"$2" 2>&1 &
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
# when disturbed). The row's own CPU is everything it ran: the commander and its workers (children of
# this script's children, reaped by them), the helper, the sandbox and what ran in it, once they ended.
row_begin() { row_span=$(span_begin); children_usec row_c0; }
row_note() {
        local c1 o st m
        children_usec c1
        read -r o st m _ < <(span_end "$row_span" $((c1 - row_c0)))
        [[ $m == '!' ]] || m=""
        note=$(printf '%7s %6s' "$o$m" "$st")
}

rows=()
row_begin
log=$work/cgroup-respawn.log
write_conf "$work/cgroup-1.conf" cgroup 1
start_cgroup_commander "$work/cgroup-1.conf" "$log" "$work/run-cgroup-1"
wait_log 30 "$log" "Ready: 1 workers routable" || { tail "$log" >&2; fail "cgroup: the commander did not get ready"; }
"$helper" respawn "$work/run-cgroup-1" "$spawns" >"$work/cgroup-kill.txt" || fail "cgroup: respawn loop failed"
stop_cgroup_commander
row_note
rows+=("$(routable_ms "$log" 1 | stats "cgroup respawn, spawn->routable" 1) $note")
rows+=("$(awk '{ print $3 }' "$work/cgroup-kill.txt" | stats "cgroup respawn, kill->routable" 1000) $note")
# the SIGKILL deaths are the benchmark's own doing; anything else is worth a look
grep -E 'WARNING: |ERROR: ' "$log" | grep -v 'killed by signal SIGKILL' >"$work/cgroup-warnings.txt" || true

row_begin
log=$work/cgroup-burst.log
write_conf "$work/cgroup-burst.conf" cgroup "$burst"
start_cgroup_commander "$work/cgroup-burst.conf" "$log" "$work/run-cgroup-burst"
wait_log 60 "$log" "Ready: $burst workers routable" || { tail "$log" >&2; fail "cgroup: burst did not get ready"; }
stop_cgroup_commander
row_note
rows+=("$(routable_ms "$log" 0 | stats "cgroup burst of $burst, spawn->routable" 1) $note")
grep -E 'WARNING: |ERROR: ' "$log" | grep -v 'killed by signal SIGKILL' >>"$work/cgroup-warnings.txt" || true

row_begin
"$helper" exec "$spawns" /bin/true >"$work/posix-spawn.txt"
row_note
rows+=("$(stats "posix_spawn /bin/true" 1000 <"$work/posix-spawn.txt") $note")

scope_note=""
if [[ -x $sandbox ]] && command -v unshare dbus-daemon >/dev/null; then
        row_begin
        if "$sandbox" bash "$0" --scope-part "$work" "$build" >"$work/scope-rows.txt" 2>"$work/scope-err.txt"; then
                # one span for the whole sandbox part: its rows share other% and steal%
                row_note
                mapfile -t scope_rows < <(grep -v '^#' "$work/scope-rows.txt" | sed "s/\$/ $note/")
                rows+=("${scope_rows[@]}")
                grep '^#' "$work/scope-rows.txt" >"$work/scope-notes.txt" || true
        else
                scope_note="scope part failed: $(tail -n 3 "$work/scope-err.txt" | tr '\n' ' ')"
        fi
else
        scope_note="scope part skipped: no systemd user sandbox at $sandbox"
fi

echo "# spawn-latency: $(uname -r), $(nproc) cpus, $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# elastic-pool $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$top" diff --quiet HEAD -- daemon 2>/dev/null || echo ' +local changes') ($build), demo worker with default options, $spawns spawns a row"
echo "# spawn->routable: the commander's log figure (whole ms, truncated); kill->routable: outside, microsecond clock"
echo "# other%: CPU of processes outside the row, steal%: the hypervisor's (/proc/stat), in % of one CPU; '!': disturbed"
printf '%-40s %4s %8s %8s %8s %8s %7s %6s\n' "what (ms)" n median p95 min max other% steal%
printf '%s\n' "${rows[@]}"
[[ -s $work/scope-notes.txt ]] && cat "$work/scope-notes.txt"
[[ -n $scope_note ]] && echo "# $scope_note"
echo
# "median other%" of the row whose label starts with $1 (after the label: n median p95 min max other% steal%)
median_of() { printf '%s\n' "${rows[@]}" | awk -v l="$1" 'index($0, l) == 1 { print $(NF - 5), $(NF - 1) }'; }
read -r c co <<<"$(median_of "cgroup respawn, spawn->routable")"
read -r s so <<<"$(median_of "scope respawn, spawn->routable")"
read -r r ro <<<"$(median_of "systemd-run --user --scope true")"
awk -v c="$c" -v s="$s" -v r="$r" -v co="$co" -v so="$so" -v ro="$ro" 'BEGIN {
        printf "# goal: cgroup spawn->routable median <= 30 ms: %s (%.2f ms)%s\n", (c != "" && c <= 30) ? "met" : "NOT met", c,
                co ~ /!/ ? "  ! the row was disturbed, rerun" : ""
        if (r != "" && r > 0) {
                printf "# ratio cgroup spawn->routable / systemd-run --user --scope true (medians, one run): %.2fx%s\n", c / r,
                        (co ~ /!/ || ro ~ /!/) ? "  ! a row of the pair was disturbed" : ""
                if (s != "") printf "# ratio scope spawn->routable / systemd-run --user --scope true (medians, one run): %.2fx%s\n",
                        s / r, (so ~ /!/ || ro ~ /!/) ? "  ! a row of the pair was disturbed" : ""
        } }'
if [[ -s $work/cgroup-warnings.txt ]]; then
        echo "# commander warnings (cgroup runs):"
        head -n 5 "$work/cgroup-warnings.txt" | sed 's/^/#   /'
fi
