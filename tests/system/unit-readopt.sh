#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Intent: a commander crash loses nothing but its in-flight requests. elastic-pool@.service, as installed,
# runs under a real systemd manager with two scope workers and two logged-in users under steady load;
# `kill -9` of the commander: systemd restarts it (Restart=on-failure), the new commander takes the same
# two worker processes back (no spawn, no scope leaked), every user keeps its worker and its counter goes
# on, and no client connection is refused while it restarts (the listening socket waits in systemd's fd
# store). A process outside the group's scopes that connects to channel.sock is refused, in the journal.
# `systemctl stop` afterwards leaves no scope, cgroup, process or runtime socket behind.
#
# Runs inside the systemd user sandbox: tests/system/run-in-sandbox.sh tests/system/unit-readopt.sh
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/scope-lib.sh"
need_cmd cmake curl
[[ -x $EP_PYTHON ]] || skip "needs $EP_PYTHON"
VARIANT=system
. "$(dirname "$0")/unit-lib.sh"
write_group_conf adopt_timeout=20s
CURL=(curl -s --noproxy '*' --max-time 20)
journal() { journalctl --no-pager -o cat "_SYSTEMD_USER_UNIT=$UNIT" 2>/dev/null; }

timeout 90 systemctl --user start "$UNIT" || fail "systemctl --user start $UNIT failed: $(ucl status --no-pager -n 30 "$UNIT" 2>&1)"
main=$(prop "$UNIT" MainPID)
users_login "$URL" alice bob
declare -A pids
for n in 1 2; do
        pids[$n]=$(scope_pids "elastic-pool-$GROUP-w$n.scope" | head -n1)
        [[ -n ${pids[$n]} ]] || fail "scope w$n holds no process"
done
note "commander $main; workers ${pids[1]} ${pids[2]}; alice on w$(cat "$EP_TMP/alice.worker"), bob on w$(cat "$EP_TMP/bob.worker")"

# steady load: guests on fresh connections until told to stop; counts refusals and failures apart
"$EP_PYTHON" - "$PORT" "$EP_TMP/stop-load" >"$EP_TMP/load.out" 2>&1 <<'PY' &
import os, socket, sys, time
port, stop = int(sys.argv[1]), sys.argv[2]
ok = refused = failed = 0
while not os.path.exists(stop):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=20)
    except ConnectionRefusedError:
        refused += 1
        time.sleep(0.01)
        continue
    try:
        s.settimeout(20)
        s.sendall(b"GET /hello HTTP/1.1\r\nHost: load\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        ok += data.startswith(b"HTTP/1.1 200")
        failed += not data.startswith(b"HTTP/1.1 200")
    except OSError:
        failed += 1
    finally:
        s.close()
    time.sleep(0.005)
print("ok=%d refused=%d failed=%d" % (ok, refused, failed))
PY
load=$!
on_exit "touch '$EP_TMP/stop-load'"
sleep 1

restarts=$(prop "$UNIT" NRestarts)
t0=$(date +%s%N)
kill -KILL "$main"
restarted() { [[ $(prop "$UNIT" NRestarts) -gt $restarts && $(prop "$UNIT" ActiveState) == active ]]; }
EP_WAIT=60 wait_until restarted || fail "$UNIT was not restarted: $(ucl status --no-pager -n 30 "$UNIT" 2>&1)"
new_main=$(prop "$UNIT" MainPID)
[[ $new_main != "$main" && $new_main != 0 ]] || fail "no new commander (MainPID $new_main)"
note "systemd restarted the commander: pid $new_main, active again $((($(date +%s%N) - t0) / 1000000)) ms after the kill"

# the same worker processes in the same scopes, and nothing spawned
[[ $(scope_count) -eq 2 ]] || fail "expected the 2 scopes, found: $(scopes | tr '\n' ' ')"
for n in 1 2; do
        [[ $(scope_pids "elastic-pool-$GROUP-w$n.scope" | head -n1) == "${pids[$n]}" ]] ||
                fail "scope w$n no longer holds pid ${pids[$n]}"
done
users_kept "$URL" 4 alice bob
journal | grep -qE "w$(cat "$EP_TMP/alice.worker") announced [0-9]+ users it holds: [1-9]" ||
        fail "the worker did not announce its users: $(journal | grep -E 'announced|taken back|re-placed')"
journal | grep -q 're-placed' && fail "a user was placed anew: $(journal | grep 're-placed')"
note "alice and bob kept their workers and their counters went on"
sleep 1
touch "$EP_TMP/stop-load"
wait "$load" || fail "the load client failed: $(cat "$EP_TMP/load.out")"
result=$(tail -n1 "$EP_TMP/load.out")
note "guests during the restart: $result"
[[ $result == *" refused=0 "* ]] || fail "client connections were refused during the restart: $result"
ok=${result#ok=}
((${ok%% *} > 0)) || fail "no guest request succeeded: $result"

# an outsider on the channel socket: closed at once, and said in the journal
"$EP_PYTHON" -c 'import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.settimeout(5)
sys.exit(0 if s.recv(1) == b"" else 1)' "$RUNTIME/channel.sock" || fail "the outsider was not turned away"
refused_in_journal() { journal | grep -q 'Refused a connection on the channel socket'; }
EP_WAIT=10 wait_until refused_in_journal || fail "no refusal in the journal: $(journal | tail -n 20)"
journal | grep -q 'Took back worker w1' || fail "the journal does not say w1 was taken back"

# ---- stop: nothing of the group is left ----
timeout 120 systemctl --user stop "$UNIT" || fail "systemctl --user stop $UNIT failed or hung"
EP_WAIT=10 wait_until no_scopes || fail "scopes left after the stop: $(scopes | tr '\n' ' ')"
EP_WAIT=10 wait_until slice_gone || fail "$SLICE is still $(prop "$SLICE" ActiveState) after the stop"
for pid in "$new_main" "${pids[1]}" "${pids[2]}"; do
        [[ ! -d /proc/$pid ]] || fail "pid $pid ($(readlink "/proc/$pid/exe")) outlived the stop"
done
[[ ! -e $RUNTIME ]] || fail "the runtime directory is left: $(find "$RUNTIME" | head)"
note "stopped: no scope, process or runtime socket of group $GROUP left"
echo "PASS: unit-readopt"
