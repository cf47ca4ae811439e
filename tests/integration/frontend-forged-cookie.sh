#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: only a cookie signed with the group's key (created 0600 in the state directory) makes a user.
# An unsigned value, a forged user with a genuine signature, a flipped signature, a later expiry or a
# later issue stamp under the genuine signature, a cookie signed with another key and an expired
# (validly signed) one are each a guest, and each is logged; the genuine cookie keeps working between
# them. A validly signed cookie of the earlier format (user.expiry.mac, no issue stamp) still works.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER"
fe_start
key=$EP_TMP/state/cookie.key
[[ -f $key ]] || fail "no cookie key in the state directory"
[[ $(stat -c '%a %s' "$key") == '600 32' ]] || fail "cookie key is $(stat -c 'mode %a, %s bytes' "$key")"

"${CURL[@]}" -c "$EP_TMP/jar" -o /dev/null "$EP_URL/login?user=alice" || fail "login failed"
good=$(awk '$6 == "ep_user" { print $7 }' "$EP_TMP/jar")
IFS=. read -r user expiry issued mac <<<"$good"
[[ -n $mac ]] || fail "cookie '$good' is not user.expiry.issued.mac"

# sign USER EXPIRY[.ISSUED] KEYFILE: a cookie value as cookie.c makes it, with the group's key derived
# from the file's (cookie_key_bind(): the group is start_commander's t$$)
sign() {
        "$EP_PYTHON" -c 'import base64, hmac, hashlib, sys
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
key = hmac.new(open(sys.argv[3], "rb").read(), b"elastic-pool cookie key\0" + sys.argv[4].encode(), hashlib.sha256).digest()
data = b64(sys.argv[1].encode()) + "." + sys.argv[2]
print(data + "." + b64(hmac.new(key, data.encode(), hashlib.sha256).digest()))' "$@" "t$$"
}
head -c 32 /dev/urandom >"$EP_TMP/other.key"
[[ $(sign alice "$expiry.$issued" "$key") == "$good" ]] || fail "the test's signer does not match cookie.c"

state_as() {
        "${CURL[@]}" -H "Cookie: ep_user=$1" -w ' %{http_code}' "$EP_URL/state"
}
# the first character of the mac: all six of its bits count (the last one's low bits are padding)
flip=$([[ ${mac:0:1} == A ]] && echo B || echo A)${mac:1}
declare -A forged=(
        [unsigned]=alice
        [forged-user]="$(printf %s mallory | base64 | tr '+/' '-_' | tr -d '=').$expiry.$mac"
        [flipped-signature]="$user.$expiry.$flip"
        [later-expiry]="$user.$((expiry + 1)).$issued.$mac"
        [later-issue]="$user.$expiry.$((issued + 1)).$mac"
        [stamp-dropped]="$user.$expiry.$mac"
        [other-key]=$(sign alice "$expiry.$issued" "$EP_TMP/other.key")
        [expired]=$(sign alice "1000000000.$issued" "$key")
)
n=1
for kind in unsigned forged-user flipped-signature later-expiry later-issue stamp-dropped other-key expired; do
        out=$(state_as "${forged[$kind]}")
        [[ $out == *' 404' ]] || fail "$kind cookie was not a guest: $out"
        out=$(state_as "$good")
        [[ $out == *'"user":"alice","counter":'$n,*' 200' ]] || fail "genuine cookie after $kind: $out"
        n=$((n + 1))
done
# the earlier format, validly signed: alice (issued before any logout on record, of which there is none)
out=$(state_as "$(sign alice "$expiry" "$key")")
[[ $out == *'"user":"alice","counter":'$n,*' 200' ]] || fail "a cookie of the earlier format: $out"
wait_log 'sticky cookie, treated as a guest'
[[ $(grep -c 'unsigned or forged sticky cookie, treated as a guest' "$EP_LOG") == 7 ]] ||
        fail "not 7 forged cookies logged: $(grep -c 'unsigned or forged sticky cookie' "$EP_LOG")"
log_has 'expired sticky cookie, treated as a guest' || fail "the expired cookie was not logged as such"
fe_stop
