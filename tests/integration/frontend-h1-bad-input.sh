#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: every malformed or over-limit HTTP/1.1 request of docs/frontend-http1.md gets its exact status
# (400, 405, 413, 414, 417, 431, 501, 505) with Connection: close, the connection is closed, and not one
# byte of it reaches a worker (an echo worker logs every head it gets: none until the final good
# request, which shows the pool still serves). A chunked body that turns bad after its head went to a
# worker gets 400 too, and that worker connection is closed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)" frontend.max_header_size=16K frontend.max_header_fields=50 frontend.max_body_size=1000
fe_start

long=$(printf 'a%.0s' $(seq 9000))
big=$(printf 'X-Big-%d: %0400d\\r\\n' $(for i in $(seq 45); do echo "$i 0"; done))
many=$(printf 'X-F-%d: v\\r\\n' $(seq 51))
H='Host: example.test\r\n'
cases=(
        "400|CL with TE|POST / HTTP/1.1\r\n${H}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        "400|differing duplicate Content-Length|POST / HTTP/1.1\r\n${H}Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello"
        "400|identical duplicate Content-Length|POST / HTTP/1.1\r\n${H}Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello"
        "400|Content-Length list|POST / HTTP/1.1\r\n${H}Content-Length: 5, 5\r\n\r\nhello"
        "400|invalid chunk size|POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"
        "400|invalid chunk line|POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n5 x\r\nhello\r\n0\r\n\r\n"
        "400|chunk data not followed by CRLF|POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXY0\r\n\r\n"
        "400|bare CR in a chunk line|POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n5\rXhello\r\n0\r\n\r\n"
        "400|obs-fold|GET / HTTP/1.1\r\n${H}X-A: b\r\n c\r\n\r\n"
        "400|bare CR in a field|GET / HTTP/1.1\r\n${H}X-A: b\rc\r\n\r\n"
        "400|bare LF in a field|GET / HTTP/1.1\r\n${H}X-A: b\nX-B: c\r\n\r\n"
        "400|LF-only line ends|GET / HTTP/1.1\n${H}\n"
        "400|NUL in a field|GET / HTTP/1.1\r\n${H}X-A: b\x00c\r\n\r\n"
        "400|control byte in a field|GET / HTTP/1.1\r\n${H}X-A: b\x01c\r\n\r\n"
        "400|byte >= 0x80 in the target|GET /\xe9 HTTP/1.1\r\n${H}\r\n"
        "400|space before the colon|GET / HTTP/1.1\r\n${H}X-A : b\r\n\r\n"
        "400|whitespace before the first field|GET / HTTP/1.1\r\n ${H}\r\n"
        "400|field line without colon|GET / HTTP/1.1\r\n${H}X-A\r\n\r\n"
        "400|no Host|GET / HTTP/1.1\r\n\r\n"
        "400|two Hosts|GET / HTTP/1.1\r\n${H}${H}\r\n"
        "400|HTTX version|GET / HTTX/1.1\r\n${H}\r\n"
        "400|HTTP/0.9|GET /\r\n\r\n"
        "505|HTTP/2.0 request line|GET / HTTP/2.0\r\n${H}\r\n"
        "400|unknown method|FROB / HTTP/1.1\r\n${H}\r\n"
        "405|CONNECT|CONNECT example.test:443 HTTP/1.1\r\n${H}\r\n"
        "400|fragment in the target|GET /a#b HTTP/1.1\r\n${H}\r\n"
        "400|userinfo in the target|GET http://u@example.test/ HTTP/1.1\r\n${H}\r\n"
        "400|Transfer-Encoding not ending in chunked|POST / HTTP/1.1\r\n${H}Transfer-Encoding: gzip\r\n\r\n"
        "400|chunked twice|POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n"
        "501|gzip, chunked|POST / HTTP/1.1\r\n${H}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"
        "400|Transfer-Encoding in HTTP/1.0|POST / HTTP/1.0\r\n${H}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        "417|Expect other than 100-continue|POST / HTTP/1.1\r\n${H}Expect: coffee\r\nContent-Length: 1\r\n\r\nx"
        "414|request line over 8 KiB|GET /$long HTTP/1.1\r\n${H}\r\n"
        "431|head over max_header_size|GET / HTTP/1.1\r\n${H}$big\r\n"
        "431|more than max_header_fields|GET / HTTP/1.1\r\n${H}$many\r\n"
        "413|Content-Length over max_body_size|POST / HTTP/1.1\r\n${H}Content-Length: 1001\r\n\r\n"
        "413|chunks past max_body_size|POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n258\r\n$(printf 'x%.0s' $(seq 600))\r\n258\r\n$(printf 'x%.0s' $(seq 600))\r\n0\r\n\r\n"
)
for c in "${cases[@]}"; do
        want=${c%%|*}
        rest=${c#*|}
        what=${rest%%|*}
        bytes=${rest#*|}
        out=$(raw_send "$bytes")
        got=$(statuses <<<"$out" | tr '\n' ' ')
        [[ $got == "$want " ]] || fail "$what: answered '$got', want $want: ${out:0:300}"
        grep -qi '^connection: close' <<<"$out" || fail "$what: no Connection: close: ${out:0:300}"
        [[ $out != *'<no EOF>'* ]] || fail "$what: the connection was not closed"
        [[ $(heads_count) == 0 ]] || fail "$what: reached a worker: $(last_head)"
        note "$what: $want, closed"
done
wait_log 'HTTP/1.1 client 127.0.0.1:[0-9]+: 400 Bad Request'

out=$(raw_send "GET /fine HTTP/1.1\r\n${H}Connection: close\r\n\r\n")
[[ $(statuses <<<"$out") == 200 ]] || fail "a good request after all that: $out"
[[ $(heads_count) == 1 ]] || fail "$(heads_count) heads reached the worker, want only the good one"

note "a chunked body that turns bad after its head was forwarded"
"$EP_PYTHON" - "$EP_PORT" "$FE_HEADS" >"$EP_TMP/midchunk.out" <<'PY' || fail "mid-stream bad chunk: $(cat "$EP_TMP/midchunk.out")"
import os, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(10)
s.sendall(b"POST /midchunk HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
deadline = time.monotonic() + 10
while "/midchunk" not in open(sys.argv[2]).read():   # the worker got the head: now the bad chunk line
    if time.monotonic() > deadline:
        sys.exit("the head never reached the worker")
    time.sleep(0.02)
s.sendall(b"zz\r\nhello\r\n0\r\n\r\n")
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
print(out.decode("latin-1"))
PY
out=$(cat "$EP_TMP/midchunk.out")
[[ $(statuses <<<"$out") == 400 ]] || fail "mid-stream bad chunk answered: $out"
grep -qi '^connection: close' <<<"$out" || fail "no Connection: close: $out"
conn=$(head_conn /midchunk)
wait_until grep -q "\"conn\": ${conn#*/}, \"event\": \"eof-in-body\"" "$FE_HEADS" ||
        fail "the worker connection $conn that got part of the bad body was not closed"
note "mid-stream bad chunk: 400, closed, worker connection $conn closed mid-body"
commander_alive || fail "the commander died"
fe_stop
