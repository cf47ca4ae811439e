#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: `Upgrade: h2c` (RFC 7540 3.2) with real clients. curl --http2 against http:// sends the
# Upgrade; the commander answers 101 and the response, stream 1, comes over HTTP/2; the login it
# carries sets the signed sticky cookie, and the next requests on the same upgraded connection (curl
# reuses it) and on a new one carry it to the user's worker, whose counter rises by one each time. A
# request with a body is served as HTTP/1.1 (h2c only upgrades bodiless requests), its body intact.
# nghttp -u does the same upgrade, then multiplexes more streams with the cookie on that connection.
# The upgraded request reaches the worker like any other: without Upgrade, HTTP2-Settings or
# Connection, with X-Forwarded-For.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$DEMO_WORKER" pool.min_workers=3
fe_start
jar=$EP_TMP/jar

# check_state OUTPUT FIRST LAST: OUTPUT holds alice's /state answers FIRST..LAST, in order, all on one worker;
# prints that worker.
check_state() {
        local counters workers
        counters=$(grep -oE '"user":"alice","counter":[0-9]+' <<<"$1" | sed -E 's/.*://' | tr '\n' ' ')
        [[ $counters == "$(seq -s ' ' "$2" "$3") " ]] || fail "alice's counters are '$counters', not $2..$3"
        workers=$(grep -oE '"user":"alice","counter":[0-9]+,"worker":"[0-9]+"' <<<"$1" |
                sed -E 's/.*"worker":"([0-9]+)"/\1/' | sort -u)
        [[ -n $workers && $(wc -l <<<"$workers") == 1 ]] || fail "alice's requests reached workers $(tr "\n" " " <<<"$workers")"
        echo "$workers"
}

note "curl --http2: login and 20 /state on one upgraded connection"
urls=("$EP_URL/login?user=alice")
for _ in $(seq 20); do urls+=("$EP_URL/state"); done
out=$("${CURL[@]}" --http2 -v -c "$jar" -b "$jar" -w '\n<%{http_version} %{num_connects} %{http_code}>\n' "${urls[@]}" \
        2>"$EP_TMP/curl.err") || fail "curl --http2 failed: $(tail -n 5 "$EP_TMP/curl.err")"
grep -q '^> Upgrade: h2c' "$EP_TMP/curl.err" || fail "curl sent no Upgrade: h2c"
grep -q '^< HTTP/1.1 101 Switching Protocols' "$EP_TMP/curl.err" || fail "no 101 Switching Protocols"
[[ $(grep -c '^> Upgrade: h2c' "$EP_TMP/curl.err") == 1 ]] || fail "curl upgraded more than once: not one connection"
marks=$(grep -oE '^<[^>]*>$' <<<"$out")
[[ $(head -n1 <<<"$marks") == '<2 1 200>' ]] || fail "the upgrading login: $(head -n1 <<<"$marks") (want HTTP/2, 1 connect, 200)"
[[ $(tail -n +2 <<<"$marks" | sort -u) == '<2 0 200>' ]] ||
        fail "the requests after the upgrade: $(tail -n +2 <<<"$marks" | sort | uniq -c | tr '\n' ';') (want HTTP/2 on the same connection, 200)"
[[ $(awk '$6 == "ep_user" { print $7 }' "$jar") == ?*.?*.?* ]] || fail "no signed ep_user cookie from stream 1"
w=$(check_state "$out" 1 20)
note "20 /state of alice on w$w over the upgraded connection, counter 1..20"
log_has "User alice logged in on w$w" || fail "no log line for alice's login on w$w"

note "curl --http2: a new upgraded connection with the cookie"
out=$("${CURL[@]}" --http2 -b "$jar" -w '\n<%{http_version} %{num_connects} %{http_code}>\n' "$EP_URL/state" "$EP_URL/state") ||
        fail "curl --http2 failed"
