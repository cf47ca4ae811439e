# The worker side of the front end: request serialisation, the keep-alive pool, response parsing, against
# a fake worker on a real Unix socket and a fake router (fake-exchange.c). Sources are compiled in
# directly (not ep-core) so this test builds while the router and the client sides are mid-edit.
ep_unit_test(forward SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-forward.c ${CMAKE_CURRENT_LIST_DIR}/fake-exchange.c
        ${CMAKE_CURRENT_LIST_DIR}/fake-worker.c
        ${CMAKE_SOURCE_DIR}/daemon/frontend/forward.c ${CMAKE_SOURCE_DIR}/daemon/frontend/forward-conn.c
        ${CMAKE_SOURCE_DIR}/daemon/frontend/forward-response.c ${CMAKE_SOURCE_DIR}/daemon/frontend/forward-serialize.c
        ${CMAKE_SOURCE_DIR}/daemon/frontend/slot-share.c ${CMAKE_SOURCE_DIR}/daemon/hashmap.c
        ${CMAKE_SOURCE_DIR}/daemon/latency.c ${CMAKE_SOURCE_DIR}/daemon/frontend/io-batch.c ${CMAKE_SOURCE_DIR}/daemon/frontend/io-ring.c
        LIBS ep-shared PkgConfig::SYSTEMD PkgConfig::LIBURING ${HTTP_PARSER_LIB} PkgConfig::NGHTTP2) # nghttp2: the filter's strictness test
target_include_directories(test-forward PRIVATE ${CMAKE_SOURCE_DIR}/daemon/frontend ${CMAKE_SOURCE_DIR}/daemon ${HTTP_PARSER_INCLUDE})
ep_unit_test_io_uring(forward)
