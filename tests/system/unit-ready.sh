#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Intent: elastic-pool@.service as `cmake --install` installs it, hardening and all, run by a real
# systemd manager: `systemctl start elastic-pool@GROUP` returns once the commander said READY=1, with
# its workers running as scopes of that manager (still under the unit's sandbox, which they inherit)
# and serving through the front end; `systemctl stop` leaves no scope, cgroup, process or runtime socket
# of the group behind.
#
# unit-ready.sh [system|user]: the system unit (the default) or its user-manager variant. Either runs as
# a user unit of the sandbox's manager (run as root, so the system unit's namespacing is real), with a
# drop-in that changes only what the test must: the commander comes from the build tree, and for the
# system unit the configuration from this test's directory, and three settings follow from a user
# manager keeping its sockets in /run/user/UID (see the drop-in). The user variant reads its
# configuration where it says, in the manager's $XDG_CONFIG_HOME. With the system unit, STATUS= is checked
# to follow the pool, the bus to answer busctl and elastic-poolctl, and systemctl reload to add a listener
# and to keep a broken file out.
#
# Runs inside the systemd user sandbox: tests/system/run-in-sandbox.sh tests/system/unit-ready.sh [user]
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/scope-lib.sh"
need_cmd cmake curl
VARIANT=${1:-system}

. "$(dirname "$0")/unit-lib.sh"
write_group_conf

# ---- start: systemctl returns when READY=1 came (Type=notify) ----
t0=$(date +%s%N)
if ! timeout 90 systemctl --user start "$UNIT"; then
        fail "systemctl --user start $UNIT failed: $(ucl status --no-pager -n 30 "$UNIT" 2>&1)"
fi
t1=$(date +%s%N)
note "systemctl --user start $UNIT returned after $(((t1 - t0) / 1000000)) ms"
[[ $(prop "$UNIT" ActiveState)/$(prop "$UNIT" SubState) == active/running ]] ||
        fail "$UNIT is $(prop "$UNIT" ActiveState)/$(prop "$UNIT" SubState)"
[[ $(prop "$UNIT" Type) == notify && $(prop "$UNIT" NotifyAccess) == main ]] ||
        fail "$UNIT is Type=$(prop "$UNIT" Type) NotifyAccess=$(prop "$UNIT" NotifyAccess)"
[[ $(prop "$UNIT" FragmentPath) == "$UNIT_DIR/elastic-pool@.service" ]] ||
        fail "$UNIT was loaded from $(prop "$UNIT" FragmentPath)"
[[ $(prop "$UNIT" DropInPaths) == "$UNIT_DIR/$UNIT.d/test.conf" ]] ||
        fail "$UNIT has the drop-ins '$(prop "$UNIT" DropInPaths)'"
main=$(prop "$UNIT" MainPID)
[[ $(readlink "/proc/$main/exe") == "$COMMANDER" ]] || fail "$UNIT's main process $main is not the commander"
service_cgroup=$(prop "$UNIT" ControlGroup)
[[ $(sed -n 's/^0:://p' "/proc/$main/cgroup") == "$service_cgroup"* ]] ||
        fail "the commander (pid $main) is not in $UNIT's cgroup $service_cgroup"

# ---- the workers: scopes of the manager, under the unit's sandbox, serving ----
[[ $(scope_count) -eq 2 ]] || fail "expected 2 scopes of group $GROUP, found: $(scopes | tr '\n' ' ')"
scope_cgroups=() worker_pids=()
for n in 1 2; do
        scope=elastic-pool-$GROUP-w$n.scope
        scope_active "$scope" || fail "$scope is not active"
        [[ $(prop "$scope" Slice) == "$SLICE" ]] || fail "$scope is in $(prop "$scope" Slice), not $SLICE"
        scope_cgroups+=("$(prop "$scope" ControlGroup)")
        pid=$(scope_pids "$scope" | head -n1)
        [[ -n $pid && $(readlink "/proc/$pid/exe") == "$WORKER" ]] ||
                fail "$scope holds no worker (pid '$pid')"
        # forked by the commander, the worker keeps the unit's no_new_privs, seccomp filter and namespace
        grep -qx $'NoNewPrivs:\t1' "/proc/$pid/status" || fail "worker w$n (pid $pid) lost NoNewPrivileges="
        grep -qx $'Seccomp:\t2' "/proc/$pid/status" || fail "worker w$n (pid $pid) has no seccomp filter"
        [[ $(readlink "/proc/$pid/ns/mnt") == "$(readlink "/proc/$main/ns/mnt")" ]] ||
                fail "worker w$n (pid $pid) is not in the commander's mount namespace"
        worker_pids+=("$pid")
        note "$scope: active in $SLICE, pid $pid"
done
served_by=$(curl -s --noproxy '*' --max-time 10 "http://127.0.0.1:$PORT/_monitor/state") ||
        fail "no answer from the front end on 127.0.0.1:$PORT"
[[ $served_by == *'"worker"'* ]] || fail "the front end answered '$served_by'"
sockets=$(find "$RUNTIME" -type s | wc -l)
((sockets > 0)) || fail "no socket in the runtime directory $RUNTIME"
note "front end on 127.0.0.1:$PORT answers; $sockets sockets in $RUNTIME"

