# Live moves that fail or stall on purpose (the demo worker's fault options, one faulty worker of two):
# tests/integration/move-*.sh, helpers in move-lib.sh; each runs in under ten seconds.
foreach(t install-timeout install-error target-killed held-served-by-target source-killed held-503)
        ep_integration_test(move-${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/move-${t}.sh TIMEOUT 60
                LABELS move)
endforeach()
