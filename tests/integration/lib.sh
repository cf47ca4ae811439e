# SPDX-License-Identifier: MIT
# Shared helpers for the integration tests (bash). Source it first:  . "$(dirname "$0")/lib.sh"
#
# Conventions: a test exits 0 on success, 1 on failure, 77 when the machine lacks what it needs (the
# reason printed first, "SKIP: ..."), so CTest reports it as skipped, never as a silent pass.
# Everything a test starts it ends itself, by PID; every cgroup it makes lives under one fresh parent
# that is killed (cgroup.kill) and removed on exit, even on failure.

set -euo pipefail

EP_BUILD_DIR=${EP_BUILD_DIR:?EP_BUILD_DIR must point at the build tree}
EP_SOURCE_DIR=${EP_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
EP_TEST_NAME=${EP_TEST_NAME:-$(basename "$0" .sh)}
EP_TMP=$(mktemp -d "/tmp/ep-test-$EP_TEST_NAME.XXXXXX")
EP_PIDS=()
EP_TEST_CGROUP=""
EP_CLEANUP_HOOKS=()
# Debian's python3 (its packages, python3-h2 among them); a pyenv python3 earlier on PATH lacks them.
EP_PYTHON=/usr/bin/python3

skip() {
        echo "SKIP: $*"
        exit 77
}

fail() {
        echo "FAIL: $*" >&2
        exit 1
}

note() {
        echo "# $*"
}

# Registers a command to run at exit, before processes and cgroups are cleaned up.
on_exit() {
        EP_CLEANUP_HOOKS+=("$*")
}

# Starts a command in the background and remembers its PID for cleanup in EP_LAST_PID. Call it
# directly, never in $(...): a subshell would forget the PID, and the child would hold the pipe open.
# Redirections go on the call: spawn_bg cmd args >"$EP_TMP/x.log" 2>&1
spawn_bg() {
        "$@" &
        EP_LAST_PID=$!
        EP_PIDS+=("$EP_LAST_PID")
}

ep__cleanup() {
        local rc=$?
        set +e
        local hook
        for hook in "${EP_CLEANUP_HOOKS[@]}"; do eval "$hook"; done
        local pid
        for pid in "${EP_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
        for pid in "${EP_PIDS[@]}"; do
                for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
                kill -KILL "$pid" 2>/dev/null
                wait "$pid" 2>/dev/null
        done
        if [[ -n "$EP_TEST_CGROUP" && -d "$EP_TEST_CGROUP" ]]; then
                echo 1 >"$EP_TEST_CGROUP/cgroup.kill" 2>/dev/null
                for _ in $(seq 100); do grep -qs '^populated 0' "$EP_TEST_CGROUP/cgroup.events" && break; sleep 0.05; done
                find "$EP_TEST_CGROUP" -depth -type d -exec rmdir {} \; 2>/dev/null
                [[ -d "$EP_TEST_CGROUP" ]] && echo "warning: could not remove $EP_TEST_CGROUP" >&2
        fi
        if [[ $rc -ne 0 && $rc -ne 77 && -d "$EP_TMP" ]]; then
                local f
                for f in "$EP_TMP"/*.log; do
                        [[ -f "$f" ]] || continue
                        echo "----- $f (last 40 lines)" >&2
                        tail -n 40 "$f" >&2
                done
        fi
        # EP_KEEP_LOGS=DIR: the logs of the run are copied there whatever the outcome (debugging)
        if [[ -n ${EP_KEEP_LOGS:-} && -d $EP_TMP ]]; then
                mkdir -p "$EP_KEEP_LOGS" && cp "$EP_TMP"/*.log "$EP_KEEP_LOGS"/ 2>/dev/null
        fi
        rm -rf "$EP_TMP"
        exit $rc
}
trap ep__cleanup EXIT
trap 'exit 1' INT TERM

need_root() {
        [[ $(id -u) -eq 0 ]] || skip "needs root"
}

need_cmd() {
        local c
        for c in "$@"; do command -v "$c" >/dev/null 2>&1 || skip "needs $c"; done
}

# Prints the mount point of the cgroup v2 hierarchy: /sys/fs/cgroup on pure v2 hosts,
# /sys/fs/cgroup/unified on hybrid ones; nothing (and status 1) where there is none.
cgroup2_root() {
        local d
        for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
                if [[ -d $d && $(stat -fc %T "$d" 2>/dev/null) == cgroup2fs ]]; then
                        echo "$d"
                        return 0
                fi
        done
        return 1
}

# Makes the one fresh parent cgroup of this test under the unified root, exports EP_TEST_CGROUP
# (absolute path) and EP_TEST_CGROUP_REL (path relative to the v2 root); skips when impossible.
make_test_cgroup() {
        need_root
        local root
        root=$(cgroup2_root) || skip "no cgroup v2 hierarchy on this host"
        EP_TEST_CGROUP="$root/ep-test-$EP_TEST_NAME-$$"
        mkdir "$EP_TEST_CGROUP" 2>/dev/null || skip "cgroup v2 hierarchy at $root is not writable"
        [[ -e "$EP_TEST_CGROUP/cgroup.kill" ]] || skip "kernel lacks cgroup.kill (needs Linux >= 5.14)"
        EP_TEST_CGROUP_REL=${EP_TEST_CGROUP#"$root"}
        # Delegate what the parent offers; on hybrid hosts that is often nothing (controllers on v1).
        local c
        for c in $(cat "$root/cgroup.subtree_control" 2>/dev/null); do
                echo "+$c" >"$EP_TEST_CGROUP/cgroup.subtree_control" 2>/dev/null || true
        done
        export EP_TEST_CGROUP EP_TEST_CGROUP_REL
}

# Waits until "$@" succeeds, polling every 50 ms, for at most $EP_WAIT seconds (default 20). For
# conditions no event announces (a file appears, a socket accepts); prefer waiting on a real event.
wait_until() {
        local deadline=$((SECONDS + ${EP_WAIT:-20}))
        until "$@" 2>/dev/null; do
                ((SECONDS < deadline)) || return 1
                sleep 0.05
        done
}

# Blocks until a line matching the extended regex appears in file (follows it as it grows); fails
# after $EP_WAIT seconds. Prints the matching line.
wait_for_line() {
        local file=$1 regex=$2
        timeout "${EP_WAIT:-20}" bash -c 'tail -n +1 -F "$0" 2>/dev/null | grep -m1 -E -- "$1"' "$file" "$regex" ||
                return 1
}

# Builds a binary path, failing clearly when the build did not produce it.
bin() {
        local p
        for p in "$EP_BUILD_DIR/$1" "$EP_BUILD_DIR/daemon/$1" "$EP_BUILD_DIR/sensor/$1" "$EP_BUILD_DIR/demo/$1" \
                "$EP_BUILD_DIR/tests/tools/$1" "$EP_BUILD_DIR/bench/$1"; do
                [[ -x "$p" ]] && { echo "$p"; return 0; }
        done
        fail "binary $1 not found under $EP_BUILD_DIR"
}

# Prints a TCP port on 127.0.0.1 that is free now. It is picked at random below the kernel's ephemeral
# range (ip_local_port_range), and checked with a bind: a port the kernel hands out itself (bind to port
# 0) could be taken by any outgoing connection, of another test's clients say, before the commander
# binds it.
free_port() {
        "$EP_PYTHON" -c 'import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(200):
    port = random.randrange(max(1024, low - 12000), low)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    print(port)
    break
else:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Prints a process's resident set size in KiB (VmRSS of /proc/PID/status).
rss_kib() {
        awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

# Sticky users of the demo worker, whose /state answers {"user":..,"counter":N,"worker":"K",...} and
# counts one more on every request. users_login URL USER...: logs each in (cookie jar $EP_TMP/USER.jar),
# makes 3 requests, and records its worker in $EP_TMP/USER.worker.
users_login() {
        local url=$1 u body i
        shift
        for u in "$@"; do
                curl -s --noproxy '*' --max-time 20 -c "$EP_TMP/$u.jar" -o /dev/null "$url/login?user=$u" ||
                        fail "login of $u failed"
                for i in 1 2 3; do
                        body=$(curl -s --noproxy '*' --max-time 20 -b "$EP_TMP/$u.jar" "$url/state") ||
                                fail "/state of $u failed"
                done
                [[ $body == *'"counter":3,'* ]] || fail "$u after 3 requests: $body"
                "$EP_PYTHON" -c 'import json, sys; print(json.loads(sys.argv[1])["worker"])' "$body" >"$EP_TMP/$u.worker"
        done
}

# users_kept URL FIRST USER...: each user's next two requests count FIRST and FIRST+1 on the worker
# users_login recorded: its worker and its state are the ones it had.
users_kept() {
        local url=$1 first=$2 u want body i
        shift 2
        for u in "$@"; do
                want=$(cat "$EP_TMP/$u.worker")
                for i in "$first" $((first + 1)); do
                        body=$(curl -s --noproxy '*' --max-time 20 -b "$EP_TMP/$u.jar" "$url/state") ||
                                fail "/state of $u failed"
                        [[ $body == *"\"user\":\"$u\",\"counter\":$i,\"worker\":\"$want\""* ]] ||
                                fail "$u: $body (want counter $i on w$want)"
                done
        done
}

# private_session_bus: a dbus-daemon of the test's own standing in for the user bus (EP_BUS=user), so that
# elastic-poolctl reaches a commander without systemd. Anyone may connect (auth EXTERNAL), so that a
# caller of another uid can try, and be refused by the commander. Sets CTL (elastic-poolctl's path) and
# dbus_pid; the daemon is stopped at the end of the test.
private_session_bus() {
        need_cmd dbus-daemon
        mkdir -p -m 755 "$EP_TMP/dbus"
        cat >"$EP_TMP/dbus/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=$EP_TMP/dbus/bus.sock</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
CONF
        dbus-daemon --config-file="$EP_TMP/dbus/bus.conf" --fork --print-address=1 --print-pid=1 \
                >"$EP_TMP/dbus/started" || fail "dbus-daemon did not start"
        dbus_pid=$(sed -n 2p "$EP_TMP/dbus/started")
        on_exit "kill $dbus_pid 2>/dev/null"
        export DBUS_SESSION_BUS_ADDRESS="unix:path=$EP_TMP/dbus/bus.sock" EP_BUS=user
        CTL=$EP_BUILD_DIR/ctl/elastic-poolctl
        [[ -x $CTL ]] || fail "binary elastic-poolctl not found under $EP_BUILD_DIR/ctl"
}
