# SPDX-License-Identifier: MIT
# Helpers of the scope-backend system tests (bash), on top of tests/integration/lib.sh. Source after it:
#   . "$(dirname "$0")/../integration/lib.sh"; . "$(dirname "$0")/scope-lib.sh"
# They run inside tests/system/systemd-user-sandbox (through run-in-sandbox.sh). The commander runs as a
# transient service of the user manager (systemd-run --user), as it would under elastic-pool@.service, so
# it finds that manager through MANAGERPID.

need_root
need_cmd systemctl systemd-run
[[ -n ${DBUS_SESSION_BUS_ADDRESS:-} && -n ${XDG_RUNTIME_DIR:-} ]] ||
        skip "not inside the systemd user sandbox (no session bus): use tests/system/run-in-sandbox.sh"
state=$(systemctl --user is-system-running 2>/dev/null || true)
[[ $state == running || $state == degraded ]] ||
        skip "no systemd user manager answers (state: ${state:-none})"
CG_ROOT=$(cgroup2_root) || skip "no cgroup v2 hierarchy on this host"

GROUP=web
SERVICE=elastic-pool-test-$$
SLICE=elastic-pool-$GROUP.slice
LOG=$EP_TMP/commander.log
COMMANDER=$(bin elastic-pool)
WORKER=$EP_BUILD_DIR/demo/elastic-pool-demo-worker
[[ -x $WORKER ]] || skip "elastic-pool-demo-worker is not built in $EP_BUILD_DIR"

ucl() { systemctl --user "$@"; }
prop() { ucl show -p "$2" --value "$1"; }
# The scopes of our group the manager knows of, one name a line, whatever their state.
scopes() {
        ucl list-units --all --plain --no-legend --type=scope "elastic-pool-$GROUP-w*.scope" | awk '{print $1}'
}
scope_count() { scopes | grep -c . || true; }
no_scopes() { [[ $(scope_count) -eq 0 ]]; }
scope_active() { [[ $(prop "$1" ActiveState) == active ]]; }
scope_gone() { ! scopes | grep -qx "$1"; }
slice_gone() { [[ $(prop "$SLICE" ActiveState) == inactive ]]; }
commander_gone() { [[ $(prop "$SERVICE.service" MainPID) == 0 ]]; }
ready_or_given_up() { grep -qE "$READY|Stopped spawning" "$LOG" || commander_gone; }
# The pids in a scope's cgroup, one a line.
scope_pids() { cat "$CG_ROOT$(prop "$1" ControlGroup)/cgroup.procs"; }

# write_config MIN MAX: the group's file, with backend=scope and a memory limit of 256M.
write_config() {
        cat >"$EP_TMP/$GROUP.conf" <<CONF
[worker]
exec = $WORKER
memory_limit = 256M

[pool]
backend = scope
min_workers = $1
max_workers = $2
spawn_timeout = 20s
stop_timeout = 5s
CONF
}

# Starts the commander as a transient service and waits until it reports $1 routable workers.
start_commander() {
        # Whatever happens, the service (and with it the commander) does not outlive the test.
        on_exit "ucl stop $SERVICE.service >/dev/null 2>&1; ucl reset-failed $SERVICE.service >/dev/null 2>&1"
        # RemainAfterExit keeps the unit after the commander exits, so its exit status can be read.
        systemd-run --user --quiet --unit="$SERVICE" -p RemainAfterExit=yes \
                -p StandardOutput="append:$LOG" -p StandardError="append:$LOG" \
                -E EP_LOG_TARGET=stderr -E EP_LOG_LEVEL=debug -E ASAN_OPTIONS=detect_leaks=1 \
                "$COMMANDER" --group "$GROUP" --config "$EP_TMP/$GROUP.conf" --runtime-dir "$EP_TMP/run" \
                --no-frontend
        READY="Ready: $1 workers routable"
        EP_WAIT=${EP_WAIT:-60} wait_until ready_or_given_up ||
                fail "the commander did not report $1 routable workers within ${EP_WAIT:-60} s"
        grep -q "$READY" "$LOG" || fail "the commander gave up or exited: $(tail -n 3 "$LOG")"
        grep -q "Placement backend: scope" "$LOG" || fail "the commander did not pick the scope backend"
}

# SIGTERM to the commander; then it must exit 0 and leave no scope of the group, nor the slice.
stop_commander_and_check_clean() {
        ucl kill --kill-who=main --signal=SIGTERM "$SERVICE.service"
        EP_WAIT=30 wait_until commander_gone || fail "the commander did not exit within 30 s of SIGTERM"
        local status
        status=$(prop "$SERVICE.service" ExecMainStatus)
        [[ $status == 0 ]] || fail "the commander exited with status $status after SIGTERM"
        EP_WAIT=10 wait_until no_scopes ||
                fail "scopes left after the commander stopped: $(scopes | tr '\n' ' ')"
        EP_WAIT=10 wait_until slice_gone ||
                fail "$SLICE is still $(prop "$SLICE" ActiveState) after the commander stopped"
        if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$LOG"; then
                fail "the sanitizers reported errors in the commander (see $LOG)"
        fi
        if grep -q "Failed to create scope" "$LOG"; then
                fail "a scope failed: $(grep 'Failed to create scope' "$LOG" | head -1)"
        fi
}
