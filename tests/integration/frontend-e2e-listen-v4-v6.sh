#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: `listen = 127.0.0.1:PORT1 [::1]:PORT2` opens both listeners, and a client reaches the pool on
# each, over HTTP/1.1 and HTTP/2: an echo worker sees X-Forwarded-For with the address the client came
# from (127.0.0.1 on the first, ::1 on the second, after a client's own X-Forwarded-For) and Host with
# the address the client used. Where the host has no ::1, the IPv4 half runs and the test then skips,
# saying so: half a pass is no pass.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

# A port free on ::1 right now, other than $EP_PORT; nothing (status 1) when ::1 cannot be bound.
free_port6() {
        "$EP_PYTHON" - "$EP_PORT" <<'EOF'
import random, socket, sys
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(200):
    port = random.randrange(max(1024, low - 12000), low)
    if port == int(sys.argv[1]):
        continue
    try:
        s = socket.socket(socket.AF_INET6)
        s.bind(("::1", port))
    except OSError:
        continue
    print(port)
    sys.exit(0)
sys.exit(1)
EOF
}

v6_missing=""
if ! PORT6=$(free_port6); then
        v6_missing="::1 cannot be bound on this host (no IPv6 loopback)"
fi

# expect_peer URL XFF HOST CURL_ARGS...: one request to URL; the worker got X-Forwarded-For XFF and Host HOST.
expect_peer() {
        local url=$1 xff=$2 host=$3 code
        shift 3
        code=$("${CURL[@]}" "$@" -o /dev/null -w '%{http_code} %{http_version}' "$url") || fail "curl $* $url failed"
        note "$url ($*): $code; X-Forwarded-For: $(head_values X-Forwarded-For)"
        [[ ${code%% *} == 200 ]] || fail "$url answered $code"
        [[ " $* " != *' --http2-prior-knowledge '* || ${code#* } == 2 ]] || fail "$url spoke HTTP/${code#* }, not 2"
        expect_field X-Forwarded-For "$xff"
        expect_field Host "$host"
}

if [[ -n $v6_missing ]]; then
        note "IPv6 part left out: $v6_missing"
        fe_config "$(test_worker)"
else
        write_config "$(test_worker)" "frontend.listen=$EP_ADDR [::1]:$PORT6"
fi
fe_start
log_has "Listening on 127\.0\.0\.1:$EP_PORT " || fail "no 'Listening on 127.0.0.1:$EP_PORT' in the log"

note "IPv4 listener"
expect_peer "$EP_URL/v4" 127.0.0.1 "$EP_ADDR" --http1.1
expect_peer "$EP_URL/v4-h2" 127.0.0.1 "$EP_ADDR" --http2-prior-knowledge
expect_peer "$EP_URL/v4-xff" '192.0.2.7, 127.0.0.1' "$EP_ADDR" -H 'X-Forwarded-For: 192.0.2.7'

if [[ -z $v6_missing ]]; then
        url6="http://[::1]:$PORT6"
        log_has "Listening on \[::1\]:$PORT6 " || fail "no 'Listening on [::1]:$PORT6' in the log"
        note "IPv6 listener"
        expect_peer "$url6/v6" ::1 "[::1]:$PORT6" --http1.1
        expect_peer "$url6/v6-h2" ::1 "[::1]:$PORT6" --http2-prior-knowledge
        expect_peer "$url6/v6-xff" '192.0.2.7, ::1' "[::1]:$PORT6" -H 'X-Forwarded-For: 192.0.2.7'
        # each listener takes its own family only: the IPv4 port is not open on ::1
        code=$("${CURL[@]}" -o /dev/null -w '%{http_code}' "http://[::1]:$EP_PORT/" 2>/dev/null) && true
        [[ $code == 000 ]] || fail "[::1]:$EP_PORT answered $code; only 127.0.0.1:$EP_PORT was configured"
fi

fe_stop
[[ -z $v6_missing ]] || skip "the IPv4 listener works; the IPv6 part did not run: $v6_missing"
