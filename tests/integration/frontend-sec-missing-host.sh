#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a request without an authority reaches its worker with an empty Host field, never without one.
# What a worker gets is HTTP/1.1, which RFC 9112 3.2 requires to carry Host ("If the authority component
# is missing or undefined for the target URI, then a client MUST send a Host header field with an empty
# field value"): an HTTP/1.0 request without Host arrives with exactly one "Host:" and an empty value.
# An HTTP/2 request with neither :authority nor host is reset by nghttp2 and reaches no worker. A
# request with an authority keeps it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup
"$EP_PYTHON" -c 'import h2' 2>/dev/null || skip "needs python3-h2"

fe_config "$(test_worker)"
fe_start

# expect_empty_host WHAT: the last head a worker got has exactly one Host field, and it is empty.
expect_empty_host() {
        local hosts
        hosts=$(last_head | tr -d '\r' | grep -ci '^host:' || true)
        [[ $hosts == 1 ]] ||
                fail "$1: the worker got $hosts Host fields: $(last_head | tr -d '\r' | tr '\n' '|')"
        [[ -z $(head_values Host) ]] || fail "$1: the worker got Host: $(head_values Host)"
        note "$1: the worker got an empty Host"
}

out=$(raw_send 'GET /h10 HTTP/1.0\r\n\r\n')
[[ $(statuses <<<"$out") == 200 ]] || fail "HTTP/1.0 without Host: $out"
[[ $(last_head | head -n1 | tr -d '\r') == 'GET /h10 HTTP/1.1' ]] ||
        fail "request line: $(last_head | head -n1)"
expect_empty_host "HTTP/1.0 without Host"

# HTTP/2 with neither :authority nor host never gets that far: nghttp2 resets the stream (RFC 9113 8.3.1
# wants one of them for "http"), so nothing reaches a worker (frontend-h2-client.py always sends
# :authority)
before=$(heads_count)
out=$("$EP_PYTHON" - "$EP_ADDR" <<'PY'
import socket, sys
import h2.config, h2.connection, h2.events
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=20)
c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="latin-1",
                                                                validate_outbound_headers=False))
c.initiate_connection()
c.send_headers(1, [(":method", "GET"), (":scheme", "http"), (":path", "/h2-no-authority")], end_stream=True)
s.sendall(c.data_to_send())
outcome, done = "closed", False
while not done:
    data = s.recv(65536)
    if not data:
        break
    for e in c.receive_data(data):
        if isinstance(e, h2.events.ResponseReceived):
            outcome = dict(e.headers).get(":status")
        if isinstance(e, h2.events.StreamReset):
            outcome = "reset %d" % e.error_code
        done = done or isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset))
    s.sendall(c.data_to_send())
print(outcome)
PY
)
note "HTTP/2 without :authority or host: $out"
if [[ $out == 200 ]]; then
        # an nghttp2 that lets it through: then it must come with an empty Host
        expect_empty_host "HTTP/2 without :authority or host"
else
        [[ $out == 'reset 1' ]] || fail "HTTP/2 without :authority or host: $out"
        [[ $(heads_count) == "$before" ]] || fail "the refused HTTP/2 request reached a worker: $(last_head)"
fi

# and an authority is kept as it came
out=$(raw_send 'GET /h11 HTTP/1.1\r\nHost: app.test:8080\r\nConnection: close\r\n\r\n')
[[ $(statuses <<<"$out") == 200 ]] || fail "HTTP/1.1 with Host: $out"
expect_field Host app.test:8080
commander_alive || fail "the commander died"
fe_stop
