ep_unit_test(frame SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-frame.c LIBS ep-proto ep-shared)
