#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: the sensor wrapper passes socket activation through to an unmodified child: the child sees
# LISTEN_PID equal to its own pid, LISTEN_FDS=1 and LISTEN_FDNAMES as given, accepts on fd 3, and inherits
# neither the channel fd nor ELASTIC_POOL_CHANNEL_FD (fd 3 is its only socket).
. "$(dirname "$0")/lib.sh"

[[ -x $EP_PYTHON ]] || skip "needs $EP_PYTHON"
peer=$(bin ep-channel-peer)
wrapper=$(bin elastic-pool-sensor)
sock=$EP_TMP/http.sock
out=$EP_TMP/peer.log

cat >"$EP_TMP/child.py" <<'PY'
import os, socket
fds = [int(f) for f in os.listdir("/proc/self/fd")]
sockets = []
for fd in sorted(fds):
    try:
        if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
            sockets.append(str(fd))
    except OSError:
        pass
env = os.environ
info = (f"pid={os.getpid()} listen_pid={env.get('LISTEN_PID', '-')} listen_fds={env.get('LISTEN_FDS', '-')} "
        f"names={env.get('LISTEN_FDNAMES', '-')} channel_fd_env={env.get('ELASTIC_POOL_CHANNEL_FD', '-')} "
        f"sockets={','.join(sockets)}")
listener = socket.socket(fileno=3)
conn, _ = listener.accept()
conn.sendall(info.encode() + b"\n")
conn.close()
PY

"$peer" --listen "$sock" --interval 200ms -- "$wrapper" -- "$EP_PYTHON" "$EP_TMP/child.py" \
        >"$out" 2>"$EP_TMP/peer-stderr.log" </dev/null &
peer_pid=$!
EP_PIDS+=("$peer_pid")
wait_for_line "$out" '^hello ' >/dev/null || fail "no Hello from the wrapper"

reply=$("$EP_PYTHON" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(20)
s.connect(sys.argv[1])
print(s.makefile().readline().strip())' "$sock") || fail "cannot talk to the child on the passed socket"
note "child: $reply"

declare -A kv
for pair in $reply; do kv[${pair%%=*}]=${pair#*=}; done
[[ ${kv[listen_pid]} == "${kv[pid]}" ]] || fail "LISTEN_PID=${kv[listen_pid]} is not the child's pid ${kv[pid]}"
[[ ${kv[listen_fds]} == 1 ]] || fail "LISTEN_FDS=${kv[listen_fds]}, want 1"
[[ ${kv[names]} == http ]] || fail "LISTEN_FDNAMES=${kv[names]} was not kept"
[[ ${kv[channel_fd_env]} == - ]] || fail "the child sees ELASTIC_POOL_CHANNEL_FD=${kv[channel_fd_env]}"
[[ ${kv[sockets]} == 3 ]] || fail "the child holds sockets ${kv[sockets]}, want only 3 (the channel leaked?)"

# the child served its one connection and exited; so do the wrapper and the peer
rc=0
wait "$peer_pid" || rc=$?
[[ $rc -eq 0 ]] || fail "peer exited with $rc"
grep -q '^exited status=0$' "$out" || fail "wrapper did not exit 0"
note "ok"
