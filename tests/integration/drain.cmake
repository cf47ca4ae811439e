# Drains proven where they happen: a worker retired under load and with slow clients, through the real
# commander, demo workers and clients. tests/integration/drain-*.sh
foreach(t slow-clients under-load)
        ep_integration_test(drain-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/drain-${t}.sh TIMEOUT 120 LABELS drain)
endforeach()
