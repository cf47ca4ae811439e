#!/bin/bash
# Intent: undecodable and oversize frames close that worker's channel with a logged reason; the
# commander keeps running and serving its other workers, and decisions that need the closed workers'
# readings are held (missing is never zero).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
make_test_cgroup
fake=$(bin ep-fake-worker)
for i in 1 2 3; do echo 0.05 >"$EP_TMP/cpu-$i"; done
cat >"$EP_TMP/worker.sh" <<W
#!/bin/bash
case \$ELASTIC_POOL_WORKER in
2) exec $fake --cpu-file $EP_TMP/cpu-%w --garbage-after 2 ;;
3) exec $fake --cpu-file $EP_TMP/cpu-%w --oversize-after 2 ;;
*) exec $fake --cpu-file $EP_TMP/cpu-%w ;;
esac
W
chmod +x "$EP_TMP/worker.sh"

write_config "$EP_TMP/worker.sh" pool.min_workers=3
start_commander --no-frontend
wait_log 'Closed the channel of w2: undecodable frame'
wait_log 'Closed the channel of w3: frame announces 1073741824 bytes, over the 16777216 byte maximum'
commander_alive || fail "the commander died on a bad frame"
# w1 still reports: its row count keeps growing
wait_until test -s "$EP_RUN/status.json"
a=$(status_get '["counters"]["reports"]')
wait_until bash -c "(( \$($EP_PYTHON -c 'import json;print(json.load(open(\"$EP_RUN/status.json\"))[\"counters\"][\"reports\"])') > $a + 3 ))" ||
        fail "w1's reports stopped arriving"
[[ $(status_get '["workers"][1]["freshness"]') == no-channel ]] || fail "w2 is not shown without a channel"
# w1 at 0.05 would make the reception want a spawn in a group of one; here the group has three and the
# non-reception workers have no readings: scale-up must hold, naming one of them.
echo 0.9 >"$EP_TMP/cpu-1"
wait_log 'scale-up held: w[23] '
stop_commander || fail "commander exited with $?"
