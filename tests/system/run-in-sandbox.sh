#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs one system test beside a real `systemd --user`, session bus and journald, in a private mount
# namespace and cgroup: run-in-sandbox.sh TEST.sh [ARG...]
#
# The sandbox is this directory's systemd-user-sandbox; EP_SANDBOX names another one with the same
# interface (SANDBOX COMMAND [ARG...]). Where the machine cannot run it (not root, no cgroup v2, no
# systemd...), the sandbox exits 77 with the reason, and so does the test: skipped, never failed and never
# silently passed. Otherwise the exit status is the test's.
#
# The test runs under timeout(1) inside the sandbox (EP_SYSTEM_TEST_TIMEOUT, default 240 s, under CTest's
# 300 s), so an overdue test is ended there and the sandbox still cleans up after it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
sandbox=${EP_SANDBOX:-$here/systemd-user-sandbox}

[[ $# -ge 1 ]] || { echo "usage: run-in-sandbox.sh TEST.sh [ARG...]" >&2; exit 2; }
[[ -x $sandbox ]] || { echo "run-in-sandbox.sh: no sandbox at $sandbox (EP_SANDBOX)" >&2; exit 2; }

exec "$sandbox" timeout --kill-after=10 "${EP_SYSTEM_TEST_TIMEOUT:-240}" bash "$@"
