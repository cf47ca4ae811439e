# The commander under a real systemd user manager, one CTest per behaviour: system/scope-backend,
# system/scope-worker-death, system/journal-fields. Each runs inside tests/system/systemd-user-sandbox
# (through run-in-sandbox.sh), which skips, with the reason, where the machine cannot run it.
foreach(t scope-backend scope-worker-death journal-fields)
        add_test(NAME system/${t} COMMAND ${CMAKE_CURRENT_LIST_DIR}/run-in-sandbox.sh ${CMAKE_CURRENT_LIST_DIR}/${t}.sh)
        set_tests_properties(system/${t} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "system;scope"
                ENVIRONMENT "EP_BUILD_DIR=${CMAKE_BINARY_DIR};EP_SOURCE_DIR=${CMAKE_SOURCE_DIR};EP_SANITIZE=${EP_SANITIZE}")
endforeach()
