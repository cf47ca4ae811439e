# The demo worker's pure parts: request-target parsing and the user store (demo/).
ep_unit_test(demo-query SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-demo-query.c LIBS ep-demo-core ep-shared)
ep_unit_test(demo-user-store SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-demo-user-store.c LIBS ep-demo-core ep-shared)
# The demo worker's WebSocket echo (demo/websocket.c): handshake key, frames, counters.
ep_unit_test(demo-websocket SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-demo-websocket.c ${CMAKE_SOURCE_DIR}/demo/websocket.c
        LIBS ep-demo-core ep-shared PkgConfig::OPENSSL)
