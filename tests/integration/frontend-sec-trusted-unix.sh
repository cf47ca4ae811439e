#!/bin/bash
# SPDX-License-Identifier: MIT
# Intent: a peer on a Unix socket listener is trusted for X-Forwarded-Proto only when trusted_proxies
# says "unix". The commander gets its listener handed over the socket-activation way (a Unix socket on
# fd 3, LISTEN_FDS=1, as a .socket unit with ListenStream=/path does). By default a client there that
# sends "X-Forwarded-Proto: https" reaches the worker as http and its login cookie has no Secure; with
# trusted_proxies = unix the worker gets https and the cookie is Secure; a trusted_proxies list of IP
# addresses alone does not make Unix socket peers trusted.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/commander-lib.sh"
. "$(dirname "$0")/frontend-lib.sh"
make_test_cgroup

SOCK=$EP_TMP/http.sock

# Starts the commander on $EP_CONF with $SOCK as its one listener, handed over on fd 3 by a parent that
# then becomes the commander (exec keeps the pid, so LISTEN_PID is its own), and waits until it is ready.
start_on_unix_socket() {
        local cmd=("$(bin elastic-pool)" --group "t$$" --config "$EP_CONF" --runtime-dir "$EP_RUN"
                --state-dir "$EP_TMP/state")
        local launch=("$EP_PYTHON" -c 'import os, socket, sys
path = sys.argv[1]
if os.path.exists(path):
    os.unlink(path)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(128)
high = os.dup(s.fileno())  # out of the way of fd 3 first: dup2(3, 3) would keep FD_CLOEXEC
os.dup2(high, 3, inheritable=True)
os.environ.update(LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))
os.execv(sys.argv[2], sys.argv[2:])' "$SOCK" "${cmd[@]}")
        if [[ -n $EP_TEST_CGROUP ]]; then
                spawn_bg bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$EP_TEST_CGROUP" "${launch[@]}" \
                        >"$EP_LOG" 2>&1
        else
                spawn_bg "${launch[@]}" >"$EP_LOG" 2>&1
        fi
        EP_COMMANDER_PID=$EP_LAST_PID
        wait_ready
        log_has 'handed over by systemd' || fail "the commander did not take the Unix socket"
}

# check WANT_PROTO WANT_SECURE: over the Unix socket, a client saying https reaches the worker as
# WANT_PROTO, and its login cookie has Secure exactly when WANT_SECURE is "yes".
check() {
        local hdr
        "${CURL[@]}" --unix-socket "$SOCK" -H 'X-Forwarded-Proto: https' -o /dev/null "http://app.test/page" ||
                fail "request over the Unix socket failed"
        expect_field X-Forwarded-Proto "$1"
        hdr=$("${CURL[@]}" --unix-socket "$SOCK" -H 'X-Forwarded-Proto: https' -D - -o /dev/null \
                "http://app.test/login?user=alice" | tr -d '\r')
        grep -qi '^set-cookie: ep_user=' <<<"$hdr" || fail "no sticky cookie: $hdr"
        if [[ $2 == yes ]]; then
                grep -qiE '^set-cookie: ep_user=.*; Secure' <<<"$hdr" || fail "the cookie lacks Secure: $hdr"
        else
                grep -qiE '^set-cookie: ep_user=.*; Secure' <<<"$hdr" && fail "the cookie says Secure: $hdr"
        fi
        note "trusted_proxies='$(sed -n 's/^trusted_proxies = //p' "$EP_CONF" | tr '\n' ' ')':" \
                "X-Forwarded-Proto $1, Secure: $2"
}

write_config "$(test_worker)"
start_on_unix_socket
check http no
fe_stop

write_config "$(test_worker)" frontend.trusted_proxies=127.0.0.1 "frontend.trusted_proxies=::1"
start_on_unix_socket
check http no
fe_stop

write_config "$(test_worker)" frontend.trusted_proxies=unix
start_on_unix_socket
check https yes
fe_stop
