#!/bin/bash
# SPDX-License-Identifier: MIT
# Installs every Debian 12 package that building, testing and the demo need. Idempotent: when all are
# present (and libnghttp2-14 is new enough) it touches nothing and needs no network.
#   scripts/bootstrap.sh            build + tests + demo
#   scripts/bootstrap.sh --bench    also the peers of the benchmarks (nginx, HAProxy, nghttpx, wrk, h2load)
set -euo pipefail

PKGS=(
        build-essential cmake pkg-config clang libclang-rt-14-dev
        libsystemd-dev libprotobuf-c-dev protobuf-c-compiler libnghttp2-dev libnghttp2-14
        libhttp-parser-dev libnl-3-dev libinih-dev libssl-dev libcmocka-dev libjson-c-dev liburing-dev
        # the man pages, from docs/*.[1-8].md (docs/dependencies.md says why pandoc)
        pandoc
        # tests: HTTP clients, hand-made HTTP/2 frames, a real systemd user manager for the sandbox
        curl nghttp2-client python3 python3-h2 python3-websockets systemd dbus procps iproute2 util-linux
        # tests of the admin listener: the monitor page in a real browser, /metrics through promtool
        chromium prometheus
        # tests/packaging: the .deb and .rpm builds (packaging/build-*.sh) and lintian
        debhelper rpm lintian
        # tests/vm: a throw-away Debian 12 guest (debootstrap from apt's mirror) under qemu
        qemu-system-x86 qemu-utils debootstrap e2fsprogs xz-utils
)
BENCH_PKGS=(nginx-light haproxy nghttp2-proxy wrk nghttp2-client valgrind linux-perf hyperfine uwsgi-core
        uwsgi-plugin-python3)
# Debian's fix for CVE-2026-27135 plus the Rapid Reset and CONTINUATION-flood backports.
NGHTTP2_MIN=1.52.0-1+deb12u3

[[ ${1:-} == --bench ]] && PKGS+=("${BENCH_PKGS[@]}")

if [[ $(id -u) -ne 0 ]]; then
        echo "bootstrap: run as root (it installs Debian packages)" >&2
        exit 1
fi

installed_version() {
        dpkg-query -W -f='${db:Status-Abbrev} ${Version}' "$1" 2>/dev/null | awk '$1 == "ii" { print $2 }'
}

missing=()
for p in "${PKGS[@]}"; do
        [[ -n $(installed_version "$p") ]] || missing+=("$p")
done
nghttp2=$(installed_version libnghttp2-14)
if [[ -n $nghttp2 ]] && ! dpkg --compare-versions "$nghttp2" ge "$NGHTTP2_MIN"; then
        missing+=(libnghttp2-14 libnghttp2-dev)
fi

if ((${#missing[@]} > 0)); then
        echo "bootstrap: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        # --only-upgrade is implied for what is there; libnghttp2 is named so apt takes the fixed one.
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

nghttp2=$(installed_version libnghttp2-14)
if [[ -z $nghttp2 ]] || ! dpkg --compare-versions "$nghttp2" ge "$NGHTTP2_MIN"; then
        echo "bootstrap: libnghttp2-14 ${nghttp2:-missing} is older than $NGHTTP2_MIN, which carries the" >&2
        echo "bootstrap: Rapid Reset, CONTINUATION-flood and CVE-2026-27135 fixes. Enable bookworm-security" >&2
        echo "bootstrap: or bookworm-updates in apt's sources and run this again." >&2
        exit 1
fi
echo "bootstrap: all packages present (libnghttp2-14 $nghttp2)"
