# The D-Bus surface: the shared contract's pure parts and the commander's choice of bus (unit/bus-api,
# against ep-core, which links ep-shared), and elastic-poolctl's command line and formatting (unit/ctl).
ep_unit_test(bus-api SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-bus-api.c LIBS ep-core)
ep_unit_test(ctl SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-ctl.c LIBS ep-ctl)
