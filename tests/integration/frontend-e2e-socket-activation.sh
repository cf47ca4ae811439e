#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a commander started with sockets handed over by the socket-activation convention (LISTEN_FDS,
# as elastic-pool@.socket does) serves on them and opens nothing from listen=; and it treats them as
# its parent's: on SIGTERM it neither shuts them down nor unlinks them, so connections made while no
# commander runs wait in their backlog and the next commander on the same sockets answers them.
#   1. systemd-socket-activate (systemd's own tool) hands over one TCP socket; the request that made it
#      start the commander is answered 200 by a worker, and the listen= address stays closed.
#   2. A parent that keeps a TCP and a Unix socket (frontend-e2e-listen-fds.py, the .socket unit's part)
#      runs a commander, which serves on both and is stopped with SIGTERM; the Unix socket's path is still
#      there, a client connects to each socket and sends its request while none runs; a second commander
#      on the same sockets answers both requests 200.
#   3. With no worker coming up, a client waiting on a handed-over socket gets 503 with Retry-After once
#      spawn_timeout has passed: it waits for the first worker, never for ever.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

commander_cmd() {
        COMMANDER=("$(bin elastic-pool)" --group "t$$" --config "$EP_CONF" --runtime-dir "$1" --state-dir "$EP_TMP/state")
}

# closed ADDR: nothing accepts TCP connections on ADDR (HOST:PORT).
closed() {
        local code
        code=$("${CURL[@]}" -o /dev/null -w '%{http_code}' "http://$1/" 2>/dev/null) && true
        [[ $code == 000 ]]
}

# gap_client NAME TARGET...: one connection per TARGET (HOST:PORT or a Unix socket path), each sends GET
# /hello?gap=NAME and prints "sent" once every request is written, then one "TARGET STATUS" line per answer.
gap_client() {
        "$EP_PYTHON" - "$@" <<'EOF'
import socket, sys
name, targets = sys.argv[1], sys.argv[2:]
conns = []
for t in targets:
    if t.startswith("/"):
        s = socket.socket(socket.AF_UNIX)
        s.connect(t)
    else:
        host, port = t.rsplit(":", 1)
        s = socket.create_connection((host, int(port)))
    s.settimeout(60)
    s.sendall(b"GET /hello?gap=%s HTTP/1.1\r\nHost: gap.test\r\nConnection: close\r\n\r\n" % name.encode())
    conns.append((t, s))
print("sent", flush=True)
for t, s in conns:
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except OSError as e:
        out += b" <%s>" % str(e).encode()
    print(t, out.split(b"\r\n", 1)[0].decode("latin-1"), flush=True)
EOF
}

# ---- 1. systemd-socket-activate ----
if command -v systemd-socket-activate >/dev/null; then
        port_a=$(free_port)
        port_x=$(free_port)
        write_config "$DEMO_WORKER" "frontend.listen=127.0.0.1:$port_x"
        commander_cmd "$EP_TMP/run-a"
        spawn_bg bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$EP_TEST_CGROUP" \
                systemd-socket-activate -l "127.0.0.1:$port_a" "${COMMANDER[@]}" >"$EP_LOG" 2>&1
        EP_COMMANDER_PID=$EP_LAST_PID
        wait_log "Listening on 127\.0\.0\.1:$port_a as 3\."
        # systemd-socket-activate execs the commander on the first connection, this request's: it must wait
        # in the socket until a worker can answer it, not get 503 from a commander without one
        out=$("${CURL[@]}" -w ' %{http_code}' "http://127.0.0.1:$port_a/hello") || fail "the first request failed: $out"
        note "the request that started the commander: $out"
        [[ $out == *' 200' ]] || fail "the request that started the commander was answered ${out##* }"
        wait_ready
        log_has 'Listening on systemd socket fd 3 \(handed over by systemd\)' || fail "no log line for the passed socket"
        log_has "Listening on 127\.0\.0\.1:$port_x" && fail "the commander opened listen= too"
        closed "127.0.0.1:$port_x" || fail "listen= 127.0.0.1:$port_x accepts connections"
        v=$("${CURL[@]}" --http2-prior-knowledge -o /dev/null -w '%{http_code} %{http_version}' "http://127.0.0.1:$port_a/")
        [[ $v == '200 2' ]] || fail "h2c on the passed socket: $v"
        fe_stop
        note "systemd-socket-activate: served on the passed socket, listen= left closed"
else
        note "systemd-socket-activate missing: part 1 left out, part 2 hands the sockets over itself"
fi

# ---- 2. a parent that keeps the sockets across two commanders ----
port_b=$(free_port)
port_x=$(free_port)
usock=$EP_TMP/front.sock
write_config "$DEMO_WORKER" "frontend.listen=127.0.0.1:$port_x"
commander_cmd "$EP_TMP/run-b"
spawn_bg "$EP_PYTHON" "$FE_DIR/frontend-e2e-listen-fds.py" --tcp "127.0.0.1:$port_b" --unix "$usock" \
        --cgroup "$EP_TEST_CGROUP" --log "$EP_TMP/commander-%d.log" --runs 2 -- "${COMMANDER[@]}" \
        >"$EP_TMP/parent.log" 2>&1
parent=$EP_LAST_PID

