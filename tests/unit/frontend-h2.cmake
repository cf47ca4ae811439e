# The HTTP/2 client side of the front end, linked alone against a fake router (fake-router-h2.c): its
# sources are compiled directly, not through ep-core, so it builds while the router is being written.
ep_unit_test(frontend-h2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-frontend-h2.c ${CMAKE_CURRENT_LIST_DIR}/fake-router-h2.c
        ${CMAKE_SOURCE_DIR}/daemon/frontend/h2-connection.c ${CMAKE_SOURCE_DIR}/daemon/frontend/h2-session.c
        ${CMAKE_SOURCE_DIR}/daemon/frontend/h2-stream.c ${CMAKE_SOURCE_DIR}/daemon/frontend/h2-mem.c ${CMAKE_SOURCE_DIR}/daemon/frontend/h2-response.c
        ${CMAKE_SOURCE_DIR}/daemon/frontend/h2-guard.c ${CMAKE_SOURCE_DIR}/daemon/frontend/request-check.c
        ${CMAKE_SOURCE_DIR}/daemon/frontend/io-batch.c ${CMAKE_SOURCE_DIR}/daemon/frontend/io-ring.c
        LIBS ep-shared PkgConfig::SYSTEMD PkgConfig::LIBURING PkgConfig::NGHTTP2)
target_include_directories(test-frontend-h2 PRIVATE ${CMAKE_SOURCE_DIR}/daemon/frontend ${CMAKE_SOURCE_DIR}/daemon)
ep_unit_test_io_uring(frontend-h2)

# nghttp2's allocator alone (h2-mem.c).
ep_unit_test(h2-mem SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-h2-mem.c ${CMAKE_SOURCE_DIR}/daemon/frontend/h2-mem.c
        LIBS ep-shared PkgConfig::NGHTTP2)
target_include_directories(test-h2-mem PRIVATE ${CMAKE_SOURCE_DIR}/daemon/frontend ${CMAKE_SOURCE_DIR}/daemon)
