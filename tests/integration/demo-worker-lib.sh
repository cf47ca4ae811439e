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
