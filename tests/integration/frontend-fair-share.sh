#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a greedy client and a polite one share a worker (issue 16, defect 3). The greedy one keeps far
# more slow requests open than the worker has connections, first as 32 streams of one HTTP/2 connection,
# then as 32 HTTP/1.1 connections; the polite one, from another address, asks one request at a time and
# keeps getting answers within one slow request's time, because a freed worker connection goes to the
# client holding the fewest, not to the oldest request (first come first served would make it wait
# behind the greedy queue: 28 requests of 2 s over 4 connections, 14 s).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
need_cmd h2load
make_test_cgroup

SLOW_MS=2000
BOUND_S=4.5
ADMIN_PORT=$(free_port)
fe_config "$(test_worker)" frontend.upstream_connections=4 "frontend.admin_listen=127.0.0.1:$ADMIN_PORT"
fe_start
code=$("${CURL[@]}" --interface 127.0.0.2 -o /dev/null -w '%{http_code}' "$EP_URL/")
[[ $code == 200 ]] || skip "no second loopback address to be the polite client from (got $code)"

# polite LABEL: five requests one after the other from 127.0.0.2, each answered 200 within BOUND_S.
polite() {
        local i out code t
        for i in 1 2 3 4 5; do
                out=$("${CURL[@]}" --interface 127.0.0.2 -o /dev/null -w '%{http_code} %{time_total}' \
                        "$EP_URL/polite-$1-$i")
                read -r code t <<<"$out"
                note "$1: polite request $i: $code in $t s"
                [[ $code == 200 ]] || fail "$1: the polite client got $code"
                awk -v t="$t" -v b="$BOUND_S" 'BEGIN { exit !(t < b) }' ||
                        fail "$1: the polite client waited $t s (bound $BOUND_S s) behind the greedy one"
        done
}

# All 32 requests of the greedy client are open in the commander (4 on the worker, 28 queued).
greedy_all_open() {
        local n
        n=$("${CURL[@]}" "http://127.0.0.1:$ADMIN_PORT/metrics" |
                awk '/^elastic_pool_worker_inflight_requests[{ ]/ { n += $NF } END { print n + 0 }')
        ((n >= 32))
}

# greedy LABEL H2LOAD-ARGS...: h2load for 14 s from 127.0.0.1; returns once the worker is full of it.
greedy() {
        local label=$1
        shift
        spawn_bg bash -c 'exec h2load "$@" >"$0" 2>&1' "$EP_TMP/greedy-$label.out" -D 14 "$@" \
                "$EP_URL/sleep?ms=$SLOW_MS"
        GREEDY_PID=$EP_LAST_PID
        wait_until greedy_all_open || fail "$label: the greedy client never filled the worker and its queue"
}

# greedy_done LABEL: the greedy client was served too (not starved).
greedy_done() {
        wait "$GREEDY_PID"
        note "$1: greedy client: $(grep -E '^requests:' "$EP_TMP/greedy-$1.out")"
        grep -qE '^status codes: [1-9][0-9]* 2xx' "$EP_TMP/greedy-$1.out" ||
                fail "$1: the greedy client got no answers: $(cat "$EP_TMP/greedy-$1.out")"
        GREEDY_HEADS=$(grep -c '/sleep' "$FE_HEADS")
}

GREEDY_HEADS=0
greedy h2 -c 1 -m 32
polite h2
greedy_done h2
greedy h1 --h1 -c 32 -m 1
polite h1
greedy_done h1
commander_alive || fail "the commander died"
fe_stop
