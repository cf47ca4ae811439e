#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a commander killed with SIGKILL loses nothing but its in-flight requests. Its workers (cgroup
# leaves, readopt=yes) keep running; the next commander of the group finds them, takes them back by
# pidfd without spawning, their sensors reconnect to channel.sock and announce their users, and every
# logged-in user keeps its worker and its counter goes on. A process outside the group's leaves that
# connects to channel.sock is refused and journaled. A worker whose sensor never comes back is stopped
# at adopt_timeout and replaced. After an orderly stop nothing is left: no leaf, no socket.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER" pool.min_workers=2 pool.max_workers=2 pool.adopt_timeout=5s
fe_start
wait_log 'Worker w2 is routable'

users_login "$EP_URL" alice bob
pid1=$(worker_pid w1) pid2=$(worker_pid w2)
note "alice on w$(cat "$EP_TMP/alice.worker"), bob on w$(cat "$EP_TMP/bob.worker"); pids $pid1 $pid2"

kill -KILL "$EP_COMMANDER_PID"
wait "$EP_COMMANDER_PID" 2>/dev/null || true
kill -0 "$pid1" "$pid2" || fail "a worker died with the commander"
mv "$EP_LOG" "$EP_TMP/commander-before.log"

start_commander
wait_log 'Took back worker w1 \(pid '"$pid1"
wait_log 'Took back worker w2 \(pid '"$pid2"
wait_log "w1's sensor reconnected on the channel socket"
w=$(cat "$EP_TMP/alice.worker")
wait_log "w$w announced [0-9]+ users it holds: [1-9][0-9]* placed there again"
wait_log 'Every worker taken back is accounted for \(2 taken back\)'
wait_ready
log_has 'Spawned worker' && fail "the restarted commander spawned: $(grep 'Spawned worker' "$EP_LOG")"
[[ $(worker_pid w1) == "$pid1" && $(worker_pid w2) == "$pid2" ]] || fail "other pids serve: $(cat "$EP_RUN/status.json")"

users_kept "$EP_URL" 4 alice bob
log_has 're-placed' && fail "a user was placed anew: $(grep 're-placed' "$EP_LOG")"
note "alice and bob kept their workers and counters across the SIGKILL"

# an outsider knocking on the channel socket: refused, journaled, the commander unharmed
"$EP_PYTHON" -c 'import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.settimeout(5)
sys.exit(0 if s.recv(1) == b"" else 1)' "$EP_RUN/channel.sock" || fail "the outsider's connection was not closed"
wait_log 'Refused a connection on the channel socket .* from pid [0-9]+ .*: it is not in the cgroup of one of this group'"'"'s workers'
commander_alive || fail "commander died"

# a worker whose sensor cannot come back: stopped at adopt_timeout, and replaced
kill -STOP "$pid2"
kill -KILL "$EP_COMMANDER_PID"
wait "$EP_COMMANDER_PID" 2>/dev/null || true
mv "$EP_LOG" "$EP_TMP/commander-second.log"
start_commander
wait_log 'Took back worker w2'
EP_WAIT=15 wait_log "w2's sensor did not reconnect within adopt_timeout=5s; stopping it"
kill -CONT "$pid2" 2>/dev/null || true
EP_WAIT=20 wait_log 'Worker w3 is routable'
body=$("${CURL[@]}" -b "$EP_TMP/alice.jar" "$EP_URL/state") || fail "/state of alice after the second restart"
note "alice after the second restart: $body"

rc=0
stop_commander || rc=$?
((rc == 0)) || fail "commander exited with $rc"
sanitizer_clean
for leaf in "$EP_TEST_CGROUP"/w*; do
        [[ -d $leaf ]] && fail "$leaf outlived the orderly stop"
done
[[ -e $EP_RUN/channel.sock ]] && fail "channel.sock outlived the orderly stop"
true
