#!/bin/bash
# Intent: channel frames that cost more to decode than their size says (issue 16, defect 5) are refused
# before they are unpacked, and a flood of valid reports is dropped unread past a rate: a 16 MiB
# package of tiny unknown fields, a Hello of 8 million repeated entries and 2 s of reports as fast as
# the socket takes them leave the commander's peak memory and its report count near where they were.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
make_test_cgroup
fake=$(bin ep-fake-worker)
for i in 1 2 3 4; do echo 0.05 >"$EP_TMP/cpu-$i"; done
cat >"$EP_TMP/worker.sh" <<W
#!/bin/bash
case \$ELASTIC_POOL_WORKER in
2) exec $fake --cpu-file $EP_TMP/cpu-%w --unknown-after 10 ;;
3) exec $fake --cpu-file $EP_TMP/cpu-%w --repeated-after 10 ;;
4) exec $fake --cpu-file $EP_TMP/cpu-%w --flood-after 10 ;;
*) exec $fake --cpu-file $EP_TMP/cpu-%w ;;
esac
W
chmod +x "$EP_TMP/worker.sh"

hwm_kib() {
        awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"
}

write_config "$EP_TMP/worker.sh" pool.min_workers=4
start_commander --no-frontend
wait_log "Ready: 4 workers routable"
before=$(hwm_kib "$EP_COMMANDER_PID")
wait_log 'Closed the channel of w2: package frame with more fields than its type allows'
wait_log 'Closed the channel of w3: hello frame of [0-9]{7} bytes, over the 65536 byte maximum of its type'
wait_log 'w4 sends report frames faster than 20 a second: the excess is dropped unread'
wait_until test -s "$EP_TMP/cpu-4.flooded" || fail "w4 did not finish its flood"
commander_alive || fail "the commander died on a hostile frame"
flooded=$(cat "$EP_TMP/cpu-4.flooded")
reports=$(status_get '["counters"]["reports"]')
note "w4 flooded $flooded reports; the commander counted $reports reports of all workers"
# 2 s at 20/s plus the burst of 40, plus everyone's ordinary 5/s: far below a flood of thousands
((flooded > 1000)) || skip "the flood reached only $flooded reports: too slow a host to tell"
((reports < 400)) || fail "$reports reports were taken from a flood of $flooded"
log_has 'Closed the channel of w4' && fail "a fast but valid reporter lost its channel"
after=$(hwm_kib "$EP_COMMANDER_PID")
note "commander peak RSS: $before KiB before, $after KiB after"
# the package is buffered whole (16 MiB) before its fields are counted; nothing more
((after - before < 48 * 1024)) || fail "the commander's peak memory grew by $((after - before)) KiB"
stop_commander || fail "commander exited with $?"
