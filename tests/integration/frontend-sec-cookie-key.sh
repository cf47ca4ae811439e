#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: the commander refuses a cookie key that anyone but itself could read or replace, with a
# message naming the file and what is wrong, and starts once that is fixed. The key it creates is 0600,
# owned by it. A key readable by the group (0640) or by everyone (0644), or owned by another user, stops
# the start ("Refusing to start without a cookie key: .../cookie.key has mode 0644 ..."); chmod 0600
# makes it start with that very key (a login cookie signed before still names its user, who is placed
# again with the reason: its cookie is older than this commander).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

key=$EP_TMP/state/cookie.key
fe_config "$DEMO_WORKER"
fe_start
[[ $(stat -c '%a %u %s' "$key") == "600 $(id -u) 32" ]] ||
        fail "the created key is $(stat -c 'mode %a, uid %u, %s bytes' "$key")"
"${CURL[@]}" -c "$EP_TMP/jar" -o /dev/null "$EP_URL/login?user=alice" || fail "login failed"
fe_stop

# refused MODE|OWNER WHAT: the commander does not start with the key so, and says so naming it
refused() {
        start_commander
        local rc=0
        # a commander that took the key would run on: it must have stopped on its own
        wait_until bash -c '! kill -0 "$0"' "$EP_COMMANDER_PID" || {
                stop_commander || true
                fail "the commander started with a key $2"
        }
        wait "$EP_COMMANDER_PID" || rc=$?
        ((rc != 0)) || fail "the commander exited 0 with a key $2"
        grep -qF "Refusing to start without a cookie key: $key $2" "$EP_LOG" ||
                fail "no clear refusal for a key $2: $(grep -i 'cookie' "$EP_LOG" | tail -n 3)"
        note "$(grep -F 'Refusing to start without a cookie key' "$EP_LOG")"
}

chmod 0644 "$key"
refused 0644 "has mode 0644"
chmod 0640 "$key"
refused 0640 "has mode 0640"
if (($(id -u) == 0)); then
        chmod 0600 "$key"
        chown 65534 "$key"
        refused nobody "is owned by uid 65534, not by uid 0"
        chown 0 "$key"
else
        note "not root: the other-owner case is covered by unit/cookie only where root can give a file away"
fi

chmod 0600 "$key"
fe_start
# the same key: alice's cookie from the first run is hers (this commander never saw her, and says why)
"${CURL[@]}" -b "$EP_TMP/jar" -o /dev/null "$EP_URL/state" ||
        fail "request with the first run's cookie failed"
wait_log 'User alice re-placed on w[0-9]+: .*\(its cookie is older than this commander\)'
fe_stop
