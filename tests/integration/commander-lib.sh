# SPDX-License-Identifier: MIT
# Helpers for the commander's integration tests; source after lib.sh.

EP_RUN=$EP_TMP/run
EP_LOG=$EP_TMP/commander.log
EP_CONF=$EP_TMP/test.conf

# Writes the test's configuration: [worker] exec plus any "section.key=value" overrides, on top of
# fast test defaults (200 ms reports, 2-row smoothing, no listeners).
write_config() {
        local exec=$1
        shift
        local -A sections=(
                [worker]="exec = $exec"
                [pool]="backend = cgroup
spawn_timeout = 5s
stop_timeout = 3s"
                [policy]="occupancy_interval = 200ms
smoothing_rows = 2"
                [frontend]="listen ="
        )
        local kv section key
        for kv in "$@"; do
                section=${kv%%.*}
                key=${kv#*.}
                sections[$section]+=$'\n'"${key%%=*} = ${key#*=}"
        done
        : >"$EP_CONF"
        for section in worker pool policy frontend; do
                printf '[%s]\n%s\n\n' "$section" "${sections[$section]}" >>"$EP_CONF"
        done
}

# Starts the commander (inside the test's cgroup when there is one) on $EP_CONF; logs to $EP_LOG.
# EP_COMMANDER_WRAP: a command the commander runs under (its words split), e.g. a seccomp filter.
start_commander() {
        # shellcheck disable=SC2206 # the wrapper's words
        local cmd=(${EP_COMMANDER_WRAP:-} "$(bin elastic-pool)" --group "t$$" --config "$EP_CONF" --runtime-dir "$EP_RUN"
                --state-dir "$EP_TMP/state" "$@")
        if [[ -n $EP_TEST_CGROUP ]]; then
                spawn_bg bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$EP_TEST_CGROUP" "${cmd[@]}" \
                        >"$EP_LOG" 2>&1
        else
                spawn_bg "${cmd[@]}" >"$EP_LOG" 2>&1
        fi
        EP_COMMANDER_PID=$EP_LAST_PID
}

# Stops the commander with SIGTERM and returns its exit status.
stop_commander() {
        kill -TERM "$EP_COMMANDER_PID"
        local rc=0
        wait "$EP_COMMANDER_PID" || rc=$?
        return $rc
}

log_has() {
        grep -qE -- "$1" "$EP_LOG"
}

wait_log() {
        wait_for_line "$EP_LOG" "$1" >/dev/null || fail "no log line matching /$1/ within ${EP_WAIT:-20}s"
}

# Prints a value from status.json: status_get 'workers[0]["pid"]'
status_get() {
        "$EP_PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval("d"+sys.argv[2]))' \
                "$EP_RUN/status.json" "$1"
}

# PID of worker wN from status.json.
worker_pid() {
        "$EP_PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1]))
print(next(w["pid"] for w in d["workers"] if w["name"] == sys.argv[2]))' "$EP_RUN/status.json" "$1"
}

commander_alive() {
        kill -0 "$EP_COMMANDER_PID" 2>/dev/null
}

# Waits for the commander's "Ready:" line (min_workers routable and, with a front end, listening).
wait_ready() {
        wait_log 'Ready: [0-9]+ workers routable'
}
