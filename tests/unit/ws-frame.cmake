# The front end's WebSocket frame follower and close frames (daemon/frontend/ws-frame.c), pure.
ep_unit_test(ws-frame SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-ws-frame.c
        ${CMAKE_SOURCE_DIR}/daemon/frontend/ws-frame.c LIBS ep-shared)
target_include_directories(test-ws-frame PRIVATE ${CMAKE_SOURCE_DIR}/daemon/frontend)
