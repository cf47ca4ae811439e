#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a request with a body that has to wait for a worker connection takes one only once its body
# began (issue 16, defect 2, heads held back until the body shows progress): while its client sends the
# head alone, a connection that comes free goes to a request that can use it, and the held one is
# forwarded, and answered, once its body arrives.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)" frontend.upstream_connections=1
fe_start

out=$("$EP_PYTHON" - "$EP_PORT" "$EP_URL" "$FE_HEADS" <<'PY'
import json, os, socket, subprocess, sys, time
port, url, heads = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def conn():
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    return s
def answer(s):
    reply = b""
    while b"\r\n\r\n" not in reply:
        b = s.recv(65536)
        if not b:
            break
        reply += b
    return reply.split(b"\r\n")[0].decode()
def reached(path):
    return os.path.exists(heads) and path in open(heads).read()
def wait_reached(path):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not reached(path):
        time.sleep(0.02)
    return reached(path)
# the one worker connection goes to this request (1 s on the worker)
holder = conn()
holder.sendall(b"GET /sleep?ms=1000 HTTP/1.1\r\nHost: a\r\n\r\n")
wait_reached("/sleep")
# a head with a body to come: it queues, and stays held back
held = conn()
held.sendall(b"POST /held-post HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n")
r = {"holder": answer(holder)}
# the connection is free again: this request gets it although the POST queued first
t0 = time.monotonic()
p = subprocess.run(["curl", "-s", "--noproxy", "*", "--max-time", "8", "-o", "/dev/null", "-w", "%{http_code}",
                    url + "/after"], capture_output=True, text=True)
r["after"] = p.stdout
r["after_s"] = round(time.monotonic() - t0, 2)
r["post_reached_before_body"] = reached("/held-post")
held.sendall(b"hello")
r["post"] = answer(held)
print(json.dumps(r))
PY
)
note "clients: $out"
[[ $(json_get "$out" holder) == 'HTTP/1.1 200'* ]] || fail "the holder was not answered: $out"
[[ $(json_get "$out" after) == 200 ]] || fail "the request after did not get the free connection: $out"
[[ $(json_get "$out" post_reached_before_body) == False ]] || fail "the POST head reached the worker before its body: $out"
[[ $(json_get "$out" post) == 'HTTP/1.1 200'* ]] || fail "the POST was not answered once its body came: $out"
grep -q '/held-post' "$FE_HEADS" || fail "the POST never reached the worker"
commander_alive || fail "the commander died"
fe_stop