# run_pid N: the pid of run N, once it started
run_pid() {
        wait_for_line "$EP_TMP/parent.log" "^run $1: pid [0-9]+$" | sed -E 's/.* pid //'
}
# stop_run N PID: SIGTERM to run N; it must exit 0
stop_run() {
        kill -TERM "$2"
        line=$(wait_for_line "$EP_TMP/parent.log" "^run $1: pid $2 exited") || fail "run $1 did not exit"
        [[ $line == *'with status 0' ]] || fail "run $1: $line"
}

pid1=$(run_pid 1) || fail "the parent did not start run 1: $(cat "$EP_TMP/parent.log")"
on_exit "kill -TERM $pid1 2>/dev/null"
EP_LOG=$EP_TMP/commander-1.log
wait_ready
log_has 'Listening on systemd socket fd 3 \(handed over by systemd\)' || fail "run 1 did not take fd 3"
log_has 'Listening on systemd socket fd 4 \(handed over by systemd\)' || fail "run 1 did not take fd 4"
closed "127.0.0.1:$port_x" || fail "listen= 127.0.0.1:$port_x accepts connections"
[[ $("${CURL[@]}" -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port_b/hello") == 200 ]] || fail "TCP: no 200"
[[ $("${CURL[@]}" --unix-socket "$usock" -o /dev/null -w '%{http_code}' "http://unix.test/hello") == 200 ]] ||
        fail "Unix socket: no 200"
note "run 1 serves on the TCP and the Unix socket it was handed"

stop_run 1 "$pid1"
EP_COMMANDER_PID=$pid1
sanitizer_clean
[[ -S $usock ]] || fail "the Unix socket $usock is gone after the commander stopped: it was not the commander's"
note "run 1 stopped; $usock still there"

# clients arrive while no commander runs: the kernel queues them on the parent's sockets
spawn_bg gap_client restart "127.0.0.1:$port_b" "$usock" >"$EP_TMP/gap.out" 2>&1
gap=$EP_LAST_PID
wait_for_line "$EP_TMP/gap.out" '^sent$' >/dev/null || fail "the gap client could not connect: $(cat "$EP_TMP/gap.out")"
note "two requests sent while no commander runs"

kill -USR1 "$parent"
pid2=$(run_pid 2) || fail "the parent did not start run 2"
on_exit "kill -TERM $pid2 2>/dev/null"
EP_LOG=$EP_TMP/commander-2.log
wait_ready
wait "$gap" || fail "the gap client failed: $(cat "$EP_TMP/gap.out")"
note "answers: $(grep -v '^sent$' "$EP_TMP/gap.out" | tr '\n' ';')"
grep -qxF "127.0.0.1:$port_b HTTP/1.1 200 OK" "$EP_TMP/gap.out" || fail "the TCP request of the gap: $(cat "$EP_TMP/gap.out")"
grep -qxF "$usock HTTP/1.1 200 OK" "$EP_TMP/gap.out" || fail "the Unix socket request of the gap: $(cat "$EP_TMP/gap.out")"
[[ $("${CURL[@]}" --http2-prior-knowledge -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port_b/") == 200 ]] ||
        fail "run 2: no h2c 200 on TCP"
[[ $("${CURL[@]}" --http2-prior-knowledge --unix-socket "$usock" -o /dev/null -w '%{http_code}' "http://unix.test/") == 200 ]] ||
        fail "run 2: no h2c 200 on the Unix socket"

stop_run 2 "$pid2"
EP_COMMANDER_PID=$pid2
sanitizer_clean
[[ -S $usock ]] || fail "the Unix socket $usock is gone after the second commander stopped"

# ---- 3. no worker comes up: the wait on a handed-over socket is bounded by spawn_timeout ----
# (a worker that never says Hello stays a spawn in flight until spawn_timeout)
port_c=$(free_port)
write_config /bin/sleep\ 600 pool.spawn_timeout=2s "frontend.listen=127.0.0.1:$port_x"
commander_cmd "$EP_TMP/run-c"
spawn_bg "$EP_PYTHON" "$FE_DIR/frontend-e2e-listen-fds.py" --tcp "127.0.0.1:$port_c" --cgroup "$EP_TEST_CGROUP" \
        --log "$EP_TMP/commander-c.log" -- "${COMMANDER[@]}" >"$EP_TMP/parent-c.log" 2>&1
EP_LOG=$EP_TMP/commander-c.log
pid3=$(wait_for_line "$EP_TMP/parent-c.log" '^run 1: pid [0-9]+$' | sed -E 's/.* pid //') || fail "no run without a worker"
on_exit "kill -TERM $pid3 2>/dev/null"
hdr=$("${CURL[@]}" -D - -o /dev/null "http://127.0.0.1:$port_c/hello") || fail "no answer without a worker"
note "without a worker: $(head -n1 <<<"$hdr" | tr -d '\r'), $(grep -i '^retry-after' <<<"$hdr" | tr -d '\r')"
grep -qE '^HTTP/1.1 503' <<<"$hdr" || fail "no 503 without a routable worker: $hdr"
grep -qiE '^retry-after: [0-9]+' <<<"$hdr" || fail "503 without Retry-After: $hdr"
log_has 'No worker routable within spawn_timeout=2s; accepting on the sockets handed over by systemd anyway' ||
        fail "no log line for accepting without a worker"
kill -TERM "$pid3"
wait_for_line "$EP_TMP/parent-c.log" "^run 1: pid $pid3 exited with status 0" >/dev/null || fail "the run without a worker did not stop cleanly"
sanitizer_clean
