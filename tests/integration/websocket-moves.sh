#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: WebSocket users keep every message across the ends of their tunnels. 20 users over HTTP/1.1
# (Upgrade: websocket) and 5 over HTTP/2 (extended CONNECT) keep a tunnel to the demo worker's echo,
# which counts their messages on the state a live move carries. Ten times: the pool grows to 2 workers,
# half of the users are moved to the new one (their tunnels end with close 1001, they reconnect there),
# then the new worker is given back (compaction on odd cycles, an operator's retire on even ones): its
# users move back (1001 again) and it is retired. Every tunnel that ends says 1001 (never 1006: no
# connection cut without a close frame), every user reconnects, and every answer's counter equals the
# message's number (none lost, none taken twice). Last, a rolling reload replaces the worker: every user's
# tunnel ends with 1001 and it reconnects to the new version. websocket-clients.py drives it all.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
. "$(dirname "$0")/websocket-lib.sh"
ws_need_user_moving
make_test_cgroup
ws_private_bus

# the ledger would give the second worker back on its own: a margin it never reaches leaves it to the
# operator's compact and retire
fe_config "$DEMO_WORKER --threads 4" pool.min_workers=1 pool.max_workers=2 policy.compaction_margin=100
fe_start
wait_log "On the user bus as org.elasticpool.Group1.t$$"

rc=0
"$EP_PYTHON" "$FE_DIR/websocket-clients.py" "$EP_ADDR" "$EP_RUN/status.json" "$CTL" --h1 20 --h2 5 \
        --cycles "${EP_WS_CYCLES:-10}" --timeout 30 \
        --reload-cmd "sed -i 's|^exec = .*|exec = $DEMO_WORKER --threads 3|' '$EP_CONF' && kill -HUP $EP_COMMANDER_PID" >"$EP_TMP/clients.out" 2>"$EP_TMP/clients.err" || rc=$?
cat "$EP_TMP/clients.out"
if ((rc != 0)); then
        cat "$EP_TMP/clients.err" >&2
        grep -E 'tunnel|Move|move|WARNING|Compaction' "$EP_LOG" | tail -n 30 | cut -c1-300 >&2
        fail "websocket-clients.py failed (exit $rc)"
fi
tail -n 1 "$EP_TMP/clients.out" | "$EP_PYTHON" -c 'import json, sys
d = json.load(sys.stdin)
assert set(d["closes"]) == {"1001"}, d["closes"]
assert d["connections"] > d["users"], d' || fail "the figures do not hold"
log_has 'Ending [0-9]+ WebSocket tunnels of user .* its user moves' || fail "no tunnel ended by a move in the log"
commander_alive || fail "the commander died"
fe_stop
