#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: with nghttp (nghttp2's own client) a login sets the signed sticky cookie, and 100 concurrent
# /state streams on one HTTP/2 connection with that cookie all reach the user's worker, whose counter
# takes every value 1..100 exactly once; the response never carries Elastic-Pool-User.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
need_cmd nghttp
make_test_cgroup

fe_config "$DEMO_WORKER" pool.min_workers=3
fe_start
nghttp -v "$EP_URL/login?user=bob" >"$EP_TMP/login.out" 2>&1 || fail "nghttp login failed"
grep -q 'recv (stream_id=[0-9]*) :status: 200' "$EP_TMP/login.out" || fail "login did not answer 200"
grep -qi 'recv (stream_id=[0-9]*) elastic-pool-user' "$EP_TMP/login.out" && fail "Elastic-Pool-User reached the client"
sc=$(grep -oi 'recv (stream_id=[0-9]*) set-cookie: .*' "$EP_TMP/login.out" | sed 's/^[^:]*: //')
note "login: set-cookie: $sc"
for attr in HttpOnly 'SameSite=Lax' 'Path=/'; do
        grep -qE "; ?$attr(;|$)" <<<"$sc" || fail "the sticky cookie lacks $attr: $sc"
done
cookie=${sc%%;*}
[[ $cookie == ep_user=?*.?*.?* ]] || fail "not a signed ep_user cookie: $cookie"

nghttp -v -H "cookie: $cookie" -m 100 "$EP_URL/state" >"$EP_TMP/state.out" 2>&1 || fail "nghttp /state failed"
grep -qi 'recv (stream_id=[0-9]*) elastic-pool-user' "$EP_TMP/state.out" && fail "Elastic-Pool-User reached the client"
[[ $(grep -c 'recv (stream_id=[0-9]*) :status: 200' "$EP_TMP/state.out") == 100 ]] ||
        fail "not 100 answers 200: $(grep -c ':status: 200' "$EP_TMP/state.out")"
workers=$(grep -oE '"user":"bob","counter":[0-9]+,"worker":"[0-9]+"' "$EP_TMP/state.out" | sed -E 's/.*"worker":"([0-9]+)"/\1/' | sort -u)
[[ $(wc -l <<<"$workers") == 1 && -n $workers ]] || fail "bob's requests reached workers $(echo $workers)"
counters=$(grep -oE '"user":"bob","counter":[0-9]+' "$EP_TMP/state.out" | sed -E 's/.*://' | sort -n | tr '\n' ' ')
[[ $counters == "$(seq -s ' ' 100) " ]] || fail "bob's counters are not 1..100: $counters"
note "100 concurrent streams of bob on w$workers, counter 1..100"
fe_stop
