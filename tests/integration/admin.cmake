# The admin listener against a real demo pool: the population fan-out with a stopped worker, the monitor in
# a real browser, /metrics through promtool, the refusal of a public address, the drift sentinels.
# tests/integration/admin-*.sh
foreach(t population-sigstop monitor-browser metrics-promtool refuse-public drift)
        ep_integration_test(admin-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/admin-${t}.sh TIMEOUT 180
                LABELS admin)
endforeach()
