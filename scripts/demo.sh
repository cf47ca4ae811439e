#!/bin/bash
# SPDX-License-Identifier: MIT
# The main job: one demo worker with its sensor, its decoded reports printed one per line, while a
# little load runs against it. Ctrl-C ends it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$("$top/scripts/build.sh")
tmp=$(mktemp -d /tmp/elastic-pool-demo.XXXXXX)
pids=()
cleanup() {
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        wait 2>/dev/null || true
        rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

echo "demo: worker on $tmp/w1.sock; reports every second (- marks a reading that is absent, never 0)"
"$build/tests/tools/ep-channel-peer" --listen "$tmp/w1.sock" --interval 1s -- \
        "$build/sensor/demo/elastic-pool-demo-worker" --threads 2 </dev/null &
pids+=($!)
for _ in $(seq 100); do [[ -S $tmp/w1.sock ]] && break; sleep 0.05; done
(
        curl -s --unix-socket "$tmp/w1.sock" 'http://demo/login?user=alice' >/dev/null
        while :; do
                curl -s --unix-socket "$tmp/w1.sock" -H 'X-Elastic-Pool-User: alice' 'http://demo/state' >/dev/null
                curl -s --unix-socket "$tmp/w1.sock" 'http://demo/work?cpu_ms=150&alloc_kb=2048' >/dev/null
        done
) &
pids+=($!)
wait "${pids[0]}"
