# The demo's load generator (demo/loadgen*.c) against a real commander: tests/integration/loadgen-*.sh
foreach(t smoke keep-sessions)
        ep_integration_test(loadgen-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/loadgen-${t}.sh TIMEOUT 120
                LABELS loadgen)
endforeach()
