# SPDX-License-Identifier: MIT
# elastic-pool@.service as `cmake --install` installs it, set up under the systemd user sandbox's manager
# with a drop-in that changes only what a test must (tests/system/unit-ready.sh says why each line is
# there). Source after tests/integration/lib.sh and scope-lib.sh, with VARIANT set (system or user);
# sets GROUP, SLICE, UNIT, UNIT_DIR, RUNTIME, PORT and conf (the group's configuration file, for the test
# to write). Skips where the variant cannot run here.
: "${EP_SYSTEM_UNIT_DIR:?}" "${EP_USER_UNIT_DIR:?}" "${EP_INSTALL_BINDIR:?}" "${VARIANT:?}"

case $VARIANT:$XDG_RUNTIME_DIR/ in
system:/tmp/* | system:/var/tmp/*)
        skip "this sandbox keeps the manager's sockets in $XDG_RUNTIME_DIR, which the unit's" \
                "PrivateTmp=yes hides from it (tests/system/systemd-user-sandbox uses /run/user/UID)" ;;
esac

GROUP=t$$
SLICE=elastic-pool-$GROUP.slice
UNIT=elastic-pool@$GROUP.service
UNIT_DIR=$XDG_RUNTIME_DIR/systemd/user # a user manager's runtime unit directory (systemctl --runtime)
RUNTIME=$XDG_RUNTIME_DIR/elastic-pool/$GROUP
PORT=$(free_port)

# ---- the unit as installed, then installed again as a user unit with the test's drop-in ----
DESTDIR=$EP_TMP/root cmake --install "$EP_BUILD_DIR" --component units >"$EP_TMP/install.log" 2>&1 ||
        fail "cmake --install --component units failed: $(tail -n 5 "$EP_TMP/install.log")"
case $VARIANT in
system)
        installed=$EP_TMP/root$EP_SYSTEM_UNIT_DIR/elastic-pool@.service
        args="--config $EP_TMP/etc/$GROUP.conf"
        conf=$EP_TMP/etc/$GROUP.conf
        ;;
user)
        installed=$EP_TMP/root$EP_USER_UNIT_DIR/elastic-pool@.service
        args="--config %E/elastic-pool/%i.conf"
        config_home=$(ucl show-environment | sed -n 's/^XDG_CONFIG_HOME=//p')
        [[ -n $config_home ]] || config_home=$(ucl show-environment | sed -n 's/^HOME=//p')/.config
        conf=$config_home/elastic-pool/$GROUP.conf
        # the file, and the state directory beside it (systemd 252 puts a user unit's there)
        on_exit "rm -rf '$conf' '$config_home/elastic-pool/$GROUP'"
        ;;
*) fail "unknown variant '$VARIANT' (system, user)" ;;
esac
[[ -f $installed ]] || fail "cmake --install put no elastic-pool@.service in ${installed%/*}"
grep -q "^ExecStart=$EP_INSTALL_BINDIR/elastic-pool --group %i" "$installed" ||
        fail "the installed unit does not run $EP_INSTALL_BINDIR/elastic-pool"

on_exit "ucl stop $UNIT >/dev/null 2>&1; ucl reset-failed $UNIT >/dev/null 2>&1"
on_exit "rm -rf '$UNIT_DIR/elastic-pool@.service' '$UNIT_DIR/$UNIT.d'; ucl daemon-reload"
mkdir -p "$UNIT_DIR/$UNIT.d" "${conf%/*}"
cp "$installed" "$UNIT_DIR/elastic-pool@.service"
cat >"$UNIT_DIR/$UNIT.d/test.conf" <<DROPIN
# system/unit-ready: the build tree's commander instead of the installed $EP_INSTALL_BINDIR/elastic-pool
[Service]
ExecStartPre=
ExecStartPre=$COMMANDER --check-config $args
ExecStart=
ExecStart=$COMMANDER --group %i $args
# As root the commander would take the system bus; here the manager's bus is the user bus.
Environment=EP_BUS=user ASAN_OPTIONS=detect_leaks=1
DROPIN
if [[ $VARIANT == system ]]; then
        cat >>"$UNIT_DIR/$UNIT.d/test.conf" <<DROPIN
# PrivateTmp=yes hides /tmp, where the build tree and the test's directory may be
BindReadOnlyPaths=$EP_BUILD_DIR $EP_TMP/etc
# A user manager's notify socket, bus and runtime directories are in /run/user/UID, which ProtectHome=yes
# hides; the system manager's are in /run. Read-only keeps them reachable and the mount namespace real.
ProtectHome=read-only
DROPIN
fi
if [[ ${EP_SANITIZE:-} == ON ]]; then
        # LeakSanitizer stops the world with ptrace, which @system-service leaves out
        echo "SystemCallFilter=@debug" >>"$UNIT_DIR/$UNIT.d/test.conf"
fi
ucl daemon-reload


# write_group_conf [KEY=VALUE...]: the group's configuration the unit tests run: two scope workers of the
# demo worker, the front end on 127.0.0.1:$PORT; each KEY=VALUE is added to [pool]. Sets URL.
write_group_conf() {
        local kv extra=""
        for kv in "$@"; do
                extra+="${kv%%=*} = ${kv#*=}"$'\n'
        done
        cat >"$conf" <<CONF
[worker]
exec = $WORKER

[pool]
backend = scope
min_workers = 2
max_workers = 2
spawn_timeout = 20s
stop_timeout = 5s
$extra
[frontend]
listen = 127.0.0.1:$PORT
CONF
        URL=http://127.0.0.1:$PORT
}
