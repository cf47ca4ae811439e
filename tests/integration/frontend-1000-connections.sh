#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: 1 000 HTTP/1.1 keep-alive connections open at once are all served correctly: each gets its
# first answer while the other 999 are open, then nine more on the same connection, every one a complete
# 200 without Connection: close; then h2load drives 1 000 h2c connections; no errors, the commander lives.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup
# 1 000 client sockets in the commander (and as many in the client), plus the workers' connections
(($(ulimit -n) >= 8192)) || ulimit -n 8192 2>/dev/null || skip "cannot raise the open-file limit to 8192"

fe_config "$DEMO_WORKER" pool.min_workers=2
fe_start
out=$("$EP_PYTHON" "$FE_DIR/frontend-many-clients.py" "$EP_ADDR" --connections 1000 --requests 10) ||
        fail "not every request of 1 000 concurrent connections succeeded: $out"
note "HTTP/1.1: $out"
commander_alive || fail "the commander died"
if command -v h2load >/dev/null; then
        out=$(h2load -c 1000 -n 10000 -m 1 "$EP_URL/" 2>&1) || fail "h2load failed: $out"
        grep -E '^requests:|^status codes:' <<<"$out" | while read -r l; do note "h2c: $l"; done
        grep -q '^requests: 10000 total, 10000 started, 10000 done, 10000 succeeded, 0 failed, 0 errored, 0 timeout' \
                <<<"$out" || fail "h2load: $(grep -E '^requests:' <<<"$out")"
else
        note "h2load missing: the h2c part is not run"
fi
commander_alive || fail "the commander died"
[[ $("${CURL[@]}" -o /dev/null -w '%{http_code}' "$EP_URL/") == 200 ]] || fail "the commander no longer answers"
fe_stop
