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
