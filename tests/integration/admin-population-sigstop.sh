#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: /_commander/population asks every worker for its /_monitor/state over a connection of its own,
# under one deadline. With three demo workers and one of them stopped with SIGSTOP (its socket still
# takes connections, nobody answers), the page answers within admin_population_timeout with an error row
# for the stopped worker (the reason said, its users still listed from the commander's side) and full
# rows for the others (their own fields, every user they hold with the commander's consumption); the
# front end and the other workers go on serving meanwhile.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
. "$(dirname "$0")/admin-lib.sh"
make_test_cgroup

timeout_ms=700
admin_config "$DEMO_WORKER" pool.min_workers=3 "frontend.admin_population_timeout=${timeout_ms}ms"
fe_start
rec=$(reception)
[[ -n $rec ]] || fail "no reception in the log"
for u in alice bob carol; do
        login "$u"
        as_user "$u" /state >/dev/null || fail "/state of $u"
done
wait_until worker_users_are "$(for n in 1 2 3; do printf 'w%d=%d ' "$n" $((n == rec ? 3 : 0)); done | sed 's/ $//')" ||
        fail "the users are not all on the reception w$rec: $(admin_curl /_commander/monitor.json)"

# every worker answers: three full rows
admin_curl /_commander/population >"$EP_TMP/before.json" || fail "no population"
"$EP_PYTHON" - "$EP_TMP/before.json" "$rec" <<'PY' || fail "population before the stop: $(cat "$EP_TMP/before.json")"
import json, sys
d = json.load(open(sys.argv[1]))
rec = "w" + sys.argv[2]
assert [w["status"] for w in d["workers"]] == ["ok"] * 3, d
assert d["asked"] == 3 and d["answered"] == 3 and d["users"] == 3, d
for w in d["workers"]:
    assert w["reported"]["pid"] > 0 and w["reported"]["worker"] == w["worker"][1:], w
r = next(w for w in d["workers"] if w["worker"] == rec)
users = {u["user"]: u for u in r["users"]}
assert sorted(users) == ["alice", "bob", "carol"], r
for u in users.values():
    assert u["listed"] and u["placed"] and u["placed_on"] == rec, u
    assert u["requests"] == 2 and u["app"]["counter"] == 1, u  # login + one /state, as both sides counted
PY

# stop a worker that holds users
victim=$rec
pid=$(worker_pid "w$victim")
kill -STOP "$pid"
on_exit "kill -CONT $pid 2>/dev/null"
note "w$victim (pid $pid) stopped"

start_ms=$(date +%s%3N)
admin_curl /_commander/population --max-time 10 -o "$EP_TMP/after.json" -w '%{time_total}\n' >"$EP_TMP/time" ||
        fail "population with a stopped worker failed"
took_ms=$(($(date +%s%3N) - start_ms))
note "population with w$victim stopped answered in $took_ms ms (deadline $timeout_ms ms)"
((took_ms >= timeout_ms - 50)) || fail "answered in $took_ms ms: before the deadline, so w$victim was not waited for?"
((took_ms < timeout_ms + 1500)) || fail "answered in $took_ms ms, far past the $timeout_ms ms deadline"
cp "$EP_TMP/after.json" "$EP_TEST_OUTPUT/population-with-w$victim-stopped.json"
"$EP_PYTHON" - "$EP_TMP/after.json" "$victim" <<'PY' || fail "population after the stop: $(cat "$EP_TMP/after.json")"
import json, sys
d = json.load(open(sys.argv[1]))
victim = "w" + sys.argv[2]
assert d["asked"] == 3 and d["answered"] == 2, d
for w in d["workers"]:
    if w["worker"] == victim:
        assert w["status"] == "error", w
        assert w["error"].startswith("no answer within 700ms"), w
        assert "reported" not in w, w
        # the commander still knows who lives there, and what they consumed; whether the worker lists
        # them is unknown (null), not "no"
        assert sorted(u["user"] for u in w["users"]) == ["alice", "bob", "carol"], w
        assert all(u["listed"] is None and u["placed"] and u["requests"] == 2 for u in w["users"]), w
    else:
        assert w["status"] == "ok" and w["reported"]["pid"] > 0 and w["users"] == [], w
PY

# the others and the front end serve meanwhile, and so does the admin listener
other=$((victim % 3 + 1))
worker_curl "$other" -f -o /dev/null http://w/hello || fail "w$other does not answer on its socket"
admin_curl /metrics -o /dev/null || fail "/metrics while w$victim is stopped"
admin_curl /_commander/monitor.json -o /dev/null || fail "monitor.json while w$victim is stopped"

kill -CONT "$pid"
admin_curl /_commander/population -o "$EP_TMP/again.json" || fail "population after SIGCONT"
"$EP_PYTHON" -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["answered"] == 3, d' "$EP_TMP/again.json" || fail "after SIGCONT: $(cat "$EP_TMP/again.json")"
fe_stop
