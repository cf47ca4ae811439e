# The group on D-Bus and elastic-poolctl, against a private dbus-daemon (no systemd needed).
# tests/integration/bus-*.sh
foreach(t ctl)
        ep_integration_test(bus-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/bus-${t}.sh TIMEOUT 120 LABELS bus)
endforeach()
