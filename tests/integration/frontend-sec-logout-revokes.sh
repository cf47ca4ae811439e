#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a logout revokes every sticky cookie issued to that user up to it, and nothing issued after.
# alice logs in twice (two devices), then logs out on one: the logout answers with a cookie deletion
# (Max-Age=0), and both earlier cookies, replayed, make a guest: no X-Elastic-Pool-User reaches a worker,
# nobody is placed again, and each replay is logged "revoked by logout". A new login right after (the
# same second) works at once, its cookie carries alice again, and the old ones stay revoked. bob, who
# did not log out, keeps his cookie.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)"
fe_start

# login USER: the value of the sticky cookie the login answer sets
login() {
        "${CURL[@]}" -D - -o /dev/null "$EP_URL/login?user=$1" | tr -d '\r' |
                sed -nE 's/^[Ss]et-[Cc]ookie: ep_user=([^;]+);.*/\1/p'
}

# user_seen COOKIE PATH: the X-Elastic-Pool-User the worker got for GET PATH with this cookie ("" when none)
user_seen() {
        local out
        out=$("${CURL[@]}" -H "Cookie: ep_user=$1" -o /dev/null -w '%{http_code}' "$EP_URL$2")
        [[ $out == 200 ]] || fail "GET $2: $out"
        head_values X-Elastic-Pool-User
}

phone=$(login alice)
laptop=$(login alice)
bob=$(login bob)
[[ -n $phone && -n $laptop && -n $bob ]] || fail "a login set no cookie: '$phone' '$laptop' '$bob'"
[[ $(user_seen "$phone" /before-phone) == alice ]] || fail "the phone's cookie is not alice's"
[[ $(user_seen "$laptop" /before-laptop) == alice ]] || fail "the laptop's cookie is not alice's"

hdr=$("${CURL[@]}" -D - -o /dev/null -H "Cookie: ep_user=$phone" "$EP_URL/logout" | tr -d '\r')
grep -qiE '^set-cookie: ep_user=;.*Max-Age=0' <<<"$hdr" || fail "the logout answer deletes no cookie: $hdr"
wait_log 'User alice logged out of w[0-9]+'

for device in phone laptop; do
        got=$(user_seen "${!device}" "/after-logout-$device")
        [[ -z $got ]] || fail "the $device's pre-logout cookie still reached a worker as '$got'"
        note "the $device's pre-logout cookie: a guest"
done
wait_log 'sticky cookie of user alice revoked by logout, treated as a guest'
[[ $(grep -c 'sticky cookie of user alice revoked by logout' "$EP_LOG") == 2 ]] ||
        fail "not 2 revoked cookies logged: $(grep -c 'revoked by logout' "$EP_LOG")"
! log_has 'User alice re-placed' ||
        fail "a revoked cookie placed alice again: $(grep -m1 'User alice re-placed' "$EP_LOG")"

# log in again at once: a valid cookie, whatever the clock's resolution
again=$(login alice)
[[ $(user_seen "$again" /after-login-again) == alice ]] ||
        fail "the cookie of the login after the logout is not alice's"
[[ -z $(user_seen "$phone" /phone-after-login-again) ]] ||
        fail "the phone's old cookie came back with the new login"
[[ $(user_seen "$bob" /bob) == bob ]] || fail "bob's cookie was touched by alice's logout"
commander_alive || fail "the commander died"
fe_stop
