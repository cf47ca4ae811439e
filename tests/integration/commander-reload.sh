#!/bin/bash
# Intent: SIGHUP (systemctl reload) re-reads the configuration. A changed threshold applies and is
# journaled; a listen address added on reload accepts while the old one keeps serving, and one removed
# stops accepting; a broken file keeps the running configuration, the commander says file:line and
# status.json shows the failure until a good file comes back; a changed [worker] exec replaces the
# workers (a rolling reload: tests/integration/rolling-reload.sh has the details) and status.json says
# every worker runs the current command once it is done.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

second=127.0.0.1:$(free_port)
fe_config "$DEMO_WORKER" policy.admission_threshold=0.8
fe_start
pid=$EP_COMMANDER_PID
"${CURL[@]}" -o /dev/null -w '%{http_code}' "$EP_URL/" | grep -qx 200 || fail "no answer before the reload"

# a threshold and a second listener
write_config "$DEMO_WORKER --threads 3" policy.admission_threshold=0.6 "frontend.listen=$EP_ADDR $second"
kill -HUP "$pid"
wait_log "Reloaded the configuration from $EP_CONF"
wait_log "Listening on $second"
log_has 'The worker definition changed \(\[worker\] exec .*--threads 3' || fail "the new exec was not announced"
wait_log 'Rolling reload done after .*: 1 workers replaced'
for url in "$EP_URL/" "http://$second/"; do
        code=$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$url") || fail "$url: no answer after the reload"
        [[ $code == 200 ]] || fail "$url answered $code"
done
wait_until "$EP_PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1]))
sys.exit(0 if all(w["exec_current"] for w in d["workers"]) and d["reload_error"] is None else 1)' "$EP_RUN/status.json" ||
        fail "status.json does not show every worker on the new command: $(cat "$EP_RUN/status.json")"

# a broken file: the running configuration stays, both listeners serve, the failure says file:line
printf '[worker]\nexec = %s\n[policy]\nadmission_threshold = 7\n' "$DEMO_WORKER" >"$EP_CONF"
kill -HUP "$pid"
wait_log "Reload failed, the running configuration stays: $EP_CONF:4: \[policy\] admission_threshold"
kill -0 "$pid" || fail "the commander died of a broken file"
for url in "$EP_URL/" "http://$second/"; do
        "${CURL[@]}" -o /dev/null "$url" || fail "$url: no answer with the broken file"
done
wait_until grep -q "\"reload_error\":\"$EP_CONF:4:" "$EP_RUN/status.json" ||
        fail "status.json does not show the failed reload: $(cat "$EP_RUN/status.json")"

# the first listener removed: it stops accepting, the second goes on
write_config "$DEMO_WORKER" "frontend.listen=$second"
kill -HUP "$pid"
wait_log "No longer listening on $EP_ADDR"
"${CURL[@]}" -o /dev/null "http://$second/" || fail "the remaining listener stopped serving"
if "${CURL[@]}" -o /dev/null --max-time 3 "$EP_URL/"; then fail "the removed listener still accepts"; fi
wait_until grep -q '"reload_error":null' "$EP_RUN/status.json" || fail "the reload failure is still shown"
fe_stop
