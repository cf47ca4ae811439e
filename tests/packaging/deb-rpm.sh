#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Intent: the .deb and the .rpm built from this tree ship the same files, and the .debs pass lintian.
# packaging/build-deb.sh and build-rpm.sh build both (into BUILD/packaging-test, kept for a look); each
# package's file list, directories left out, is compared with its counterpart's after the differences
# the distributions make on purpose (packaging/README.md):
#
#   Debian 12                               RPM
#   /usr/lib/<multiarch>/...                /usr/lib64/...              (library directory)
#   /lib/systemd/system/...                 /usr/lib/systemd/system/... (the same directory on a merged /usr)
#   man pages .gz                           man pages compressed or not, by the build host's rpm
#   /usr/share/doc/PKG/, lintian overrides  /usr/share/doc/..., /usr/share/licenses/..., /usr/lib/.build-id/
#
# and the packages pair up: elastic-pool, elastic-pool-demo, libelastic-pool-sensor0 = elastic-pool-libs,
# libelastic-pool-sensor-dev = elastic-pool-devel (debug symbol packages aside). lintian runs on the
# .changes and fails on an error or a warning that is not overridden. The EXAMPLE of
# elastic-pool-sensor(3) is compiled against each distribution's library and development packages,
# through the packaged pkg-config file, and run.
#
# In the suite they are built without their own unit tests (build-*.sh --nocheck; about 30 s): the suite
# runs those tests itself, and a second run of timing-sensitive tests inside a package build on a busy
# 2-core machine only adds noise. EP_PACKAGING_CHECK=1 builds them as a release is, with the unit tests in
# dh_auto_test and %check (about 2 minutes on 2 cores).
. "$(dirname "$0")/../integration/lib.sh"

# Cleared first: vm/system takes the .debs it finds here as this tree's, and a skipped run must not
# leave an older build's behind.
out=$EP_BUILD_DIR/packaging-test
rm -rf "$out"
for tool in dpkg-buildpackage dpkg-deb dh lintian rpmbuild rpm rpm2archive pandoc pkg-config cc; do
        command -v "$tool" >/dev/null || skip "needs $tool (scripts/bootstrap.sh installs it)"
done
[[ ${EP_SANITIZE:-OFF} != ON ]] ||
        skip "the packages build from the source tree with their own flags, not from this build: the plain build's run checks them"

mkdir -p "$out"
check=""
[[ ${EP_PACKAGING_CHECK:-0} == 0 ]] && check=--nocheck
version=$(sed -nE 's/^project\([^)]*VERSION ([0-9][0-9.]*).*/\1/p' "$EP_SOURCE_DIR/CMakeLists.txt")
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

t0=$SECONDS
# shellcheck disable=SC2086
"$EP_SOURCE_DIR/packaging/build-deb.sh" $check "$out/deb" >"$out/deb.log" 2>&1 ||
        fail "packaging/build-deb.sh failed (log: $out/deb.log): $(tail -n 30 "$out/deb.log")"
note "deb built in $((SECONDS - t0)) s"
t0=$SECONDS
# shellcheck disable=SC2086
"$EP_SOURCE_DIR/packaging/build-rpm.sh" $check "$out/rpm" >"$out/rpm.log" 2>&1 ||
        fail "packaging/build-rpm.sh failed (log: $out/rpm.log): $(tail -n 30 "$out/rpm.log")"
note "rpm built in $((SECONDS - t0)) s"

# ---- the file lists ----
deb_of() {
        local f
        f=$(find "$out/deb" -name "${1}_${version}-*.deb" | head -n1)
        [[ -n $f ]] || fail "no $1 .deb of version $version in $out/deb: $(ls "$out/deb")"
        echo "$f"
}
rpm_of() {
        local f
        f=$(find "$out/rpm" -name "${1}-${version}-*.rpm" | head -n1)
        [[ -n $f ]] || fail "no $1 .rpm of version $version in $out/rpm: $(ls "$out/rpm")"
        echo "$f"
}
normalize() {
        sed -E -e "s|^/usr/lib/$multiarch/|/LIBDIR/|" -e 's|^/usr/lib64/|/LIBDIR/|' \
                -e 's|^/lib/systemd/|/usr/lib/systemd/|' -e '\|^/usr/share/man/|s|\.(gz\|bz2\|xz\|zst)$||' |
                grep -vE '^/usr/share/(doc|licenses|lintian)/|^/usr/lib/\.build-id/' | sort
}
deb_files() {
        dpkg-deb --fsys-tarfile "$1" | tar -tvf - | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./|/|' | normalize
}
rpm_files() {
        rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$1" 2>/dev/null | awk '$1 !~ /^d/ { print $2 }' | normalize
}

