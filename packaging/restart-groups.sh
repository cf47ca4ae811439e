#!/bin/sh
# SPDX-License-Identifier: MIT
# restart-groups [--user] [--clean] [--dry-run]: after an upgrade of the commander, moves every running
# group of the system manager (elastic-pool@GROUP.service; with --user, of the caller's own manager) to
# the new binary. The packages run it on upgrade (Debian: postinst configure; RPM: %post); an operator
# may run it after any upgrade by hand. Installed as /usr/libexec/elastic-pool/restart-groups.
#
# Why not "systemctl restart": an orderly stop of the commander (SIGTERM) stops its workers, and every
# logged-in user loses its state. A commander that dies without stopping them is the case re-adoption
# serves (elastic-pool(8), RESTARTS AND RE-ADOPTION): systemd restarts the unit (Restart=on-failure),
# the listening sockets wait in its fd store, and the new commander takes the workers back with their
# users. So each group's main process is killed (SIGKILL, the main process only: the workers live in
# their own scopes) and systemd starts the new commander. What that costs: the requests in flight in
# the commander at that instant, as any crash does. Workers are kept with the scope backend (the default
# under systemd) and [pool] readopt=yes (the default); otherwise they die with the commander and the new
# one starts fresh ones, as after a clean restart.
#
# A group whose unit would not be restarted after a kill (Restart= changed by a drop-in) gets a plain
# "systemctl restart" instead, as does every group with --clean. policy-rc.d is asked first, as
# deb-systemd-invoke does, so a chroot or container build that forbids service actions gets none.
# The packages leave groups of users' own managers to their users (--user). Never fails an upgrade:
# problems are reported and the exit status is 0 unless the command line is wrong.
set -u

clean=0
dry_run=0
manager=--system
for arg in "$@"; do
        case $arg in
        --clean) clean=1 ;;
        --dry-run) dry_run=1 ;;
        --user) manager=--user ;;
        -h | --help)
                sed -n '3,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"
                exit 0
                ;;
        *)
                echo "restart-groups: unknown argument '$arg' (--user, --clean, --dry-run)" >&2
                exit 2
                ;;
        esac
done

say() {
        echo "elastic-pool: $*"
}

ctl() {
        systemctl "$manager" "$@"
}

# ctl, or only said with --dry-run
run() {
        if [ $dry_run -eq 1 ]; then
                say "would run: systemctl $manager $*"
                return 0
        fi
        ctl "$@"
}

prop() {
        ctl show --property="$2" --value "$1"
}

# no manager to ask (not booted with systemd, no user manager): nothing runs under it
command -v systemctl >/dev/null 2>&1 || exit 0
if [ $manager = --system ]; then
        [ -d /run/systemd/system ] || exit 0
else
        ctl show-environment >/dev/null 2>&1 || exit 0
fi

# the unit file may have changed with the upgrade
run daemon-reload || say "systemctl daemon-reload failed; going on with the units as loaded"

# ACTIVE=active only: a group that is starting, stopping or already restarting is left to what it does
units=$(ctl list-units --type=service --state=active --plain --no-legend 'elastic-pool@*.service' |
        awk '{ print $1 }')
[ -n "$units" ] || exit 0

# active again with another main process: the restart is done. 0, or 1 once it failed or after timeout
# seconds.
wait_restarted() {
        unit=$1 old_pid=$2 timeout=$3
        while [ "$timeout" -gt 0 ]; do
                pid=$(prop "$unit" MainPID)
                state=$(prop "$unit" ActiveState)
                if [ "$state" = active ] && [ -n "$pid" ] && [ "$pid" != 0 ] && [ "$pid" != "$old_pid" ]; then
                        return 0
                fi
                [ "$state" != failed ] || return 1
                sleep 1
                timeout=$((timeout - 1))
        done
        return 1
}

for unit in $units; do
        if [ $manager = --system ] && [ -x /usr/sbin/policy-rc.d ]; then
                /usr/sbin/policy-rc.d "$unit" restart
                if [ $? -eq 101 ]; then
                        say "policy-rc.d forbids restarting $unit; it runs the old commander until restarted"
                        continue
                fi
        fi

        restart=$(prop "$unit" Restart)
        pid=$(prop "$unit" MainPID)
        case $clean:$restart in
        0:on-failure | 0:on-abnormal | 0:on-abort | 0:always) ;;
        *)
                if [ $clean -eq 0 ]; then
                        say "$unit has Restart=$restart, so it would stay down after a kill:"
                        say "restarting it in order instead; its workers stop and its users must log in again"
                fi
                run restart "$unit" || say "restarting $unit failed: see systemctl $manager status $unit"
                continue
                ;;
        esac

        say "restarting $unit through re-adoption (its workers and their users stay)"
        if ! run kill --kill-whom=main --signal=SIGKILL "$unit"; then
                say "could not signal $unit; it runs the old commander until restarted"
                continue
        fi
        [ $dry_run -eq 0 ] || continue
        # RestartSec=1s, then the new commander waits for its workers' sensors (adopt_timeout, 15 s by
        # default) before it says READY=1
        if ! wait_restarted "$unit" "$pid" 120; then
                say "$unit is not active again: see systemctl $manager status $unit"
        fi
done
exit 0
