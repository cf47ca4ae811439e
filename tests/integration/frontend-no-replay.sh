#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a request whose kept-alive worker connection closes before any response byte is replayed on a
# fresh connection only when that cannot repeat an effect: an idempotent method (GET, HEAD, PUT, DELETE,
# OPTIONS, TRACE), or nothing of it written yet. A POST the worker read whole and then dropped is
# answered 502 and reaches the worker exactly once; a GET is replayed once (then 502 here, since the
# worker drops it again).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

fe_config "$(test_worker)"
fe_start
heads_of() {
        grep -c "\"head\": \"$1 /drop" "$FE_HEADS" || true
}
for method in POST GET; do
        # one client connection at a time: the warm-up request leaves the worker connection the drop reuses
        out=$("${CURL[@]}" -w '%{http_code};' -o /dev/null "$EP_URL/warm-$method" \
                -X "$method" -H "X-Request-Id: drop-$method" -o /dev/null "$EP_URL/drop")
        [[ $out == '200;502;' ]] || fail "$method /drop: want 200 (warm-up) then 502: $out"
        wait_log "Request drop-$method $method /drop on w1: 502"
        note "$method /drop on a reused worker connection: 502, reached the worker $(heads_of "$method") times"
done
[[ $(heads_of POST) == 1 ]] || fail "the POST reached the worker $(heads_of POST) times: replayed"
[[ $(heads_of GET) == 2 ]] || fail "the GET reached the worker $(heads_of GET) times, want 2 (one replay)"
fe_stop
