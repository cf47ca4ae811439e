# population fan-out, the monitor's page and data, the Prometheus exposition, the listener itself.
ep_unit_test(latency SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-latency.c LIBS ep-core)
ep_unit_test(drift SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-drift.c LIBS ep-core)
