#!/bin/bash
# Intent: SIGTERM stops every worker (TERM, then KILL after stop_timeout for one that ignores TERM)
# and removes every cgroup leaf and socket the commander made; the commander exits 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
make_test_cgroup
fake=$(bin ep-fake-worker)
cat >"$EP_TMP/worker.sh" <<W
#!/bin/bash
# w3 ignores SIGTERM, so the commander must escalate
[[ \$ELASTIC_POOL_WORKER == 3 ]] && trap '' TERM
exec $fake
W
chmod +x "$EP_TMP/worker.sh"

write_config "$EP_TMP/worker.sh" pool.min_workers=3 pool.stop_timeout=1s
start_commander --no-frontend
for i in 1 2 3; do wait_log "Worker w$i is routable"; done
wait_until grep -q '"name":"w3"' "$EP_RUN/status.json" || fail "status.json lacks w3"
pids=$(for i in 1 2 3; do worker_pid "w$i"; done)
stop_commander || fail "commander exited with $?"
log_has 'w3 did not exit within stop_timeout=1s of SIGTERM; sending SIGKILL' || fail "no SIGKILL escalation logged"
for p in $pids; do kill -0 "$p" 2>/dev/null && fail "worker pid $p survived"; done
for i in 1 2 3; do
        [[ -d $EP_TEST_CGROUP/w$i ]] && fail "leaf w$i left behind"
        [[ -e $EP_RUN/w$i.sock ]] && fail "socket w$i.sock left behind"
done
true
