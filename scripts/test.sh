#!/bin/bash
# SPDX-License-Identifier: MIT
# The whole test suite: installs what it needs, builds three times (plain; AddressSanitizer +
# UndefinedBehaviorSanitizer; the libFuzzer targets with clang, fuzz/), runs every CTest test in each, and
# exits non-zero on any failure. The fuzz build holds only the fuzz targets: each runs for a few seconds
# (its seeds first, so a crash found before and committed as a seed fails here).
#   scripts/test.sh [ctest arguments...]     e.g. scripts/test.sh -R unit/
# EP_TEST_BUILDS="plain asan fuzz" chooses the builds; EP_BUILD_ROOT (default ./build) where they go.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
"$top/scripts/bootstrap.sh" || exit 1

builds=${EP_TEST_BUILDS:-plain asan fuzz}
root=${EP_BUILD_ROOT:-$top/build}
jobs=$(nproc)
status=0

configure_flags() {
        case $1 in
        plain) echo "-DCMAKE_BUILD_TYPE=RelWithDebInfo" ;;
        asan) echo "-DCMAKE_BUILD_TYPE=Debug -DEP_SANITIZE=ON" ;;
        fuzz) echo "-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DEP_FUZZ=ON" ;;
        *) echo "unknown build '$1' (plain, asan, fuzz)" >&2; return 1 ;;
        esac
}

# CTest keeps a skipped test's output only in its log; print each reason so no skip is silent.
print_skips() {
        local log=$1/Testing/Temporary/LastTest.log
        [[ -f $log ]] || return 0
        awk '/^[0-9]+\/[0-9]+ Testing: / { name = $3 } /^SKIP: / { print "  skipped " name ": " substr($0, 7) }' "$log"
}

for b in $builds; do
        flags=$(configure_flags "$b") || exit 2
        dir=$root/$b
        mkdir -p "$dir"
        echo "=== $b build ($dir)"
        # shellcheck disable=SC2086
        cmake -S "$top" -B "$dir" $flags -DEP_BUILD_TESTS=ON >"$dir.configure.log" 2>&1 ||
                { cat "$dir.configure.log"; exit 1; }
        cmake --build "$dir" -j "$jobs" >"$dir.build.log" 2>&1 || { tail -n 60 "$dir.build.log"; exit 1; }
        echo "=== $b tests"
        export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
        export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
        (cd "$dir" && ctest --output-on-failure --timeout 600 -j "$jobs" "$@") || status=1
        print_skips "$dir"
done

if ((status != 0)); then
        echo "=== FAILED (see the output above)"
else
        echo "=== all tests passed in: $builds"
fi
exit $status
