#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: an operator reaches a running group over D-Bus, with nothing but busctl and elastic-poolctl,
# and without systemd: a private dbus-daemon stands in for the user bus (EP_BUS=user). The group's name
# and object are there (introspection matches the installed XML), Workers reads through busctl,
# `elastic-poolctl status` is readable and `--json status` parses; `move` moves a logged-in user live
# (its counter goes on on the new worker) and refuses an unknown worker and, for now (NotNow), one still
# starting, saying why; `scale` grows and shrinks the pool once and refuses sizes
# outside [min_workers, max_workers], `compact` retires a worker; PropertiesChanged is coalesced and
# WorkerSpawned / UserMoved are signalled. A caller of another uid reads the status but is refused every
# mutating method (exit 4); a group nobody runs is exit 3.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
need_cmd dbus-daemon busctl dbus-monitor setpriv
make_test_cgroup
id nobody >/dev/null 2>&1 || skip "needs a user 'nobody'"
getent group nogroup >/dev/null || skip "needs a group 'nogroup'"

# ---- a private bus anyone may connect to (auth EXTERNAL), so a caller of another uid can try ----
chmod 755 "$EP_TMP"
private_session_bus
note "private bus $DBUS_SESSION_BUS_ADDRESS (dbus-daemon pid $dbus_pid)"

group=t$$
name=org.elasticpool.Group1.$group
path=/org/elasticpool/Group1
iface=org.elasticpool.Group1
ctl() { "$CTL" --user "$@"; }
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
# workers as elastic-poolctl --json sees them: "1:routable 2:routable"
workers_now() {
        ctl --json workers | "$EP_PYTHON" -c 'import json, sys
print(" ".join("%d:%s" % (w["id"], w["state"]) for w in json.load(sys.stdin)))'
}
routable_count() {
        ctl --json workers | "$EP_PYTHON" -c 'import json, sys
print(sum(1 for w in json.load(sys.stdin) if w["state"] == "routable" and not w["evacuating"]))'
}
# no worker is leaving any more (a retired one has gone)
all_routable() { ! workers_now | tr ' ' '\n' | grep -qv ':routable$'; }
routable_is() { [[ $(routable_count) == "$1" ]]; }

spawn_bg dbus-monitor --session "type='signal',path='$path'" >"$EP_TMP/monitor.log" 2>&1

# a worker spawned while the fifo $gate exists stays starting (no Hello) until a line is written to it
gate=$EP_TMP/gate
cat >"$EP_TMP/gated-worker.sh" <<W
#!/bin/bash
if [[ -p $gate ]]; then read -r _ <"$gate"; fi
exec $DEMO_WORKER
W
chmod +x "$EP_TMP/gated-worker.sh"
# the ledger would give a worker back on its own: a margin it never reaches leaves that to the operator
fe_config "$EP_TMP/gated-worker.sh" pool.min_workers=2 pool.max_workers=3 policy.compaction_margin=100
fe_start
wait_log "On the user bus as $name, object $path"
rec=$(reception)
other=$((rec == 1 ? 2 : 1))
note "reception w$rec, other worker w$other"

# ---- busctl: the object, its introspection against the installed XML, a property ----
busctl --user introspect "$name" "$path" >"$EP_TMP/introspect.txt" || fail "busctl introspect failed"
grep -qE '^\.Workers +property +a\(uussbbsdsuddduudtdss\)' "$EP_TMP/introspect.txt" ||
        fail "no Workers property: $(cat "$EP_TMP/introspect.txt")"
busctl --user call "$name" "$path" org.freedesktop.DBus.Introspectable Introspect --json=short >"$EP_TMP/live.json" ||
        fail "Introspect failed"
"$EP_PYTHON" - "$EP_TMP/live.json" "$EP_SOURCE_DIR/dbus/org.elasticpool.Group1.xml" <<'PY' || fail "the installed XML differs from the live interface"
import json, sys, xml.etree.ElementTree as ET
def shape(root):
    i = next(e for e in root.iter("interface") if e.get("name") == "org.elasticpool.Group1")
    return sorted((e.tag, e.get("name"), e.get("type"), tuple((a.get("type"), a.get("name"), a.get("direction")) for a in e.iter("arg")))
                  for e in i)
