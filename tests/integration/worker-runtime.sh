#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a group really is a runtime version. A pool of 2 demo workers runs with environment=,
# environment_file=, working_directory= and user=nobody: every worker has the file's variables and the
# configuration's (environment= winning where both name one), runs in the directory and as nobody with
# nobody's groups (its /proc/PID/environ, cwd and status say so), and serves requests. Then a reload
# that changes only the environment file (the configuration file is untouched) replaces the workers one
# at a time (a rolling reload: each old worker retired once the one before it is gone, "Rolling reload
# done ... 2 workers replaced"), the new workers have the new value, with the same directory and user,
# and the users logged in before were moved to them live, their state carried.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup
nobody_uid=$(id -u nobody 2>/dev/null) || skip "no user nobody"
nobody_gid=$(id -g nobody)
nobody_groups=$(id -G nobody)

# the worker, as nobody, must reach its directory; the test's own directory is private (0700)
chmod 0711 "$EP_TMP"
wd=$EP_TMP/srv
mkdir -m 0755 "$wd"
env_file=$EP_TMP/app.env
cat >"$env_file" <<'EOF'
# the version the workers run
APP_VERSION=1
APP_COLOR='deep blue'
; environment= wins over the file
APP_GREETING=from-the-file
EOF

# compaction_margin: an idle pool of three (two old, one new) is not compacted under the rollout
fe_config "$DEMO_WORKER" pool.min_workers=2 pool.max_workers=3 policy.compaction_margin=20 \
        'worker.environment=APP_GREETING=hello "APP_MOTTO=two words"' \
        "worker.environment_file=$env_file" "worker.working_directory=$wd" worker.user=nobody
fe_start
wait_log 'Worker w2 is routable'

# env_of PID NAME: the value of NAME in the process's environment (empty line when unset)
env_of() {
        tr '\0' '\n' <"/proc/$1/environ" | sed -n "s/^$2=//p"
}

# status_of PID KEY: a line of /proc/PID/status without its key, blanks squeezed
status_of() {
        awk -v k="$2:" '$1 == k { $1 = ""; sub(/^ /, ""); print }' "/proc/$1/status"
}

# check_worker NAME VERSION: NAME (w1...) runs with the runtime settings and APP_VERSION=VERSION
check_worker() {
        local name=$1 version=$2 pid v
        pid=$(worker_pid "$name") || fail "no pid for $name in status.json"
        [[ $pid -gt 0 ]] || fail "$name has pid $pid"
        v=$(env_of "$pid" APP_VERSION)
        [[ $v == "$version" ]] || fail "$name (pid $pid): APP_VERSION='$v', want '$version'"
        v=$(env_of "$pid" APP_COLOR)
        [[ $v == "deep blue" ]] || fail "$name: APP_COLOR='$v' (the file's quoted value)"
        v=$(env_of "$pid" APP_GREETING)
        [[ $v == hello ]] || fail "$name: APP_GREETING='$v' (environment= must win over the file)"
        v=$(env_of "$pid" APP_MOTTO)
        [[ $v == "two words" ]] || fail "$name: APP_MOTTO='$v'"
        v=$(env_of "$pid" LISTEN_FDS)
        [[ $v == 1 ]] || fail "$name: LISTEN_FDS='$v' (the commander's own variables)"
        v=$(readlink "/proc/$pid/cwd")
        [[ $v == "$wd" ]] || fail "$name: cwd '$v', want '$wd'"
        v=$(status_of "$pid" Uid)
        [[ $v == "$nobody_uid $nobody_uid $nobody_uid $nobody_uid" ]] || fail "$name: Uid '$v', want nobody's"
        v=$(status_of "$pid" Gid)
        [[ $v == "$nobody_gid $nobody_gid $nobody_gid $nobody_gid" ]] || fail "$name: Gid '$v', want nobody's"
        v=$(status_of "$pid" Groups)
        [[ $v == "$nobody_groups" ]] || fail "$name: Groups '$v', want '$nobody_groups'"
        note "$name (pid $pid): APP_VERSION=$version, cwd $wd, uid $nobody_uid, gid $nobody_gid"
}

check_worker w1 1
check_worker w2 1
for i in 1 2 3; do
        "${CURL[@]}" -f -o /dev/null "$EP_URL/hello" || fail "request $i to workers running as nobody"
done
old_pids="$(worker_pid w1) $(worker_pid w2)"
# users with state on the old workers: the rolling reload moves them live to workers that also run as nobody
users_login "$EP_URL" ann bob cem

# only the environment file changes
conf_before=$(md5sum <"$EP_CONF")
sed -i 's/^APP_VERSION=1$/APP_VERSION=2/' "$env_file"
kill -HUP "$EP_COMMANDER_PID"
wait_log "The worker definition changed \(\[worker\] environment changed \(the variables of environment_file '$env_file'\)\)"
EP_WAIT=90 wait_log 'Rolling reload done after [0-9.]+m?s: 2 workers replaced'
[[ $(md5sum <"$EP_CONF") == "$conf_before" ]] || fail "the configuration file changed"
log_has 'Rolling reload: 1/2' || fail "no first step of the rolling reload"
log_has 'Rolling reload: 2/2' || fail "no second step of the rolling reload"
# one at a time: each old worker is retired only once the one before it is gone
read -ra order <<<"$(grep -oE '\[(retire|death) w[12]\]' "$EP_LOG" | tr -d '[]' | tr '\n' ' ')"
[[ ${#order[@]} == 8 && ${order[0]} == retire && ${order[2]} == death && ${order[4]} == retire &&
        ${order[6]} == death && ${order[1]} == "${order[3]}" && ${order[5]} == "${order[7]}" &&
        ${order[1]} != "${order[5]}" ]] || fail "the old workers did not leave one at a time: ${order[*]}"
note "the old workers left in this order: ${order[*]}"

# the new generation: new processes, the new value, the same directory and user
wait_until "$EP_PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1]))
w=[w for w in d["workers"] if w["state"] == "routable"]
sys.exit(0 if len(w) == 2 and all(x["exec_current"] for x in w) and len(d["workers"]) == 2 else 1)' \
        "$EP_RUN/status.json" || fail "not 2 routable workers of the new definition: $(cat "$EP_RUN/status.json")"
mapfile -t names < <("$EP_PYTHON" -c 'import json,sys
for w in json.load(open(sys.argv[1]))["workers"]: print(w["name"])' "$EP_RUN/status.json")
for name in "${names[@]}"; do
        pid=$(worker_pid "$name")
        [[ " $old_pids " != *" $pid "* ]] || fail "$name (pid $pid) is an old worker"
        check_worker "$name" 2
done
for i in 1 2 3; do
        "${CURL[@]}" -f -o /dev/null "$EP_URL/hello" || fail "request $i after the rolling reload"
done
# each user's state came along: its counter goes on, on a worker of the new generation
for u in ann bob cem; do
        body=$("${CURL[@]}" -b "$EP_TMP/$u.jar" "$EP_URL/state") || fail "/state of $u after the reload"
        [[ $body == *"\"user\":\"$u\",\"counter\":4,"* ]] || fail "$u after the rolling reload: $body"
        w=$("$EP_PYTHON" -c 'import json, sys; print(json.loads(sys.argv[1])["worker"])' "$body")
        [[ " ${names[*]} " == *" w$w "* ]] || fail "$u is on w$w, not on the new workers (${names[*]})"
done
log_has 're-placed' && fail "a user was placed anew: $(grep -m1 're-placed' "$EP_LOG")"
fe_stop
