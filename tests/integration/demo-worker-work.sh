#!/bin/bash
# SPDX-License-Identifier: MIT
# /work does what it is asked: cpu_ms burns that much thread CPU time (the JSON reports what it measured
# and the worker's own CPU time grows by at least as much), sleep_ms takes at least that long, alloc_kb
# holds memory, bytes=N streams exactly N bytes; out-of-range or non-numeric values are 400.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/demo-worker-lib.sh"

demo_start --threads 2

cpu_ticks() { # utime + stime of the worker, in clock ticks
        awk '{ print $14 + $15 }' "/proc/$DEMO_PID/stat"
}
hz=$(getconf CLK_TCK)

before=$(cpu_ticks)
out=$(curl -sf "${DEMO_CURL[@]}" 'http://demo/work?cpu_ms=300')
after=$(cpu_ticks)
note "$out"
"$EP_PYTHON" -c 'import json,sys; j=json.loads(sys.argv[1]); assert j["cpu_ms"]==300 and j["cpu_used_ms"]>=300, j' "$out" ||
        fail "cpu_ms=300 did not report >= 300 ms of thread CPU: $out"
(((after - before) * 1000 / hz >= 250)) || fail "the worker's CPU time grew by $(((after - before) * 1000 / hz)) ms only"

start=$(date +%s%N)
out=$(curl -sf "${DEMO_CURL[@]}" 'http://demo/work?sleep_ms=400&alloc_kb=8192')
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
note "$out (in $elapsed_ms ms)"
((elapsed_ms >= 400)) || fail "sleep_ms=400 answered after $elapsed_ms ms"
"$EP_PYTHON" -c 'import json,sys; j=json.loads(sys.argv[1]); assert j["slept_ms"]>=400 and j["alloc_kb"]==8192, j' "$out" ||
        fail "sleep/alloc report: $out"

# A download: exactly N bytes, with Content-Length.
n=$(curl -sf "${DEMO_CURL[@]}" 'http://demo/work?bytes=5000000' | wc -c)
[[ $n -eq 5000000 ]] || fail "bytes=5000000 gave $n bytes"
headers=$(curl -sf "${DEMO_CURL[@]}" -D - -o /dev/null 'http://demo/work?bytes=0')
grep -qi '^Content-Length: 0'$'\r' <<<"$headers" || fail "bytes=0: $headers"

for q in cpu_ms=abc cpu_ms=-1 cpu_ms=60001 'cpu_ms=1%200' sleep_ms=600001 alloc_kb=4194305 alloc_kb=1.5 bytes=x cpu_ms=; do
        code=$(curl -s "${DEMO_CURL[@]}" -o "$EP_TMP/body" -w '%{http_code}' "http://demo/work?$q")
        [[ $code == 400 ]] || fail "/work?$q answered $code, expected 400"
        grep -q "${q%%=*}" "$EP_TMP/body" || fail "the 400 for $q does not name the parameter: $(cat "$EP_TMP/body")"
done
demo_alive
demo_stop
echo "OK"
