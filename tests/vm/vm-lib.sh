# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# What tests/vm/vm-image.sh and tests/vm/vm-system.sh share: when the VM tests run at all, and the guest
# image's package list. Sourced after tests/integration/lib.sh.

case ${EP_TEST_VM:-} in
0 | no | off) skip "EP_TEST_VM=${EP_TEST_VM} (the VM system test is switched off)" ;;
"" | 1 | yes | quick | full) ;;
*) fail "EP_TEST_VM=$EP_TEST_VM: 0, quick or full" ;;
esac
[[ ${EP_SANITIZE:-OFF} != ON ]] ||
        skip "the guest runs the packages, built from the source tree with their own flags, not this build: the plain build's run covers it"
need_root
for tool in qemu-system-x86_64 qemu-img debootstrap mkfs.ext4 xz dpkg-buildpackage dh; do
        command -v "$tool" >/dev/null || skip "needs $tool (scripts/bootstrap.sh installs it)"
done
avail_kib=$(df -Pk /var/tmp | awk 'NR == 2 { print $4 }')
((avail_kib > 6 * 1024 * 1024)) || skip "less than 6 GiB free in /var/tmp for the guest image"

VM=$EP_SOURCE_DIR/tests/vm/ep-vm
# The guest image's packages beyond ep-vm's own: the same list for both tests, so both name one image.
EP_VM_PACKAGES=$(sed -e 's/#.*//' "$EP_SOURCE_DIR/tests/vm/guest-packages" | xargs)
export EP_VM_PACKAGES

# vm_image: builds the guest image, or finds it cached; skips when the Debian mirror cannot be reached.
vm_image() {
        local t0=$SECONDS rc=0

        "$VM" image >/dev/null || rc=$?
        ((rc != 3)) || skip "no guest image: the Debian mirror cannot be reached from here (debootstrap, apt)"
        ((rc == 0)) || fail "tests/vm/ep-vm could not build the guest image"
        ((SECONDS - t0 < 5)) || note "guest image built in $((SECONDS - t0)) s"
}