live = ET.fromstring(json.load(open(sys.argv[1]))["data"][0])
installed = ET.parse(sys.argv[2]).getroot()
if shape(live) != shape(installed):
    print("live:     ", shape(live)); print("installed:", shape(installed)); sys.exit(1)
PY
prop=$(busctl --user get-property "$name" "$path" "$iface" Workers) || fail "get-property Workers failed"
[[ $prop == 'a(uussbbsdsuddduudtdss) 2 1 '* ]] || fail "Workers: $prop"
note "Workers: $prop"
[[ $(busctl --user get-property "$name" "$path" "$iface" Group) == "s \"$group\"" ]] || fail "Group property"

# ---- status, for humans and as JSON ----
out=$(ctl status) || fail "elastic-poolctl status failed: $out"
note "$out"
grep -q "elastic-pool group $group" <<<"$out" || fail "status names no group"
grep -qE "^w$rec rec +routable +\\[[.#]{20}\\] " <<<"$out" || fail "status shows no bar for the reception w$rec"
ctl --json status >"$EP_TMP/status.json" || fail "--json status failed"
"$EP_PYTHON" -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["group"] == sys.argv[2], d["group"]
assert [w["name"] for w in d["workers"]] == ["w1", "w2"], d["workers"]
assert [w["reception"] for w in d["workers"]] == [w["id"] == int(sys.argv[3]) for w in d["workers"]]
assert set(d["holds"]) == {"scale_up", "compaction"} and "counters" in d' "$EP_TMP/status.json" "$group" "$rec" ||
        fail "--json status: $(cat "$EP_TMP/status.json")"
"$CTL" --user status "$group" >/dev/null || fail "status GROUP failed"

# ---- move: alice logs in on the reception, an operator moves her to the other, her counter goes on ----
"${CURL[@]}" -c "$EP_TMP/jar" -o /dev/null "$EP_URL/login?user=alice" || fail "login failed"
for i in 1 2 3; do
        body=$("${CURL[@]}" -b "$EP_TMP/jar" "$EP_URL/state") || fail "/state $i"
done
[[ $body == *"\"user\":\"alice\",\"counter\":3,\"worker\":\"$rec\""* ]] || fail "alice before the move: $body"
ctl users | grep -qE "^alice +w$rec " || fail "users does not show alice on w$rec: $(ctl users)"
out=$(ctl move alice "w$other") || fail "move failed: $out"
note "$out"
[[ $out == "Moved user alice from w$rec to w$other in group $group (done)" ]] || fail "move said: $out"
body=$("${CURL[@]}" -b "$EP_TMP/jar" "$EP_URL/state") || fail "/state after the move"
[[ $body == *"\"user\":\"alice\",\"counter\":4,\"worker\":\"$other\""* ]] || fail "alice after the move: $body"
ctl --json users | "$EP_PYTHON" -c 'import json, sys
u = json.load(sys.stdin)
assert [(x["name"], x["worker"]) for x in u] == [("alice", sys.argv[1])], u' "w$other" || fail "users after the move"
rc=0; ctl move alice "$other" 2>"$EP_TMP/err" || rc=$?
((rc == 2)) || fail "moving alice where she lives: exit $rc, want 2"
rc=0; ctl move nobody-here 1 2>"$EP_TMP/err" || rc=$?
((rc == 2)) && grep -q "no logged-in user 'nobody-here' in group '$group'" "$EP_TMP/err" ||
        fail "moving an unknown user: exit $rc, $(cat "$EP_TMP/err")"
rc=0; ctl move alice w9 2>"$EP_TMP/err" || rc=$?
((rc == 2)) && grep -q "no worker w9 in group '$group'" "$EP_TMP/err" ||
        fail "moving to an unknown worker: exit $rc, $(cat "$EP_TMP/err")"

