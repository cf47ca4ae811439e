#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Intent: under a real systemd user manager, backend=scope makes every worker its own transient unit
# elastic-pool-<group>-w<N>.scope inside elastic-pool-<group>.slice, with the worker's process in that
# scope's cgroup and the configured memory limit on the unit; and stopping the commander with SIGTERM
# leaves none of those scopes (nor the slice) behind.
#
# Runs inside the systemd user sandbox: tests/system/run-in-sandbox.sh tests/system/scope-backend.sh
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/scope-lib.sh"

write_config 2 2
start_commander 2

# ---- both workers are scopes of their own in the group's slice, their process inside ----
for n in 1 2; do
        unit=elastic-pool-$GROUP-w$n.scope
        [[ $(prop "$unit" ActiveState) == active ]] ||
                fail "$unit is not active: $(ucl status "$unit" 2>&1 | head -5)"
        [[ $(prop "$unit" Slice) == "$SLICE" ]] || fail "$unit is in $(prop "$unit" Slice), not $SLICE"
        [[ $(prop "$unit" Description) == "elastic-pool $GROUP worker w$n" ]] ||
                fail "$unit has description '$(prop "$unit" Description)'"
        [[ $(prop "$unit" MemoryMax) == $((256 << 20)) ]] ||
                fail "$unit has MemoryMax=$(prop "$unit" MemoryMax)"
        [[ $(prop "$unit" CollectMode) == inactive-or-failed ]] ||
                fail "$unit has CollectMode=$(prop "$unit" CollectMode)"
        cgroup=$(prop "$unit" ControlGroup)
        [[ -n $cgroup && -r $CG_ROOT$cgroup/cgroup.procs ]] || fail "$unit has no cgroup ($cgroup)"
        pids=$(scope_pids "$unit")
        [[ -n $pids ]] || fail "no process in $unit's cgroup $cgroup"
        for pid in $pids; do
                exe=$(readlink "/proc/$pid/exe" || true)
                [[ $exe == "$WORKER" ]] || fail "$unit holds pid $pid running '$exe', not the worker"
                grep -qx "ELASTIC_POOL_WORKER=$n" <(tr '\0' '\n' <"/proc/$pid/environ") ||
                        fail "pid $pid in $unit is not worker w$n"
        done
        note "$unit: active in $SLICE, cgroup $cgroup, pid $pids"
done
[[ $(scope_count) -eq 2 ]] || fail "expected 2 scopes of group $GROUP, found: $(scopes | tr '\n' ' ')"
# the commander stays in its own service; the scopes are outside it
main=$(prop "$SERVICE.service" MainPID)
[[ $(sed -n 's/^0:://p' "/proc/$main/cgroup") == "$(prop "$SERVICE.service" ControlGroup)" ]] ||
        fail "the commander (pid $main) left its service's cgroup"

# ---- SIGTERM: every worker stops, every scope goes, and so does the slice ----
stop_commander_and_check_clean

# ---- figures for the benchmark notes (never a pass/fail criterion) ----
grep -oE "Worker w[0-9]+ is routable .* after its spawn \(Hello after [^)]*\)" "$LOG" | sed 's/^/# /'
grep -oE "Placed w[0-9]+ in [^ ]+ \(cgroup [^)]*\) [^ ]+ after asking systemd" "$LOG" |
        sed -E 's/\(cgroup [^)]*\) //; s/^/# /'
for _ in 1 2 3 4 5; do
        t0=$(date +%s%N)
        systemd-run --user --scope --quiet true
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000))
done | sort -n | awk '{ a[NR] = $1 } END {
        printf "# systemd-run --user --scope true: median %.1f ms of %d runs\n", a[int((NR + 1) / 2)] / 1000, NR
}'

echo "PASS: scope-backend"
