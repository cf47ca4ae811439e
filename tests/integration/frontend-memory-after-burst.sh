#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: the commander gives back the memory of a burst once it is over. After 64 h2c connections × 32
# streams (and then 64 HTTP/1.1 connections) its resident set goes back to within a generous bound of
# what it was idle, without a request or a signal to make it, and it still answers afterwards. (The goal,
# checked by bench/memory-after-burst.sh, is within 2 MB in 10 s; this test allows 4 MiB in 30 s, so a
# loaded machine does not make it flaky.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
[[ ${EP_SANITIZE:-OFF} != ON ]] ||
        skip "the resident set means nothing under AddressSanitizer (shadow memory, freed memory held in quarantine)"
need_cmd h2load
make_test_cgroup

fe_config "$DEMO_WORKER --threads 2" pool.min_workers=1 pool.max_workers=1
fe_start
# the idle figure with every code path warm: one request of each protocol, their connections closed
for opt in "" --http2-prior-knowledge; do
        [[ $("${CURL[@]}" $opt -o /dev/null -w '%{http_code}' "$EP_URL/") == 200 ]] || fail "GET / $opt failed"
done
idle=$(rss_kib "$EP_COMMANDER_PID")
echo 5 >"/proc/$EP_COMMANDER_PID/clear_refs" # VmHWM from here: the burst's peak
note "idle: $idle KiB"

burst() { # burst NAME h2load-args...: every request answered
        local name=$1 out
        shift
        out=$(h2load "$@" "$EP_URL/" 2>&1) || fail "h2load ($name) failed: $out"
        grep -qE '^requests: ([0-9]+) total, \1 started, \1 done, \1 succeeded, 0 failed' <<<"$out" ||
                fail "$name: $(grep -E '^requests:' <<<"$out")"
}
burst h2c -c 64 -m 32 -t 2 -n 100000
peak=$(awk '/^VmHWM:/ { print $2 }' "/proc/$EP_COMMANDER_PID/status")
note "h2c burst (64 connections x 32 streams, 100 000 requests): peak $peak KiB"
# Without a burst that grew the heap there is nothing to give back and the test would prove nothing.
((peak > idle + 8192)) || note "the burst grew the resident set by $((peak - idle)) KiB only"

back() { (($(rss_kib "$EP_COMMANDER_PID") <= idle + 4096)); }
EP_WAIT=30 wait_until back || fail "30 s after the h2c burst: $(rss_kib "$EP_COMMANDER_PID") KiB (idle $idle KiB)"
note "after the h2c burst: $(rss_kib "$EP_COMMANDER_PID") KiB"

burst http/1.1 --h1 -c 64 -t 2 -n 50000
EP_WAIT=30 wait_until back || fail "30 s after the HTTP/1.1 burst: $(rss_kib "$EP_COMMANDER_PID") KiB (idle $idle KiB)"
note "after the HTTP/1.1 burst: $(rss_kib "$EP_COMMANDER_PID") KiB"

commander_alive || fail "the commander died"
for opt in "" --http2-prior-knowledge; do
        [[ $("${CURL[@]}" $opt -o /dev/null -w '%{http_code}' "$EP_URL/") == 200 ]] ||
                fail "GET / $opt failed after the memory was given back"
done
fe_stop