# ---- running: STATUS= follows the pool, reload, the bus (the system unit; the user one stops here) ----
if [[ $VARIANT == system ]]; then
        CTL=("$EP_BUILD_DIR/ctl/elastic-poolctl" --user -g "$GROUP")
        status_has() { [[ $(prop "$UNIT" StatusText) == *"$1"* ]]; }
        wait_until status_has "2 workers, 0 users, occupancy " ||
                fail "STATUS= is '$(prop "$UNIT" StatusText)', not the pool"
        curl -s --noproxy '*' --max-time 10 -c "$EP_TMP/jar" -o /dev/null "http://127.0.0.1:$PORT/login?user=ann" ||
                fail "login failed"
        wait_until status_has "2 workers, 1 users" || fail "STATUS= did not follow a login: $(prop "$UNIT" StatusText)"
        note "STATUS=$(prop "$UNIT" StatusText)"

        # the bus: the properties for anyone, a method for the commander's uid
        label=$GROUP # t<digits>: nothing to escape
        busctl --user get-property "org.elasticpool.Group1.$label" /org/elasticpool/Group1 org.elasticpool.Group1 \
                Group | grep -qx "s \"$GROUP\"" || fail "busctl cannot read the Group property"
        # a method: Compact at the min_workers floor is refused with the reason (NotNow)
        out=$(busctl --user call "org.elasticpool.Group1.$label" /org/elasticpool/Group1 org.elasticpool.Group1 \
                Compact 2>&1) && fail "Compact at the floor succeeded: $out"
        [[ $out == *"min_workers=2"* ]] || fail "Compact at the floor: '$out'"
        "${CTL[@]}" status >"$EP_TMP/status.txt" || fail "elastic-poolctl status failed"
        grep -q "w1" "$EP_TMP/status.txt" || fail "elastic-poolctl status shows no worker: $(cat "$EP_TMP/status.txt")"
        "${CTL[@]}" --json status | "$EP_PYTHON" -c 'import json, sys; d = json.load(sys.stdin)' ||
                fail "elastic-poolctl --json status is not JSON"

        # reload: a changed threshold, a second listener, then a broken file that keeps the running one
        PORT2=$(free_port)
        sed -i "s/^listen = .*/listen = 127.0.0.1:$PORT 127.0.0.1:$PORT2/" "$conf"
        printf '[policy]\nadmission_threshold = 0.6\n' >>"$conf"
        ucl reload "$UNIT" || fail "systemctl --user reload failed"
        wait_until curl -s --noproxy '*' --max-time 2 -o /dev/null "http://127.0.0.1:$PORT2/" ||
                fail "the listener added on reload does not accept"
        curl -s --noproxy '*' --max-time 5 -o /dev/null "http://127.0.0.1:$PORT/" ||
                fail "the first listener stopped serving on reload"
        printf '[policy]\nadmission_threshold = 9\n' >>"$conf"
        ucl reload "$UNIT" || fail "systemctl --user reload (broken file) failed"
        wait_until status_has "reload failed, running on the previous configuration: $conf:" ||
                fail "STATUS= does not show the failed reload: $(prop "$UNIT" StatusText)"
        [[ $(prop "$UNIT" ActiveState) == active ]] || fail "$UNIT did not survive a broken file"
        curl -s --noproxy '*' --max-time 5 -o /dev/null "http://127.0.0.1:$PORT2/" ||
                fail "no answer after the broken reload"
        note "reload: a listener added, a broken file kept out ($(prop "$UNIT" StatusText | sed 's/.*reload failed/reload failed/'))"
fi

# ---- stop: nothing of the group is left ----
timeout 120 systemctl --user stop "$UNIT" || fail "systemctl --user stop $UNIT failed or hung"
[[ $(prop "$UNIT" Result) == success && $(prop "$UNIT" ExecMainStatus) == 0 ]] ||
        fail "$UNIT stopped with Result=$(prop "$UNIT" Result), status $(prop "$UNIT" ExecMainStatus)"
EP_WAIT=10 wait_until no_scopes || fail "scopes left after the stop: $(scopes | tr '\n' ' ')"
EP_WAIT=10 wait_until slice_gone || fail "$SLICE is still $(prop "$SLICE" ActiveState) after the stop"
for cg in "$service_cgroup" "${scope_cgroups[@]}" "${scope_cgroups[0]%/*}"; do
        [[ ! -d $CG_ROOT$cg ]] || fail "cgroup $cg is left after the stop"
done
for pid in "$main" "${worker_pids[@]}"; do
        [[ ! -d /proc/$pid ]] || fail "pid $pid ($(readlink "/proc/$pid/exe")) outlived the stop"
done
[[ ! -e $RUNTIME ]] || fail "the runtime directory is left: $(find "$RUNTIME" | head)"
left=$(find "$XDG_RUNTIME_DIR" -type s -path "*$GROUP*")
[[ -z $left ]] || fail "sockets of group $GROUP are left: $left"
note "stopped: no scope, cgroup, process or runtime socket of group $GROUP left"
echo "PASS: unit-ready ($VARIANT)"
