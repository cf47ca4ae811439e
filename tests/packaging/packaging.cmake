# What the packages ship, checked: the man pages, elastic-pool.conf(5) against the configuration parser,
# and the .deb and .rpm built from this tree (packaging/). Tests exit 77 with the reason when a tool
# they need is missing.

# packaging/config-keys: every key of elastic-pool.conf(5) (Markdown and the built page) is the parser's,
# in its section, and the built page has every key of the parser. Labelled unit too: it is quick, needs
# nothing, and runs where the unit tests run (the packages' own test step included).
if(EP_BUILD_MAN)
        set(EP_CONF_MAN_PAGE ${CMAKE_BINARY_DIR}/docs/man/elastic-pool.conf.5)
else()
        set(EP_CONF_MAN_PAGE "")
endif()
add_executable(test-config-docs ${CMAKE_CURRENT_LIST_DIR}/test-config-docs.c)
target_include_directories(test-config-docs PRIVATE ${CMOCKA_INCLUDE})
target_link_libraries(test-config-docs PRIVATE ep-core ${CMOCKA_LIB})
target_compile_definitions(test-config-docs PRIVATE EP_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
        EP_CONF_MAN_PAGE="${EP_CONF_MAN_PAGE}")
ep_target_warnings(test-config-docs)
if(EP_BUILD_MAN)
        add_dependencies(test-config-docs man)
endif()
add_test(NAME packaging/config-keys COMMAND test-config-docs)
set_tests_properties(packaging/config-keys PROPERTIES LABELS "unit;packaging" TIMEOUT 60)

# packaging/restart-groups: the packages' upgrade step (packaging/restart-groups.sh) on a running group
# under a real systemd manager (the systemd user sandbox of tests/system): the same workers and users
# under the new commander.
foreach(kind SYSTEM USER)
        cmake_path(ABSOLUTE_PATH EP_SYSTEMD_${kind}_UNIT_DIR BASE_DIRECTORY ${CMAKE_INSTALL_PREFIX}
                OUTPUT_VARIABLE EP_PACKAGING_${kind}_UNIT_DIR)
endforeach()
add_test(NAME packaging/restart-groups COMMAND ${CMAKE_CURRENT_LIST_DIR}/../system/run-in-sandbox.sh
        ${CMAKE_CURRENT_LIST_DIR}/restart-groups.sh)
set_tests_properties(packaging/restart-groups PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
        LABELS "system;packaging"
        ENVIRONMENT "EP_BUILD_DIR=${CMAKE_BINARY_DIR};EP_SOURCE_DIR=${CMAKE_SOURCE_DIR};EP_SANITIZE=${EP_SANITIZE};EP_SYSTEM_UNIT_DIR=${EP_PACKAGING_SYSTEM_UNIT_DIR};EP_USER_UNIT_DIR=${EP_PACKAGING_USER_UNIT_DIR};EP_INSTALL_BINDIR=${CMAKE_INSTALL_FULL_BINDIR}")

# packaging/deb-rpm: builds the .deb and the .rpm (packaging/build-*.sh, into BUILD/packaging-test),
# compares what they ship, runs lintian, and builds the sensor(3) example against both. It takes both
# cores for about two minutes: RUN_SERIAL keeps the timing-sensitive tests from running beside it. The
# .debs it keeps are vm/system's too (the fixture "packages", tests/vm/vm.cmake).
add_test(NAME packaging/deb-rpm COMMAND ${CMAKE_CURRENT_LIST_DIR}/deb-rpm.sh)
set_tests_properties(packaging/deb-rpm PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "packaging"
        RUN_SERIAL TRUE FIXTURES_SETUP packages
        ENVIRONMENT "EP_BUILD_DIR=${CMAKE_BINARY_DIR};EP_SOURCE_DIR=${CMAKE_SOURCE_DIR};EP_SANITIZE=${EP_SANITIZE}")

# packaging/man-pages: the built man pages format without a groff warning (as lintian runs man), have a
# whatis entry, cover every installed program, and every elastic-pool page they name exists.
add_test(NAME packaging/man-pages COMMAND ${CMAKE_CURRENT_LIST_DIR}/man-pages.sh)
set_tests_properties(packaging/man-pages PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS "packaging"
        ENVIRONMENT "EP_BUILD_DIR=${CMAKE_BINARY_DIR};EP_SOURCE_DIR=${CMAKE_SOURCE_DIR}")

# packaging/sensor-api: sensor.h, elastic-pool-sensor(3)'s SYNOPSIS, the Debian symbols file and the
# library's exports name the same functions.
add_test(NAME packaging/sensor-api COMMAND ${CMAKE_CURRENT_LIST_DIR}/sensor-api.sh)
set_tests_properties(packaging/sensor-api PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60 LABELS "packaging"
        ENVIRONMENT "EP_BUILD_DIR=${CMAKE_BINARY_DIR};EP_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
