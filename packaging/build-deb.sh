#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds the Debian packages from a clean copy of this tree into OUTDIR:
#   packaging/build-deb.sh [--source] [--nocheck] [--version-suffix SUFFIX] [--lintian] OUTDIR
#
# dpkg-buildpackage wants debian/ at the top of the source, and a tree without anything built in it: the
# copy (made in a temporary directory) is every file git knows of here, tracked or new but not ignored,
# as it is in the working tree (so uncommitted edits are built, build/ is not), with packaging/debian as
# debian/. Outside a git checkout the copy is the whole tree but build/ and build-*/.
#
#   --source          also a source package (an .orig.tar.xz of the copy, without debian/), so that
#                     lintian checks the source too; the default is binary only (dpkg-buildpackage -b)
#   --nocheck         skip the unit tests of the build (DEB_BUILD_OPTIONS=nocheck)
#   --version-suffix  build version VERSION-REVISION+SUFFIX, higher than the changelog's: an upgrade to test
#   --lintian         run lintian on the result and print its summary (exit 1 on an error or warning)
#
# The version is packaging/debian/changelog's, whose upstream part must be the project's version in
# CMakeLists.txt: a mismatch stops the build. DEB_BUILD_OPTIONS passes through (parallel=N defaults to
# the number of CPUs, at most 2 unless set). Build dependencies missing: dpkg-checkbuilddeps names them.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
source=0 nocheck=0 lint=0 suffix="" out=""
while (($# > 0)); do
        case $1 in
        --source) source=1 ;;
        --nocheck) nocheck=1 ;;
        --lintian) lint=1 ;;
        --version-suffix)
                suffix=${2:?--version-suffix needs a value}
                shift
                ;;
        -h | --help)
                sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
                exit 0
                ;;
        -*)
                echo "build-deb: unknown option '$1'" >&2
                exit 2
                ;;
        *) out=$1 ;;
        esac
        shift
done
[[ -n $out ]] || { echo "usage: packaging/build-deb.sh [--source] [--nocheck] [--version-suffix S] [--lintian] OUTDIR" >&2; exit 2; }
for tool in dpkg-buildpackage dpkg-parsechangelog dh; do
        command -v "$tool" >/dev/null || { echo "build-deb: $tool not found (apt-get install dpkg-dev debhelper)" >&2; exit 1; }
done
if ((lint)) && ! command -v lintian >/dev/null; then
        echo "build-deb: lintian not found (apt-get install lintian)" >&2
        exit 1
fi

. "$top/packaging/lib.sh"
version=$(project_version "$top")
deb_version=$(dpkg-parsechangelog -l "$top/packaging/debian/changelog" -S Version)
upstream=${deb_version#*:}
upstream=${upstream%-*}
if [[ $upstream != "$version" ]]; then
        echo "build-deb: packaging/debian/changelog is at $deb_version, CMakeLists.txt at $version:" >&2
        echo "build-deb: add a changelog entry for $version-1" >&2
        exit 1
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/ep-build-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
src=$work/elastic-pool-$version
clean_copy "$top" "$src"
if ((source)); then
        tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner -cJf \
                "$work/elastic-pool_$version.orig.tar.xz" "elastic-pool-$version"
fi
cp -a "$src/packaging/debian" "$src/debian"

if [[ -n $suffix ]]; then
        deb_version=$deb_version+$suffix
        {
                echo "elastic-pool ($deb_version) $(dpkg-parsechangelog -l "$src/debian/changelog" -S Distribution); urgency=medium"
                echo
                echo "  * Rebuilt as $deb_version by packaging/build-deb.sh --version-suffix."
                echo
                echo " -- $(dpkg-parsechangelog -l "$src/debian/changelog" -S Maintainer)  $(date -R)"
                echo
                cat "$src/debian/changelog"
        } >"$work/changelog" && mv "$work/changelog" "$src/debian/changelog"
fi

opts=${DEB_BUILD_OPTIONS:-}
[[ $opts == *parallel=* ]] || opts="$opts parallel=$(($(nproc) < 2 ? $(nproc) : 2))"
((nocheck == 0)) || opts="$opts nocheck"
export DEB_BUILD_OPTIONS=${opts# }
echo "build-deb: elastic-pool $deb_version in $src (DEB_BUILD_OPTIONS=$DEB_BUILD_OPTIONS)"
if ((source)); then
        (cd "$src" && dpkg-buildpackage -us -uc)
else
        (cd "$src" && dpkg-buildpackage -b -us -uc)
fi

arch=$(dpkg-architecture -qDEB_HOST_ARCH)
changes=$work/elastic-pool_${deb_version#*:}_$arch.changes
[[ -f $changes ]] || { echo "build-deb: no $changes" >&2; exit 1; }
# the .changes lists what was built: copy those and the .changes itself
files=$(awk '/^Files:/ { f = 1; next } /^[^ ]/ { f = 0 } f { print $5 }' "$changes")
for f in $files; do
        cp "$work/$f" "$out/"
done
cp "$changes" "$out/"
echo "build-deb: in $out:"
for f in $files; do
        echo "  $f"
done

if ((lint)); then
        echo "build-deb: lintian"
        lintian --fail-on error,warning --display-info "$out/${changes##*/}"
fi
