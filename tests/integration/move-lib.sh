# SPDX-License-Identifier: MIT
# Helpers of the failing-move tests (tests/integration/move-*.sh): a pool of two demo workers where one
# of them carries a move fault (demo/README.md, "Faults on purpose"), and a user passed on from the
# reception to the other worker by a live move, as in frontend-live-move.sh. Source after lib.sh,
# commander-lib.sh and frontend-lib.sh.
#
# Roles are fixed: w1 is the reception (the source of a pass-on move), w2 the other worker (its target).
# The reception is the first worker to become routable, so the wrapper holds every worker but w1 back
# until the log says w1 is the reception.

MOVE_SOURCE=1
MOVE_TARGET=2
MOVE_BLOB=4096

# move_start_pool FAULTY_WORKER "FAULT OPTIONS" [section.key=value...]: writes the wrapper (worker
# FAULTY_WORKER runs the demo worker with the fault options, every other one without), configures a pool
# of two with reception_threshold=0.01 plus the overrides, starts the commander and checks the roles.
move_start_pool() {
        local faulty=$1 faults=$2
        shift 2
        cat >"$EP_TMP/worker.sh" <<EOF
#!/bin/bash
# ELASTIC_POOL_WORKER is the bare number the commander gives the worker ("2" for w2)
if [[ \$ELASTIC_POOL_WORKER != 1 ]]; then
        for _ in \$(seq 200); do
                grep -qE 'Worker w1 is routable .*it is the reception' '$EP_LOG' && break
                sleep 0.025
        done
fi
if [[ \$ELASTIC_POOL_WORKER == $faulty ]]; then
        exec $DEMO_WORKER --user-blob-size $MOVE_BLOB $faults
fi
exec $DEMO_WORKER --user-blob-size $MOVE_BLOB
EOF
        chmod +x "$EP_TMP/worker.sh"
        # stale_after=50 (10 s): a worker its fault stalls for a few seconds stays the reception, rather than
        # being taken out of new work for its silence (daemon/health.c), which these tests are not about
        fe_config "$EP_TMP/worker.sh" pool.min_workers=2 pool.max_workers=2 policy.reception_threshold=0.01 \
                policy.stale_after=50 "$@"
        fe_start
        [[ $(reception) == "$MOVE_SOURCE" ]] || fail "the reception is w$(reception), not w$MOVE_SOURCE"
        wait_log "Worker w$MOVE_TARGET is routable"
}