# ---- scale: bounds, growth at once, a shrink one retire at a time ----
rc=0; ctl scale 1 2>"$EP_TMP/err" || rc=$?
((rc == 2)) && grep -q 'min_workers=2' "$EP_TMP/err" || fail "scale 1: exit $rc, $(cat "$EP_TMP/err")"
rc=0; ctl scale 4 2>"$EP_TMP/err" || rc=$?
((rc == 2)) && grep -q 'max_workers=3' "$EP_TMP/err" || fail "scale 4: exit $rc, $(cat "$EP_TMP/err")"
mkfifo "$gate"
ctl scale 3 >/dev/null || fail "scale 3 failed"
starting=$(workers_now | tr ' ' '\n' | awk -F: '$2 == "starting" { print $1 }')
[[ -n $starting ]] || fail "scale 3 behind the gate: no starting worker in $(workers_now)"
# a move to it is refused for now (exit 1, NotNow), saying why
rc=0; ctl move alice "w$starting" 2>"$EP_TMP/err" || rc=$?
((rc == 1)) && grep -q "w$starting of group '$group' takes no users: it is starting and not routable yet" "$EP_TMP/err" ||
        fail "moving to a starting worker: exit $rc, $(cat "$EP_TMP/err")"
# the write returns once the gated worker opened the fifo and read its line
timeout 30 bash -c 'echo go >"$1"' _ "$gate" || fail "the gated worker w$starting never read its gate"
rm "$gate"
wait_until routable_is 3 || fail "scale 3: the pool is $(workers_now)"
note "after scale 3: $(workers_now)"

# ---- compact: the least occupied non-reception worker goes (w3 may still be too new: retried) ----
deadline=$((SECONDS + 20))
until out=$(ctl compact 2>&1); do
        ((SECONDS < deadline)) || fail "compact kept failing: $out"
        [[ $out == *"may not shrink now"* ]] || fail "compact: $out"
        sleep 0.3
done
note "$out"
wait_until routable_is 2 || fail "compact: the pool is $(workers_now)"
wait_until all_routable || fail "the retired worker never left: $(workers_now)"
note "after compact: $(workers_now)"
body=$("${CURL[@]}" -b "$EP_TMP/jar" "$EP_URL/state") || fail "/state after compact"
[[ $body == *'"user":"alice","counter":5,'* ]] || fail "alice after compact: $body"

# ---- scale down to 2 again after growing: ScaleTarget, one retire ----
ctl scale 3 >/dev/null || fail "second scale 3 failed"
wait_until routable_is 3 || fail "second scale 3: the pool is $(workers_now)"
ctl scale 2 >/dev/null || fail "scale 2 failed"
wait_until routable_is 2 || fail "scale 2: the pool is $(workers_now)"
scale_target_is() { [[ $(busctl --user get-property "$name" "$path" "$iface" ScaleTarget) == "u $1" ]]; }
wait_until scale_target_is 0 ||
        fail "ScaleTarget stays $(busctl --user get-property "$name" "$path" "$iface" ScaleTarget)"
wait_log 'ScaleTo: group .* target 2 reached'
body=$("${CURL[@]}" -b "$EP_TMP/jar" "$EP_URL/state") || fail "/state after scale 2"
[[ $body == *'"user":"alice","counter":6,'* ]] || fail "alice after scale 2: $body"

# ---- another uid: reads, may not change anything ----
as_nobody "$CTL" --user status >"$EP_TMP/nobody-status" || fail "status as nobody failed"
as_nobody "$CTL" --user --json status | "$EP_PYTHON" -c 'import json, sys; json.load(sys.stdin)' ||
        fail "--json status as nobody does not parse"
for cmd in "compact" "scale 3" "move alice $rec" "retire $other" "reload"; do
        rc=0
        # shellcheck disable=SC2086
        as_nobody "$CTL" --user $cmd >/dev/null 2>"$EP_TMP/err" || rc=$?
        ((rc == 4)) || fail "'$cmd' as nobody: exit $rc, want 4 ($(cat "$EP_TMP/err"))"
        grep -q "access denied" "$EP_TMP/err" || fail "'$cmd' as nobody: $(cat "$EP_TMP/err")"
