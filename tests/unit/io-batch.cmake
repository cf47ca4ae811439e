# The front end's batch of sockets (daemon/frontend/io-batch.c) on a real sd-event loop and socket pairs.
ep_unit_test(io-batch SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-io-batch.c
        ${CMAKE_SOURCE_DIR}/daemon/frontend/io-batch.c ${CMAKE_SOURCE_DIR}/daemon/frontend/io-ring.c LIBS ep-shared PkgConfig::SYSTEMD PkgConfig::LIBURING)
target_include_directories(test-io-batch PRIVATE ${CMAKE_SOURCE_DIR}/daemon/frontend)
ep_unit_test_io_uring(io-batch)