declare -A pair=(
        [elastic-pool]=elastic-pool
        [elastic-pool-demo]=elastic-pool-demo
        [libelastic-pool-sensor0]=elastic-pool-libs
        [libelastic-pool-sensor-dev]=elastic-pool-devel
)
# every package built has its counterpart
for f in "$out"/deb/*.deb; do
        p=$(dpkg-deb -f "$f" Package)
        [[ $p == *-dbgsym || -n ${pair[$p]:-} ]] || fail "the .deb $p has no counterpart among the .rpms"
done
for f in "$out"/rpm/*.rpm; do
        p=$(rpm -qp --qf '%{NAME}' "$f" 2>/dev/null)
        [[ $p == *-debuginfo || $p == *-debugsource ]] && continue
        found=0
        for d in "${!pair[@]}"; do
                [[ ${pair[$d]} == "$p" ]] && found=1
        done
        ((found)) || fail "the .rpm $p has no counterpart among the .debs"
done

status=0
for d in "${!pair[@]}"; do
        r=${pair[$d]}
        deb_files "$(deb_of "$d")" >"$EP_TMP/$d.deb.list"
        rpm_files "$(rpm_of "$r")" >"$EP_TMP/$d.rpm.list"
        [[ -s $EP_TMP/$d.deb.list ]] || fail "$d ships no file"
        if ! diff -u --label "$d (deb)" --label "$r (rpm)" "$EP_TMP/$d.deb.list" "$EP_TMP/$d.rpm.list"; then
                echo "FAIL: $d and $r ship different files (above: - only in the .deb, + only in the .rpm)" >&2
                status=1
        else
                note "$d = $r: $(wc -l <"$EP_TMP/$d.deb.list") files"
        fi
done
((status == 0)) || exit 1

# ---- lintian ----
changes=$(find "$out/deb" -name '*.changes' | head -n1)
if ! lintian --fail-on error,warning "$changes" >"$EP_TMP/lintian.out" 2>&1; then
        grep -vE '^running with root privileges' "$EP_TMP/lintian.out" >&2
        fail "lintian reports errors or warnings that are not overridden (packaging/debian/*.lintian-overrides say why the overridden ones are)"
fi
note "lintian: $(grep -cE '^[EW]:' "$EP_TMP/lintian.out" || true) errors and warnings, $(lintian --show-overrides "$changes" 2>/dev/null | grep -c '^O:' || true) overridden"

# ---- the library as a worker's build sees it: the EXAMPLE of elastic-pool-sensor(3) ----
awk '/^## EXAMPLE/ { e = 1 } e && /^```c$/ { c = 1; next } c && /^```$/ { exit } c { print }' \
        "$EP_SOURCE_DIR/docs/elastic-pool-sensor.3.md" >"$EP_TMP/example.c"
[[ -s $EP_TMP/example.c ]] || fail "no C example in the EXAMPLE of docs/elastic-pool-sensor.3.md"
try_example() { # try_example NAME ROOT LIBDIR
        local name=$1 root=$2 libdir=$3 flags
        flags=$(PKG_CONFIG_PATH=$root$libdir/pkgconfig pkg-config --define-variable=prefix="$root/usr" \
                --cflags --libs elastic-pool-sensor) || fail "$name: pkg-config elastic-pool-sensor failed"
        # shellcheck disable=SC2086
        cc -Wall -Werror -o "$EP_TMP/example-$name" "$EP_TMP/example.c" $flags ||
                fail "$name: the EXAMPLE of elastic-pool-sensor(3) does not build with $flags"
        LD_LIBRARY_PATH=$root$libdir "$EP_TMP/example-$name" >"$EP_TMP/example-$name.out" 2>&1 ||
                fail "$name: the example failed: $(cat "$EP_TMP/example-$name.out")"
        # read whole, then searched: grep -q on the pipe would stop ldd early (SIGPIPE, and pipefail fails)
        local libs
        libs=$(LD_LIBRARY_PATH=$root$libdir ldd "$EP_TMP/example-$name")
        [[ $libs == *"libelastic-pool-sensor.so.0 => $root"* ]] ||
                fail "$name: the example does not load the packaged library: $libs"
}
mkdir -p "$EP_TMP/deb-root" "$EP_TMP/rpm-root"
for p in libelastic-pool-sensor0 libelastic-pool-sensor-dev; do
        dpkg-deb -x "$(deb_of "$p")" "$EP_TMP/deb-root"
done
for p in elastic-pool-libs elastic-pool-devel; do
        rpm2archive - <"$(rpm_of "$p")" | tar -C "$EP_TMP/rpm-root" -xzf -
done
try_example deb "$EP_TMP/deb-root" "/usr/lib/$multiarch"
try_example rpm "$EP_TMP/rpm-root" /usr/lib64
note "the EXAMPLE of elastic-pool-sensor(3) builds and runs against both packagings of the library"
echo "PASS: deb-rpm"
