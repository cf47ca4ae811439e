#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: reload_state=require-compatible never hands a user to a version that cannot read its state. A
# reload to a demo worker of another package format starts a new-definition worker; from then on new
# logins go there, while the old workers keep serving the users they have (their counters go on, on the
# same worker) and take no new ones; at reload_timeout the old workers are retired ("still running at
# reload_timeout") and the rolling reload ends.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER" pool.min_workers=2 pool.max_workers=3 pool.reload_state=require-compatible \
        pool.reload_timeout=6s
fe_start
wait_log 'Worker w2 is routable'
users_login "$EP_URL" ann bob

sed -i "s|^exec = .*|exec = $DEMO_WORKER --package-format demo-user-v2|" "$EP_CONF"
kill -HUP "$EP_COMMANDER_PID"
wait_log 'Rolling reload: replacing 2 workers one at a time'
wait_log 'Worker w3 is routable'
wait_log 'old workers keep users whose state the new version cannot read'
# the old users stay where their state is; a new login lands on the new version
users_kept "$EP_URL" 4 ann bob
"${CURL[@]}" -c "$EP_TMP/cid.jar" -o /dev/null "$EP_URL/login?user=cid" || fail "login of cid"
wait_log 'User cid logged in on w3'
log_has 'Moving user (ann|bob)|Re-pointing user (ann|bob)' && fail "a user was moved: $(grep -m1 -E 'user (ann|bob)' "$EP_LOG")"

EP_WAIT=20 wait_log 'Rolling reload still running at reload_timeout: retired [0-9]+ old workers'
EP_WAIT=20 wait_log 'Rolling reload done after'
fe_stop
