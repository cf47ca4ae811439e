# SPDX-License-Identifier: MIT
# Helpers of the WebSocket tests (tests/integration/websocket-*.sh); source after lib.sh, commander-lib.sh
# and frontend-lib.sh.

"$EP_PYTHON" -c 'import websockets, h2' 2>/dev/null || skip "needs python3-websockets and python3-h2 for $EP_PYTHON"

# ws_private_bus: a private dbus-daemon stands in for the user bus (EP_BUS=user), so that elastic-poolctl
# reaches the group without systemd; sets CTL to the elastic-poolctl command line.
ws_private_bus() {
        private_session_bus
        CTL="$CTL --user" # word-split where it is used
}

# The moves of users with open tunnels need the move service to tell the front end (FrontendHooks
# .user_moving); until the manager wires it, such a move waits for the tunnel like for any request.
ws_need_user_moving() {
        grep -q 'user_moving' "$EP_SOURCE_DIR/daemon/manager.c" ||
                skip "FrontendHooks.user_moving is not wired in daemon/manager.c (a move would wait for the tunnels of its user)"
}
