#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Intent: the packages' upgrade step, packaging/restart-groups (installed as
# /usr/libexec/elastic-pool/restart-groups, run by the .deb's postinst and the .rpm's %post), moves a
# running group to a new commander without losing its users. elastic-pool@.service as installed runs
# under a real systemd manager with two scope workers and two logged-in users: --dry-run changes
# nothing; a run replaces the commander (a new main process, one restart more) while the same two worker
# processes serve both users with their counters going on (re-adoption); with Restart=no from a drop-in
# it restarts the unit in order instead (new workers), since a kill would leave the group down.
#
# Runs inside the systemd user sandbox (restart-groups --user: the sandbox's manager is a user manager):
#   tests/system/run-in-sandbox.sh tests/packaging/restart-groups.sh
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../system/scope-lib.sh"
need_cmd cmake curl
VARIANT=system
. "$(dirname "$0")/../system/unit-lib.sh"
HELPER=$EP_SOURCE_DIR/packaging/restart-groups.sh
write_group_conf adopt_timeout=20s

worker_pids() {
        local n
        for n in 1 2; do
                scope_pids "elastic-pool-$GROUP-w$n.scope" | head -n1
        done | tr '\n' ' '
}

timeout 90 systemctl --user start "$UNIT" || fail "systemctl --user start $UNIT failed: $(ucl status --no-pager -n 30 "$UNIT" 2>&1)"
users_login "$URL" alice bob
main=$(prop "$UNIT" MainPID)
restarts=$(prop "$UNIT" NRestarts)
workers=$(worker_pids)
[[ $workers =~ ^[0-9]+\ [0-9]+\ $ ]] || fail "expected a process in each of the 2 scopes, found '$workers'"
note "commander $main, workers $workers"

# ---- --dry-run: says what it would do, does nothing ----
out=$("$HELPER" --user --dry-run 2>&1) || fail "restart-groups --dry-run failed: $out"
[[ $out == *"would run: systemctl --user kill --kill-whom=main --signal=SIGKILL $UNIT"* ]] ||
        fail "--dry-run did not say it would kill the commander of $UNIT: $out"
[[ $(prop "$UNIT" MainPID) == "$main" && $(prop "$UNIT" NRestarts) == "$restarts" ]] ||
        fail "--dry-run restarted $UNIT"

# ---- the upgrade step: the same workers and users under a new commander ----
out=$(timeout 150 "$HELPER" --user 2>&1) || fail "restart-groups failed: $out"
note "restart-groups: $out"
[[ $out == *"restarting $UNIT through re-adoption"* ]] || fail "restart-groups did not take $UNIT through re-adoption: $out"
[[ $out != *"not active again"* ]] || fail "$out"
new_main=$(prop "$UNIT" MainPID)
[[ $new_main != "$main" && $new_main != 0 && $(prop "$UNIT" ActiveState) == active ]] ||
        fail "no new commander: MainPID $new_main, $(prop "$UNIT" ActiveState)"
[[ $(prop "$UNIT" NRestarts) -eq $((restarts + 1)) ]] || fail "NRestarts $(prop "$UNIT" NRestarts), was $restarts"
[[ $(worker_pids) == "$workers" ]] || fail "the workers changed: $(worker_pids), were $workers"
users_kept "$URL" 4 alice bob
note "commander $new_main serves alice and bob on the same workers ($workers), counters went on"

# ---- a unit that would not come back after a kill: restarted in order ----
cat >"$UNIT_DIR/$UNIT.d/zz-no-restart.conf" <<DROPIN
[Service]
Restart=no
DROPIN
main=$new_main
out=$(timeout 150 "$HELPER" --user 2>&1) || fail "restart-groups failed: $out"
[[ $out == *"$UNIT has Restart=no"* ]] || fail "restart-groups did not say why it restarts $UNIT in order: $out"
new_main=$(prop "$UNIT" MainPID)
[[ $new_main != "$main" && $new_main != 0 && $(prop "$UNIT" ActiveState) == active ]] ||
        fail "not restarted in order: MainPID $new_main, $(prop "$UNIT" ActiveState)"
[[ $(worker_pids) != "$workers" ]] || fail "an orderly restart kept the workers ($workers)"
note "with Restart=no: restarted in order, commander $new_main, new workers $(worker_pids)"

timeout 120 systemctl --user stop "$UNIT" || fail "systemctl --user stop $UNIT failed or hung"
EP_WAIT=10 wait_until no_scopes || fail "scopes left after the stop: $(scopes | tr '\n' ' ')"
echo "PASS: restart-groups"
