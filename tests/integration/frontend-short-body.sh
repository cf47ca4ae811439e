#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a request whose body ends short of its content-length fails on its own, and the worker
# connection that got part of it is closed, never reused for the next request (which would read the
# rest of the head as that body). HTTP/2: content-length 100, 50 bytes and END_STREAM -> the stream is
# reset (PROTOCOL_ERROR), before the worker sees anything when all of it comes in one read, and with
# the worker connection closed when the worker already got the head (content-length 100000, 50000
# bytes: past the 16 KiB the forward side holds back to send with the head). HTTP/1.1: Content-Length
# 100000, 50000 bytes, then, once the worker has the head, the client's EOF. The echo worker logs the connection each request came on and the EOF
# inside the body.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)"
fe_start
# warm a worker connection up, so that reuse would be the natural choice for the next request
[[ $("${CURL[@]}" -o /dev/null -w '%{http_code}' "$EP_URL/warm") == 200 ]] || fail "warm-up request failed"

eof_in_body() {
        grep -q "\"conn\": ${1#*/}, \"event\": \"eof-in-body\"" "$FE_HEADS"
}

note "HTTP/2, all in one read: reset before anything reaches a worker"
out=$("$EP_PYTHON" "$FE_DIR/h2-abuse.py" "$EP_ADDR" short-body --path /short2a --wait 1 --expect rst=PROTOCOL_ERROR) ||
        fail "short h2 body: $out"
note "short body: $out"
grep -q '/short2a' "$FE_HEADS" && fail "the request reset in the read that brought it reached a worker"

note "HTTP/2, the short end after the worker got the head"
out=$("$EP_PYTHON" "$FE_DIR/frontend-h2-short-body.py" "$EP_ADDR" /short2 "$FE_HEADS") || fail "short h2 body: $out"
note "short body: $out"
[[ $out == *'"rst": {"PROTOCOL_ERROR": 1}'* ]] || fail "the short stream was not reset: $out"
short=$(head_conn /short2)
wait_until eof_in_body "$short" || fail "the worker connection $short that got part of the body was not closed"
[[ $("${CURL[@]}" --http2-prior-knowledge -o /dev/null -w '%{http_code}' "$EP_URL/after2") == 200 ]] ||
        fail "the next request failed"
after=$(head_conn /after2)
[[ $after != "$short" ]] || fail "the next request reused the connection $short that got the short body"
note "short body on worker connection $short (closed mid-body), the next request on $after"

note "HTTP/1.1"
# The EOF comes once the worker has the head: a request that ends short before any of it was forwarded
# is dropped in the commander (process() in h1-connection.c), which is not what this part is about.
"$EP_PYTHON" - "$EP_PORT" "$FE_HEADS" <<'PY' || fail "short h1 body"
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(10)
s.sendall(b"POST /short1 HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n" + b"x" * 50000)
deadline = time.monotonic() + 10
while b"/short1" not in open(sys.argv[2], "rb").read():
    if time.monotonic() > deadline:
        sys.exit("the worker never got the head of /short1")
    time.sleep(0.02)
s.shutdown(socket.SHUT_WR)
print("answer:", s.recv(65536))
PY
wait_until test -n "$(head_conn /short1 2>/dev/null)" || fail "the short request never reached the worker"
short=$(head_conn /short1)
wait_until eof_in_body "$short" || fail "the worker connection $short that got part of the body was not closed"
[[ $("${CURL[@]}" -o /dev/null -w '%{http_code}' "$EP_URL/after1") == 200 ]] || fail "the next request failed"
after=$(head_conn /after1)
[[ $after != "$short" ]] || fail "the next request reused the connection $short that got the short body"
note "short body on worker connection $short (closed mid-body), the next request on $after"
commander_alive || fail "the commander died"
fe_stop
