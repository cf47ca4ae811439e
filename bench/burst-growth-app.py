# SPDX-License-Identifier: MIT
# The WSGI peer of the demo worker for bench/burst-growth.sh under uWSGI: the endpoints
# elastic-pool-loadgen uses with --mix 0:1, doing what the demo worker does for them.
#   /login?user=N   200, sets the ep_user cookie (loadgen keeps it, as it does behind elastic-pool)
#   /logout         200, clears it
#   /work?cpu_ms=N  burns N ms of this thread's CPU time (as the demo worker measures it) and answers
import time
from urllib.parse import parse_qs


def burn(ms):
    start = time.thread_time()
    while time.thread_time() - start < ms / 1000.0:
        pass


def application(environ, start_response):
    path = environ.get("PATH_INFO", "")
    query = parse_qs(environ.get("QUERY_STRING", ""))
    headers = [("Content-Type", "text/plain")]
    if path == "/login":
        user = query.get("user", ["guest"])[0]
        headers.append(("Set-Cookie", "ep_user=%s; Path=/" % user))
        body = b"logged in\n"
    elif path == "/logout":
        headers.append(("Set-Cookie", "ep_user=; Max-Age=0; Path=/"))
        body = b"logged out\n"
    elif path == "/work":
        ms = int(query.get("cpu_ms", ["10"])[0])
        burn(ms)
        body = b'{"cpu_ms":%d}\n' % ms
    else:
        start_response("404 Not Found", headers)
        return [b"not found\n"]
    headers.append(("Content-Length", str(len(body))))
    start_response("200 OK", headers)
    return [body]
