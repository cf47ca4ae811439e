# The scope backend against a fake systemd manager on a socketpair bus. daemon/backend-scope.c and the cgroup
# helpers are compiled in directly (not through ep-core) so this test builds while other modules of
# the commander are still being written.
ep_unit_test(scope SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-scope.c ${CMAKE_SOURCE_DIR}/daemon/backend-scope.c
        ${CMAKE_SOURCE_DIR}/daemon/cgroup.c LIBS ep-shared ep-proto PkgConfig::SYSTEMD Threads::Threads)
target_include_directories(test-scope PRIVATE ${CMAKE_SOURCE_DIR}/daemon)
