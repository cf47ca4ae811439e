#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Intent: when a worker placed in a scope dies (SIGKILL from outside), its scope goes away with it, the
# commander logs the death with the signal, and the replacement it spawns to keep min_workers gets a
# scope of its own under the next name; after SIGTERM nothing of the group is left.
#
# Runs inside the systemd user sandbox: tests/system/run-in-sandbox.sh tests/system/scope-worker-death.sh
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/scope-lib.sh"

write_config 2 2
start_commander 2

victim=elastic-pool-$GROUP-w1.scope
pid=$(scope_pids "$victim" | head -n1)
[[ -n $pid ]] || fail "no process in $victim"
kill -KILL "$pid"

EP_WAIT=20 wait_for_line "$LOG" "Worker w1 \(pid $pid\) killed by signal SIGKILL" >/dev/null ||
        fail "the commander did not log w1's death by SIGKILL"
EP_WAIT=20 wait_until scope_gone "$victim" || fail "$victim is still there after its worker died"
EP_WAIT=30 wait_for_line "$LOG" "Worker w3 is routable" >/dev/null || fail "no replacement w3 became routable"
replacement=elastic-pool-$GROUP-w3.scope
scope_active "$replacement" || fail "$replacement is not active"
[[ $(prop "$replacement" Slice) == "$SLICE" ]] || fail "$replacement is not in $SLICE"
grep -qx "ELASTIC_POOL_WORKER=3" <(tr '\0' '\n' <"/proc/$(scope_pids "$replacement" | head -n1)/environ") ||
        fail "$replacement does not hold worker w3"
[[ $(scopes | sort | tr '\n' ' ') == "elastic-pool-$GROUP-w2.scope elastic-pool-$GROUP-w3.scope " ]] ||
        fail "expected the scopes of w2 and w3, found: $(scopes | tr '\n' ' ')"
note "w1 died by SIGKILL, $victim went with it, w3 took its place in $replacement"

stop_commander_and_check_clean
echo "PASS: scope-worker-death"
