#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a sticky cookie is bound to its group (issue 16, defect 11). Two groups sharing a state
# directory (and so its cookie.key) sign with different keys: a cookie of one is an unsigned or forged
# cookie to the other (a guest, logged), while each keeps accepting its own, also across a restart.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

# state_as COOKIE: the demo worker's /state with that sticky cookie: JSON and the status code
state_as() {
        "${CURL[@]}" -H "Cookie: ep_user=$1" -w ' %{http_code}' "$EP_URL/state"
}
login() {
        "${CURL[@]}" -c "$EP_TMP/$1.jar" -o /dev/null "$EP_URL/login?user=$1" || fail "login of $1"
        awk '$6 == "ep_user" { print $7 }' "$EP_TMP/$1.jar"
}

fe_config "$DEMO_WORKER"
fe_start # group t$$
alice=$(login alice)
[[ $(state_as "$alice") == *'"user":"alice"'*' 200' ]] || fail "alice's cookie in her own group"
fe_stop

note "another group, the same state directory"
: >"$EP_LOG"
fe_start --group "other$$"
out=$(state_as "$alice")
[[ $out == *' 404' ]] || fail "group other$$ took group t$$'s cookie: $out"
wait_log 'unsigned or forged sticky cookie, treated as a guest'
bob=$(login bob)
[[ $(state_as "$bob") == *'"user":"bob"'*' 200' ]] || fail "bob's cookie in his own group"
fe_stop

note "the first group again: its cookie still holds, the other's does not"
: >"$EP_LOG"
fe_start
[[ $(state_as "$bob") == *' 404' ]] || fail "group t$$ took group other$$'s cookie"
# alice lived on a worker of the earlier run: her cookie still names her, and she is placed anew
state_as "$alice" >/dev/null
wait_log 'User alice re-placed on w1'
[[ $(grep -c 'forged sticky cookie' "$EP_LOG") == 1 ]] || fail "alice's own cookie was taken for a forged one"
fe_stop
