# The sensor library, one test binary per module. They link the static ep-sensor-core (internal symbols
# included); test-sensor-util.c holds the fixture trees and the fake commander end they share.
foreach(m kernel-parse procfs-reading cgroup-reading report app-state tick channel thread users)
        ep_unit_test(sensor-${m}
                SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-sensor-${m}.c ${CMAKE_CURRENT_LIST_DIR}/test-sensor-util.c
                LIBS ep-sensor-core)
endforeach()
