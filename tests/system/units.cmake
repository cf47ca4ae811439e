# The generated systemd units (units/), as `cmake --install` installs them: units/verify runs
# systemd-analyze verify on them; system/unit-ready starts and stops elastic-pool@.service under a real
# manager (the systemd user sandbox, through run-in-sandbox.sh).
foreach(kind SYSTEM USER)
        cmake_path(ABSOLUTE_PATH EP_SYSTEMD_${kind}_UNIT_DIR BASE_DIRECTORY ${CMAKE_INSTALL_PREFIX}
                OUTPUT_VARIABLE EP_FULL_${kind}_UNIT_DIR)
endforeach()
set(EP_UNITS_TEST_ENV
        EP_BUILD_DIR=${CMAKE_BINARY_DIR} EP_SOURCE_DIR=${CMAKE_SOURCE_DIR} EP_SANITIZE=${EP_SANITIZE}
        EP_SYSTEM_UNIT_DIR=${EP_FULL_SYSTEM_UNIT_DIR} EP_USER_UNIT_DIR=${EP_FULL_USER_UNIT_DIR}
        EP_INSTALL_BINDIR=${CMAKE_INSTALL_FULL_BINDIR})

add_test(NAME units/verify COMMAND ${CMAKE_CURRENT_LIST_DIR}/units-verify.sh)
set_tests_properties(units/verify PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS "units"
        ENVIRONMENT "${EP_UNITS_TEST_ENV}")

# system/unit-ready: the system unit; system/unit-ready-user: its user-manager variant
foreach(variant system user)
        set(name system/unit-ready)
        if(variant STREQUAL user)
                set(name system/unit-ready-user)
        endif()
        add_test(NAME ${name} COMMAND ${CMAKE_CURRENT_LIST_DIR}/run-in-sandbox.sh
                ${CMAKE_CURRENT_LIST_DIR}/unit-ready.sh ${variant})
        set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "system;units"
                ENVIRONMENT "${EP_UNITS_TEST_ENV}")
endforeach()

# system/unit-readopt: kill -9 of the commander under load; the same workers serve the same users after
add_test(NAME system/unit-readopt COMMAND ${CMAKE_CURRENT_LIST_DIR}/run-in-sandbox.sh
        ${CMAKE_CURRENT_LIST_DIR}/unit-readopt.sh)
set_tests_properties(system/unit-readopt PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "system;units"
        ENVIRONMENT "${EP_UNITS_TEST_ENV}")
