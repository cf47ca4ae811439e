#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: the same as frontend-sticky-h1 over HTTP/2 cleartext with prior knowledge (curl
# --http2-prior-knowledge): guests reach the reception; the login's signed sticky cookie keeps 100
# requests, each on its own connection, on one worker of three with its counter going 1..100; logout
# clears the cookie and the state; Elastic-Pool-User never reaches the client.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER" pool.min_workers=3
fe_start
v=$("${CURL[@]}" --http2-prior-knowledge -o /dev/null -w '%{http_version}' "$EP_URL/")
[[ $v == 2 ]] || fail "curl --http2-prior-knowledge spoke HTTP/$v"
sticky_scenario --http2-prior-knowledge
fe_stop
