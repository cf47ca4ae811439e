# SPDX-License-Identifier: MIT
# Helpers of the WebSocket tests (tests/integration/websocket-*.sh); source after lib.sh, commander-lib.sh
# and frontend-lib.sh.

"$EP_PYTHON" -c 'import websockets, h2' 2>/dev/null || skip "needs python3-websockets and python3-h2 for $EP_PYTHON"

# ws_private_bus: a private dbus-daemon stands in for the user bus (EP_BUS=user), so that elastic-poolctl
# reaches the group without systemd; sets CTL to the elastic-poolctl command line.
ws_private_bus() {
        need_cmd dbus-daemon
        mkdir -m 755 "$EP_TMP/dbus"
        cat >"$EP_TMP/dbus/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=$EP_TMP/dbus/bus.sock</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
CONF
        dbus-daemon --config-file="$EP_TMP/dbus/bus.conf" --fork --print-address=1 --print-pid=1 \
                >"$EP_TMP/dbus/started" || fail "dbus-daemon did not start"
        on_exit "kill $(sed -n 2p "$EP_TMP/dbus/started") 2>/dev/null"
        export DBUS_SESSION_BUS_ADDRESS="unix:path=$EP_TMP/dbus/bus.sock" EP_BUS=user
        CTL="$EP_BUILD_DIR/ctl/elastic-poolctl --user"
        [[ -x $EP_BUILD_DIR/ctl/elastic-poolctl ]] || fail "binary elastic-poolctl not found under $EP_BUILD_DIR/ctl"
}

# The moves of users with open tunnels need the move service to tell the front end (FrontendHooks
# .user_moving); until the manager wires it, such a move waits for the tunnel like for any request.
ws_need_user_moving() {
        grep -q 'user_moving' "$EP_SOURCE_DIR/daemon/manager.c" ||
                skip "FrontendHooks.user_moving is not wired in daemon/manager.c (a move would wait for the tunnels of its user)"
}
