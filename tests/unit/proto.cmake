ep_unit_test(frame SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-frame.c LIBS ep-proto ep-shared)
ep_unit_test(frame-block SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-frame-block.c LIBS ep-proto ep-shared)