done
note "as nobody: $(cat "$EP_TMP/err")"
log_has "D-Bus: Compact of group '$group' refused to .* \(uid 65534\)" || fail "the refusal was not logged"

# ---- reload (the configuration file read again), a broken file, a group nobody runs, usage ----
ctl reload 2>"$EP_TMP/err" || fail "reload: exit $?, $(cat "$EP_TMP/err")"
wait_log "Reloaded the configuration from $EP_CONF"
cp "$EP_CONF" "$EP_TMP/good.conf"
printf '[policy]\nadmission_threshold = 7\n' >>"$EP_CONF"
rc=0; ctl reload 2>"$EP_TMP/err" || rc=$?
((rc == 1)) && grep -q "admission_threshold" "$EP_TMP/err" || fail "a broken file: exit $rc, $(cat "$EP_TMP/err")"
cp "$EP_TMP/good.conf" "$EP_CONF"
# reload --wait: nothing to replace, then a changed worker definition followed to its end
ctl reload --wait >"$EP_TMP/out" 2>"$EP_TMP/err" || fail "reload --wait: exit $?, $(cat "$EP_TMP/err")"
grep -q "no worker to replace" "$EP_TMP/out" || fail "reload --wait without a change: $(cat "$EP_TMP/out")"
sed -i "s|^exec = .*|exec = $DEMO_WORKER --threads 3|" "$EP_CONF"
timeout 60 "$CTL" --user reload --wait >"$EP_TMP/out" 2>"$EP_TMP/err" || fail "reload --wait: exit $?, $(cat "$EP_TMP/err")"
grep -qE "rolling reload done: [0-9]+ workers replaced" "$EP_TMP/out" || fail "reload --wait said: $(cat "$EP_TMP/out")"
note "reload --wait: $(tr '\n' ';' <"$EP_TMP/out")"
busctl --user get-property "$name" "$path" "$iface" RollingReload | grep -qE '^\(bsstt\) false "" ".*workers replaced" 1 0' ||
        fail "RollingReload reads $(busctl --user get-property "$name" "$path" "$iface" RollingReload)"
# request-rate scaling is off here: said so, never a rate of 0
busctl --user get-property "$name" "$path" "$iface" RequestRate | grep -qE '^\(sddds\) "off" nan nan 0 ""' ||
        fail "RequestRate reads $(busctl --user get-property "$name" "$path" "$iface" RequestRate)"
rc=0; ctl -g "nosuch$$" status 2>"$EP_TMP/err" || rc=$?
((rc == 3)) && grep -q "group 'nosuch$$' is not running" "$EP_TMP/err" || fail "a group not running: exit $rc"
rc=0; ctl scale 2>/dev/null || rc=$?
((rc == 2)) || fail "scale without N: exit $rc"

# ---- signals: WorkerSpawned, UserMoved, PropertiesChanged at most four a second ----
grep -q 'member=WorkerSpawned' "$EP_TMP/monitor.log" || fail "no WorkerSpawned seen"
grep -q 'member=UserMoved' "$EP_TMP/monitor.log" || fail "no UserMoved seen"
grep -q 'member=WorkerDied' "$EP_TMP/monitor.log" || fail "no WorkerDied seen"
"$EP_PYTHON" - "$EP_TMP/monitor.log" <<'PY' || fail "PropertiesChanged came too often"
import re, sys, collections
per_second = collections.Counter()
for line in open(sys.argv[1]):
    m = re.match(r"signal time=(\d+)\.\d+ .*member=PropertiesChanged", line)
    if m:
        per_second[int(m.group(1))] += 1
assert per_second, "no PropertiesChanged at all"
worst = max(per_second.values())
print("# PropertiesChanged: %d in %d s, at most %d in one second" % (sum(per_second.values()), len(per_second), worst))
assert worst <= 5, per_second
PY

fe_stop
