# The load generator's pure parts (demo/loadgen-*.c): JSON reading, status.json and /state
# answers, histogram, profile, timer heap, report lines.
ep_unit_test(loadgen SOURCES ${CMAKE_CURRENT_LIST_DIR}/test-loadgen.c LIBS ep-loadgen-core ep-shared)