# move_seed_state USER COUNT: gives USER state on the reception straight on its socket (around the
# commander): a login, then COUNT /state requests. Prints the blob's CRC.
move_seed_state() {
        local user=$1 count=$2 body="" i
        worker_curl "$MOVE_SOURCE" -o /dev/null -H "X-Elastic-Pool-User: $user" \
                "http://w/login?user=$user" ||
                fail "direct login of $user on w$MOVE_SOURCE"
        for ((i = 1; i <= count; i++)); do
                body=$(worker_curl "$MOVE_SOURCE" -H "X-Elastic-Pool-User: $user" http://w/state) ||
                        fail "direct /state of $user on w$MOVE_SOURCE"
        done
        [[ $body == *"\"counter\":$count,"* ]] || fail "$user's state on w$MOVE_SOURCE: $body"
        json_get "$body" blob_crc
}

# move_busy_reception MS: a guest request holds one of the reception's executor threads for MS ms (its
# occupancy 0.25, over reception_threshold=0.01); waits until the reports say so. The request's PID is
# in MOVE_BUSY_PID.
move_busy_reception() {
        spawn_bg "${CURL[@]}" -o /dev/null "$EP_URL/work?sleep_ms=$1"
        MOVE_BUSY_PID=$EP_LAST_PID
        wait_until occupancy_over "$MOVE_SOURCE" 0.1 ||
                fail "the reception's occupancy never rose: $(cat "$EP_RUN/status.json")"
}

# move_login USER: logs USER in through the commander (cookie jar $EP_TMP/USER.jar) on the busy
# reception; placement passes it to the other worker by a live move. Waits for the move's first line.
move_login() {
        "${CURL[@]}" -c "$EP_TMP/$1.jar" -o /dev/null "$EP_URL/login?user=$1" || fail "login of $1 failed"
        wait_log "User $1 logged in on w$MOVE_SOURCE; placement passes it to w$MOVE_TARGET"
        wait_log "Moving user $1 from w$MOVE_SOURCE to w$MOVE_TARGET \(move [0-9]+: "
}

# move_send_held USER PATH NAME: sends USER's request for PATH in the background, while USER moves; its
# headers and body land in $EP_TMP/NAME.{headers,body}, its status and the time it took (s) in NAME.out.
# Returns once curl's trace shows the request head sent, so it is on its way to the commander before the
# test acts on the move (a kill, say: the commander reads it within microseconds, the test's next step
# takes milliseconds). The move's end line then says whether it was held ("1 held requests released").
# The PID is in EP_LAST_PID.
move_send_held() {
        local user=$1 path=$2 name=$3
        spawn_bg "${CURL[@]}" -b "$EP_TMP/$user.jar" -D "$EP_TMP/$name.headers" -o "$EP_TMP/$name.body" \
                -w '%{http_code} %{time_total}\n' --trace-ascii "$EP_TMP/$name.trace" "$EP_URL$path" \
                >"$EP_TMP/$name.out"
        wait_until grep -q '^=> Send header' "$EP_TMP/$name.trace" ||
                fail "curl never sent the request $name"
}

# move_held_result NAME PID: waits for a request of move_send_held; sets HELD_CODE, HELD_TIME (s),
# HELD_BODY.
move_held_result() {
        wait "$2" || fail "curl failed on the request $1 (status $?)"
        read -r HELD_CODE HELD_TIME <"$EP_TMP/$1.out"
        HELD_BODY=$(cat "$EP_TMP/$1.body")
}

# move_state USER: USER's /state through the commander; fails unless it is 200. Prints the body.
move_state() {
        local out
        out=$("${CURL[@]}" -b "$EP_TMP/$1.jar" -w ' %{http_code}' "$EP_URL/state") ||
                fail "/state of $1: curl failed"
        [[ $out == *' 200' ]] || fail "/state of $1: $out"
        echo "${out% 200}"
}

# expect_state BODY USER COUNTER WORKER [CRC]: a /state body says USER's counter is COUNTER on wWORKER
# (with that blob CRC).
expect_state() {
        local body=$1 user=$2 counter=$3 worker=$4 crc=${5:-}
        local want="\"user\":\"$user\",\"counter\":$counter,\"worker\":\"$worker\",\"blob_crc\":"
        [[ $body == *"$want${crc}"* ]] ||
                fail "/state of $user: $body (want counter $counter on w$worker${crc:+, blob_crc $crc})"
}

# worker_lists_user N USER: wN's /_monitor/state (asked on its own socket) lists USER.
worker_lists_user() {
        local users
        users=$(worker_curl "$1" http://w/_monitor/state) || return 2
        [[ $users == *"\"user\":\"$2\""* ]]
}

# worker_lacks_user N USER: wN answers /_monitor/state and does not list USER.
worker_lacks_user() {
        local users
        users=$(worker_curl "$1" http://w/_monitor/state) || return 2
        [[ $users != *"\"user\":\"$2\""* ]]
}

# move_end_line USER OUTCOME_REGEX: waits for the line that ends USER's move and prints it.
move_end_line() {
        wait_for_line "$EP_LOG" "Move [0-9]+ of user $1 from w$MOVE_SOURCE to w$MOVE_TARGET $2" ||
                fail "no end of $1's move matching /$2/ within ${EP_WAIT:-20}s"
}
