#!/bin/bash
# Intent: missing is never zero. A worker whose reports stop must not look idle: compaction is held,
# the hold names the worker and how long it has been silent, in the journal and in status.json.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
make_test_cgroup
fake=$(bin ep-fake-worker)
echo 0.9 >"$EP_TMP/cpu-1"
echo 0.01 >"$EP_TMP/cpu-2"
cat >"$EP_TMP/worker.sh" <<W
#!/bin/bash
[[ \$ELASTIC_POOL_WORKER == 2 ]] && exec $fake --cpu-file $EP_TMP/cpu-%w --silent-after 3
exec $fake --cpu-file $EP_TMP/cpu-%w
W
chmod +x "$EP_TMP/worker.sh"

write_config "$EP_TMP/worker.sh"
start_commander --no-frontend
wait_log 'Worker w2 is routable'
# w1 stays busy until w2 fell silent: scale-up cannot count on w2 having room
wait_log 'scale-up held: w2 no report for'
echo 0.01 >"$EP_TMP/cpu-1"
# with readings, w2 (idle) would be retired; silent, it must not be
wait_log 'compaction held: w2 no report for'
log_has 'Compaction: retiring' && fail "compacted on a missing reading"
wait_until bash -c "grep -q 'no report for' '$EP_RUN/status.json'" || fail "status.json does not show the hold"
note "status: $(status_get '["holds"]["compaction"]["reason"]')"
stop_commander || fail "commander exited with $?"
