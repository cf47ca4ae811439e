#!/bin/bash
# SPDX-License-Identifier: MIT
# CPU time per sensor tick, in the situations a worker meets:
#   real, in place           the files of wherever this shell sits (the root cgroup: procfs fallback)
#   real, own cgroup v2 leaf a fresh leaf under the unified hierarchy (root only): cgroup2 cpu + PSI
#   fixture                  a v2 leaf with every file, on tmpfs: the library's own cost
#   +channel                 each report also packed and written to a socketpair
#   +watch-self              the wrapper's procfs tree fallback (scans /proc)
#   bench/sensor-tick.sh [BUILD_DIR] [TICKS]      (default ./build/plain, 100000)
# Each situation runs BENCH_ROUNDS (3) rounds of TICKS ticks, every round printed with its other% and steal%
# (CPU of other processes and of the hypervisor during it, bench/bench-span.c; '!' when disturbed); its
# closing line has the medians of the undisturbed rounds (quiet=N/M).
set -euo pipefail
build=${1:-$(cd "$(dirname "$0")/.." && pwd)/build/plain}
ticks=${2:-100000}
bench=$build/bench/bench-sensor-tick
[[ -x $bench ]] || { echo "no $bench: build the tree first" >&2; exit 1; }

echo "# $(uname -r), $(nproc) cpus, $ticks ticks each"
"$bench" --ticks "$ticks"
"$bench" --ticks "$ticks" --channel
"$bench" --ticks "$ticks" --fixture
"$bench" --ticks "$ticks" --fixture --channel
"$bench" --ticks $((ticks / 100)) --watch-self

root=""
for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
        [[ $(stat -fc %T "$d" 2>/dev/null) == cgroup2fs ]] && { root=$d; break; }
done
if [[ $(id -u) -eq 0 && -n $root ]] && leaf=$root/ep-bench-$$ && mkdir "$leaf" 2>/dev/null; then
        trap 'rmdir "$leaf" 2>/dev/null || true' EXIT
        # a subshell moves itself into the leaf and runs the bench there
        (echo $BASHPID >"$leaf/cgroup.procs" && exec "$bench" --ticks "$ticks")
        (echo $BASHPID >"$leaf/cgroup.procs" && exec "$bench" --ticks "$ticks" --channel)
else
        echo "# skipped the cgroup v2 leaf runs: needs root and a writable cgroup v2 hierarchy"
fi
