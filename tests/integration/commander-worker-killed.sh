#!/bin/bash
# Intent: a worker killed with SIGKILL is seen through its pidfd, its death is logged with the signal,
# and a replacement is spawned because the group fell under min_workers. A kill from outside is not a
# crash loop: six fresh workers killed in a row, each within a second of becoming routable (inside the
# stable period), still get their replacements, at once and without the spawn throttle stopping.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
make_test_cgroup
echo 0.1 >"$EP_TMP/cpu-1"
echo 0.1 >"$EP_TMP/cpu-2"

write_config "$(bin ep-fake-worker) --cpu-file $EP_TMP/cpu-%w"
start_commander --no-frontend
wait_log 'Worker w1 is routable'
wait_until test -s "$EP_RUN/status.json" || fail "no status.json"
pid=$(worker_pid w1)
kill -KILL "$pid"
wait_log '\[death w1\] Worker w1 \(pid [0-9]+\) killed by signal SIGKILL'
wait_log 'Spawned worker w2 .*under min_workers=1'
wait_log 'Worker w2 is routable'
[[ ! -d $EP_TEST_CGROUP/w1 ]] || fail "w1's leaf is still there"

for n in 2 3 4 5 6 7; do
        wait_until bash -c "grep -q '\"name\":\"w$n\"' '$EP_RUN/status.json'" || fail "w$n not in status.json"
        kill -KILL "$(worker_pid "w$n")"
        wait_log "Worker w$((n + 1)) is routable"
done
log_has 'failed to start|Stopped spawning' && fail "kills from outside were counted as failed spawns"
stop_commander || fail "commander exited with $?"
