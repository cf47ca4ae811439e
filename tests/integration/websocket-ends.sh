#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: how a tunnel ends, each way at a frame boundary with close 1001. (1) Its worker retires: the
# tunnel waits for the worker's HTTP requests (the HTTP drain: a slow request of the same worker finishes
# first), then ends with 1001 while 256 KiB messages stream both ways (no frame is cut: the client would
# see a protocol error or 1006), and the worker then stops at once (nothing open is left on it).
# (2) websocket_idle_timeout ends a silent tunnel with 1001; pings keep one open (a ping passes through and
# its pong comes back). (3) SIGTERM ends the tunnels that are left with 1001 and the commander exits 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
. "$(dirname "$0")/websocket-lib.sh"
make_test_cgroup
ws_private_bus
WS=("$EP_PYTHON" "$FE_DIR/websocket-ends.py")

admin=127.0.0.1:$(free_port)
fe_config "$DEMO_WORKER --threads 4" pool.min_workers=1 pool.max_workers=2 policy.compaction_margin=100 \
        frontend.websocket_idle_timeout=1500ms pool.drain_timeout=20s "frontend.admin_listen=$admin"
# requests open on wN, as the commander counts them now (its admin listener answers live)
inflight_on() {
        "${CURL[@]}" "http://$admin/_commander/status" | "$EP_PYTHON" -c 'import json, sys
d = json.load(sys.stdin)
print(next((w["inflight"] for w in d["workers"] if w["name"] == sys.argv[1]), -1))' "w$1"
}
inflight_is() { [[ $(inflight_on "$1") == "$2" ]]; }
fe_start
wait_log "On the user bus as org.elasticpool.Group1.t$$"

# ---- (1) retire: a user on w2 with a tunnel and a slow request; it logs out, w2 is retired ----
$CTL scale 2 >/dev/null || fail "scale 2 failed"
# a move needs w2 routable (its Hello in), not only listed: the status lists a worker from its spawn
wait_log 'Worker w2 is routable'
"${CURL[@]}" -c "$EP_TMP/jar" -o /dev/null "$EP_URL/login?user=carol" || fail "login"
$CTL move carol w2 >/dev/null || fail "move carol w2 failed"
cookie="ep_user=$(awk '$6 == "ep_user" { print $7 }' "$EP_TMP/jar")"
spawn_bg "${WS[@]}" busy "ws://$EP_ADDR/ws" --cookie "$cookie" >"$EP_TMP/busy.out" 2>"$EP_TMP/busy.err"
busy=$EP_LAST_PID
wait_until grep -q open "$EP_TMP/busy.out" || fail "the busy client did not connect"
spawn_bg "${CURL[@]}" -b "$EP_TMP/jar" -o "$EP_TMP/slow.out" -w '%{http_code}' "$EP_URL/work?sleep_ms=1500" \
        >"$EP_TMP/slow.code"
slow=$EP_LAST_PID
wait_until inflight_is 2 2 || fail "w2 has $(inflight_on 2) requests open, want the tunnel and the slow one"
# logged out, carol no longer pins w2: the retire takes it at once, with its tunnel and request open
"${CURL[@]}" -b "$EP_TMP/jar" -o /dev/null "$EP_URL/logout" || fail "logout"
$CTL retire 2 >/dev/null || fail "retire 2 failed"
wait "$slow" || fail "the slow request failed"
[[ $(cat "$EP_TMP/slow.code") == 200 ]] || fail "the slow request got $(cat "$EP_TMP/slow.code")"
slow_done=$(date +%s.%N)
wait "$busy" || fail "the busy client: $(cat "$EP_TMP/busy.err")"
busy_done=$(date +%s.%N)
note "busy client: $(tail -n 1 "$EP_TMP/busy.out"); the slow request ended $(echo "$busy_done - $slow_done" | bc) s before it"
tail -n 1 "$EP_TMP/busy.out" | grep -q '"close": 1001' || fail "the tunnel did not end with 1001"
wait_log 'w2 retires and its HTTP requests are done: ending its 1 WebSocket tunnels with close 1001'
wait_log '\[death w2\]'
log_has 'still had [0-9]+ requests after drain_timeout' && fail "w2 waited for drain_timeout"

# ---- (2) idle: a silent tunnel ends with 1001, a pinging one stays ----
spawn_bg "${WS[@]}" wait "ws://$EP_ADDR/ws" >"$EP_TMP/idle.out" 2>&1
idle=$EP_LAST_PID
"${WS[@]}" ping "ws://$EP_ADDR/ws" --seconds 3 >"$EP_TMP/ping.out" 2>&1 || fail "ping: $(cat "$EP_TMP/ping.out")"
note "pinging client: $(tail -n 1 "$EP_TMP/ping.out")"
wait "$idle" || fail "idle client: $(cat "$EP_TMP/idle.out")"
note "silent client: $(tail -n 1 "$EP_TMP/idle.out")"
tail -n 1 "$EP_TMP/idle.out" | grep -q '"close": 1001' || fail "the idle tunnel did not end with 1001"

# ---- (3) shutdown ----
spawn_bg "${WS[@]}" busy "ws://$EP_ADDR/ws" >"$EP_TMP/last.out" 2>&1
last=$EP_LAST_PID
wait_until grep -q open "$EP_TMP/last.out" || fail "the last client did not connect"
fe_stop
wait "$last" || fail "last client: $(cat "$EP_TMP/last.out")"
tail -n 1 "$EP_TMP/last.out" | grep -q '"close": 1001' || fail "shutdown: $(tail -n 1 "$EP_TMP/last.out")"
grep -q 'Ending 1 WebSocket tunnels with close 1001: the commander shuts down' "$EP_LOG" ||
        fail "no shutdown line for the tunnel"
