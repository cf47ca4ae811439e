#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Intent: the guest image of vm/system (tests/vm/ep-vm image), built while the rest of the suite runs.
# Its few minutes are mostly the Debian mirror's (debootstrap, apt), so it does not take vm/system's
# RUN_SERIAL: vm/system needs it (a CTest fixture) and finds it cached. With EP_VM_CACHE=off there is no
# cache to fill: vm/system builds its own.
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/vm-lib.sh"

[[ ${EP_VM_CACHE:-} != off ]] || skip "EP_VM_CACHE=off: vm/system builds the guest image itself"
vm_image
echo "PASS: vm/image"
