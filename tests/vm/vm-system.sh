#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Intent: the .debs of this tree, installed and run as an operator would, under a real systemd PID 1 on
# a pure cgroup v2 hierarchy: tests/vm/payload (what it checks is listed there) in a throw-away Debian 12
# guest booted by tests/vm/ep-vm. The packages are packaging/deb-rpm's (packaging/build-deb.sh --nocheck),
# and the upgrade step's the same at a higher version. The guest image is vm/image's
# (tests/vm/vm-image.sh), built beside the rest of the suite; here it is found cached.
#
# EP_TEST_VM: 0 skips the test; quick stops after the journal step (no oom, readopt, upgrade, purge);
# unset or full: every step. The whole payload fits the suite's time even with the guest emulated (TCG,
# as on these hosts): 1 to 2.5 minutes with the image cached and the packages built (tests/vm/README.md).
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/vm-lib.sh"

# ---- the packages ----
# repack_higher DEB SUFFIX DIR: DEB at version VERSION+SUFFIX into DIR, its exact dependencies on its
# siblings ("(= VERSION)") raised with it so that the set installs together. Only the version differs
# from a second build of the tree, which took as long as the first.
repack_higher() {
        local deb=$1 suffix=$2 dir=$3 version tree
        version=$(dpkg-deb -f "$deb" Version)
        tree=$EP_TMP/repack/$(basename "$deb" .deb)
        mkdir -p "$EP_TMP/repack"
        dpkg-deb -R "$deb" "$tree" || fail "dpkg-deb -R $deb failed"
        awk -v old="(= $version)" -v new="(= $version+$suffix)" -v higher="$version+$suffix" '
                /^Version:/ { print "Version: " higher; next }
                { out = ""; while ((i = index($0, old)) > 0) { out = out substr($0, 1, i - 1) new; $0 = substr($0, i + length(old)) }
                  print out $0 }' "$tree/DEBIAN/control" >"$tree/control.new" || fail "the control file of $deb"
        mv "$tree/control.new" "$tree/DEBIAN/control"
        dpkg-deb -b "$tree" "$dir/" >/dev/null || fail "dpkg-deb -b of $deb at $version+$suffix failed"
}

payload=$EP_TMP/payload
mkdir -p "$payload/debs" "$payload/debs-upgrade"
cp "$EP_SOURCE_DIR/tests/vm/payload" "$payload/payload"
t0=$SECONDS
# This version's packages are packaging/deb-rpm's (a fixture of this test: CTest runs it first, and it
# keeps them in BUILD/packaging-test/deb); run by hand without it, this builds them.
debs=$EP_BUILD_DIR/packaging-test/deb
if ! compgen -G "$debs/elastic-pool_*.deb" >/dev/null; then
        debs=$EP_TMP/build
        "$EP_SOURCE_DIR/packaging/build-deb.sh" --nocheck "$debs" >"$EP_TMP/build-deb.log" 2>&1 ||
                fail "packaging/build-deb.sh failed: $(tail -n 30 "$EP_TMP/build-deb.log")"
fi
for deb in "$debs"/*.deb; do
        [[ $deb != *-dbgsym_* ]] || continue
        cp "$deb" "$payload/debs/"
        repack_higher "$deb" vmupgrade "$payload/debs-upgrade"
done
note "packages from $debs, the upgrade's repacked, in $((SECONDS - t0)) s: $(cd "$payload" && echo debs/*.deb debs-upgrade/*.deb)"

# The libcgroup measurements of docs/dependencies.md, where libcgroup-dev is installed (not needed else)
if [[ -f /usr/include/libcgroup.h ]]; then
        cc -O2 -Wall -o "$payload/libcgroup-probe" "$EP_SOURCE_DIR/tests/vm/libcgroup-probe.c" -lcgroup ||
                fail "tests/vm/libcgroup-probe.c does not build"
else
        note "no libcgroup-dev here: the guest does not measure libcgroup"
fi

# The guest has no network: what the packages depend on must be in its image (tests/vm/guest-packages,
# which vm/image built it with). Their Depends, less each other, alternatives taken by their first name.
missing=$(for d in "$payload"/debs/*.deb; do dpkg-deb -f "$d" Depends; done | tr ',' '\n' |
        sed -E 's/\|.*//; s/\(.*\)//; s/^ +| +$//g' | grep -vE '^(elastic-pool|libelastic-pool)' | sort -u |
        grep -vxF -f <(tr ' ' '\n' <<<"$EP_VM_PACKAGES") | xargs || true)
[[ -z $missing ]] || fail "the packages depend on $missing, which tests/vm/guest-packages does not list (the guest image cannot fetch them)"

# ---- the guest ----
vm_image
accel=$("$VM" accel)
mode=full
[[ ${EP_TEST_VM:-} != quick ]] || mode=quick
note "guest under $accel, payload: $mode"

t0=$SECONDS
rc=0
EP_VM_TIMEOUT=${EP_VM_TIMEOUT:-840} "$VM" run "$payload" "$mode" || rc=$?
note "guest: $((SECONDS - t0)) s in all (image build, boot, payload)"
if [[ -n ${EP_KEEP_LOGS:-} && -d $payload/out ]]; then
        mkdir -p "$EP_KEEP_LOGS" && cp -a "$payload/out/." "$EP_KEEP_LOGS/"
fi
# the libcgroup figures, kept for docs/dependencies.md
[[ ! -s $payload/out/libcgroup.txt ]] || cp "$payload/out/libcgroup.txt" "$EP_BUILD_DIR/vm-libcgroup.txt"
((rc == 0)) || fail "the payload failed in the guest (exit code $rc)"
echo "PASS: vm/system ($mode, $accel)"
