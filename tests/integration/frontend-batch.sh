#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: one wake-up, many requests. 32 keep-alive HTTP/1.1 clients each send a request while the
# commander is stopped; when it continues, its front end takes all 32 ready sockets in one wake-up (its own
# epoll set, daemon/frontend/io-batch.c) and answers every one; /metrics shows the batch
# (frontend_batch_largest) and the mean batch (socket events per wake-up) over more than one.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
. "$(dirname "$0")/admin-lib.sh"
make_test_cgroup

n=32
admin_config "$DEMO_WORKER"
fe_start
out=$("$EP_PYTHON" "$FE_DIR/frontend-batch-clients.py" "$EP_ADDR" "$EP_COMMANDER_PID" --connections $n) ||
        fail "not every request was answered: $out"
note "clients: $out"
metrics=$(admin_curl /metrics) || fail "no /metrics"
metric() {
        awk -v m="elastic_pool_$1" '$1 ~ "^" m "[{ ]" { print $2 }' <<<"$metrics"
}
largest=$(metric frontend_batch_largest)
wakeups=$(metric frontend_wakeups_total)
events=$(metric frontend_socket_events_total)
note "largest batch $largest, $events socket events in $wakeups wake-ups"
[[ -n $largest && -n $wakeups && -n $events ]] || fail "the batch metrics are missing: $(grep frontend_ <<<"$metrics")"
((largest >= n)) || fail "the $n sockets ready together took more than one wake-up (largest batch $largest)"
((events > wakeups)) || fail "no wake-up dispatched more than one socket ($events events, $wakeups wake-ups)"
commander_alive || fail "the commander died"
fe_stop
