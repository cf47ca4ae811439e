#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds the RPM packages from a clean copy of this tree into OUTDIR:
#   packaging/build-rpm.sh [--nocheck] [--deps] OUTDIR
#
# The copy is the one packaging/build-deb.sh makes (every file git knows of, as in the working tree),
# packed as SOURCES/elastic-pool-VERSION.tar.gz for packaging/rpm/elastic-pool.spec, in a temporary
# rpmbuild tree. The spec's Version must be the project's version in CMakeLists.txt.
#
#   --nocheck   build without the unit tests (rpmbuild --without tests: neither built nor run)
#   --deps      let rpmbuild check the BuildRequires. Off by default, so that it builds on Debian 12
#               with Debian's rpm, whose database knows none of the Debian packages that satisfy them
#               (rpmbuild --nodeps): there, scripts/bootstrap.sh installs what the build needs.
#
# Where rpmbuild has no find-debuginfo (debugedit), no -debuginfo packages are made.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
nocheck=0 deps=0 out=""
while (($# > 0)); do
        case $1 in
        --nocheck) nocheck=1 ;;
        --deps) deps=1 ;;
        -h | --help)
                sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
                exit 0
                ;;
        -*)
                echo "build-rpm: unknown option '$1'" >&2
                exit 2
                ;;
        *) out=$1 ;;
        esac
        shift
done
[[ -n $out ]] || { echo "usage: packaging/build-rpm.sh [--nocheck] [--deps] OUTDIR" >&2; exit 2; }
command -v rpmbuild >/dev/null || { echo "build-rpm: rpmbuild not found (Debian: apt-get install rpm)" >&2; exit 1; }

. "$top/packaging/lib.sh"
version=$(project_version "$top")
spec=$top/packaging/rpm/elastic-pool.spec
spec_version=$(sed -nE 's/^Version:[[:space:]]+([^[:space:]]+).*/\1/p' "$spec")
if [[ $spec_version != "$version" ]]; then
        echo "build-rpm: packaging/rpm/elastic-pool.spec is at $spec_version, CMakeLists.txt at $version:" >&2
        echo "build-rpm: set Version: $version (and a %changelog entry)" >&2
        exit 1
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/ep-build-rpm.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{BUILD,BUILDROOT,RPMS,SOURCES,SPECS,SRPMS}
clean_copy "$top" "$work/src/elastic-pool-$version"
tar -C "$work/src" --sort=name --owner=0 --group=0 --numeric-owner -czf \
        "$work/SOURCES/elastic-pool-$version.tar.gz" "elastic-pool-$version"
cp "$spec" "$work/SPECS/"

args=(-bb --define "_topdir $work")
((deps)) || args+=(--nodeps)
((nocheck == 0)) || args+=(--without tests --nocheck)
command -v find-debuginfo >/dev/null || args+=(--define "debug_package %{nil}")
# at most 2 parallel jobs unless RPM_BUILD_NCPUS says otherwise, as build-deb.sh
ncpus=${RPM_BUILD_NCPUS:-$(($(nproc) < 2 ? $(nproc) : 2))}
args+=(--define "_smp_build_ncpus $ncpus" --define "_smp_mflags -j$ncpus")
echo "build-rpm: elastic-pool $version in $work (rpmbuild ${args[*]})"
rpmbuild "${args[@]}" "$work/SPECS/elastic-pool.spec"

mapfile -t rpms < <(find "$work/RPMS" -name '*.rpm' | sort)
((${#rpms[@]} > 0)) || { echo "build-rpm: rpmbuild made no package" >&2; exit 1; }
cp "${rpms[@]}" "$out/"
echo "build-rpm: in $out:"
for f in "${rpms[@]}"; do
        echo "  ${f##*/}"
done
