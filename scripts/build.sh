#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds the plain tree into ${EP_BUILD_ROOT:-./build}/plain (after installing what it needs).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/bootstrap.sh" >/dev/null
dir=${EP_BUILD_ROOT:-$top/build}/plain
mkdir -p "$dir"
cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$dir.configure.log" 2>&1 ||
        { cat "$dir.configure.log"; exit 1; }
cmake --build "$dir" -j "$(nproc)" >"$dir.build.log" 2>&1 || { tail -n 60 "$dir.build.log"; exit 1; }
echo "$dir"