[[ $(grep -oE '^<[^>]*>$' <<<"$out" | tr '\n' ' ') == '<2 1 200> <2 0 200> ' ]] || fail "second connection: $out"
[[ $(check_state "$out" 21 22) == "$w" ]] || fail "alice left w$w: $out"

note "curl --http2 with a body: served as HTTP/1.1"
out=$("${CURL[@]}" --http2 -v --data-binary @<(head -c 3000 /dev/zero) -w '\n<%{http_version} %{http_code}>' \
        "$EP_URL/work" 2>"$EP_TMP/curl.err") || fail "POST with Upgrade failed"
grep -q '^> Upgrade: h2c' "$EP_TMP/curl.err" || fail "curl sent no Upgrade: h2c with the POST"
[[ $out == *'"body_bytes":3000'*'<1.1 200>' ]] || fail "POST with Upgrade: $out"

if nghttp --help 2>&1 | grep -q -- '--upgrade'; then
        note "nghttp -u: login, then 10 streams on one upgraded connection"
        nghttp -u -v "$EP_URL/login?user=bob" >"$EP_TMP/login.out" 2>&1 || fail "nghttp -u login failed"
        grep -q 'HTTP Upgrade success' "$EP_TMP/login.out" || fail "nghttp: no upgrade: $(head -n 20 "$EP_TMP/login.out")"
        grep -q 'recv (stream_id=1) :status: 200' "$EP_TMP/login.out" || fail "nghttp: stream 1 did not answer 200"
        cookie=$(grep -oi 'recv (stream_id=1) set-cookie: ep_user=[^;]*' "$EP_TMP/login.out" | sed 's/^.*set-cookie: //I')
        [[ $cookie == ep_user=?*.?*.?* ]] || fail "nghttp: no signed cookie on stream 1: $cookie"
        nghttp -u -v -H "cookie: $cookie" -m 10 "$EP_URL/state" >"$EP_TMP/state.out" 2>&1 || fail "nghttp -u /state failed"
        grep -q 'HTTP Upgrade success' "$EP_TMP/state.out" || fail "nghttp: no upgrade for /state"
        [[ $(grep -c 'recv (stream_id=[0-9]*) :status: 200' "$EP_TMP/state.out") == 10 ]] || fail "nghttp: not 10 answers 200"
        counters=$(grep -oE '"user":"bob","counter":[0-9]+' "$EP_TMP/state.out" | sed -E 's/.*://' | sort -n | tr '\n' ' ')
        [[ $counters == "$(seq -s ' ' 10) " ]] || fail "nghttp: bob's counters are not 1..10: $counters"
        workers=$(grep -oE '"user":"bob","counter":[0-9]+,"worker":"[0-9]+"' "$EP_TMP/state.out" | sed -E 's/.*"worker":"([0-9]+)"/\1/' | sort -u)
        [[ -n $workers && $(wc -l <<<"$workers") == 1 ]] || fail "nghttp: bob's streams reached workers $(tr "\n" " " <<<"$workers")"
        note "nghttp -u: 10 streams of bob on w$workers, counter 1..10"
else
        note "nghttp lacks --upgrade: its part left out"
fi
fe_stop

note "what the worker gets from an upgraded request"
: >"$FE_HEADS"
fe_config "$(test_worker)"
fe_start
out=$("${CURL[@]}" --http2 -o /dev/null -w '%{http_version} %{http_code}' -H 'X-Custom: kept' "$EP_URL/upgraded?x=1") ||
        fail "curl --http2 to the echo worker failed"
[[ $out == '2 200' ]] || fail "upgrade to the echo worker: $out"
[[ $(last_head | head -n1 | tr -d '\r') == 'GET /upgraded?x=1 HTTP/1.1' ]] || fail "request line: $(last_head | head -n1)"
for f in Upgrade HTTP2-Settings Connection; do
        expect_no_field "$f"
done
expect_field X-Custom kept
expect_field Host "$EP_ADDR"
expect_field X-Forwarded-For 127.0.0.1
fe_stop
