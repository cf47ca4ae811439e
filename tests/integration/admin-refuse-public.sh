#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: the admin listener shows every user and the pool's state without authentication, so it is
# never public by accident. admin_listen on a wildcard address is refused, by --check-config (naming file,
# line and the override) and at start (the commander exits, nothing listens on the port); with
# admin_allow_public = yes it listens there and says so with a warning; the override never lets the admin
# listener share the public listener's port.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
. "$(dirname "$0")/admin-lib.sh"
make_test_cgroup

port_is_free() {
        "$EP_PYTHON" -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))' "$1"
}
want='admin_listen: '"'"'0.0.0.0:'"$EP_ADMIN_PORT"''"'"' is not a loopback address or a Unix socket path .*set admin_allow_public = yes'

# ---- refused: --check-config, then a real start ----
fe_config "$DEMO_WORKER" "frontend.admin_listen=0.0.0.0:$EP_ADMIN_PORT"
rc=0
"$(bin elastic-pool)" --check-config --group "t$$" --config "$EP_CONF" >"$EP_TMP/check.log" 2>&1 || rc=$?
((rc != 0)) || fail "--check-config accepted a public admin_listen"
grep -qE "^$EP_CONF:[0-9]+: \[frontend\] $want" "$EP_TMP/check.log" ||
        fail "--check-config said: $(cat "$EP_TMP/check.log")"
note "--check-config: $(head -n 1 "$EP_TMP/check.log")"

start_commander
rc=0
wait "$EP_COMMANDER_PID" || rc=$?
((rc != 0)) || fail "the commander started with a public admin_listen"
grep -qE "$want" "$EP_LOG" || fail "no clear refusal in the log"
port_is_free "$EP_ADMIN_PORT" || fail "something listens on the admin port after the refusal"
! log_has 'Admin listener on' || fail "an admin listener was opened"
! log_has 'Spawned worker' || fail "workers were spawned before the refusal"
note "refused at start (exit $rc)"

# ---- allowed with the override: it listens on the wildcard, and warns ----
fe_config "$DEMO_WORKER" "frontend.admin_listen=0.0.0.0:$EP_ADMIN_PORT" frontend.admin_allow_public=yes
fe_start
wait_log "Admin listener on 0.0.0.0:$EP_ADMIN_PORT, which is not loopback \(admin_allow_public = yes\)"
admin_curl /metrics -o /dev/null || fail "no answer on the public admin address"
fe_stop

# ---- the override does not open the public listener's port to the admin ----
fe_config "$DEMO_WORKER" "frontend.admin_listen=0.0.0.0:$EP_PORT" frontend.admin_allow_public=yes
rc=0
"$(bin elastic-pool)" --check-config --group "t$$" --config "$EP_CONF" >"$EP_TMP/check2.log" 2>&1 || rc=$?
((rc != 0)) && grep -q "overlaps listen address '127.0.0.1:$EP_PORT'" "$EP_TMP/check2.log" ||
        fail "the admin listener may share the public port: exit $rc, $(cat "$EP_TMP/check2.log")"
