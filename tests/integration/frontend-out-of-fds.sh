#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: the commander raises its soft RLIMIT_NOFILE to the hard limit at start; out of descriptors, it
# pauses accepting (said once), does not spin on accept(), keeps serving a client it already had, and
# accepts again once descriptors are free (issue 16, defect 6).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup
need_cmd prlimit

ulimit -Sn 256 || skip "cannot lower the soft limit of descriptors"
fe_config "$DEMO_WORKER" frontend.header_timeout=60s
fe_start
pid=$EP_COMMANDER_PID
limits=$(awk '/^Max open files/ { print $4, $5 }' "/proc/$pid/limits")
hard=$(ulimit -Hn)
[[ $limits == "$hard $hard" ]] || fail "the commander's soft limit was not raised to the hard one: '$limits' (hard $hard)"

# A keep-alive client from before the shortage; its worker connection stays open in the pool.
cat >"$EP_TMP/keep.py" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(10)
def request():
    s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(65536)
    head, _, body = got.partition(b"\r\n\r\n")
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(body) < n:
        body += s.recv(65536)
    return head.split(b"\r\n")[0].decode()
for line in sys.stdin:
    try:
        print(request(), flush=True)
    except Exception as e:
        print("error", e, flush=True)
PY
coproc KEEP { "$EP_PYTHON" -u "$EP_TMP/keep.py" "$EP_PORT"; }
echo go >&"${KEEP[1]}"
read -r -t 20 first <&"${KEEP[0]}"
[[ $first == "HTTP/1.1 200 OK" ]] || fail "first request: $first"

# Now the limit drops to a few more than what is open, and a flood of idle connections takes the rest.
open_fds=$(ls "/proc/$pid/fd" | wc -l)
lim=$((open_fds + 20))
prlimit --pid "$pid" --nofile=$lim:$lim || skip "prlimit cannot change the commander's limit"
cat >"$EP_TMP/flood.py" <<'PY'
import socket, sys
socks = []
for i in range(120):
    socks.append(socket.create_connection(("127.0.0.1", int(sys.argv[1]))))
print("open", flush=True)
sys.stdin.readline()
for s in socks:
    s.close()
print("closed", flush=True)
sys.stdin.readline()
PY
mkfifo "$EP_TMP/flood.in" "$EP_TMP/flood.out"
# the fifos are opened by the child: an open in this shell would block before the other end exists
spawn_bg bash -c 'exec "$0" -u "$1" "$2" <"$3" >"$4"' "$EP_PYTHON" "$EP_TMP/flood.py" "$EP_PORT" \
        "$EP_TMP/flood.in" "$EP_TMP/flood.out"
exec 7>"$EP_TMP/flood.in" 8<"$EP_TMP/flood.out"
read -r -t 20 state <&8
[[ $state == open ]] || fail "the flood could not connect: $state"
wait_log 'Out of file descriptors \(the process limit'
ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
t0=$(ticks)
sleep 2 # measuring: the CPU time spent over two seconds of shortage
t1=$(ticks)
note "CPU over 2 s out of descriptors: $((t1 - t0)) ticks of $(getconf CLK_TCK)/s"
((t1 - t0 < $(getconf CLK_TCK) / 2)) || fail "the commander spins out of descriptors: $((t1 - t0)) ticks in 2 s"
[[ $(grep -c 'Out of file descriptors' "$EP_LOG") == 1 ]] || fail "the shortage was not said exactly once"

# the client from before is still served, over the worker connection it already had
echo go >&"${KEEP[1]}"
read -r -t 20 second <&"${KEEP[0]}"
[[ $second == "HTTP/1.1 200 OK" ]] || fail "the client from before the shortage got: $second"

# descriptors back: accepting resumes, and a new client is answered
echo close >&7
read -r -t 20 state <&8
wait_log 'Accepting again after [0-9]+ pauses for lack of file descriptors'
code=$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$EP_URL/")
[[ $code == 200 ]] || fail "a new client after the shortage got $code"
commander_alive || fail "the commander died"
fe_stop
