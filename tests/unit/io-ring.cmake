# Socket reads and writes in batches (daemon/frontend/io-ring.c): io_uring and one system call each.
ep_unit_test(io-ring SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-io-ring.c ${CMAKE_SOURCE_DIR}/daemon/frontend/io-ring.c
        LIBS ep-shared PkgConfig::LIBURING)
target_include_directories(test-io-ring PRIVATE ${CMAKE_SOURCE_DIR}/daemon/frontend)
