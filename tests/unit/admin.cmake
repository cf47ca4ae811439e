# population fan-out, the monitor's page and data, the Prometheus exposition, the listener itself.
ep_unit_test(latency SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-latency.c LIBS ep-core)
ep_unit_test(drift SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-drift.c LIBS ep-core)
# On a Manager in memory (manager-fixture.c), its clock driven by the test.
foreach(m population metrics monitor admin)
        ep_unit_test(${m} SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-${m}.c ${CMAKE_CURRENT_LIST_DIR}/manager-fixture.c
                ${CMAKE_CURRENT_LIST_DIR}/fake-frontend.c LIBS ep-core)
        target_link_options(test-${m} PRIVATE -Wl,--wrap=now_usec)
endforeach()
