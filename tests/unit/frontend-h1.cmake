# The HTTP/1.1 client side, linked alone against a fake router (tests/unit/fake-router.c): sources are
# compiled directly, not through ep-core, so this test builds while the router and forward side are
# being written.
ep_unit_test(frontend-h1 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-frontend-h1.c ${CMAKE_CURRENT_LIST_DIR}/fake-router.c
        ${CMAKE_SOURCE_DIR}/daemon/frontend/h1-connection.c ${CMAKE_SOURCE_DIR}/daemon/frontend/h1-request.c
        ${CMAKE_SOURCE_DIR}/daemon/frontend/h1-response.c ${CMAKE_SOURCE_DIR}/daemon/frontend/h1-head.c
        ${CMAKE_SOURCE_DIR}/daemon/frontend/request-check.c ${CMAKE_SOURCE_DIR}/daemon/frontend/io-batch.c ${CMAKE_SOURCE_DIR}/daemon/frontend/io-ring.c
        LIBS ep-shared ep-proto PkgConfig::SYSTEMD PkgConfig::LIBURING ${HTTP_PARSER_LIB})
target_include_directories(test-frontend-h1 PRIVATE ${CMAKE_SOURCE_DIR}/daemon/frontend ${CMAKE_SOURCE_DIR}/daemon ${HTTP_PARSER_INCLUDE})
ep_unit_test_io_uring(frontend-h1)
