#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a reload that changes the worker definition replaces every worker without losing a user. A pool
# of 3 demo workers carries 60 logged-in users (spread over the three) and guests under steady load;
# rolling-users.py samples status.json throughout.
#   1. [worker] exec changes (same package format): each old worker is replaced in turn, never two
#      draining at once, never fewer than 2 routable; every request of the run is answered 2xx and every
#      user's counter goes on without a gap ("Rolling reload done after ...: 3 workers replaced").
#   2. The new version names another package format: users are re-pointed, each one's state starts over
#      exactly once, no request fails.
#   3. A new definition whose command cannot be executed: the rolling reload stops and says why, the old
#      workers keep serving and keep taking users.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER --threads 4" pool.min_workers=3 pool.max_workers=3 policy.reception_threshold=0.01
fe_start
wait_log 'Worker w3 is routable'

# reload_to EXEC: the configuration's exec becomes EXEC, then SIGHUP
reload_to() {
        echo "sed -i 's|^exec = .*|exec = $1|' '$EP_CONF' && kill -HUP $EP_COMMANDER_PID"
}

rolling() {
        local label=$1 rc=0
        shift
        "$EP_PYTHON" "$FE_DIR/rolling-users.py" "$EP_ADDR" "$EP_RUN/status.json" "$@" --users 60 --workers 3 \
                --timeout 150 >"$EP_TMP/$label.out" 2>"$EP_TMP/$label.err" || rc=$?
        cat "$EP_TMP/$label.out"
        if ((rc != 0)); then
                cat "$EP_TMP/$label.err" >&2
                grep -E 'Rolling reload|Compaction|Move|held|WARNING' "$EP_LOG" | tail -n 40 | cut -c1-300 >&2
                fail "rolling-users.py ($label) failed (exit $rc)"
        fi
}

# 1. same format: live moves
rolling same-format "$(reload_to "$DEMO_WORKER --threads 3")"
wait_log 'Rolling reload done after [0-9.]+m?s: 3 workers replaced'
moved=$(grep -cE 'Move [0-9]+ of user u[0-9]+ from w[0-9]+ to w[0-9]+ done after .*\(rolling reload' "$EP_LOG" || true)
drained=$(grep -oE 'Rolling reload: [0-9]/3: moving [1-9][0-9]* users off w[0-9]+' "$EP_LOG" | sort -u | wc -l)
note "same format: $drained workers drained with users"
note "same format: $moved live moves"
((moved > 0)) || fail "no user moved live"
log_has 're-placed' && fail "a user was placed anew: $(grep -m1 're-placed' "$EP_LOG")"

# 2. another package format: re-pointed, each state starts over once
rolling new-format "$(reload_to "$DEMO_WORKER --threads 3 --package-format demo-user-v2")" --resets 1 --prefix v
repointed=$(grep -cE 'Move [0-9]+ of user v[0-9]+ from w[0-9]+ to w[0-9]+ re-pointed' "$EP_LOG" || true)
note "new format: $repointed users re-pointed"
((repointed >= 60)) || fail "only $repointed users re-pointed across formats"

# 3. a new definition that cannot start: the reload stops, the old generation serves on
sed -i "s|^exec = .*|exec = $EP_TMP/no-such-worker|" "$EP_CONF"
kill -HUP "$EP_COMMANDER_PID"
EP_WAIT=30 wait_log 'Rolling reload stopped after .*: the new definition cannot start \(.*no-such-worker.*\); the old workers go on serving'
for i in 1 2 3 4 5; do
        "${CURL[@]}" -f -o /dev/null "$EP_URL/hello" || fail "request $i after the failed reload"
done
"${CURL[@]}" -f -c "$EP_TMP/late.jar" -o /dev/null "$EP_URL/login?user=late" || fail "login after the failed reload"
grep -q '"last_rolling_reload":"the new definition cannot start' "$EP_RUN/status.json" ||
        fail "status.json does not say why the reload stopped: $(grep -o '"last_rolling_reload":[^,]*' "$EP_RUN/status.json")"
fe_stop
