#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs one system test inside the shared systemd user sandbox (a real `systemd --user`, session bus and
# journald in a private namespace): run-in-sandbox.sh TEST.sh [ARG...]
#
# The sandbox lives outside this repository (EP_SANDBOX, default $EP_SOURCE_DIR/../shared/sandbox/
# systemd-user-sandbox) and needs root. When either is missing the test is skipped with the reason
# (exit 77), never failed and never silently passed. Otherwise the exit status is the test's.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
source_dir=${EP_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
sandbox=${EP_SANDBOX:-$source_dir/../shared/sandbox/systemd-user-sandbox}

[[ $# -ge 1 ]] || { echo "usage: run-in-sandbox.sh TEST.sh [ARG...]" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: the systemd user sandbox needs root"; exit 77; }
if [[ ! -x "$sandbox" ]]; then
        echo "SKIP: no systemd user sandbox at $sandbox (the shared folder is missing)"
        exit 77
fi
for c in unshare dbus-daemon systemctl systemd-run; do
        command -v "$c" >/dev/null 2>&1 || { echo "SKIP: the sandbox needs $c"; exit 77; }
done

exec "$sandbox" bash "$@"
