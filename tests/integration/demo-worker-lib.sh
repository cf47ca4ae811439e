# SPDX-License-Identifier: MIT
# Helpers of the demo-worker tests (bash), on top of lib.sh. Source after lib.sh:
#   . "$(dirname "$0")/lib.sh"; . "$(dirname "$0")/demo-worker-lib.sh"

DEMO_WORKER=$EP_BUILD_DIR/demo/elastic-pool-demo-worker
# The worker is built only once the sensor library (target ep-sensor) exists.
[[ -x $DEMO_WORKER ]] || fail "elastic-pool-demo-worker is not built in $EP_BUILD_DIR"
need_cmd curl
[[ -x $EP_PYTHON ]] || skip "needs $EP_PYTHON"

DEMO_SOCK=$EP_TMP/worker.sock
DEMO_LOG=$EP_TMP/worker.log
DEMO_PID=
# curl arguments that reach the worker started by demo_start; URLs are then http://demo/...
DEMO_CURL=(--unix-socket "$DEMO_SOCK" --max-time 30)

demo_ready() {
        curl -sf "${DEMO_CURL[@]}" -o /dev/null http://demo/hello
}

# Starts the worker on a Unix socket in $EP_TMP with the given extra options and waits until it answers.
demo_start() {
        spawn_bg "$DEMO_WORKER" --listen "$DEMO_SOCK" "$@" >"$DEMO_LOG" 2>&1
        DEMO_PID=$EP_LAST_PID
        wait_until demo_ready || fail "the worker did not answer on $DEMO_SOCK"
}

# Fails when the worker is gone (a crash after bad input, say).
demo_alive() {
        kill -0 "$DEMO_PID" 2>/dev/null || fail "the worker died"
        demo_ready || fail "the worker no longer answers"
}

# Ends the worker with SIGTERM and checks that it exits 0.
demo_stop() {
        kill -TERM "$DEMO_PID"
        local rc=0
        wait "$DEMO_PID" || rc=$?
        ((rc == 0)) || fail "the worker exited $rc after SIGTERM"
        EP_PIDS=()
}

# raw_exchange BYTES [ADDRESS]: sends BYTES (Python escapes: \r \n \x00 ...) on one connection to the
# worker's Unix socket (or HOST:PORT) and prints everything it answers until it closes the connection
# (or 20 s pass). Requests that should be answered on a connection the worker keeps open must end with
# one that says "Connection: close".
raw_exchange() {
        "$EP_PYTHON" - "$1" "${2:-$DEMO_SOCK}" <<'EOF'
import socket, sys
data = sys.argv[1].encode().decode("unicode_escape").encode("latin-1")
addr = sys.argv[2]
if "/" in addr:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(addr)
else:
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host.strip("[]"), int(port)))
s.settimeout(20)
s.sendall(data)
out = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
except (socket.timeout, ConnectionResetError):
    out += b"\n<no EOF>\n"
sys.stdout.write(out.decode("latin-1"))
EOF
}

# Prints the status codes of the responses in raw_exchange output, one per line.
statuses() {
        grep -aoE '^HTTP/1\.1 [0-9]{3}' | cut -d' ' -f2
}

# demo_peer_start [WORKER OPTIONS...]: runs the worker under tests/tools/ep-channel-peer, a fake commander
# that hands it a channel and $DEMO_SOCK by socket activation (reports every 200 ms), and waits until the
# worker answers. The frames the worker sends land in $DEMO_FRAMES, one a line; peer_command sends the
# peer a command line (snapshot MOVE USER, install-from-last-package USER, drain, close, quit...). Options
# for the peer itself go in the array DEMO_PEER_ARGS (--channel PATH, say).
DEMO_PEER_ARGS=()
demo_peer_start() {
        local peer=$EP_BUILD_DIR/tests/tools/ep-channel-peer
        [[ -x $peer ]] || skip "tests/tools/ep-channel-peer is not built"
        DEMO_FRAMES=$EP_TMP/frames.out
        mkfifo "$EP_TMP/commands"
        # held open read-write: the peer never sees EOF on its stdin until we close it
        exec 7<>"$EP_TMP/commands"
        # Not spawn_bg: bash gives a command it backgrounds /dev/null as stdin unless the redirection is
        # on that command itself, as here, not on the call of a function that backgrounds it.
        "$peer" --listen "$DEMO_SOCK" --interval 200ms "${DEMO_PEER_ARGS[@]}" -- "$DEMO_WORKER" "$@" \
                <"$EP_TMP/commands" >"$DEMO_FRAMES" 2>"$DEMO_LOG" &
        DEMO_PID=$!
        EP_PIDS+=("$DEMO_PID")
        wait_until demo_ready || fail "the worker does not answer on the peer's socket"
}

peer_command() {
        echo "$*" >&7
}

# expect_frame REGEX WHAT: waits for a frame line matching REGEX, fails naming WHAT.
expect_frame() {
        wait_for_line "$DEMO_FRAMES" "$1" >/dev/null || fail "no frame for $2 (/$1/)"
}

# Asks the peer to stop the worker (SIGTERM) and checks both end well: Goodbye, exit 0.
demo_peer_stop() {
        peer_command quit
        expect_frame '^goodbye ' "a Goodbye on SIGTERM"
        expect_frame '^exited status=0' "the worker's exit 0"
        local rc=0
        wait "$DEMO_PID" || rc=$?
        ((rc == 0)) || fail "ep-channel-peer exited $rc"
        EP_PIDS=()
}

# Microseconds of CLOCK_MONOTONIC (no steps with the wall clock), for lower bounds on delays: the reading
# falls inside the call, so from a call made before an event to one made after it, no less time passes
# than the event took.
now_usec() {
        "$EP_PYTHON" -c 'import time; print(time.monotonic_ns() // 1000)'
}
