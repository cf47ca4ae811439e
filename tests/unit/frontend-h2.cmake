# The HTTP/2 client side of the front end, linked alone against a fake router (fake-router-h2.c): its
# sources are compiled directly, not through ep-core, so it builds while the router is being written.
ep_unit_test(frontend-h2 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-frontend-h2.c ${CMAKE_CURRENT_LIST_DIR}/fake-router-h2.c
        ${CMAKE_SOURCE_DIR}/daemon/frontend_h2.c ${CMAKE_SOURCE_DIR}/daemon/frontend_h2_session.c
        ${CMAKE_SOURCE_DIR}/daemon/frontend_h2_stream.c ${CMAKE_SOURCE_DIR}/daemon/frontend_h2_response.c
        ${CMAKE_SOURCE_DIR}/daemon/frontend_h2_guard.c
        LIBS ep-util PkgConfig::SYSTEMD PkgConfig::NGHTTP2)
target_include_directories(test-frontend-h2 PRIVATE ${CMAKE_SOURCE_DIR}/daemon)
