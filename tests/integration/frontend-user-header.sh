#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: the user travels only as the commander says. A worker's Elastic-Pool-User response field
# logs the user in and never reaches the client (HTTP/1.1 and HTTP/2); a client's own
# X-Elastic-Pool-User (any case, any number) never reaches a worker: a guest's request carries none, a
# logged-in user's carries exactly the one the cookie resolved to; the sticky cookie itself is taken out
# of the Cookie field the worker gets.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)"
fe_start

note "HTTP/1.1 login: the worker's Elastic-Pool-User is stripped"
hdr=$("${CURL[@]}" -D - -o /dev/null -c "$EP_TMP/jar" "$EP_URL/login?user=bob")
grep -qi '^elastic-pool-user' <<<"$hdr" && fail "Elastic-Pool-User reached the client: $hdr"
grep -qi '^set-cookie: ep_user=' <<<"$hdr" || fail "no sticky cookie: $hdr"
wait_log 'User bob logged in on w1'

note "HTTP/1.1: a client's X-Elastic-Pool-User never reaches the worker"
"${CURL[@]}" -o /dev/null -H 'X-Elastic-Pool-User: bob' -H 'x-ELASTIC-pool-USER: root' "$EP_URL/guest" || fail "curl"
expect_no_field X-Elastic-Pool-User
"${CURL[@]}" -o /dev/null -b "$EP_TMP/jar" -b 'other=1' -H 'X-Elastic-Pool-User: mallory' -H 'x-elastic-pool-user: eve' \
        "$EP_URL/user" || fail "curl"
expect_field X-Elastic-Pool-User bob
expect_field Cookie 'other=1'
last_head | grep -q ep_user && fail "the sticky cookie reached the worker: $(last_head)"

note "HTTP/2: the same"
cookie=$(awk '$6 == "ep_user" { print $6 "=" $7 }' "$EP_TMP/jar")
out=$(h2_request --path /h2user -H "cookie: $cookie" -H 'x-elastic-pool-user: mallory' -H 'cookie: c=3')
[[ $out == *'"status": 200'* ]] || fail "h2 answer: $out"
expect_field X-Elastic-Pool-User bob
expect_field Cookie 'c=3'
out=$(h2_request --path /h2guest -H 'x-elastic-pool-user: bob')
expect_no_field X-Elastic-Pool-User
out=$(h2_request --path '/login?user=dave')
[[ $out == *'"set-cookie", "ep_user='* ]] || fail "h2 login set no cookie: $out"
[[ ${out,,} == *'elastic-pool-user'* ]] && fail "Elastic-Pool-User reached the h2 client: $out"
wait_log 'User dave logged in on w1'

fe_stop
