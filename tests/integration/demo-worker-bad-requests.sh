#!/bin/bash
# SPDX-License-Identifier: MIT
# Malformed requests get a clear 4xx with "Connection: close" and never hurt the worker: garbage request
# line, bad header syntax, NUL bytes, Content-Length with Transfer-Encoding, bad chunk sizes, invalid
# user header, headers over 16 KiB (431), a target over 8 KiB (414), too many header fields (431), and
# a burst of random bytes. After each the worker still serves.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/demo-worker-lib.sh"

demo_start --threads 2

expect_status() { # expect_status CODE REQUEST-BYTES
        local out
        out=$(raw_exchange "$2")
        [[ $(statuses <<<"$out" | tail -n1) == "$1" ]] || fail "expected $1 for '${2:0:80}', got: ${out:0:300}"
        grep -q '^Connection: close' <<<"$out" || fail "the $1 for '${2:0:60}' lacks Connection: close"
        grep -q '<no EOF>' <<<"$out" && fail "the connection stayed open after '${2:0:60}'"
        demo_alive
}

expect_status 400 'GARBAGE\r\n\r\n'
expect_status 400 'GET / HTTP/9.x\r\n\r\n'
expect_status 400 'GET / HTTP/1.1\r\nBad Header: x\r\n\r\n'
expect_status 400 'GET / HTTP/1.1\r\nNoColon\r\n\r\n'
expect_status 400 'GET /\x00 HTTP/1.1\r\n\r\n'
expect_status 400 'GET / HTTP/1.1\r\nX-A: a\x00b\r\n\r\n'
expect_status 400 'POST /work HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'
expect_status 400 'POST /work HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd'
expect_status 400 'POST /work HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n'
expect_status 400 'GET /state HTTP/1.1\r\nX-Elastic-Pool-User: not valid!\r\nConnection: close\r\n\r\n'
expect_status 400 'GET /state HTTP/1.1\r\nX-Elastic-Pool-User: a\r\nX-Elastic-Pool-User: a\r\nConnection: close\r\n\r\n'
expect_status 400 'GET /work?cpu_ms=abc HTTP/1.1\r\nConnection: close\r\n\r\n'
expect_status 400 'GET /login?user=a%2 HTTP/1.1\r\nConnection: close\r\n\r\n'
expect_status 400 'GET * HTTP/1.1\r\nConnection: close\r\n\r\n'

big=$(head -c 20000 /dev/zero | tr '\0' a)
expect_status 431 "GET / HTTP/1.1\r\nX-Big: $big\r\n\r\n"
expect_status 414 "GET /$big HTTP/1.1\r\n\r\n"
many=""
for i in $(seq 150); do many+="X-H$i: v\r\n"; done
expect_status 431 "GET / HTTP/1.1\r\n$many\r\n"

# A valid request before the bad one is still answered first.
out=$(raw_exchange "GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nX-Big: $big\r\n\r\n")
[[ $(statuses <<<"$out" | tr '\n' ' ') == "200 431 " ]] || fail "valid then too large: $(statuses <<<"$out")"

# Random bytes, with and without a valid start, on 300 connections; then the worker must still serve.
"$EP_PYTHON" - "$DEMO_SOCK" <<'PY' || fail "fuzzing"
import os, random, socket, sys
random.seed(1234)
for i in range(300):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.settimeout(10)
    junk = os.urandom(random.randint(1, 4000))
    prefix = random.choice([b"", b"GET / HTTP/1.1\r\n", b"POST /work HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"])
    try:
        s.sendall(prefix + junk)
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass
    except (ConnectionResetError, BrokenPipeError):
        pass
    s.close()
PY
demo_alive
[[ $(curl -sf "${DEMO_CURL[@]}" http://demo/) == Hello* ]] || fail "not serving after the fuzzing"
demo_stop
echo "OK"
