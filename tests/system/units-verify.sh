#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Intent: the units as `cmake --install` installs them (elastic-pool@.service and .socket for the system
# manager, the user-manager variant of the service) pass `systemd-analyze verify` without a word: no
# unknown or invalid setting, every command there, every dependency found.
#
# The project is installed into a staging root (DESTDIR), so ExecStart='s installed path resolves with
# --root, to the binaries just built; the host's own units and /bin/kill are copied there for the
# dependencies (sysinit.target...) and ExecReload=. systemd 252 takes --root for the system scope only:
# the user variant is verified with --user as a copy whose paths point into the staging root (its
# original paths are the system unit's). Man pages are not installed (the docs are Markdown): --man=no.
. "$(dirname "$0")/../integration/lib.sh"
need_cmd systemd-analyze cmake

: "${EP_SYSTEM_UNIT_DIR:?}" "${EP_USER_UNIT_DIR:?}" "${EP_INSTALL_BINDIR:?}"
root=$EP_TMP/root
DESTDIR=$root cmake --install "$EP_BUILD_DIR" >"$EP_TMP/install.log" 2>&1 ||
        fail "cmake --install into $root failed: $(tail -n 5 "$EP_TMP/install.log")"
system_unit=$root$EP_SYSTEM_UNIT_DIR/elastic-pool@.service
user_unit=$root$EP_USER_UNIT_DIR/elastic-pool@.service
for f in "$system_unit" "$root$EP_SYSTEM_UNIT_DIR/elastic-pool@.socket" "$user_unit" \
        "$root$EP_INSTALL_BINDIR/elastic-pool"; do
        [[ -e $f ]] || fail "cmake --install did not install ${f#"$root"}"
done
grep -q "^ExecStart=$EP_INSTALL_BINDIR/elastic-pool --group %i\$" "$system_unit" ||
        fail "the installed unit does not run $EP_INSTALL_BINDIR/elastic-pool"

host_units=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)
mkdir -p "$root/usr/lib/systemd/system" "$root/bin"
cp -a "$host_units/." "$root/usr/lib/systemd/system/"
cp /bin/kill "$root/bin/kill"

# verify's exit status ignores the warnings (an unknown key, an invalid value): any output fails
verify() {
        local what=$1 out
        shift
        out=$(systemd-analyze "$@" 2>&1) || fail "systemd-analyze verify of $what failed: $out"
        [[ -z $out ]] || fail "systemd-analyze verify of $what is not clean: $out"
        note "$what: clean"
}

verify "the system units" verify --man=no --root="$root" elastic-pool@.service elastic-pool@.socket

mkdir -p "$EP_TMP/user" "$EP_TMP/runtime"
chmod 0700 "$EP_TMP/runtime"
sed "s|$EP_INSTALL_BINDIR/|$root$EP_INSTALL_BINDIR/|g" "$user_unit" >"$EP_TMP/user/elastic-pool@.service"
XDG_RUNTIME_DIR=$EP_TMP/runtime verify "the user unit" \
        --user verify --man=no "$EP_TMP/user/elastic-pool@.service"

echo "PASS: units-verify"
