# daemon/config.c and config-worker.c are compiled in directly (not through ep-core) so this test builds
# while other modules of the commander are still being written.
ep_unit_test(config SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-config.c ${CMAKE_SOURCE_DIR}/daemon/config.c
        ${CMAKE_SOURCE_DIR}/daemon/config-worker.c LIBS ep-shared PkgConfig::INIH)
target_include_directories(test-config PRIVATE ${CMAKE_SOURCE_DIR}/daemon)
target_compile_definitions(test-config PRIVATE
        EP_DEMO_WORKER_PATH="${CMAKE_INSTALL_FULL_BINDIR}/elastic-pool-demo-worker"
        EP_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
