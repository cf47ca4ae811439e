#!/bin/bash
# SPDX-License-Identifier: MIT
# The worker serves on the socket handed over by socket activation (LISTEN_FDS=1, LISTEN_PID, fd 3),
# as the commander spawns it: a Unix stream socket and a TCP one, passed by systemd's own
# systemd-socket-activate, which execs the worker in place (so $! is the worker). Without a socket
# and without --listen it refuses to start (exit 2).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/demo-worker-lib.sh"

activate=$(command -v systemd-socket-activate || true)
[[ -z $activate && -x /usr/lib/systemd/systemd-socket-activate ]] && activate=/usr/lib/systemd/systemd-socket-activate
[[ -n $activate ]] || skip "needs systemd-socket-activate (package systemd)"

# Unix socket.
spawn_bg "$activate" -l "$DEMO_SOCK" "$DEMO_WORKER" --threads 2 >"$DEMO_LOG" 2>&1
DEMO_PID=$EP_LAST_PID
wait_until demo_ready || fail "no answer on the socket-activated Unix socket"
curl -sf "${DEMO_CURL[@]}" -D - -o /dev/null 'http://demo/login?user=act' | grep -qi '^Elastic-Pool-User: act' ||
        fail "login over the activated socket"
grep -q "Listening on $DEMO_SOCK" "$DEMO_LOG" || fail "the worker did not log the activated socket"
demo_stop

# TCP. systemd-socket-activate refuses port 0, so take one the kernel just handed out and released
# (another process could grab it in between: then the worker never answers, and this says so).
port=$("$EP_PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
: >"$DEMO_LOG"
spawn_bg "$activate" -l "127.0.0.1:$port" "$DEMO_WORKER" --threads 2 >"$DEMO_LOG" 2>&1
DEMO_PID=$EP_LAST_PID
wait_until curl -sf -o /dev/null "http://127.0.0.1:$port/" || fail "no answer on the socket-activated TCP port $port"
[[ $(curl -sf "http://127.0.0.1:$port/hello") == Hello* ]] || fail "GET /hello over activated TCP"
grep -q "Listening on 127.0.0.1:$port" "$DEMO_LOG" || fail "the worker did not log the activated TCP socket"
demo_stop

# Neither a socket nor --listen: a usage error.
rc=0
env -u LISTEN_FDS -u LISTEN_PID "$DEMO_WORKER" >"$EP_TMP/none.out" 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "without a socket the worker exited $rc, expected 2"
grep -q -- '--listen' "$EP_TMP/none.out" || fail "the refusal does not say what to pass: $(cat "$EP_TMP/none.out")"
echo "OK"
