#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a client cannot spoof the fields the commander writes by spelling them with '_' (which CGI,
# WSGI and PHP stacks map to the same variable as the real name: X_Elastic_Pool_User would be the user),
# over HTTP/1.1 and HTTP/2; and Forwarded (RFC 7239) is kept only from a trusted_proxies peer, like
# X-Forwarded-Proto (issue 16, defect 7).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

spoofed=(X_Elastic_Pool_User Elastic_Pool_User Elastic-Pool-User X_Forwarded_Proto X_Forwarded_For X_Request_Id
        Forwarded)
expect_none_spoofed() {
        local n
        for n in "${spoofed[@]}"; do
                expect_no_field "$n"
        done
        expect_field X-Forwarded-Proto http
        expect_field X-Forwarded-For 127.0.0.1
        [[ $(head_values X-Request-Id) != mine ]] || fail "the client's X_Request_Id replaced ours"
}

fe_config "$(test_worker)"
fe_start

note "HTTP/1.1"
"${CURL[@]}" -o /dev/null -H 'X_Elastic_Pool_User: admin' -H 'Elastic_Pool_User: admin' \
        -H 'Elastic-Pool-User: admin' -H 'X_Forwarded_Proto: https' -H 'X_Forwarded_For: 10.9.9.9' \
        -H 'X_Request_Id: mine' -H 'Forwarded: for=10.9.9.9;proto=https' -H 'X_Other: kept' \
        "$EP_URL/spoof-h1" || fail "curl"
expect_none_spoofed
expect_field X_Other kept

note "HTTP/2"
out=$(h2_request --path /spoof-h2 -H 'x_elastic_pool_user: admin' -H 'elastic_pool_user: admin' \
        -H 'x_forwarded_proto: https' -H 'x_forwarded_for: 10.9.9.9' -H 'x_request_id: mine' \
        -H 'forwarded: for=10.9.9.9;proto=https')
[[ $out == *'"status": 200'* ]] || fail "h2 answer: $out"
expect_none_spoofed
fe_stop

note "Forwarded from a trusted proxy reaches the worker"
fe_config "$(test_worker)" frontend.trusted_proxies=127.0.0.1
fe_start
"${CURL[@]}" -o /dev/null -H 'Forwarded: for=10.9.9.9;proto=https' -H 'X_Elastic_Pool_User: admin' \
        "$EP_URL/trusted" || fail "curl"
expect_field Forwarded 'for=10.9.9.9;proto=https'
expect_no_field X_Elastic_Pool_User
fe_stop
